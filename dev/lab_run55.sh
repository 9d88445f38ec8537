#!/bin/bash
# Lab device call 55 (prepared in session 22, which had no device): the first GPU run of v21's lab forms
# (docs/perf-log.md v21, design.md 36), each checked bit for bit against the default and timed:
#   the segment rows in packed pairs (gate_seg_form 1), with the filter's tight bound (2), with the
#     candidates ranked in shared memory (3), and the wide L1 by segments at any T*k beside them;
#   P's clearing warps throttled (persist_clear_ns > 0) or paused at grid barriers (< 0).
# 1. alone on the GPU: large_lab --v6, variants 10 - 25 (large_lab.cu V6S) at T = 2048 .. 65536 for
#    DeepSeek-R1 softmax and GPT-OSS-120B (and three presets at 1024): every variant's gate kernel top-k,
#    route, sort and route + buf (moe_buf checked zero) against the automatic default's, bit for bit, then
#    gate / route / route + buf / sort and the memset timed side by side (kernel metric);
# 2. ncu's list of the kernels a pk3 / clr run launches (the PK and throttled instantiations must be among
#    them: a silent fall-back to the default kernels would pass the bit checks);
# 3. in parallel: cuda_check --seg 600 (the segment rows alone, every form and filter drawn, against the CPU
#    backend and bit for bit against the default form's network), cuda_check 600 (every lab knob drawn),
#    and large_lab's v6 check of pk2, pk3, clr500 and clrbar at T = 4096 under memcheck, racecheck and
#    synccheck (form 3's shared-memory lists; the throttled P's state word).
# Typical ~420 s (build ~100).
LAB=lab55 . dev/lab_prelude.sh large_lab cuda_check
step() { local name=$1 t=$2; shift 2; timeout $t "$@" > $O/$name.log 2>&1; echo "$name rc=$?" >> $O/status.log; }
step v6 ${V6_S:-260} $B/large_lab --v6 --v6-variant ${V6_VARIANTS:-10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25} \
  --v6-ts ${V6_TS:-2048,4096,8192,16384,32768,65536}
step ncu ${NCU_S:-60} ncu --clock-control none --metrics gpu__time_duration.sum \
  -k regex:"mr_gate_seg_kernel|mr_large_seg_gate|mr_large_persist" -c 120 \
  $B/large_lab --v6 --v6-notime --v6-variant 18,21 --v6-ts 65536
step seg_check ${CHECK_S:-120} $B/cuda_check --seg --seed 2 --configs 600 --no-time &
step cuda_check ${CHECK_S:-120} $B/cuda_check --configs 600 --no-time &
for tool in memcheck racecheck synccheck; do
  step v6_$tool ${SAN_S:-120} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 10 \
    $B/large_lab --v6 --v6-notime --v6-variant 13,18,22,24 --v6-ts 4096 &
done
wait
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/status.log
grep -hE "MISMATCH|MOE_BUF|check:" $O/v6.log | head -8
python3 bench/v6_table.py $O/v6.log --measures gate,route,route+buf/memset > $O/v6_table.md 2>&1; cat $O/v6_table.md
echo "== launched"; grep -oE "(mr_gate_seg_kernel|mr_large_seg_gate_kernel|mr_large_seg_gate_wide_kernel|mr_large_persist_kernel)<[^(]*>" $O/ncu.log | sort | uniq -c
for f in seg_check cuda_check; do echo "== $f"; grep -E "^(check|seg):|FAIL" $O/$f.log | head -5; done
for tool in memcheck racecheck synccheck; do echo "== $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|v6 check" $O/v6_$tool.log | tail -2; done
cat $O/env.log
# the device tool returns about eight files: the timing log, its tables, env and status stay; the rest in one tarball
(cd $O && tar czf logs.tgz build.log ncu.log seg_check.log cuda_check.log v6_memcheck.log v6_racecheck.log \
  v6_synccheck.log 2>/dev/null && rm -f build.log ncu.log seg_check.log cuda_check.log v6_memcheck.log \
  v6_racecheck.log v6_synccheck.log)
