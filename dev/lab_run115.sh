#!/bin/bash
# Device call 115 (session 38): the results run of v43b (gx's T*k bound 1536 -> 1280, i.e. GPT-OSS-120B from T = 320, and
# gx for 60 <= E < 128 at 512 <= T <= 2048; lab call 114), with test_cuda's new threshold pairs; then gx's edges that are
# still outside its rule (gxs_lab --bounds, every form checked against auto and the CPU first): GPT-OSS-120B at T = 288,
# OLMoE and Qwen1.5-MoE at T = 384 and 4096, Mixtral (E = 8) at 1024. At most 8 files come back and the results run
# writes 7, so the lab's printout is appended to lab_summary.txt.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run115.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if [ $SECONDS -lt 500 ]; then
  echo "== gx's edges (gxs_lab --bounds)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 && {
    timeout 20 $B/gxs_lab --bounds --models gpt-oss-120b --ts 288 2>&1
    timeout 30 $B/gxs_lab --bounds --models olmoe,qwen1.5-moe --ts 384,4096 2>&1
    [ $SECONDS -lt 560 ] && timeout 20 $B/gxs_lab --bounds --models mixtral-8x7b --ts 1024 2>&1; }
fi
echo "== all done at $SECONDS s"
