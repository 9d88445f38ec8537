#!/bin/bash
# Device call 105 (session 36): two questions in one call.
# 1. Next call 0d (lab_run104.sh's step, unchanged): v40's filter rows (tiny_filt 1) against the wide rows
#    (tiny_filt -1) on five sigmoid shapes with k = 9 - 16, bits then the kernel, eager and graph metrics
#    (wide_lab --tfilt9). If every shape gains: MR_TINY_FILT_AUTO 1 (tiny.cuh), then a results run.
# 2. L5 (targets.md): DeepSeek-R1 softmax T = 128 without moe_buf, where the ~1 us state moves between route and
#    the chain from run to run with nothing changed (runs 60 / 61: route 6.28 / 7.32, chain 7.31 / 6.27). The same
#    point timed again and again: REPS separate processes of `moeroute bench` at T = 64, 128, 256 (a fresh process:
#    fresh allocations, a fresh context), then ONE process with T = 128 eight times over (fresh allocations per case,
#    the same context). If the slow state comes and goes between processes but not within one, it belongs to the
#    process (the allocations' placement, the context), not to a path; if it follows the case order within one
#    process, to the sequence of launches before it.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run105.sh > $OUT/lab_summary.txt 2>&1
# (the files come back in $OUT/lab.tgz)
. dev/lab_gxs_prelude.sh
cmake --build $B -j16 --target moeroute_cli >> $OUT/lab/build.log 2>&1 || { echo "moeroute_cli build failed"; tail -20 $OUT/lab/build.log; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1 \
  || { echo "wide_lab build failed"; tail -20 $OUT/lab/wide_build.log; }
echo "== 1. tfilt9 at $((SECONDS-T0)) s"
timeout ${TFILT_S:-120} $B/wide_lab --tfilt9 > $OUT/lab/tfilt9.log 2>&1; echo "rc=$?" >> $OUT/lab/tfilt9.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tfilt9.log | head -6
grep -E "^(e384-k16-bf16|e256-k12-bias|e256-g8-k10|e512-k9-fp16|e160-k16-bias) " $OUT/lab/tfilt9.log | head -40
echo "== 2. L5 at $((SECONDS-T0)) s: model,T,fused_kernel_us,chain_kernel_us,sort_kernel_us,wrong per process"
BENCH="$B/tools/moeroute bench --backend cuda --format csv --kernel-only --no-moe-buf --models deepseek-r1-softmax"
for i in $(seq 1 ${REPS:-8}); do
  timeout 30 $BENCH --tokens 64,128,256 > $OUT/lab/l5_proc$i.csv 2>&1
  echo "proc $i: $(grep -E '^deepseek' $OUT/lab/l5_proc$i.csv | cut -d, -f2,9,12,16,21 | tr '\n' ' ')"
done
timeout 60 $BENCH --tokens 128,128,128,128,128,128,128,128 > $OUT/lab/l5_one.csv 2>&1
echo "one process, T = 128 x 8: $(grep -E '^deepseek' $OUT/lab/l5_one.csv | cut -d, -f9,12 | tr '\n' ' ')"
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
