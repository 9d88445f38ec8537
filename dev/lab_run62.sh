#!/bin/bash
# Device call 62 (session 24): the short check of gx as a library path (81c0ce9) that the session's
# remaining device time allowed (~250 s; call 61, the full results run, could not start): test_cuda
# (every group) beside memcheck and racecheck on its thresholds group up to T = 4097 (gx's pairs among
# them), then route / chain for DeepSeek-R1 softmax and GPT-OSS-120B at T = 512 - 8192 without moe_buf.
# test_cuda and the CLI come prebuilt from this machine (carry build-gx: an xz tarball, nvcc 13.0).
export PATH=$PATH:/usr/local/cuda/bin
O=$OUT; C=/tmp/cb; T0=$SECONDS
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
mkdir -p $C && tar xJf build-gx/bins.tar.xz -C $C || exit 3
( timeout ${TC_S:-130} $C/tests/gpu/test_cuda > $O/test_cuda.log 2>&1; echo "test_cuda rc=$?" >> $O/test_cuda.log ) &
for t in memcheck racecheck; do
  ( timeout ${SAN_S:-130} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $C/tests/gpu/test_cuda \
      --group thresholds --max-tokens 4097 > $O/san_$t.txt 2>&1; echo "rc=$?" >> $O/san_$t.txt ) &
done
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $C/tools/moeroute bench --backend cuda --format csv --kernel-only --no-moe-buf \
  --models deepseek-r1-softmax,gpt-oss-120b --tokens 512,1024,2048,4096,8192 > $O/gx_sweep.csv 2> $O/bench.err
echo "bench rc=$?" >> $O/bench.err
for t in memcheck racecheck; do echo "== $t"; grep -E "passed|SUMMARY|rc=" $O/san_$t.txt | tail -3; done > $O/sanitize.log
rm -f $O/san_*.txt
grep -E "^group|^[a-z_]+ +[0-9]+ +[0-9]+|passed|rc=" $O/test_cuda.log | tail -14; cat $O/sanitize.log
cut -d, -f1,2,9,12,16,21 $O/gx_sweep.csv; tail -1 $O/bench.err; echo "total $((SECONDS-T0)) s" >> $O/env.log; cat $O/env.log
