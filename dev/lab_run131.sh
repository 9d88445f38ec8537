#!/bin/bash
# Device call 131 (session 42): v47's interior and its exchange form beside the clear, one build of main (35882b0's
# library). gxs_lab --gxclear (route + buf: the paths before / gx_clear 1 / 2 / the clear after gx; memset; route
# alone) at T = 1536 and 3072 (G = 96, between lab calls 129 - 130's points, where the rule takes gx_clear 2 unmeasured),
# then at T = 2048 / 4096 with gx's exchange forced to the grid barrier (--gx-flag -1) and to v46 (2) instead of v46d,
# the default for E = 256: whether the flagged rows' polls are what the clear holds up.
# Prediction: T = 1536 / 3072 clr2 at or below "before" (rule holds); the barrier form within 0.3 us of v46d beside
# the clear (the polls are a small share of the 5 us excess).
# Usage on the device, repo root: bash dev/lab_run131.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1 || { tail -5 $OUT/gxs_build.log; exit 1; }
echo "== interior at $SECONDS s"
timeout 50 $B/gxs_lab --gxclear --models deepseek-r1-softmax,qwen3-235b --ts 1536,3072 2>&1
echo "== the barrier beside the clear at $SECONDS s"
timeout 30 $B/gxs_lab --gxclear --no-check --gx-flag -1 --models deepseek-r1-softmax --ts 2048,4096 2>&1
echo "== v46 beside the clear at $SECONDS s"
timeout 30 $B/gxs_lab --gxclear --no-check --gx-flag 2 --models deepseek-r1-softmax --ts 2048,4096 2>&1
echo "== all done at $SECONDS s"
