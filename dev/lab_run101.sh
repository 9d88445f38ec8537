#!/bin/bash
# Device call 101 (written in session 33; ran in session 34 at e03a676 as lab call 101, dev/runs/run101/: v38 measured
# SLOWER, +0.01 to +0.14 us at T = 2 - 4, and removed afterwards with wide_lab --tpre, so this script needs e03a676): v38, tiny.cu's early padding (lab knob tiny_pre; targets.md D2
# candidate 1): blocks 0 .. k-1's slots [T, U) written by the warps without a row during the gating.
# 1. wide_lab --tpre: the bits against the default route (16-bit softmax shapes, T = 2 - 8, U = 32 / 16, four input
#    kinds including an expert mask), then the kernel and eager metrics, off / on, in one binary;
# 2. its quick set under memcheck, racecheck (the route kernel here is not a cluster kernel) and synccheck.
# Predicted (perf-log v38): -0.02 to -0.08 us at T = 2 - 6 (GPT-OSS-120B T = 2 / 4 on the H200: 2.33 / 2.35 in run 57,
# target 2.3), nothing at T = 8 (no warp without a row).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run101.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1
timeout ${TPRE_S:-120} $B/wide_lab --tpre > $OUT/lab/tpre.log 2>&1; echo "rc=$?" >> $OUT/lab/tpre.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tpre.log | head -6
grep -E "^(ds-softmax|gpt-oss-120b|qwen3-235b|qwen3-next|olmoe|e1024-k8) " $OUT/lab/tpre.log | head -40
for t in memcheck racecheck synccheck; do
  timeout ${SAN_S:-60} compute-sanitizer --tool $t --error-exitcode 9 $B/wide_lab --tpre --no-time --quick \
    > $OUT/lab/tpre_$t.log 2>&1
  echo "rc=$?" >> $OUT/lab/tpre_$t.log; echo "== tpre $t"; grep -E "check:|SUMMARY|rc=" $OUT/lab/tpre_$t.log | head -4
done
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
