#!/bin/bash
# Lab device call (session 4, call A): build; large path check + timing (large_lab);
# stamps incl. the "thrice" cold-cost table; decode variant timing (cuda_check).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab4}; mkdir -p $O; T0=$SECONDS
B=/tmp/b4
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > $O/env.log 2>&1
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 &&
cmake --build $B -j16 --target moeroute_static >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 &
$NV -O3 dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab >> $O/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1 &
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
ls $B/large_lab $B/stamp_lab $B/cuda_check >> $O/env.log 2>&1 || tail -30 $O/build.log
timeout ${CHK_S:-100} $B/large_lab --no-time > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log
echo "check $((SECONDS-T0)) s" >> $O/env.log
timeout ${TIME_S:-120} $B/large_lab --no-check > $O/large_time.log 2>&1; echo "rc=$?" >> $O/large_time.log
echo "ltime $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
timeout 60 $B/cuda_check --no-check ${CC_ARGS:-} > $O/decode_time.log 2>&1; echo "rc=$?" >> $O/decode_time.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
echo "== large check"; grep -vE "^ok|^  ok" $O/large_check.log | tail -25
echo "== large time"; cat $O/large_time.log | head -120
echo "== stamps"; cat $O/stamps.log
echo "== decode"; sed -n '/kernel metric/,$p' $O/decode_time.log | head -60
cat $O/env.log
