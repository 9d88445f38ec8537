#!/bin/bash
# Lab device call 42 (planned in session 14 for the next session): the first GPU run of the
# session's last commits: a396ed4 (ctm's push exchange removed), 40d004f (cuda_check's fixed draw),
# 7c6c262 (mr_large_rank_emit) and the wide L1 by segments (lab knob large_seg_warps = 16). Build;
# in parallel: test_cuda groups (quick, thresholds, random 600, --large), wide_lab --ctm --no-time
# (ctm bit for bit against the other paths), cuda_check 1500 (its case 822 of results run 25
# included; large_seg_warps drawn), large_lab --no-time (20 variants, the wide ones included);
# then memcheck / racecheck / synccheck of large_lab --no-time --quick --variant 19 (the wide form
# forced); then the timing: wide_lab --ctm-pair (compare its pull columns with
# dev/runs/run38/push_time.log's "== pull" half) and large_lab --no-check for the variants auto /
# seg L1 wide / seg L1 always wide. Predicted (perf-log v13): ctm's sort 0.10 - 0.16 us faster
# than in lab call 38 / results run 25; the wide form at T*k > 65536 about as fast as the chain
# (DeepSeek-R1 softmax T = 16384 ~20, 65536 ~50 - 54), at T*k <= 65536 within 0.3 us of auto.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab42}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for x in wide_lab cuda_check large_lab; do nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/$x.cu $B/libmoeroute.a -o $B/$x >> $O/build.log 2>&1 & done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
( for g in "--quick" "--group thresholds" "--group random --configs 600" "--large"; do echo "== $g"; timeout ${TEST_S:-90} $B/tests/gpu/test_cuda $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log 2>&1 ) &
( timeout ${CHECK_S:-100} $B/wide_lab --ctm --no-time > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
( timeout ${CHECK_S:-100} $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( timeout ${LARGE_S:-170} $B/large_lab --no-time > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log ) &
wait
( for t in memcheck racecheck synccheck; do echo "== $t"; timeout ${SAN_S:-80} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/large_lab --no-time --quick --variant 19 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/sanitize.log 2>&1 )
echo "checks $((SECONDS-T0)) s" >> $O/env.log
( timeout 60 $B/wide_lab --ctm-pair ) > $O/ctm_time.log 2>&1
( for v in 0 18 19; do timeout ${TIME_S:-60} $B/large_lab --no-check --variant $v; echo "rc=$?"; done ) > $O/large_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "MISMATCH|check:|rc=" $O/ctm_check.log | tail -3; grep -v "^ok" $O/cuda_check.log | tail -4
grep -c '^ok' $O/large_check.log; grep -v '^ok' $O/large_check.log | tail -5; cat $O/sanitize.log
cat $O/ctm_time.log; grep -E 'time|rc=' $O/large_time.log | sed 's/  */ /g'; cat $O/env.log
