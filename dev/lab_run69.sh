#!/bin/bash
# Device call 69 (session 26): gxs's v24 forms on by default (place and xchg; lab call 68); where gxs now beats
# the paths before it, on a finer grid of T, for the sort entry point and for route (gate kernel + gxs), six
# presets: the measurements behind gxs's new automatic rule. Correctness: gxs_lab's checks (every form).
# Usage on the device, repo root: bash dev/lab_run69.sh
. dev/lab_gxs_prelude.sh # (the same lines as the call ran, moved there in session 27)
timeout ${GXS_S:-200} $B/gxs_lab --no-check --ts ${TS:-2048,3072,4096,6144,8192,12288,16384,24576,32768} \
  --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next,qwen3-235b,deepseek-r1 > $OUT/lab/gxs_grid.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_grid.log
grep -E "^gxs |rc=" $OUT/lab/gxs_grid.log
echo "grid done at $((SECONDS-T0)) s"
timeout ${CHK_S:-120} $B/gxs_lab --no-time > $OUT/lab/gxs_check.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_check.log
grep -E "gxs check|FAIL|rc=" $OUT/lab/gxs_check.log | tail -4
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
