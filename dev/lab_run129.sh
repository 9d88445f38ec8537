#!/bin/bash
# Device call 129 (session 42): a results run of the tree (dev/lab_run125.sh: v47 off by default, so the default
# paths are those of results run 70 plus nothing; on an H200 the first results run since run 57, with gxs_lab --tail
# if time allows), then v47's lab part of dev/lab_run128.sh on the same build (gxs_lab against build-dev's library,
# compiled while the tests run): checks, timing, sanitizers of --gxclear; then gx's probes from the carried binary
# (build-probe/gxs_lab.xz) if time is left. Prediction for v47: perf-log v47.
# Usage on the device, repo root (carry ["build-probe/gxs_lab.xz"]):
#   export C=<sha>; bash dev/lab_run129.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
( while ! grep -q '^build' $OUT/env.log 2>/dev/null; do sleep 2; done
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a \
    -o $B/gxs_lab > $OUT/gxs_build.log 2>&1; echo "gxs_lab built rc=$?" >> $OUT/gxs_build.log ) &
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"; cat $OUT/env.log
wait
if [ -x $B/gxs_lab ]; then
  echo "== v47 checks at $SECONDS s"
  timeout 40 $B/gxs_lab --gxclear --no-time --models deepseek-r1-softmax,gpt-oss-120b,dbrx --ts 256,1024,4096 2>&1 | grep -v " ok$"
  echo "== v47 timing at $SECONDS s"
  timeout 60 $B/gxs_lab --gxclear --no-check --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
  [ $SECONDS -lt 470 ] && timeout 30 $B/gxs_lab --gxclear --no-check --models qwen3-235b,dbrx --ts 1024,4096 2>&1
  echo "== sanitizers of v47's check at $SECONDS s"
  for t in memcheck racecheck synccheck; do
    [ $SECONDS -lt 530 ] && { echo "-- $t"; timeout 25 compute-sanitizer --tool $t --error-exitcode 9 $B/gxs_lab --gxclear --quick 2>&1 | tail -2; }
  done
else tail -5 $OUT/gxs_build.log; fi
if [ -f build-probe/gxs_lab.xz ] && [ $SECONDS -lt 520 ]; then
  xz -d -k -T4 build-probe/gxs_lab.xz && chmod +x build-probe/gxs_lab && echo "== probes at $SECONDS s" &&
    timeout 40 build-probe/gxs_lab --gx-probes --models deepseek-r1-softmax,gpt-oss-120b --ts 1024,4096 2>&1
fi
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 540 ]; then
  echo "== gxs_lab --tail (H200) at $SECONDS s"
  timeout 40 $B/gxs_lab --tail --no-check --models deepseek-r1-softmax,gpt-oss-120b --ts 4096,16384,65536 2>&1
fi
echo "== all done at $SECONDS s"
