#!/bin/bash
# Lab device call 49 (prepared in session 17, which had no device): the first GPU run of the grid
# token-mask sort (gtm.cu, lab knob gtm, perf-log v16). Every step under a timeout, so that a hang in
# the new kernels (K2 spins on lower CTAs' status words) costs its step, not the call:
#   1. large_lab --gtm --no-time --quick under compute-sanitizer memcheck, racecheck and synccheck;
#   2. large_lab --gtm: its checks (gtm = 1, its no-PDL form, gtm = 3 with route's gating in K1; every shape, T = 1 .. 262144, hot-expert / all-masked / duplicate-free
#      inputs, U = 1 .. 1024, PDL on and off; route against the CPU sort of its own top-k and the CPU gate,
#      sort against the CPU sort, whole arrays, poisoned buffers and workspace, moe_buf guards), then the
#      timing table: the default paths, gtm and gtm = 3 side by side (kernel metric; route, route + buf, sort,
#      sort + buf, the memset), the outputs compared again after the timing (`agree`);
#   3. cuda_check 400 (gtm drawn among the other knobs, against the CPU backend);
#   4. test_cuda --quick (the default paths, whose code did not change).
# ~450 s; worst case, every timeout hit, ~530 s plus the build.
LAB=lab49 . dev/lab_prelude.sh large_lab cuda_check
( timeout ${MEM_S:-80} compute-sanitizer --tool memcheck --error-exitcode 9 $B/large_lab --gtm --no-time --quick 2>&1 | tail -4;
  timeout ${SAN_S:-50} compute-sanitizer --tool racecheck --error-exitcode 9 $B/large_lab --gtm --no-time --quick 2>&1 | tail -4;
  timeout ${SAN_S:-50} compute-sanitizer --tool synccheck --error-exitcode 9 $B/large_lab --gtm --no-time --quick 2>&1 | tail -4 ) > $O/gtm_san.log 2>&1
( timeout ${GTM_S:-200} $B/large_lab --gtm ) > $O/gtm.log 2>&1
( timeout ${CHECK_S:-45} $B/cuda_check --configs 400 --no-time 2>&1 | tail -4 ) > $O/cuda_check.log 2>&1
( timeout ${TEST_S:-35} $B/tests/gpu/test_cuda --quick 2>&1 | tail -3 ) > $O/tests.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/gtm_san.log; grep -E "^FAIL|FAIL |check:|disagree" $O/gtm.log | head -20; grep -E "^gtm .*ratio|^gtm .*(auto|gtm) " $O/gtm.log | head -90
cat $O/cuda_check.log $O/tests.log $O/env.log
