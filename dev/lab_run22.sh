#!/bin/bash
# Lab device call 22 (written in session 10, NOT yet run: the device refused the last two
# starts and then had no time left): the decode sort by one CTA (tiny.cu,
# mr_tiny_sort_kernel, lab knob tiny_sort = 1, default off) checked and timed. Build the
# library, test_cuda and the CLI; in parallel: test_cuda on the default paths (quick,
# sort_ids, thresholds, special, random 600) and cuda_check 1500 (draws tiny_sort), and
# wide_lab --tsort --no-time (A = mask-table sort, B = one-pass sort, bit for bit, corrupted
# ids included) plain and under memcheck / racecheck; then wide_lab --tsort timing and the
# decode bench (kernel metric only). If B is bit-identical and faster, make tiny_sort's
# default on (tiny.cu mr_tiny_sort_plan) and run a full results run.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab22}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target test_cuda moeroute_cli >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group sort_ids" "--group thresholds" "--group special" "--group random --configs 600" "--no-pdl --group sort_ids"; do echo "== $g"; timeout 60 $B/tests/gpu/test_cuda $g 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $O/cc_build.log 2>&1
  timeout 100 $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $O/wl_build.log 2>&1
  timeout 40 $B/wide_lab --tsort --no-time > $O/tsort_check.log 2>&1; echo "rc=$?" >> $O/tsort_check.log
  for t in memcheck racecheck; do echo "== $t"; timeout 60 compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tsort --no-time 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; done > $O/tsort_sanitize.log 2>&1 ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/wide_lab --tsort > $O/tsort.log 2>&1; echo "rc=$?" >> $O/tsort.log
timeout 30 $B/tools/moeroute bench --backend cuda --kernel-only --format csv > $O/decode-kernel.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; tail -3 $O/cuda_check.log; tail -2 $O/tsort_check.log; cat $O/tsort_sanitize.log; sed -n '/sortA/,$p' $O/tsort.log; tail -1 $O/bench.err; cat $O/env.log
