#!/bin/bash
# Lab device call 24 (session 11): the token-mask sort (tmsort.cu)
# (knobs tm_sort, tm_sort_ctas; perf-log v10). Build the library, test_cuda and the CLI; in parallel:
# test_cuda groups on the default paths, cuda_check 1500 (draws tm_sort, tm_sort_ctas, tiny_ctas,
# tiny_sort, tiny_onepass), wide_lab --tmsort --no-time (bit for bit) plain and under memcheck /
# racecheck; then wide_lab --tmsort timing (kernel metric).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab24}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target test_cuda moeroute_cli >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600"; do echo "== $g"; timeout 60 $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $O/cc_build.log 2>&1
  timeout 100 $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $O/wl_build.log 2>&1
  timeout 60 $B/wide_lab --tmsort --no-time > $O/tmsort_check.log 2>&1; echo "rc=$?" >> $O/tmsort_check.log
  for t in memcheck racecheck; do echo "== $t"; timeout 100 compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tmsort --no-time --quick 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; done > $O/tmsort_sanitize.log 2>&1 ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 90 $B/wide_lab --tmsort > $O/tmsort.log 2>&1; echo "rc=$?" >> $O/tmsort.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cd $O && tar czf lab24.tgz *.log
cat $O/tests.log; tail -2 $O/cuda_check.log; tail -2 $O/tmsort_check.log; cat $O/tmsort_sanitize.log; sed -n '/kernel metric/,$p' $O/tmsort.log; cat $O/env.log
