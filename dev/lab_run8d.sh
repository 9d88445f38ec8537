#!/bin/bash
# Lab device call (session 6, call E): the lean mid sort (no divisions, warp-0 scan)
# and the magic divisions in every sort path: test_cuda special + thresholds +
# sort_ids, mid_stamp, large_lab --v6 (bit-for-bit agreement of the variants, then
# timing), decode bench.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab8d}; mkdir -p $O; T0=$SECONDS
B=/tmp/b8
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV dev/mid_stamp.cu $B/libmoeroute.a -o $B/mid_stamp >> $O/build.log 2>&1 &
$NV -O2 dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 &
TC=$B/tests/gpu/test_cuda
for g in special thresholds sort_ids engine_mask; do timeout 100 $TC --group $g > $O/t_$g.log 2>&1 & done
wait
echo "build+tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/mid_stamp > $O/mid_stamp.log 2>&1; echo "rc=$?" >> $O/mid_stamp.log
timeout 200 $B/large_lab --v6 > $O/v6.log 2>&1; echo "lab rc=$?" >> $O/v6.log
timeout 60 $B/tools/moeroute bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b,deepseek-r1,kimi-k2,qwen3-next --tokens 1,2,4,8,12,16 --kernel-only > $O/bench.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
for g in special thresholds sort_ids engine_mask; do grep -E "passed, [0-9]+ failed|FAIL" $O/t_$g.log | head -3; done
grep -E "twice|kernel metric|pdl= 1" $O/mid_stamp.log | head -16
grep -E "MISMATCH|MOE_BUF|check|rc=|error" $O/v6.log | head
grep -E "^v6" $O/v6.log | grep -v check | sed -E 's/T= +/T=/; s/  +/ /g' | awk '{printf "%s %s %s g %s r %s rb %s s %s m %s\n",$2,$3,$4,$6,$8,$10,$12,$14}'
cut -d, -f1,2,9,12 $O/bench.csv | head -40
cat $O/env.log
