#!/bin/bash
# Device call 91 (session 30): route's bound for rows the gate kernel does not segment with E > 384 (gx.cu
# MR_GXS_MIN_N_ROUTE_OTHER_E512 30720 -> 20480): gxs_lab --bounds for Qwen3-Next on both sides of the new bound and
# up to the old one (every route and sort form word for word against auto and the CPU, then each form timed).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run91.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${BD_S:-90} $B/gxs_lab --bounds --models qwen3-next --ts ${TS:-2047,2048,2560,3071} > $OUT/lab/bounds.log 2>&1
echo "rc=$?" >> $OUT/lab/bounds.log
grep -E "^bounds [a-z]|FAIL|MISMATCH|WRONG|failure|rc=" $OUT/lab/bounds.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
