#!/bin/bash
# Device call 132 (session 42): v47's final rule (gx.cu mr_cuda_gx_clear_mode: not where gx has 16 rows per CTA on
# >= 128 CTAs for E > 128, after results run 72's DeepSeek-R1 softmax T = 2048 point) under test_cuda: the thresholds
# group first (v47's edges: T = 1023 / 1024, 2032 / 2033, 2112 / 2113, 4096 / 4097 with a moe_buf), then the full
# program while time is left, beside dev/cuda_check --gxclear (60 configurations where v47 can take the call: gx_clear
# 0 / 1 / 2, gx's exchange forms, odd and unaligned moe_bufs; then 6 of them under memcheck).
# Usage on the device, repo root: bash dev/lab_run132.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "built at $SECONDS s"
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $OUT/cc_build.log 2>&1 &&
  timeout 120 $B/cuda_check --gxclear --seed 3 --configs 60 --no-time > $OUT/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/cuda_check.log
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/cuda_check --gxclear --seed 4 --configs 6 --no-time > $OUT/cc_memcheck.log 2>&1; echo "rc=$?" >> $OUT/cc_memcheck.log ) &
echo "== thresholds"; timeout 60 $T --group thresholds > $OUT/thresholds.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/thresholds.log | head; tail -1 $OUT/thresholds.log
echo "== full at $SECONDS s"; timeout $((215 - SECONDS)) $T > $OUT/full.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/full.log | head -5; tail -1 $OUT/full.log
wait
echo "== cuda_check --gxclear"; grep -E "^check:|rc=" $OUT/cuda_check.log; grep -E "FAIL" $OUT/cuda_check.log | head -5
echo "== its memcheck"; tail -3 $OUT/cc_memcheck.log
echo "== all done at $SECONDS s"
