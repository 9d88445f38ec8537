#!/bin/bash
# Lab device call 37 (session 13): where ctm's sort spends its time (dev/ctm_stamp.cu: stamps of
# one call, of a call in a graph, and of the body run twice in one launch).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab37}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O3 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/ctm_stamp.cu $B/libmoeroute.a -o $B/ctm_stamp >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 60 $B/ctm_stamp > $O/ctm_stamp.log 2>&1; echo "rc=$?" >> $O/ctm_stamp.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/ctm_stamp.log $O/env.log
