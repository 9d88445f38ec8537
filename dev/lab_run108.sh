#!/bin/bash
# Device call 108 (session 37): targets.md's next calls 0g and 0f in one call. First the results run of main (covers
# 87ad0d9, gx.cu's __syncwarp before the zeroing kernel's PDL trigger, and e8eeb3c's shared cluster query), then on an
# H200 the tail question (0a: gxs_lab --tail), then dev/lab_run107.sh (L5's PDL question) if time is left. At most 8
# files come back and the results run writes 7 (lab_summary.txt among them), so the extra logs are appended to
# lab_summary.txt.
# Usage on the device, repo root: C=<sha> bash dev/lab_run108.sh > $OUT/lab_summary.txt 2>&1 (C in the command's environment:
# lab call 108 ran "C=b19ab31; bash ...", which left it unset in the script, and env.log said "commit ?")
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "== tail (H200)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 &&
    timeout 90 $B/gxs_lab --tail --models deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next --ts 4096,16384,32768,65536 2>&1
  echo "== tail done at $SECONDS s"
fi
if [ $SECONDS -lt 400 ]; then
  echo "== lab_run107"
  mkdir -p /tmp/l107 && OUT=/tmp/l107 timeout $((560 - SECONDS)) bash dev/lab_run107.sh 2>&1
  echo "== share.log"; cat /tmp/l107/share.log
fi
echo "== all done at $SECONDS s"
