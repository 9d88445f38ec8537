#!/bin/bash
# Lab device call 50 (session 17): gtm after lab call 49. K2's status words one 128-byte line each,
# polled by warp 0 alone with a short sleep; the timing table with the probes (gtm_probe 1: K2 without
# the wait on the lower experts; 2: the two launches alone). Checks first (quick set, plain and under
# memcheck), then the table; every step under a timeout.
LAB=lab50 . dev/lab_prelude.sh large_lab
( timeout ${CHK_S:-60} $B/large_lab --gtm --no-time --quick 2>&1 | tail -2;
  timeout ${MEM_S:-80} compute-sanitizer --tool memcheck --error-exitcode 9 $B/large_lab --gtm --no-time --quick 2>&1 | tail -3 ) > $O/gtm_check.log 2>&1
( timeout ${GTM_S:-300} $B/large_lab --gtm --no-check ) > $O/gtm_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/gtm_check.log; grep -E "ratio|probe|failed|disagree" $O/gtm_time.log | head -80; cat $O/env.log
