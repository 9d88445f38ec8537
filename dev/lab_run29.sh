#!/bin/bash
# Lab device call 29 (session 12), as 28b plus dev/persist_lab.cu at the end: the persistent large-T launch P (large.cu, perf-log v11) on by
# default where the large path ran. Build; test_cuda groups (quick, sort_ids, thresholds, special,
# random 600, --large) and large_lab --no-time (every variant bit for bit against the CPU sort,
# moe_buf cleared, guards) in parallel; memcheck / racecheck / synccheck of large_lab --quick on
# the default variant; then large_lab's timing table alone on the GPU. Logs land in $OUT.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab28}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600" "--large"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-150} $B/large_lab --no-time > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log ) &
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${SAN_S:-100} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/large_lab --no-time --quick --variant 0 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log 2>&1 ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-150} $B/large_lab --no-check > $O/large_time.log 2>&1; echo "rc=$?" >> $O/large_time.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
nvcc -O2 -arch=sm_90 -Idev dev/persist_lab.cu -o $B/pl && timeout 60 $B/pl > $O/persist_lab.log 2>&1
cat $O/tests.log; grep -c '^ok' $O/large_check.log; grep -v '^ok' $O/large_check.log | tail -15; cat $O/sanitize.log; grep -E 'time|rc=' $O/large_time.log; cat $O/env.log
grep -A30 "== placement" $O/persist_lab.log
