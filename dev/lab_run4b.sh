#!/bin/bash
# Lab device call (session 4, call B): build; GPU tests (quick + groups); large_lab check;
# stamps; decode timing (cuda_check).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab4b}; mkdir -p $O; T0=$SECONDS
B=/tmp/b4
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 &&
cmake --build $B -j16 --target moeroute_static test_cuda >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 &
$NV -O3 dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab >> $O/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1 &
wait
TC=$(find $B -name test_cuda -type f | head -1)
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $TC --quick > $O/t_quick.log 2>&1; echo "rc=$?" >> $O/t_quick.log
timeout 60 $TC --group random --configs 1500 > $O/t_random.log 2>&1; echo "rc=$?" >> $O/t_random.log
for g in special engine engine_mask sort_ids misaligned graph; do timeout 40 $TC --group $g; echo "rc=$?"; done > $O/t_groups.log 2>&1
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
timeout 60 $B/cuda_check --no-check --quick-time > $O/decode_time.log 2>&1; echo "rc=$?" >> $O/decode_time.log
timeout ${CHK_S:-90} $B/large_lab --no-time > $O/large_check.log 2>&1; echo "rc=$?" >> $O/large_check.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
echo "== tests"; for f in t_quick t_random t_groups; do grep -E "passed, [0-9]+ failed|^rc=|FAIL|FATAL|SKIP" $O/$f.log | head -14; done
echo "== large check"; grep -vE "^ok" $O/large_check.log | tail -8
echo "== stamps"; grep -E "route|gate|thrice \(pre-warm warp 0\)" $O/stamps.log | grep -E " 1 | thrice" | head -30
echo "== decode"; sed -n '/kernel metric/,$p' $O/decode_time.log | head -40
cat $O/env.log
