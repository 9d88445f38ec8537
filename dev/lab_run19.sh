#!/bin/bash
# Lab device call for the next session (written in session 9, not yet run): tiny.cu's one-pass
# finish (mr_cuda_tune.tiny_onepass, perf-log v8 "Next"): wide_lab --tiny-1p (bit-identity
# against tiny.cu's sorts, then timing), the same check under synccheck / racecheck / memcheck,
# cuda_check with the knob drawn at random, and the new T = 1 special cases of test_cuda.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab19}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn; L=/tmp/logs; mkdir -p $L
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $L/build.log 2>&1 && cmake --build $B -j16 >> $L/build.log 2>&1 ) || { tail -30 $L/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 -lineinfo -Iinclude -Isrc -Isrc/common"
$NV dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $L/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $L/build.log 2>&1 &
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for t in synccheck racecheck memcheck; do echo "== $t"; timeout 120 compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tiny-1p --no-time 2>&1 | tail -12; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log ) &
( timeout 100 $B/cuda_check --configs 1500 --no-time > $L/cuda_check.log 2>&1; echo "rc=$?" >> $L/cuda_check.log; for g in "--group special" "--quick"; do echo "== $g"; timeout 100 $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 90 $B/wide_lab --tiny-1p > $O/tiny_1p.log 2>&1; echo "rc=$?" >> $O/tiny_1p.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
tail -3 $L/cuda_check.log; cat $O/tests.log; grep -E "SUMMARY|rc=|Error" $O/sanitize.log | head -20
grep -E "check:|MISMATCH" $O/tiny_1p.log | head; sed -n '/kernel metric/,$p' $O/tiny_1p.log
cat $O/env.log
