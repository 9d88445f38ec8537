#!/bin/bash
# Lab device call 42 (planned in session 14 for the next session): the first GPU run of a396ed4
# (ctm's push exchange removed) and of cuda_check's fixed draw (40d004f). Build; in parallel:
# test_cuda groups (quick, thresholds, random 600), wide_lab --ctm --no-time (ctm bit for bit
# against the other paths), cuda_check 1500 (its case 822 of results run 25 included); then
# wide_lab --ctm-pair (ctm's sort timed against the other sorts; compare its pull columns with
# dev/runs/run38/push_time.log's "== pull" half). Predicted (perf-log v13): ctm's sort 0.10 - 0.16
# us faster than in lab call 38 / results run 25, i.e. back to results run 23's figures.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab42}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/wide_lab --ctm --no-time > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
( timeout ${CHECK_S:-100} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( timeout 60 $B/wide_lab --ctm-pair ) > $O/ctm_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "MISMATCH|check:|rc=" $O/ctm_check.log | tail -3; grep -v "^ok" $O/cuda_check.log | tail -4; cat $O/ctm_time.log $O/env.log
