#!/bin/bash
# Device call 103 (written in session 35): v40, the wide form's sigmoid rows a warp per row by gate.cuh's filter on
# approximate keys (lab knob tiny_filt; perf-log v40), against the default route (the wide rows: a row over four
# warps in tiny.cu at T = 1 and in the cluster form at T = 2 - 16 for E <= 256, T <= 8 for E = 384; else the pair).
# 1. wide_lab --tfilt: the bits against the default route (7 sigmoid shapes: the fp32 router presets grouped
#    DeepSeek-R1, Kimi-K2, GLM-4.5, MiniMax-M2, and bf16 / fp16 shapes; T = 1 - 16, four input kinds including ties,
#    NaN / inf and an expert mask; U = 32 and 16), then the kernel, eager and graph metrics, off / on, in one binary;
# 2. its quick set under memcheck, racecheck (T = 1 only: no cluster form under racecheck), synccheck and initcheck.
# Predicted (perf-log v40): Kimi-K2 T = 1 3.23 -> 2.9 - 3.1 us on the H200 (the gating's per-element exact sigmoid and
# the merge's stages replaced by ~8 instructions per element and the filter's ~350 for the row); grouped
# DeepSeek-R1 T = 1 within +-0.1 (its group pass on approximate keys adds what the four-warp split saves); T >= 2 by
# as much as T = 1 gains.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run103.sh > $OUT/lab_summary.txt 2>&1
# (the files come back in $OUT/lab.tgz; the device tool returns at most 8 files)
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1 \
  || { echo "wide_lab build failed"; tail -20 $OUT/lab/wide_build.log; }
timeout ${TFILT_S:-150} $B/wide_lab --tfilt > $OUT/lab/tfilt.log 2>&1; echo "rc=$?" >> $OUT/lab/tfilt.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tfilt.log | head -6
grep -E "^(deepseek-r1|kimi-k2|glm-4.5|minimax-m2|ds-r1-bf16|kimi-bf16-k16|e384-g12-fp16) " $OUT/lab/tfilt.log | head -60
for t in memcheck racecheck synccheck initcheck; do
  # racecheck hangs in the cluster forms' st.async / mbarrier exchange (bench/sanitize.sh): without the cluster form
  # there (MOEROUTE_CUDA_NO_CLUSTER=1), so it checks T = 1's solo form, and the cases at T >= 2 are skipped
  NC=0; [ $t = racecheck ] && NC=1
  MOEROUTE_CUDA_NO_CLUSTER=$NC timeout ${SAN_S:-45} compute-sanitizer --tool $t --error-exitcode 9 $B/wide_lab --tfilt --no-time --quick \
    > $OUT/lab/tfilt_$t.log 2>&1
  echo "rc=$?" >> $OUT/lab/tfilt_$t.log; echo "== tfilt $t"; grep -E "check:|SUMMARY|rc=" $OUT/lab/tfilt_$t.log | head -4
done
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
