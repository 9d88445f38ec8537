#!/bin/bash
# Device call 113 (written in session 37; session 38 moved gx's bounds before v42's question, added T = 256 to them
# and bounded each step by the call's 600 s): targets.md's next call 0h in one call. The results run of main
# (v42: the gate kernel's 16-bit softmax rows with 128 <= E <= 256 three gating warps per CTA at 32 < T <= 128, and test_cuda's
# thresholds T = 32 / 33 and 128 / 129; no results run has timed it), then on an H200 the tail question (0a: gxs_lab
# --tail), then v42's open question for the 16-bit softmax rows it does not take (E outside 128 - 256: Qwen3-Next's 512,
# OLMoE's 64, Qwen1.5-MoE's 60, GPT-OSS-20B's 32, DBRX's 16, Mixtral's 8), with Qwen3-235B (E = 128, inside) beside, at
# T = 48 - 128, three gating warps per CTA (glive3) against one (glive1), each variant's outputs bit for bit against
# auto's first. (Kimi-K2's and grouped DeepSeek-R1's sigmoid rows take the wide gate kernel at these T: not this
# question.) At most 8 files come back and the results run writes 7
# (lab_summary.txt among them), so the extra logs are appended to lab_summary.txt.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run113.sh > $OUT/lab_summary.txt 2>&1
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
# L1 at 384 <= T < 1024 (session 37's reading of results run 63): DeepSeek-R1 softmax route without moe_buf measured
# 8.00 us at T = 512 (the gate kernel, 128 CTAs of four warps, about one per SM, then ctm's cluster sort) against gx's
# 6.66 at T = 1024. v42's mechanism (the next launch's CTAs finding no SM free of gate CTAs) may be there too. gx
# forced (knob gx = 1 takes every T up to 32 rows per CTA) against auto, gxs_lab's --bounds forms, checked first.
if [ $SECONDS -lt 500 ]; then
  echo "== gx below T = 1024 (gxs_lab --bounds)"
  [ -x $B/gxs_lab ] || nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 &&
    timeout 80 $B/gxs_lab --bounds --models deepseek-r1-softmax,gpt-oss-120b --ts 256,384,512,768,1023 2>&1
fi
if [ $SECONDS -lt 520 ]; then
  echo "== v42 outside 128 <= E <= 256 (glive3 = 33, glive1 = 34; auto = glive1 there, glive3 for Qwen3-235B)"
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab 2>&1 &&
    for t in 48 64 96 128; do
      [ $SECONDS -lt 540 ] || break
      timeout 50 $B/large_lab --v6-only $t --v6-shapes qwen3-next,qwen3-235b,olmoe,qwen1.5-moe,gpt-oss-20b,dbrx,mixtral-8x7b --v6-variant 33,34 2>&1 |
        grep -E "^v6 |failed|MISMATCH" | sed -E 's/  +/ /g'
    done
fi
echo "== all done at $SECONDS s"
