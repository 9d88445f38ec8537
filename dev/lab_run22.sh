#!/bin/bash
# Lab device call 22 (session 10), lean (little device time left): the decode sort by one
# CTA (tiny.cu, mr_tiny_sort_kernel) checked and timed. Build the library, test_cuda and
# the CLI; in parallel: test_cuda (quick, sort_ids, thresholds, special, random 600), and
# wide_lab --tsort --no-time plain and under memcheck; then wide_lab --tsort timing and the
# decode bench (kernel metric only).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab22}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target test_cuda moeroute_cli >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600" "--no-pdl --group sort_ids"; do echo "== $g"; timeout 60 $B/tests/gpu/test_cuda $g 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $O/wl_build.log 2>&1
  timeout 40 $B/wide_lab --tsort --no-time > $O/tsort_check.log 2>&1; echo "rc=$?" >> $O/tsort_check.log
  timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/wide_lab --tsort --no-time > $O/tsort_memcheck.log 2>&1; echo "rc=$?" >> $O/tsort_memcheck.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/wide_lab --tsort > $O/tsort.log 2>&1; echo "rc=$?" >> $O/tsort.log
timeout 30 $B/tools/moeroute bench --backend cuda --kernel-only --format csv > $O/decode-kernel.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; tail -2 $O/tsort_check.log; grep -E "SUMMARY|rc=" $O/tsort_memcheck.log; sed -n '/sortA/,$p' $O/tsort.log; tail -1 $O/bench.err; cat $O/env.log
