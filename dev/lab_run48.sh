#!/bin/bash
# Lab device call 48 (prepared in session 16, which had no device): lab call 47's content (test_cuda's
# thresholds group, stamp_lab's markers inside the one-pass layout, wide_lab --tmsort --time-only for the
# T = 128 anomaly) plus the first GPU run of the cluster form of tiny.cu's one-pass route (lab knob
# tiny_cluster, perf-log v15): wide_lab --tcl --no-time --quick under compute-sanitizer memcheck and
# synccheck (racecheck does not take clusters), then wide_lab --tcl (every C against the default route
# bit for bit, U = 32 and 16, three input kinds; then timed), then cuda_check 600 (tiny_cluster drawn
# among the other knobs, against the CPU backend). Every step under a timeout: a hang in the new
# kernel costs its step, not the call. Also wide_lab --twarm (the warm pass, lab knob tiny_warm: bits, then the
# kernel and eager metrics off / on; racecheck on its quick check), and stamp_lab's new rows (the cluster form's
# exchange, markers 2-4; the warm pass). ~450 s (worst case, every timeout hit, ~560 s).
LAB=lab48 . dev/lab_prelude.sh stamp_lab wide_lab cuda_check
( timeout ${MEM_S:-60} compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tcl --no-time --quick 2>&1 | tail -4;
  timeout ${SAN_S:-45} compute-sanitizer --tool synccheck --error-exitcode 9 $B/wide_lab --tcl --no-time --quick 2>&1 | tail -4 ) > $O/tcl_san.log 2>&1
( timeout ${SAN_S:-45} compute-sanitizer --tool racecheck --error-exitcode 9 $B/wide_lab --twarm --no-time --quick 2>&1 | tail -4 ) >> $O/tcl_san.log 2>&1
( timeout ${TCL_S:-90} $B/wide_lab --tcl ) > $O/tcl.log 2>&1
( timeout ${WARM_S:-50} $B/wide_lab --twarm ) > $O/twarm.log 2>&1
( timeout ${CHECK_S:-50} $B/cuda_check --configs 600 --no-time 2>&1 | tail -4 ) > $O/cuda_check.log 2>&1
( timeout ${TEST_S:-50} $B/tests/gpu/test_cuda --group thresholds 2>&1 | tail -3 ) > $O/tests.log 2>&1  # session 15's new pairs
( timeout ${STAMP_S:-30} $B/stamp_lab ) > $O/stamps.log 2>&1
( timeout ${TM_S:-50} $B/wide_lab --tmsort --time-only ) > $O/tm_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tcl_san.log; grep -E "^check:" $O/tcl.log; cat $O/twarm.log; grep -E "MISMATCH" $O/tcl.log | head -5; grep -E "^(ds-softmax|gpt-oss|deepseek-r1|kimi-k2) " $O/tcl.log | head -40
cat $O/cuda_check.log $O/tests.log $O/stamps.log; grep -E "ds-softmax|deepseek-r1-softmax|shape" $O/tm_time.log | head -12; cat $O/env.log
