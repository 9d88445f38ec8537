#!/bin/bash
# Device call 120 (session 40): the results run of main (ff196ce: results run 67's library plus v45b's off-by-default
# code, entry.cu's pair predicate made extern, the dead code of v44's order before removed, PTX identical), with
# test_cuda's 14 threshold pairs of session 39 (expected 4663 cases, --no-pdl 2263). On an H200 (the H200's figures are
# still results run 57's), gxs_lab --tail after it (targets.md 0a). At most 8 files come back and the results run
# writes 7, so the lab's printout is appended to lab_summary.txt.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run120.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 470 ]; then
  echo "== gxs_lab --tail (H200)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 &&
    timeout 80 $B/gxs_lab --tail --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next --ts 4096,16384,32768,65536 2>&1
fi
echo "== all done at $SECONDS s"
