#!/bin/bash
# Device call 72 (session 27): v25, moe_buf cleared by a launch of its own after gx / gxs (knob clear_tail),
# and route's gxs bound for segmented rows with E > 128 at T*k = 65536 (was 98304). Then, in the same call, a
# results run of the same tree (bench/run_device_results.sh, into /tmp/r: its files travel as one tarball).
#  1. gxs_lab --tail: route + buf and sort + buf with the clear inside the routing (clear_tail = -1) and as its own
#     launch (1): outputs word for word, the sort against the CPU sort, moe_buf zero; then timed (kernel metric)
#     beside a memset of the same buffer and route without the buffer. Four presets, T = 1024 .. 65536.
#  2. gxs_lab (timing only): route before gxs / route by gxs at DeepSeek-R1 softmax and Qwen3-235B T = 6144 -
#     12288 (the new bound; lean barriers on both sides).
#  3. gxs_lab --tail --quick under memcheck, racecheck and synccheck.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run72.sh > $OUT/lab_summary.txt 2>&1
# Call 73 (the clear by 16 KB pieces from a counter, v25b; the split by thread as knob clear_tail = 2; no bound
# timing): COMMIT=<sha> BOUND=0 bash dev/lab_run72.sh
# Call 74 (v25c, the gate kernel clearing a share first, knob clear_tail_gate, timed in --tail; a loss, removed
# after the call: its code is commit 23552a4): COMMIT=23552a4 BOUND=0 TS=16384,32768,65536 bash dev/lab_run72.sh
. dev/lab_gxs_prelude.sh # (the same lines as the call ran, moved there in session 27)
timeout ${TAIL_S:-150} $B/gxs_lab --tail --ts ${TS:-1024,2048,4096,6144,8192,16384,32768,65536} > $OUT/lab/tail.log 2>&1; echo "rc=$?" >> $OUT/lab/tail.log
grep -E "^tail|MISMATCH|moe_buf byte|rc=|failure" $OUT/lab/tail.log
if [ "${BOUND:-1}" = 1 ]; then
  timeout 60 $B/gxs_lab --no-check --ts 6144,8192,12288 --models deepseek-r1-softmax,qwen3-235b > $OUT/lab/bound.log 2>&1; echo "rc=$?" >> $OUT/lab/bound.log
  grep -E "^gxs |rc=" $OUT/lab/bound.log
fi
for t in memcheck racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${CHK_S:-90} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --tail --quick > $OUT/lab/tail_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/tail_$t.log ) &
done
wait
for t in memcheck racecheck synccheck; do echo "== tail $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/tail_$t.log | tail -3 | tr '\n' ' ')"; done | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
