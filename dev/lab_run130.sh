#!/bin/bash
# Device call 130 (session 42): results run 72, of main with v47 on (gx.cu mr_cuda_gx_clear_mode: route with a moe_buf
# by gx, the clear inside its launch, where k >= 8, E >= 128, T >= 1024), then gxs_lab --gxclear's check and timing at
# the rule's points on the same build (gxs_lab compiled while the tests run).
# Expected: every check passes (test_cuda counts 4663 + 6 threshold cases); the scaling sweep's DeepSeek-R1 softmax
# route + buf T = 4096 ~24.5 us (run 71: 27.28; the chain 27.95), 2048 ~13.9 (14.27), 1024 ~10.0 (10.05); no other
# point moves.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run130.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
( while ! grep -q '^build' $OUT/env.log 2>/dev/null; do sleep 2; done
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a \
    -o $B/gxs_lab > $OUT/gxs_build.log 2>&1; echo "gxs_lab built rc=$?" >> $OUT/gxs_build.log ) &
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
wait
if [ -x $B/gxs_lab ]; then
  echo "== v47 checks and timing at $SECONDS s"
  timeout 30 $B/gxs_lab --gxclear --no-time --models deepseek-r1-softmax,qwen3-235b --ts 1024,2048,4096 2>&1 | grep -v " ok$"
  timeout 40 $B/gxs_lab --gxclear --no-check --models deepseek-r1-softmax,qwen3-235b --ts 1024,2048,4096 2>&1
else tail -5 $OUT/gxs_build.log; fi
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 520 ]; then
  echo "== gxs_lab --tail (H200) at $SECONDS s"
  timeout 40 $B/gxs_lab --tail --no-check --models deepseek-r1-softmax,gpt-oss-120b --ts 4096,16384,65536 2>&1
fi
echo "== all done at $SECONDS s"
