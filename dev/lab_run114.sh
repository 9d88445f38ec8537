#!/bin/bash
# Device call 114 (session 38): the results run of v42b (the gate kernel's three gating warps per CTA at 32 < T <= 128 for
# every 16-bit softmax E of 8 - 512; lab call 113 timed E outside 128 - 256) and v43 (gx from T = 256 where T*k >= 1536,
# 1024 before; lab call 113's gxs_lab --bounds), with test_cuda's new threshold pairs; then gx's remaining bounds
# (gxs_lab --bounds, every form checked against auto and the CPU first): DeepSeek-R1 softmax below the new bound (T = 160,
# 192, 224), GPT-OSS-120B between its slower 256 and faster 384 (320, 352), Qwen3-235B (E = 128, k = 8: in the rule,
# not timed) at 256 / 512, and the E below gx's MR_GX_MIN_E = 128 (OLMoE E = 64 k = 8, Qwen1.5-MoE E = 60 k = 4) at
# 512 - 2048, where gx forced ("gx") is timed against auto. At most 8 files come back and the results run writes 7.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run114.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=150 LARGE_S=90 SANITIZE_S=110 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
if [ $SECONDS -lt 480 ]; then
  echo "== gx's bounds (gxs_lab --bounds)"
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 && {
    timeout 40 $B/gxs_lab --bounds --models deepseek-r1-softmax --ts 160,192,224,256 2>&1
    timeout 30 $B/gxs_lab --bounds --models gpt-oss-120b --ts 320,352,384 2>&1
    timeout 30 $B/gxs_lab --bounds --models qwen3-235b --ts 256,512 2>&1
    [ $SECONDS -lt 540 ] && timeout 50 $B/gxs_lab --bounds --models olmoe,qwen1.5-moe --ts 512,1024,2048 2>&1; }
fi
echo "== all done at $SECONDS s"
