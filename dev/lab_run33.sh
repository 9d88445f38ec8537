#!/bin/bash
# Lab device call 33 (session 13): where the cluster token-mask path's fixed cost goes
# (wide_lab --ctm-probe: the cluster barrier and DSMEM, the cluster attribute, PDL; timing only).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab33}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-150} $B/wide_lab --ctm-probe > $O/ctm_probe.log 2>&1; echo "rc=$?" >> $O/ctm_probe.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/ctm_probe.log $O/env.log
