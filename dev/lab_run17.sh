#!/bin/bash
# Lab device call (session 9, call 17): tiny.cu for 16-bit softmax rows at T = 1 for every E
# (solo path), and wide_lab --tiny-pk: tiny.cu forced against the pair for T*k <= 32, to set
# the T > 1 bounds. Tests (quick, thresholds, random 1000, special) and the decode bench.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab17}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn; L=/tmp/logs; mkdir -p $L
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $L/build.log 2>&1 && cmake --build $B -j16 >> $L/build.log 2>&1 ) || { tail -30 $L/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $L/build.log 2>&1
echo "build $((SECONDS-T0)) s" >> $O/env.log
TC=$B/tests/gpu/test_cuda
( for g in "--quick" "--group thresholds" "--group random --configs 1000" "--group special" "--no-pdl --group thresholds"; do echo "== $g"; timeout 100 $TC $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log ) &
( timeout 100 $B/wide_lab --tiny-pk > $O/tiny_pk.log 2>&1; echo "rc=$?" >> $O/tiny_pk.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/tools/moeroute bench --backend cuda --format csv > $O/bench_new.csv 2> $L/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/tests.log; grep -E "check:|MISMATCH" $O/tiny_pk.log | head; sed -n '/kernel metric/,$p' $O/tiny_pk.log
cut -d, -f1,2,9,12,15,21 $O/bench_new.csv | head -110
cat $O/env.log
