#!/bin/bash
# Lab device call 45 (session 15): the one-pass route's line form (knob tiny_op_line: a warp writes a
# block's entries and padding, perf-log v14) checked and timed beside the register form and the
# probes. Build; in parallel: test_cuda groups (quick, thresholds, random 600), cuda_check 1500
# (tiny_op_line drawn), wide_lab --tiny-op --no-time (registers with and without the line form);
# memcheck / racecheck / synccheck of wide_lab --tiny-op --no-time --quick; timing: wide_lab --tiny-op.
# Predicted: if partial-line stores of different warps are the cost, line 0.3 - 0.4 us faster than
# registers alone (DeepSeek-R1 softmax T = 2 2.61 -> ~2.25); else ~0.05 slower.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab45}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( for m in --tiny-op; do timeout ${CHECK_S:-100} $B/wide_lab $m --no-time; echo "rc=$?"; done > $O/op_check.log 2>&1 ) &
wait
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${SAN_S:-60} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tiny-op --no-time --quick 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log 2>&1 )
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( timeout ${TIME_S:-150} $B/wide_lab --tiny-op ) > $O/op_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -v "^ok" $O/cuda_check.log | tail -4; grep -E "MISMATCH|check:|rc=" $O/op_check.log | tail -8
cat $O/sanitize.log; cat $O/op_time.log; cat $O/env.log
