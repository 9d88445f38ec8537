#!/bin/bash
# Lab device call 27 (session 11): the token-mask sort ON by its rule (384 <= T*k <= 1024,
# E <= 384; tmsort.cu mr_tm_wanted, from lab call 26). Build everything; in parallel: test_cuda
# groups (quick, sort_ids, thresholds, special, random 600) and --no-pdl sort_ids, cuda_check
# 1500 (tm_sort drawn: never / auto / wherever it fits), wide_lab --tmsort --no-time (bit for
# bit, with the harness's device sync), memcheck of its --quick set, racecheck of its --race
# set; then the scaling sweep (bench/scaling.sh, four presets) into $OUT. Logs land in $OUT as
# each part ends.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab27}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600" "--no-pdl --group sort_ids"; do echo "== $g"; timeout 60 $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $O/cc_build.log 2>&1
  timeout 100 $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $O/wl_build.log 2>&1
  ( timeout 100 $B/wide_lab --tmsort --no-time > $O/tmsort_check.log 2>&1; echo "rc=$?" >> $O/tmsort_check.log ) &
  ( timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/wide_lab --tmsort --no-time --quick > $O/san_memcheck.txt 2>&1; echo "rc=$?" >> $O/san_memcheck.txt ) &
  ( timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 10 $B/wide_lab --tmsort --no-time --race > $O/san_racecheck.txt 2>&1; echo "rc=$?" >> $O/san_racecheck.txt ) &
  wait
  for t in memcheck racecheck; do echo "== $t"; tail -4 $O/san_$t.txt; done > $O/tmsort_sanitize.log; rm -f $O/san_*.txt ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
MOEROUTE_BIN=$B/tools/moeroute timeout ${SCALING_S:-60} bash bench/scaling.sh $O > $O/scaling.log 2>&1; echo "scaling rc=$?" >> $O/scaling.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; tail -2 $O/cuda_check.log; tail -2 $O/tmsort_check.log; cat $O/tmsort_sanitize.log; tail -2 $O/scaling.log; cat $O/env.log
