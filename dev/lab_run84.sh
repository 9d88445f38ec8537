#!/bin/bash
# Device call 84 (session 29): v30's bounds on in the tree (gx.cu mr_gxs_auto: the sort by gxs from T*k = 16384 /
# 12288 for k = 4 / 20480 for E > 384; route's rows not segmented from 16384 / 30720; segmented rows also from 16384
# to 24576). gxs_lab --bounds at T on both sides of each bound (every form word for word against auto, auto against
# the CPU sort, with and without a mask; the forms' kernel metric, large.cu's L1 by segments forced among them); its
# quick set under memcheck / racecheck / synccheck; then a whole results run of the tree in $OUT/r.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run84.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
L=$OUT/lab/bounds.log
for spec in "deepseek-r1-softmax 1024,2047,2048,3072,4096" "gpt-oss-120b 2048,3071,3072,4096,4097,5120,6144,6145,8192" \
            "kimi-k2 1024,2047,2048" "deepseek-r1 2047,2048" "qwen3-next 2047,2048,3071,3072" "qwen3-235b 2048,6144"; do
  set -- $spec
  timeout 60 $B/gxs_lab --bounds --models $1 --ts $2 >> $L 2>&1; echo "rc=$? ($1)" >> $L
done
grep -E "^bounds [a-z]|FAIL|MISMATCH|WRONG|failure|rc=" $L
echo "bounds done at $((SECONDS-T0)) s"
for t in memcheck racecheck synccheck; do
  ( timeout ${SAN_S:-100} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/gxs_lab --bounds --quick \
      > $OUT/lab/san_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/san_$t.log ) &
done
wait
for t in memcheck racecheck synccheck; do echo "== $t: $(tail -3 $OUT/lab/san_$t.log | tr '\n' ' ')"; done
echo "sanitizers done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
if [ "${RESULTS:-1}" = 1 ]; then
  mkdir -p /tmp/r
  OUT=/tmp/r CTEST_S=${CTEST_S:-200} LARGE_S=${LARGE_S:-100} SANITIZE_S=${SANITIZE_S:-110} SCALING_S=${SCALING_S:-130} \
    BENCH_S=${BENCH_S:-80} CUDA_CHECK=${CUDA_CHECK:-400} bash bench/run_device_results.sh > /tmp/r/summary.txt 2>&1
  cp /tmp/r/summary.txt $OUT/; tar czf $OUT/results.tgz -C /tmp r
  echo "results run done at $((SECONDS-T0)) s"
fi
