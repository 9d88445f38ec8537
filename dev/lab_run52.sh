#!/bin/bash
# Lab device call 52 (session 17): gtm after lab call 51. The duplicate flags, which every K2 CTA read
# (E x G1 loads on a few lines), are replaced by a duplicate row per expert; K1 (sort) takes whole
# 32-byte sectors of each row. Checks (quick set, plain and under memcheck), the stamps (probe 3, now
# with phase B), the table. Every step under a timeout.
LAB=lab52 . dev/lab_prelude.sh large_lab
( timeout ${CHK_S:-60} $B/large_lab --gtm --no-time --quick 2>&1 | tail -2;
  timeout ${MEM_S:-80} compute-sanitizer --tool memcheck --error-exitcode 9 $B/large_lab --gtm --no-time --quick 2>&1 | tail -3 ) > $O/gtm_check.log 2>&1
( timeout ${ST_S:-60} $B/large_lab --gtm-stamps ) > $O/stamps.log 2>&1
( timeout ${GTM_S:-240} $B/large_lab --gtm --no-check ) > $O/gtm_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/gtm_check.log; grep -E "^stamps" $O/stamps.log | sed 's/deepseek-r1-softmax/ds/' | cut -c1-140; grep -E "deepseek-r1-softmax .*(auto|gtm) |probe" $O/gtm_time.log | cut -c1-130 | head -50; cat $O/env.log
