#!/bin/bash
# Device call 123 (session 40; written, not run: the device time ran out): the results run of main (v45b, v46 at
# G <= 32, and dev/cuda_check setting gx_flag from the shape, so its 200 cases take v46 and v46b at every G), then
# v46b's timing in the same build (gxs_lab --bounds: auto | gx | ... | gx-bar (the barrier) | gx-flag (v46 at any G) |
# gx-sent (v46b at any G) | gx-r32 (32 rows per CTA: G = 32 and v46's rows at T = 1024), each form's words against
# auto's first; perf-log v46b, v46c), then on an H200 gxs_lab --tail
# (targets.md 0a). ~420 s on a fresh machine. Expected: test_cuda 4663, --no-pdl 2263, cuda_check 0 failures; gx-sent
# within 0.1 us of gx-flag at G <= 32 and at or below gx-bar at G = 64 - 128.
# If v46b wins: MR_GX_SENT_MIN_G (gx.cu) = 33, and a results run with it.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run123.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 && {
  echo "== v46b (gxs_lab --bounds) at $SECONDS s"
  timeout 60 $B/gxs_lab --bounds --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
  [ $SECONDS -lt 500 ] && timeout 40 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 512,2048,4096 2>&1
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 480 ]; then
    timeout 80 $B/gxs_lab --tail --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next --ts 4096,16384,32768,65536 2>&1
  fi; }
echo "== all done at $SECONDS s"
