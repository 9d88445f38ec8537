#!/bin/bash
# Lab device call 38 (planned in session 13, for the next session): ctm's push form (knob ctm_push).
# Build; in parallel: wide_lab --ctm --no-time --push (bit for bit against the other paths, every
# cluster size), cuda_check 1500 (ctm_push drawn), memcheck / racecheck / synccheck of
# wide_lab --ctm --no-time --race --push; then the timing: --ctm-pair without and with --push, and
# the stamps (dev/ctm_stamp.cu). Also test_cuda's groups: the first GPU run of fece763 and 3c9c7d2. Predicted (perf-log v12): ctm's sort 0.5 - 0.75 us faster at R = 16.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab38}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-80} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/wide_lab --ctm --no-time --push > $O/push_check.log 2>&1; echo "rc=$?" >> $O/push_check.log ) &
( timeout ${CHECK_S:-100} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${CHECK_S:-100} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --ctm --no-time --race --push 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/push_sanitize.log 2>&1 ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( echo "== pull"; timeout 60 $B/wide_lab --ctm-pair; echo "== push"; timeout 60 $B/wide_lab --ctm-pair --push ) > $O/push_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "MISMATCH|check:|rc=" $O/push_check.log | tail -5; tail -2 $O/cuda_check.log; cat $O/push_sanitize.log $O/push_time.log $O/env.log
