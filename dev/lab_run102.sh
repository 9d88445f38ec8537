#!/bin/bash
# (v39 and wide_lab --tlate were removed in session 35 after this call measured them slower; the script ran at b110156)
# Device call 102 (written in session 34, not yet run): v39, T = 1's padding after the row's arrival (lab knob
# tiny_solo_late; perf-log v39): the idle warps of tiny.cu's solo route write the padding once warp 0's row is in
# registers (named barrier 1) instead of from the kernel's start, where v38's outcome (lab call 101) says stores slow
# the row's load that heads the gating chain.
# 1. wide_lab --tlate: the bits against the default route (16-bit softmax shapes at T = 1, U = 32 / 16, four input
#    kinds including an expert mask, where the kernel keeps the default's order), then the kernel, eager and graph
#    metrics, off / on, in one binary;
# 2. its quick set under memcheck, racecheck and synccheck (a named barrier between divergent warps: synccheck).
# Predicted (perf-log v39): -0.02 to -0.08 us at T = 1 for k = 8 (DeepSeek-R1 softmax: 248 padding stores), less
# for k = 4 (124); the graph metric by as much (DeepSeek-R1 softmax T = 1 graph 3.38 on the H200 in run 57, target
# 3.37).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run102.sh > $OUT/lab_summary.txt 2>&1
# (the prelude also builds gxs_lab, unused here: ~10 s. The files come back in $OUT/lab.tgz; the device tool returns at most 8 files, so keep extra logs in the tarball)
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1 \
  || { echo "wide_lab build failed"; tail -20 $OUT/lab/wide_build.log; }
timeout ${TLATE_S:-90} $B/wide_lab --tlate > $OUT/lab/tlate.log 2>&1; echo "rc=$?" >> $OUT/lab/tlate.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tlate.log | head -6
grep -E "^(ds-softmax|gpt-oss-120b|qwen3-235b|qwen3-next|olmoe|e1024-k8) " $OUT/lab/tlate.log | head -20
for t in memcheck racecheck synccheck; do
  timeout ${SAN_S:-45} compute-sanitizer --tool $t --error-exitcode 9 $B/wide_lab --tlate --no-time --quick \
    > $OUT/lab/tlate_$t.log 2>&1
  echo "rc=$?" >> $OUT/lab/tlate_$t.log; echo "== tlate $t"; grep -E "check:|SUMMARY|rc=" $OUT/lab/tlate_$t.log | head -4
done
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
