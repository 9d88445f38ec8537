#!/bin/bash
# Lab device call 41 (session 14): the large sort's rank launch with PDL (v13, knob large_first_pdl;
# it waits before touching anything), and the L1 by segments back to lab call 39's form (no
# prefetch, 80 registers). Build; in parallel: test_cuda groups (quick, thresholds, random 600,
# --large), large_lab --no-time (every variant, "rank launch no PDL" included), cuda_check 1500;
# then memcheck / racecheck / synccheck of large_lab --no-time --quick --variant 0; then large_lab's
# timing for auto, "rank launch no PDL" and "L2 carry scan" (lab call 40 saw large.cu's own route 2 us
# slower at T = 4096 for Kimi-K2 and DeepSeek-R1: the new scan form or the machine?). Predictions: perf-log v13.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab41}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in large_lab cuda_check; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600" "--large"; do echo "== $g"; timeout ${TEST_S:-100} $B/tests/gpu/test_cuda $g 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-170} $B/large_lab --no-time > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log ) &
( timeout ${CHECK_S:-170} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${SAN_S:-80} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/large_lab --no-time --quick --variant 0 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log 2>&1 ) &
SP=$!
wait $SP
echo "sanitizers $((SECONDS-T0)) s" >> $O/env.log
( for v in 0 16 17; do timeout ${TIME_S:-60} $B/large_lab --no-check --variant $v; echo "rc=$?"; done ) > $O/large_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -c '^ok' $O/large_check.log; grep -v '^ok' $O/large_check.log | tail -8; tail -2 $O/cuda_check.log; cat $O/sanitize.log; grep -E 'time|rc=' $O/large_time.log | sed 's/  */ /g'; cat $O/env.log
