#!/bin/bash
# Lab device call 32 (session 13): the cluster token-mask path (ctm.cu, perf-log v12), off by
# default, forced by its knob. Build; in parallel: test_cuda groups on the defaults (the session-12
# review fixes and tidy of P run here first), large_lab's check of every large-path variant,
# cuda_check 1500 (ctm and its cluster size drawn), wide_lab --ctm --no-time (ctm forced against
# the other paths, bit for bit), memcheck of its --quick set, racecheck of its --race set (may
# not run clusters); then wide_lab --ctm --time-only (kernel metric, ctm against the other paths).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab32}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check large_lab; do
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 &
done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600" "--large"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-120} $B/large_lab --no-time --quick > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log ) &
( timeout ${CHECK_S:-120} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( timeout ${CHECK_S:-120} $B/wide_lab --ctm --no-time > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
( timeout ${CHECK_S:-120} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/wide_lab --ctm --no-time --quick > $O/san_memcheck.txt 2>&1; echo "rc=$?" >> $O/san_memcheck.txt ) &
( timeout ${CHECK_S:-120} compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 10 $B/wide_lab --ctm --no-time --race > $O/san_racecheck.txt 2>&1; echo "rc=$?" >> $O/san_racecheck.txt ) &
wait
for t in memcheck racecheck; do echo "== $t"; tail -4 $O/san_$t.txt; done > $O/ctm_sanitize.log; rm -f $O/san_*.txt
echo "checks $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-150} $B/wide_lab --ctm --time-only > $O/ctm_time.log 2>&1; echo "rc=$?" >> $O/ctm_time.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; tail -3 $O/large_check.log; tail -3 $O/cuda_check.log; grep -E "MISMATCH|check:|rc=" $O/ctm_check.log | tail -12; cat $O/ctm_sanitize.log; cat $O/ctm_time.log | tail -120; cat $O/env.log
