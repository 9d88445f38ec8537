#!/bin/bash
# Device call 122 (session 40): v46b, gx's flagged rows polled first by one thread per row group on the row's first
# 16 bytes (nrg threads per CTA instead of all 256), then a __syncthreads and v46's loads. Lab call 121 had v46 (every
# thread polls every row) 0.3 - 0.7 us faster than the barrier at G <= 32 CTAs but 0.4 - 0.8 slower at G = 128: G x G
# polls on a few hot lines. Built with -DMR_GX_SENT_MIN_G=33, so "auto" takes v46b above v46's range. (Trimmed after
# failed starts left 364 s of device time: no test_cuda; gxs_lab's word checks of every form only.) Then gxs_lab --bounds (every form's words against auto's; kernel
# metric of auto | gx | ... | gx-bar (the barrier) | gx-flag (v46 at any G) | gx-sent (v46b at any G)) at G = 16 - 128.
# Prediction: gx-sent within 0.1 us of gx-flag at G <= 32 and at or below gx-bar at G = 64 - 128 (-0.1 to -0.4).
# Usage on the device, repo root: bash dev/lab_run122.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
FL="-DMR_GX_SENT_MIN_G=33"
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON "-DCMAKE_CUDA_FLAGS=$FL" > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr $FL -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1
if [ -x $B/gxs_lab ]; then
  echo "== gx's forms (gxs_lab --bounds) at $SECONDS s"
  timeout 60 $B/gxs_lab --bounds --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
  [ $SECONDS -lt 250 ] && timeout 40 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 512,2048,4096 2>&1
else tail -5 $OUT/gxs_build.log; fi
echo "== all done at $SECONDS s"
