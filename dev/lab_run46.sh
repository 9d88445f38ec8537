#!/bin/bash
# Lab device call 46 (session 15): is the one-pass layout's ~0.5 us (after the prefix) cold code or
# its dependent chain? wide_lab --tiny-op with probe 6 (the layout written twice by the same code in
# one launch; right outputs, checked against the pair) beside the register form and the probes.
# Predicted (perf-log v14): if cold (instruction / constant caches), "twice" ~ full + 0.1 - 0.2 us;
# if the chain, ~ full + 0.5 (DeepSeek-R1 softmax T = 2 2.73 -> ~3.2).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab46}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout ${TIME_S:-150} $B/wide_lab --tiny-op ) > $O/op_time.log 2>&1
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/op_time.log; cat $O/env.log
