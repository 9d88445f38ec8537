#!/bin/bash
# Lab device call 60 (session 24): gx after call 59 (dev/lab_run59.sh): the TR rows reduced without bank
# conflicts (expert e at e + e / 16) and gx-seg (the TR form gating two rows per warp by segments of 16
# lanes, R a multiple of 16); then the v22 rule (large.cu MR_L_SEG_WIDE_MAX_N 131072): test_cuda's
# thresholds group (its pair at T*k = 131072) and route / chain for DeepSeek-R1 softmax at T = 8192 -
# 65536 without moe_buf (only when built here: the CLI did not fit the carry). gx_lab and test_cuda come
# prebuilt from this machine (carry build-gx: an xz tarball, nvcc 13.0, the commit's library); built here if
# that fails.
export PATH=$PATH:/usr/local/cuda/bin
O=$OUT; C=/tmp/cb
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
mkdir -p $C
if ! tar xJf build-gx/bins.tar.xz -C $C; then
  LAB=lab60 . dev/lab_prelude.sh gx_lab
  cp $B/gx_lab $B/tests/gpu/test_cuda $B/tools/moeroute $C/
fi
timeout ${GX_S:-90} $C/gx_lab --ts ${GX_TS:-256,1024,2048,4096} > $O/gx.log 2>&1; echo "gx rc=$?" >> $O/gx.log
grep -vE "^check .* ok |^gx (deepseek|gpt)" $O/gx.log
timeout ${TC_S:-150} $C/test_cuda --group thresholds > $O/thresholds.log 2>&1; echo "thresholds rc=$?" >> $O/thresholds.log
grep -E "passed|failed|FAIL|rc=" $O/thresholds.log | tail -4
[ -x $C/moeroute ] && timeout 60 $C/moeroute bench --backend cuda --format csv --kernel-only --no-moe-buf --models deepseek-r1-softmax \
  --tokens 8192,16384,32768,65536 > $O/ds_nobuf.csv 2> $O/bench.err; echo "bench rc=$?" >> $O/bench.err
[ -s $O/ds_nobuf.csv ] && cut -d, -f1,2,9,12,16,21 $O/ds_nobuf.csv
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $C/gx_lab --no-time > $O/gx_memcheck.log 2>&1
echo "memcheck rc=$?" >> $O/gx_memcheck.log; tail -2 $O/gx_memcheck.log
cat $O/env.log
