#!/bin/bash
# Lab device call 21 (session 10): why the pair's gate kernel takes ~3 - 5 us for ONE row of
# DeepSeek-V2 (softmax, grouped 8/3 max, fp32, E = 160), ERNIE-4.5 (softmax + bias, fp32,
# E = 64) and Llama-4-Maverick (sigmoid, bf16, E = 128, k = 1), against DeepSeek-R1 softmax
# (16-bit) and grouped DeepSeek-R1: ncu on the gate kernel at T = 1 (duration, instructions,
# warp stalls), and the kernel metric of gate alone / sort alone / route from large_lab-like
# timing (moeroute bench --kernel-only).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab21}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_cli >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
M="deepseek-v2 ernie-4.5-21b llama4-maverick deepseek-r1-softmax deepseek-r1 kimi-k2"
$B/tools/moeroute bench --backend cuda --models $(echo $M | tr ' ' ',') --tokens 1,4 --kernel-only --format csv > $O/bench.csv 2> $O/bench.err
for m in $M; do
  echo "=== $m" >> $O/ncu.log
  timeout 60 ncu --clock-control none -k regex:gate --launch-skip 30 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section SourceCounters \
    --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__cycles_active.max \
    $B/tools/moeroute bench --backend cuda --models $m --tokens 1 --kernel-only --quick --no-moe-buf >> $O/ncu.log 2>&1
  echo "rc=$?" >> $O/ncu.log
done
echo "total $((SECONDS-T0)) s" >> $O/env.log
cut -d, -f1,2,9,12,16 $O/bench.csv
grep -E "^===|Duration|gpu__time_duration|inst_executed|Executed Instructions |Block Size|Grid Size|Registers|Warp Cycles Per Issued|Stall|rc=|  mr_" $O/ncu.log | head -150
cat $O/env.log
