#!/bin/bash
# Lab device call (session 6, call A): build HEAD + large_lab; ctest (test_cuda full,
# quick, no-PDL; the new thresholds and special cases: the mid sort and the segment gate
# kernel) and test_cuda --large in parallel; then large_lab --v6 alone (every variant's
# outputs compared bit for bit, then timed side by side, kernel metric).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab8}; mkdir -p $O; T0=$SECONDS
B=/tmp/b8
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout ${CTEST_S:-170} ctest --test-dir $B -j 8 -V --timeout 600 > $O/ctest.log 2>&1; echo "ctest rc=$?" >> $O/ctest.log ) &
( timeout ${LARGE_S:-90} $B/tests/gpu/test_cuda --large --group large > $O/test_cuda_large.log 2>&1; echo "large rc=$?" >> $O/test_cuda_large.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout ${LAB_S:-200} $B/large_lab --v6 > $O/v6.log 2>&1; echo "lab rc=$?" >> $O/v6.log
MR=$B/tools/moeroute
timeout 60 $MR bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b,deepseek-r1,kimi-k2,qwen3-next --tokens 1,2,4,8,12,16 --kernel-only > $O/bench.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
grep -E "tests passed|tests failed|ctest rc|\*\*\*Failed|Timeout" $O/ctest.log | tail -8
for n in $(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: test_cuda' $O/ctest.log | sed -E 's/.*#([0-9]+):.*/\1/'); do grep -E "^$n: .*(passed, [0-9]+ failed|FAIL)" $O/ctest.log | head -5; done
tail -3 $O/test_cuda_large.log
grep -E "MISMATCH|MOE_BUF|check|rc=" $O/v6.log | head
grep -E "^v6" $O/v6.log | grep -v check | sed -E 's/T= +/T=/; s/  +/ /g' | awk '{printf "%s %s %s g %s r %s rb %s s %s m %s a %s\n",$2,$3,$4,$6,$8,$10,$12,$14,$16}' | grep -E "auto|old|midoff|share512"
cut -d, -f1-12 $O/bench.csv | head -40; tail -2 $O/bench.err
cat $O/env.log
