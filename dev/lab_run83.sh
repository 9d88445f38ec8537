#!/bin/bash
# Device call 83 (session 29): gxs's and gx's bounds with the lean barriers, and gx's exchange by columns (v30,
# knob gx_xchg, off in the tree): gxs_lab --bounds (every form word for word against auto, auto against the CPU
# sort, with and without a mask; then each form's kernel metric) over six presets and T = 256 - 8192; its quick set
# under memcheck / racecheck / synccheck; then a whole results run of the same tree (bench/run_device_results.sh,
# its usual arguments) in $OUT/r, on the build the prelude started.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run83.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${BOUNDS_S:-150} $B/gxs_lab --bounds --ts ${TS:-256,512,1024,2048,3072,4096,6144,8192} \
  --models ${MODELS:-deepseek-r1-softmax,gpt-oss-120b,qwen3-235b,kimi-k2,qwen3-next,deepseek-r1} > $OUT/lab/bounds.log 2>&1
echo "rc=$?" >> $OUT/lab/bounds.log
grep -E "^bounds |FAIL|MISMATCH|failure|rc=" $OUT/lab/bounds.log
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
