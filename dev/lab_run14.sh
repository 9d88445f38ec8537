#!/bin/bash
# Lab device call (session 9, call 14): where lab call 13's racecheck_pdl hazards (2) are
# (racecheck with hazard reports printed), tiny.cu's phase stamps (stamp_lab) for the new
# emission and the wide form, and test_cuda thresholds with the T = 1 bound.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab14}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
NV="nvcc -O3 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr -lineinfo -Iinclude -Isrc -Isrc/common"
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j12 >> $O/build.log 2>&1 ) &
( $NV -c dev/stamp_lab.cu -o /tmp/stamp_lab.o > $O/build_stamp.log 2>&1 ) &
wait
test -x $B/tests/gpu/test_cuda || { tail -30 $O/build.log; exit 1; }
$NV /tmp/stamp_lab.o $B/libmoeroute.a -o $B/stamp_lab >> $O/build_stamp.log 2>&1 || tail -5 $O/build_stamp.log
echo "build $((SECONDS-T0)) s" >> $O/env.log
TC=$B/tests/gpu/test_cuda
( timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 40 --error-exitcode 9 $TC --quick --configs 20 --max-tokens 2048 --no-cluster -v > $O/race.log 2>&1; echo "rc=$?" >> $O/race.log ) &
( for g in "--group thresholds" "--no-pdl --group thresholds"; do echo "== $g"; timeout 60 $TC $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 60 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log
grep -E "RACECHECK SUMMARY|rc=" $O/race.log
grep -B3 -A12 -m4 -E "Race reported|Error: Race|hazard" $O/race.log | head -120
grep -E "^== |passed" $O/race.log | tail -3
sed -n 1,40p $O/stamps.log
cat $O/env.log
