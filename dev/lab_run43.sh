#!/bin/bash
# Lab device call 43 (session 15): tiny.cu's one-pass route with 16 gating warps (512 threads, a row
# per warp; knob tiny_threads, auto at 9 <= T <= 16 for 16 <= E <= 256, perf-log v14). Build; in
# parallel: test_cuda groups (quick, thresholds, random 600: the new auto rule on the default paths),
# cuda_check 1500 (tiny_threads drawn), wide_lab --tiny16 --no-time (8 and 16 warps bit for bit against
# the pair, U = 32 and 16, three input kinds); then memcheck / racecheck / synccheck of wide_lab
# --tiny16 --no-time --quick; then the timing: wide_lab --tiny16 (pair / 8 warps / 16 warps / auto,
# kernel metric, route, moe_buf cleared). Predicted (perf-log v14): DeepSeek-R1 softmax T = 12 / 16
# 3.62 (the pair) -> ~3.3 us with 16 warps, GPT-OSS-120B T = 12 / 16 3.22 -> ~2.9. Also the probes
# (gating alone / gating + barrier, WRONG outputs) beside them, and large_lab --seg-only for variants
# auto / seg L1 always wide (DeepSeek-R1 softmax T = 16384 - 65536, GPT-OSS-120B T = 8192 - 65536):
# lab call 42 had the wide form 1.4 - 1.5 us ahead at DeepSeek-R1 softmax T*k = 131072 - 262144.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab43}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check large_lab; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( timeout ${CHECK_S:-100} $B/wide_lab --tiny16 --no-time > $O/t16_check.log 2>&1; echo "rc=$?" >> $O/t16_check.log ) &
wait
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${SAN_S:-60} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tiny16 --no-time --quick 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log 2>&1 )
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( timeout ${TIME_S:-120} $B/wide_lab --tiny16 ) > $O/t16_time.log 2>&1
( for v in 0 19; do timeout ${LTIME_S:-90} $B/large_lab --no-check --seg-only --variant $v; echo "rc=$?"; done ) > $O/large_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -v "^ok" $O/cuda_check.log | tail -4; grep -E "MISMATCH|check:|rc=" $O/t16_check.log | tail -5
cat $O/sanitize.log; cat $O/t16_time.log; grep -E 'time|rc=' $O/large_time.log | sed 's/  */ /g'; cat $O/env.log
