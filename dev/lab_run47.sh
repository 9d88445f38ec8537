#!/bin/bash
# Lab device call 47 (planned in session 15 for the next session): where the one-pass layout's
# ~0.8 us goes (perf-log v14 "what is left" 1) and the DeepSeek-R1 softmax T = 128 route / chain
# anomaly of results run 26. Build; stamp_lab (clock64 markers of thread 0 of CTA 0, single calls:
# tiny.cu's one-pass route at DeepSeek-R1 softmax T = 2 / 4 / 8 and GPT-OSS-120B T = 2 / 12: gated |
# barrier | prefix | entry | blocks and padding); then wide_lab --tmsort --time-only (route as the
# pair with and without the token-mask sort, the sort alone, T = 48 - 1024: the rule
# mr_route_pair_avoids_tm against DeepSeek-R1 softmax T = 128). First test_cuda's thresholds group (session
# 15 added pairs at the 16-warp route's and the wide L1's bounds, not yet run on a GPU). ~200 s.
LAB=lab47 . dev/lab_prelude.sh stamp_lab wide_lab
( timeout ${TEST_S:-120} $B/tests/gpu/test_cuda --group thresholds 2>&1 | tail -3 ) > $O/tests.log 2>&1  # session 15's new pairs
( timeout ${STAMP_S:-60} $B/stamp_lab ) > $O/stamps.log 2>&1
( timeout ${TM_S:-90} $B/wide_lab --tmsort --time-only ) > $O/tm_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log $O/stamps.log; grep -E "ds-softmax|deepseek-r1-softmax|shape" $O/tm_time.log | head -20; cat $O/env.log
