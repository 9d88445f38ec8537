#!/bin/bash
# Lab device call (session 8, call D): the wide gate rows for softmax rows without bias or groups (Qwen3-Next).
# Build; wide_lab bit-identity check; test_cuda quick / thresholds / random 1000 / special in
# parallel with the four sanitizers on wide_lab --no-time; then, alone on the GPU, wide_lab's
# A/B timing (old warp-per-row gate against wide, gate and route, T = 1 .. 512) and the decode
# bench of the presets the wide rows serve.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab11}; mkdir -p $O; T0=$SECONDS
B=/tmp/b11
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 60 $B/wide_lab --no-time > $O/wide_check.log 2>&1; echo "rc=$?" >> $O/wide_check.log
TC=$B/tests/gpu/test_cuda
( for g in "--quick" "--group thresholds" "--group random --configs 1000" "--group special"; do echo "== $g"; timeout 100 $TC $g 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log ) &
( for t in memcheck racecheck initcheck; do echo "== $t"; timeout 100 compute-sanitizer --tool $t --error-exitcode 9 $B/wide_lab --no-time 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 120 $B/wide_lab > $O/wide_time.log 2>&1; echo "rc=$?" >> $O/wide_time.log
timeout 60 $B/tools/moeroute bench --backend cuda --format csv --models qwen3-next,deepseek-r1-softmax,kimi-k2 --tokens 1,2,4,8,12,16 > $O/bench.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/wide_check.log | tail -12; cat $O/tests.log; cat $O/sanitize.log
cat $O/wide_time.log | tail -130
tail -2 $O/bench.err; cut -d, -f1-14 $O/bench.csv | head -40
cat $O/env.log
