#!/bin/bash
# Device call 118 (session 39): the results run of v44 on by default (gate.cuh MR_SOFTMAX_SUM_CANON 1: one summation
# order for the 16-bit softmax denominator in every row form) and v45 (gx.cu: T*k from 1152, 60 <= E < 128 from T = 384
# to 4096), with test_cuda's new threshold pairs (expected 4649 cases, --no-pdl 2249). Then gx's edges (gxs_lab
# --bounds: every route form's words against auto's, so the paths before gx, whose gate kernel has 32, 16 or 8 lanes per
# row, against gx's 16 for OLMoE / Qwen1.5-MoE, which do not renormalize: "FAIL (weights)" in lab calls 114 - 115
# before v44), and E = 16 / 32 at T = 1024 (never timed). On an H200, gxs_lab --tail last (targets.md 0a). At most 8
# files come back and the results run writes 7, so the lab's printout is appended to lab_summary.txt.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run118.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if [ $SECONDS -lt 480 ]; then
  echo "== gx's edges (gxs_lab --bounds)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 && {
    timeout 40 $B/gxs_lab --bounds --models olmoe,qwen1.5-moe --ts 256,320,384,512,4096 2>&1
    timeout 20 $B/gxs_lab --bounds --models gpt-oss-120b --ts 272,288 2>&1
    [ $SECONDS -lt 540 ] && timeout 20 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 1024 2>&1
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 500 ]; then
      timeout 80 $B/gxs_lab --tail --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next --ts 4096,16384,32768,65536 2>&1
    fi; }
fi
echo "== all done at $SECONDS s"
