#!/bin/bash
# Lab device call (session 6, call C): the mid sort's phases (mid_stamp) and the
# address-space error large_lab --v6 hit at T = 8192 (memcheck on the v6 checks).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab8b}; mkdir -p $O; T0=$SECONDS
B=/tmp/b8
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV dev/mid_stamp.cu $B/libmoeroute.a -o $B/mid_stamp >> $O/build.log 2>&1 &
$NV -O2 dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 &
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 60 $B/mid_stamp > $O/mid_stamp.log 2>&1; echo "rc=$?" >> $O/mid_stamp.log
for v in 2 3 4; do echo "== variant $v"; timeout 30 $B/large_lab --v6-only 8192 --v6-notime --v6-variant $v 2>&1 | tail -3; done > $O/v6_8192.log
{ echo "== PDL off"; MOEROUTE_PDL=0 timeout 30 $B/large_lab --v6-only 8192 --v6-notime 2>&1 | tail -3; } >> $O/v6_8192.log
timeout 150 ncu --clock-control none --cache-control none --section WarpStateStats --section SchedulerStats --section LaunchStats -k regex:lab_mid_sort --launch-skip 1035 --launch-count 1 $B/mid_stamp > $O/ncu_mid.log 2>&1; echo "rc=$?" >> $O/ncu_mid.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cat $O/mid_stamp.log
cat $O/v6_8192.log
grep -E "Stall|stall|Warp Cycles|Issued|Eligible|Active Warps|No Eligible|rc=|==PROF==|==ERROR|Grid Size|Block Size|T=" $O/ncu_mid.log | head -60
cat $O/env.log
