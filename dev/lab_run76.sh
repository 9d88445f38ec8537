#!/bin/bash
# Device calls 76 - 80 (session 28): v27, route with a moe_buf by P for the rows the gate kernel segments: the chain's
# order from a bound (knob p_seg_chain); in calls 76 - 78 also a head clear before the gate kernel (knob clear_head,
# removed after call 78: commit 5d8445f has it), in call 79 the capped form with the filter forced, in call 80 v28
# (the chain's order without the zeroing launch, commit 0a2e18d; reverted). perf-log v27 - v28.
#  1. gxs_lab --head timing + checks: every form word for word against the chain's order, moe_buf zero, the chain's
#     sort against the CPU; DeepSeek-R1 softmax and GPT-OSS-120B at the T of HEAD_TS.
#  2. then gxs_lab --head --quick under memcheck / racecheck / synccheck, in parallel.
# The calls: 76 COMMIT=594beaa (crashed in the lab's own check: a freed host copy); 77 COMMIT=d49104f
# HEAD_TS=4096,8192,16384,32768,65536; 78 COMMIT=5d8445f HEAD_TS=4096,8192,16384,65536 CHK_S=80; 79 COMMIT=83a3edb
# HEAD_TS=4096,8192,16384,32768,65536 CHK_S=80; 80 COMMIT=0a2e18d HEAD_TS=8192,16384,32768 CHK_S=80.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run76.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${HEAD_S:-170} $B/gxs_lab --head --ts ${HEAD_TS:-2048,4096,8192,16384,32768,65536} \
  --models deepseek-r1-softmax,gpt-oss-120b > $OUT/lab/head.log 2>&1; echo "rc=$?" >> $OUT/lab/head.log
grep -E "^head|MISMATCH|not zero|failure|rc=" $OUT/lab/head.log
for t in memcheck racecheck synccheck; do
  ( timeout ${CHK_S:-90} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/gxs_lab --head --quick \
      > $OUT/lab/head_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/head_$t.log ) &
done
wait
for t in memcheck racecheck synccheck; do echo "== head $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/head_$t.log | tail -3 | tr '\n' ' ')"; done | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
