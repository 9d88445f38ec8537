#!/bin/bash
# Device call 104 (session 35; not yet run: the session's device time went to failed starts): what v40's rule would
# take (the wide form's sigmoid rows a warp per row by the filter where k >= 9; perf-log v40; tiny_filt 1 on these
# shapes) against the wide rows (tiny_filt -1): wide_lab --tfilt9, five sigmoid shapes with
# k = 9 - 16 (E 160 - 512, fp32 / bf16 / fp16, with and without bias, one grouped), T = 1 - 16, the bits against the
# wide rows (four input kinds, U = 32 / 16), then the kernel, eager and graph metrics. The kernels are lab call 103's
# (its quick set clean under memcheck, racecheck, synccheck and initcheck), so no sanitizer here. If every shape
# gains: MR_TINY_FILT_AUTO 1 (tiny.cuh), then a results run (test_cuda and the sanitizers with the rule on).
# Predicted (lab call 103's E = 384 k = 16 bf16 row: 5.43 -> 4.36 us at T = 1): -0.5 to -1.1 us at k = 16, less at
# k = 9 - 12 (the wide form's 16-key lists serve every k from 9; the filter's k - 1 rounds shrink with k).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run104.sh > $OUT/lab_summary.txt 2>&1
# (the files come back in $OUT/lab.tgz)
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1 \
  || { echo "wide_lab build failed"; tail -20 $OUT/lab/wide_build.log; }
timeout ${TFILT_S:-120} $B/wide_lab --tfilt9 > $OUT/lab/tfilt9.log 2>&1; echo "rc=$?" >> $OUT/lab/tfilt9.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tfilt9.log | head -6
grep -E "^(e384-k16-bf16|e256-k12-bias|e256-g8-k10|e512-k9-fp16|e160-k16-bias) " $OUT/lab/tfilt9.log | head -40
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
