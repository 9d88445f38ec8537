#!/bin/bash
# Lab device call 34 (session 13): the token-mask block writer with the blocks interleaved over
# the warps (sort.cuh mr_tm_write_blocks, v12), used by tmsort.cu and ctm.cu. Build; in parallel:
# test_cuda groups (quick, thresholds, random 600), wide_lab --tmsort --no-time (the token-mask
# sort against the other sorts, bit for bit), wide_lab --ctm --no-time --quick, memcheck of
# wide_lab --tmsort --no-time --quick; then the timing tables: --tmsort, --ctm, --ctm-probe.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab34}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/wide_lab --tmsort --no-time > $O/tm_check.log 2>&1; echo "rc=$?" >> $O/tm_check.log ) &
( timeout ${CHECK_S:-100} $B/wide_lab --ctm --no-time --quick > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
( timeout ${CHECK_S:-100} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/wide_lab --tmsort --no-time --quick > $O/san.txt 2>&1; echo "rc=$?" >> $O/san.txt; tail -3 $O/san.txt > $O/tm_memcheck.log; rm -f $O/san.txt ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-90} $B/wide_lab --tmsort --time-only > $O/tm_time.log 2>&1; echo "rc=$?" >> $O/tm_time.log
timeout ${TIME_S:-90} $B/wide_lab --ctm --time-only > $O/ctm_time.log 2>&1; echo "rc=$?" >> $O/ctm_time.log
timeout 30 $B/wide_lab --ctm-probe > $O/ctm_probe.log 2>&1; echo "rc=$?" >> $O/ctm_probe.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "MISMATCH|check:|rc=" $O/tm_check.log $O/ctm_check.log | tail -8; cat $O/tm_memcheck.log; cat $O/tm_time.log; grep -E "^ds-softmax|^gpt-oss|^kimi-k2 |^deepseek-r1 |^qwen3-next|rc=" $O/ctm_time.log; cat $O/ctm_probe.log $O/env.log
