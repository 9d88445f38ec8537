#!/bin/bash
# Lab device call 39 (session 14): route's large L1 by segments (v13, large.cu
# mr_large_seg_gate_kernel; knob large_seg). Build; in parallel: test_cuda groups (quick,
# thresholds with the v13 pairs, random 600, --large), large_lab --no-time (every variant, the new
# "seg L1 off / 2/SM / 1/SM" included, bit for bit against the CPU sort; T = 65536 and 262144 on
# the default), cuda_check 1500 (large_seg and gate_lpr drawn); then memcheck / racecheck /
# synccheck of large_lab --no-time --quick --variant 0; then large_lab's timing for the variants
# auto (seg L1 3/SM), seg L1 off (the chain, as before), 2/SM, 1/SM. Predictions: perf-log v13.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab39}; mkdir -p $O; T0=$SECONDS
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
( for v in 0 11 12 13; do timeout ${TIME_S:-60} $B/large_lab --no-check --variant $v; echo "rc=$?"; done ) > $O/large_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -c '^ok' $O/large_check.log; grep -v '^ok' $O/large_check.log | tail -8; tail -2 $O/cuda_check.log; cat $O/sanitize.log; grep -E 'time|rc=' $O/large_time.log | sed 's/  */ /g'; cat $O/env.log
