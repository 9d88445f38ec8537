#!/bin/bash
# Device call 70 (session 26): gxs's grid barriers without their full fences (knob gx_lean_bar, v24b; a lab form,
# its own instantiation: the default kernel's SASS is unchanged). gxs_lab's checks in every form (the lean one
# included), its quick set under racecheck and synccheck, and the sort / route timed with and without it.
# Usage on the device, repo root: bash dev/lab_run70.sh (call 70: TS = 1024,16384,65536, limits of 60 s).
# The next call (session 27; the knob now also reaches gx's barrier, route at T = 1024 - 4096, not measured; its
# "before" route at T = 2048 in the checks is gx's lean form, compared word for word with gxs's and the CPU sort):
#   TS=1024,2048,4096,16384 CHK_S=90 bash dev/lab_run70.sh
# then gx.cu's MR_GX_LEAN_BAR 1 and a results run.
. dev/lab_gxs_prelude.sh # (the same lines as the call ran, moved there in session 27)
timeout 60 $B/gxs_lab --no-check --ts ${TS:-1024,16384,65536} --models deepseek-r1-softmax,gpt-oss-120b > $OUT/lab/gxs_time.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_time.log
grep -E "^gxs |v24|rc=" $OUT/lab/gxs_time.log
( timeout ${CHK_S:-60} $B/gxs_lab --no-time > $OUT/lab/gxs_check.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_check.log ) &
for t in racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${CHK_S:-60} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
wait
{ echo "== gxs checks: $(grep -E "gxs check|FAIL|rc=" $OUT/lab/gxs_check.log | tail -4 | tr '\n' ' ')"
  for t in racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done; } | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
