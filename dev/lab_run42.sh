#!/bin/bash
# Lab device call 42 (session 14, the last of its device time): cuda_check's fixed draw (ctm's fused
# route only below T = 1024) on the library of results run 25 (fb11c84; the library code is the same),
# up to and past results run 25's failing case 822 (a one-ulp top-k difference between ctm's fused
# route and the gate kernel's segment rows, lab knob ctm = 1). Library target only, to fit the time.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab42}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
LIB=$(find $B -name 'libmoeroute*.a' | head -1)
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $LIB -o $B/cuda_check >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout ${CHECK_S:-90} $B/cuda_check --configs ${CONFIGS:-900} --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
grep -v "^ok" $O/cuda_check.log | tail -5; cat $O/env.log
