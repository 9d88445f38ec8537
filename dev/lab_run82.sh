#!/bin/bash
# Device call 82 (session 28): the route's one-pass layout by 8 CTAs for k <= 4 from T = 3 (tiny.cuh
# mr_tiny_route_ctas_log2; lab call 81's ctas8), on in the tree: gxs_lab --decode (the default against 4 CTAs and
# own-off, both layouts and CK alone, the k <= 4 presets and DeepSeek-R1 softmax, word for word, twice); then the
# decode benchmark of the affected presets (moeroute bench, CK, moe_buf cleared: the issue's metric); then test_cuda's
# engine, thresholds and quick sets in parallel.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run82.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
cmake --build $B -j16 >> $OUT/lab/build.log 2>&1 || { tail -20 $OUT/lab/build.log; exit 1; }
echo "full build at $((SECONDS-T0)) s"
timeout ${DEC_S:-90} $B/gxs_lab --decode > $OUT/lab/decode.log 2>&1; echo "rc=$?" >> $OUT/lab/decode.log
cat $OUT/lab/decode.log
CMD="$B/tools/moeroute bench --backend cuda --format csv --models gpt-oss-120b,gpt-oss-20b,qwen1.5-moe,dbrx,deepseek-r1-softmax"
echo "$CMD" > $OUT/lab/bench.cmd
timeout 60 $CMD > $OUT/lab/bench.csv 2> $OUT/lab/bench.err; echo "bench rc=$?" >> $OUT/lab/bench.err
cut -d, -f1,2,9,12,15,21 $OUT/lab/bench.csv
for g in engine thresholds; do
  ( timeout ${TEST_S:-100} $B/tests/gpu/test_cuda --group $g > $OUT/lab/test_$g.log 2>&1; echo "rc=$?" >> $OUT/lab/test_$g.log ) &
done
( timeout ${TEST_S:-100} $B/tests/gpu/test_cuda --quick > $OUT/lab/test_quick.log 2>&1; echo "rc=$?" >> $OUT/lab/test_quick.log ) &
wait
for g in engine thresholds quick; do echo "== test_cuda $g: $(grep -E "passed|rc=" $OUT/lab/test_$g.log | tail -2 | tr '\n' ' ')"; done
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
