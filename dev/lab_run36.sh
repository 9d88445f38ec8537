#!/bin/bash
# Lab device call 36 (session 13): the shared-helper refactor (mr_tm_starts, mr_emit_entry_at;
# sort.cuh) and the review's fixes, checked on the GPU: test_cuda groups (quick, sort_ids,
# thresholds, special, random 600), wide_lab --tmsort --no-time and --ctm --no-time (bit for bit
# against the other paths), large_lab --no-time --quick (the general sort's mr_emit_entry),
# cuda_check 1500 (lab knobs drawn, ctm = 2 included).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab36}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab large_lab cuda_check; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-80} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-90} $B/wide_lab --tmsort --no-time > $O/tm_check.log 2>&1; echo "rc=$?" >> $O/tm_check.log ) &
( timeout ${CHECK_S:-90} $B/wide_lab --ctm --no-time > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
( timeout ${CHECK_S:-90} $B/large_lab --no-time --quick > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log ) &
( timeout ${CHECK_S:-90} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
wait
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "MISMATCH|check:|rc=" $O/tm_check.log $O/ctm_check.log | tail -8; tail -2 $O/large_check.log; tail -2 $O/cuda_check.log; cat $O/env.log
