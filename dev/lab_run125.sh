#!/bin/bash
# Device call 125 (session 41): a results run of main after lab call 124's rule (gx.cu: v46d where E > 128 at any G,
# v46 where E <= 128 at G <= 32, the barrier elsewhere), then on an H200 gxs_lab --tail (targets.md 0a).
# CTEST_S 200: results run 69's machine was slow enough (build 170 s) that ctest's 150 s cut test_cuda (full).
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run125.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 430 ]; then
  echo "== gxs_lab --tail (H200)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 &&
    timeout 70 $B/gxs_lab --tail --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next --ts 4096,16384,65536 2>&1
fi
echo "== all done at $SECONDS s"
