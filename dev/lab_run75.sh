#!/bin/bash
# Device call 75 (session 27): v26, route's gate kernel zeroes gxs's barrier word (knob gxs_gate_zero, on in the
# tree) in place of the zeroing launch between them; then, in the same call, a results run of the same tree.
#  1. gxs_lab timing: route by gxs with / without the zeroing launch (v26 off / on), DeepSeek-R1 softmax and
#     GPT-OSS-120B, T = 8192 / 16384 / 65536; --tail at 32768 / 65536 (the clear after gxs, route with v26).
#  2. in parallel: gxs_lab's checks (every form word for word against the paths before gxs and the CPU sort; route
#     by gxs with v26) and its quick set and --tail --quick under racecheck / synccheck / memcheck.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run75.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh # (the same lines as the call ran, moved there in session 27)
timeout 50 $B/gxs_lab --no-check --ts 8192,16384,65536 --models deepseek-r1-softmax,gpt-oss-120b > $OUT/lab/gz_time.log 2>&1; echo "rc=$?" >> $OUT/lab/gz_time.log
grep -E "^gxs |v26|rc=" $OUT/lab/gz_time.log | sed -E 's/.*route with both/   route with both/'
timeout 40 $B/gxs_lab --tail --ts 32768,65536 --models deepseek-r1-softmax,gpt-oss-120b > $OUT/lab/tail.log 2>&1; echo "rc=$?" >> $OUT/lab/tail.log
grep -E "^tail|MISMATCH|rc=" $OUT/lab/tail.log
( timeout ${CHK_S:-70} $B/gxs_lab --no-time > $OUT/lab/gxs_check.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_check.log ) &
for t in racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${CHK_S:-70} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
( timeout ${CHK_S:-70} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/gxs_lab --tail --quick \
    > $OUT/lab/tail_memcheck.log 2>&1; echo "rc=$?" >> $OUT/lab/tail_memcheck.log ) &
wait
{ echo "== gxs checks: $(grep -E "gxs check|FAIL|rc=" $OUT/lab/gxs_check.log | tail -4 | tr '\n' ' ')"
  for t in racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done
  echo "== tail memcheck: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/tail_memcheck.log | tail -3 | tr '\n' ' ')"; } | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
