#!/bin/bash
# Lab device call 35 (session 13): the token-mask sort's table after the block writer (wide_lab
# --tmsort --time-only: its rule), ctm's sort without moe_buf at T = 256 - 4096, alone and as the
# mid pair's second launch (--ctm-pair), and the bit check of ctm including ctm = 2 (--ctm --no-time).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab35}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout ${CHECK_S:-100} $B/wide_lab --ctm --no-time > $O/ctm_check.log 2>&1; echo "rc=$?" >> $O/ctm_check.log ) &
wait
echo "checks $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-90} $B/wide_lab --tmsort --time-only > $O/tm_time.log 2>&1; echo "rc=$?" >> $O/tm_time.log
timeout ${TIME_S:-90} $B/wide_lab --ctm-pair > $O/ctm_pair.log 2>&1; echo "rc=$?" >> $O/ctm_pair.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
grep -E "MISMATCH|check:|rc=" $O/ctm_check.log | tail -5; cat $O/ctm_pair.log $O/env.log
