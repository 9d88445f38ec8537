#!/bin/bash
# Lab device call 48b (session 17): the part of dev/lab_run48.sh that decides the most, for a session
# with little device time left: the first GPU run of the cluster form of tiny.cu's one-pass route and of
# the warm pass (lab knobs tiny_cluster, tiny_warm; perf-log v15). wide_lab --tcl --no-time --quick under
# memcheck, then wide_lab --tcl (every C against the default route bit for bit, then timed) and
# wide_lab --twarm. The rest of lab call 48 (synccheck, racecheck of the warm pass, cuda_check, the
# threshold pairs, stamps, the T = 128 re-timing) stays for a later call. ~250 s.
LAB=lab48b . dev/lab_prelude.sh wide_lab
( timeout ${MEM_S:-60} compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tcl --no-time --quick 2>&1 | tail -4 ) > $O/tcl_san.log 2>&1
( timeout ${TCL_S:-90} $B/wide_lab --tcl ) > $O/tcl.log 2>&1
( timeout ${WARM_S:-50} $B/wide_lab --twarm ) > $O/twarm.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tcl_san.log; grep -E "^check:" $O/tcl.log; cat $O/twarm.log | tail -30; grep -E "MISMATCH" $O/tcl.log | head -5; grep -E "^(ds-softmax|gpt-oss|deepseek-r1|kimi-k2) " $O/tcl.log | head -40; cat $O/env.log
