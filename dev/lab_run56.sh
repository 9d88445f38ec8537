#!/bin/bash
# Lab device call 56 (session 23): v21's automatic form on main (gate.cuh mr_seg_gate_form), measured
# and checked in one short call (the session had ~590 s of device time left after lab call 55):
# 1. alone on the GPU: large_lab --v6 variants 0 (auto: the new default) and 26 (v20: the default
#    lab call 55 ran as auto), bit-checked against each other, T = 2048 .. 65536 (kernel metric);
# 2. alone: bench/scaling.sh (every path, four presets, T = 1 .. 65536, with and without moe_buf);
# 3. in parallel: test_cuda's thresholds group (the new pairs at T*k = 65536 among them), cuda_check
#    --seg 400 (every form against v20's network, bit for bit, and the CPU backend), and racecheck on
#    the v6 check of clr500 / clrbar (P's throttle state now by shared atomics).
LAB=lab56 . dev/lab_prelude.sh large_lab cuda_check
step() { local name=$1 t=$2; shift 2; timeout $t "$@" > $O/$name.log 2>&1; echo "$name rc=$?" >> $O/status.log; }
step v6 ${V6_S:-70} $B/large_lab --v6 --v6-variant 0,26 --v6-ts ${V6_TS:-2048,4096,8192,16384,32768,65536}
[ "${SCALING:-1}" = 1 ] && MOEROUTE_BIN=$B/tools/moeroute step scaling ${SCALING_S:-100} bash bench/scaling.sh $O
step thresholds ${CHECK_S:-100} $B/tests/gpu/test_cuda --group thresholds &
step seg_check ${CHECK_S:-100} $B/cuda_check --seg --seed 3 --configs 400 --no-time &
[ "${RACE:-1}" = 1 ] && step v6_racecheck ${CHECK_S:-100} compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 10 \
  $B/large_lab --v6 --v6-notime --v6-variant 22,24 --v6-ts 4096 &
wait
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/status.log
python3 bench/v6_table.py $O/v6.log --measures gate,route,route+buf/memset > $O/v6_table.md 2>&1; head -30 $O/v6_table.md
grep -E "passed|failed|FAIL" $O/thresholds.log | tail -3
grep -E "^(check|seg):|FAIL" $O/seg_check.log | head -4
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|v6 check" $O/v6_racecheck.log | tail -2
cat $O/env.log
(cd $O && rm -f h200-scaling.png && tar czf logs.tgz build.log thresholds.log seg_check.log v6_racecheck.log scaling.log 2>/dev/null && rm -f build.log thresholds.log seg_check.log v6_racecheck.log scaling.log)
