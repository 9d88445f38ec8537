#!/bin/bash
# Lab device call 54 (session 20): stamp_lab, the markers inside one routing launch, with session 20's
# rows: DeepSeek-R1 softmax (E = 256) and Qwen3-235B (E = 128), k = 8, at T = 6 and 8, each without the
# cluster form and with C = 8 (perf-log v19: E = 128 gains 0.03 - 0.07 us there, E = 256 nothing), and
# DeepSeek-R1 softmax T = 12 by the one-CTA route. Also the session-16 cluster rows (T = 2, 12, 16,
# grouped T = 4), which have never run. ~330 s: nvcc of stamp_lab.cu alone takes ~4 minutes (lab call
# 54 ran out of a 300 s limit in that build); give the call a limit of ~420 s.
LAB=lab54 . dev/lab_prelude.sh stamp_lab
( timeout ${STAMP_S:-90} $B/stamp_lab ) > $O/stamps.log 2>&1
echo "stamp_lab rc=$?" >> $O/stamps.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/stamps.log $O/env.log
