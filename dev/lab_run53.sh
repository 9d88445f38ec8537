#!/bin/bash
# Lab device call 53 (prepared in session 18, which had no device): lab call 48b's content (the first GPU
# run of the cluster form of tiny.cu's one-pass route and of its warm pass, perf-log v15) plus the first
# GPU run of the one-pass layout's blocks by word ownership (lab knob tiny_op_own, perf-log v17):
#   wide_lab --tcl --no-time --quick under memcheck; wide_lab --tcl (every C against the default route
#   bit for bit, then timed); wide_lab --twarm (bits, then kernel and eager metrics off / on);
#   wide_lab --town --no-time --quick under memcheck, racecheck and synccheck; wide_lab --town (bits over
#   T = 2 - 16, U = 32 / 16, four input kinds, then timed); the same for the grouped wide rows' group
#   ranks unrolled (lab knob wide_rank_unroll, v17: wide_lab --tru, route at T = 1); cuda_check 600 (every
#   lab knob drawn, the new ones included, against the CPU backend).
# Every step under a timeout: a hang in a new kernel costs its step, not the call. ~480 s.
LAB=lab53 . dev/lab_prelude.sh wide_lab cuda_check
( timeout ${MEM_S:-60} compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tcl --no-time --quick 2>&1 | tail -4 ) > $O/tcl_san.log 2>&1
( for mode in --town --tru; do for tool in memcheck racecheck synccheck; do
    echo "$mode $tool"; timeout ${OWNSAN_S:-30} compute-sanitizer --tool $tool --error-exitcode 9 $B/wide_lab $mode --no-time --quick 2>&1 | tail -3
  done; done ) > $O/v17_san.log 2>&1
( timeout ${TCL_S:-90} $B/wide_lab --tcl ) > $O/tcl.log 2>&1
( timeout ${WARM_S:-50} $B/wide_lab --twarm ) > $O/twarm.log 2>&1
( timeout ${OWN_S:-80} $B/wide_lab --town ) > $O/town.log 2>&1
( timeout ${RU_S:-40} $B/wide_lab --tru ) > $O/tru.log 2>&1
( timeout ${CHECK_S:-50} $B/cuda_check --configs 600 --no-time 2>&1 | tail -4 ) > $O/cuda_check.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tcl_san.log $O/v17_san.log; grep -E "^check:" $O/tcl.log $O/twarm.log $O/town.log $O/tru.log
grep -E "MISMATCH" $O/tcl.log $O/town.log $O/tru.log | head -5
grep -E "^(ds-softmax|gpt-oss|deepseek-r1|kimi-k2) " $O/tcl.log | head -40; tail -22 $O/twarm.log; tail -40 $O/town.log
tail -8 $O/tru.log
cat $O/cuda_check.log $O/env.log
