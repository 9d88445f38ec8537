#!/bin/bash
# Lab device call 53 (prepared in session 18, which had no device): the first GPU run of four lab forms of
# tiny.cu's decode route, each checked bit for bit against the default route and timed (kernel metric, and
# eager for the one-pass forms):
#   the blocks by word ownership (tiny_op_own, perf-log v17): wide_lab --town (16-bit softmax rows, T = 2 - 16,
#     U = 32 / 16, four input kinds, E not a multiple of 32 too, the layout's three forms);
#   the grouped wide rows' group ranks unrolled (wide_rank_unroll, v17): wide_lab --tru (route at T = 1);
#   the cluster form of the one-pass route (tiny_cluster, v15): wide_lab --tcl;
#   the warm pass (tiny_warm, v15): wide_lab --twarm;
# then the sanitizers on the quick checks (memcheck on --tcl; memcheck, racecheck, synccheck on --town and
# --tru, whose quick sets include the expert mask), ncu's list of the kernels --town / --tru launch (the new
# instantiations must be among them: a silent fall-back to the default kernel would pass the bit checks),
# and cuda_check 600 (every lab knob drawn, against the CPU backend). Lab call 48b's content is in here.
# Last, the token-mask sort's table without moe_buf (wide_lab --tmsort --time-only --no-buf): results run 26's
# one point where route lost to the chain (DeepSeek-R1 softmax T = 128 without moe_buf, docs/targets.md L5).
# Every step under a timeout, the most telling first; each step's exit status goes to status.log.
# Typical ~450 s; worst case (every timeout hit) past 600 s.
LAB=lab53 . dev/lab_prelude.sh wide_lab cuda_check
step() { local name=$1 t=$2; shift 2; timeout $t "$@" > $O/$name.log 2>&1; echo "$name rc=$?" >> $O/status.log; }
step town ${OWN_S:-80} $B/wide_lab --town
step tru ${RU_S:-40} $B/wide_lab --tru
step tcl ${TCL_S:-90} $B/wide_lab --tcl
step twarm ${WARM_S:-50} $B/wide_lab --twarm
step tcl_mem ${MEM_S:-60} compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tcl --no-time --quick
for mode in town tru; do for tool in memcheck racecheck synccheck; do
  step ${mode}_$tool ${SAN_S:-40} compute-sanitizer --tool $tool --error-exitcode 9 $B/wide_lab --$mode --no-time --quick
done; done
for mode in town tru; do
  step ${mode}_ncu ${NCU_S:-40} ncu --clock-control none --metrics gpu__time_duration.sum -k regex:mr_tiny_route_kernel \
    -c 80 $B/wide_lab --$mode --no-time --quick
done
step cuda_check ${CHECK_S:-50} $B/cuda_check --configs 600 --no-time
step tm_nobuf ${TM_S:-50} $B/wide_lab --tmsort --time-only --no-buf
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/status.log
for f in town tru tcl twarm; do grep -E "^(form|check:)" $O/$f.log; done
grep -hE "MISMATCH" $O/town.log $O/tru.log $O/tcl.log $O/twarm.log | head -5
for f in tcl_mem town_memcheck town_racecheck town_synccheck tru_memcheck tru_racecheck tru_synccheck; do
  echo "== $f"; tail -2 $O/$f.log; done
# the launched kernels' last two template flags: OWN (word ownership), RU (ranks unrolled)
for m in town tru; do echo "== $m kernels"; grep -oE "mr_tiny_route_kernel<[^(]*>" $O/${m}_ncu.log | sort | uniq -c; done
grep -A40 "^us, route" $O/town.log | head -44; grep -A8 "^us, route" $O/tru.log
grep -E "^(ds-softmax|gpt-oss|deepseek-r1|kimi-k2) " $O/tcl.log | head -40; grep -A22 "^us, route" $O/twarm.log
tail -4 $O/cuda_check.log; grep -E "^(kernel|shape|ds-softmax|gpt-oss)" $O/tm_nobuf.log; cat $O/env.log
