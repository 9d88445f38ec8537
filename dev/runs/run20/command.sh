#!/bin/bash
# Lab device call 20 (session 10): dev/lab_run19.sh (tiny.cu's one-pass finish: bit-identity,
# sanitizers, cuda_check, test_cuda --group special and --quick, timing) run first, then the
# mid sort's share swept at small n (large_lab --share-sweep, perf-log v8 "Next" 3).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab20}; mkdir -p $O
OUT=$O bash dev/lab_run19.sh > $O/lab19.log 2>&1
B=/tmp/bn
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab > $O/large_lab_build.log 2>&1
timeout 150 $B/large_lab --share-sweep > $O/share_sweep.log 2>&1; echo "rc=$?" >> $O/share_sweep.log
cat $O/lab19.log
grep -E "check:|MISMATCH|rc=" $O/share_sweep.log
sed 's/T= */T=/' $O/share_sweep.log | grep -E " (auto|share128|share512) " | awk '{print $2,$3,$4,$8,$12}' | column -t | head -130
