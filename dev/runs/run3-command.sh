#!/bin/bash
# v3 device run: prebuilt binaries (built from HEAD + the v3 decode changes only), a
# rebuild there if they do not start; correctness, bench, stamps, lab timing.
set -u
O=${OUT:-/tmp/v3out}; mkdir -p $O
R=$PWD; W=/tmp/v3; rm -rf $W; mkdir -p $W; T0=$SECONDS
export PATH=$PATH:/usr/local/cuda/bin
tar xzf devbin/v3-bin.tgz -C $W; B=$W/bin
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; uname -a; } > $O/env.log 2>&1
if ! $B/moeroute info >> $O/env.log 2>&1; then
  echo "prebuilt binaries do not start: rebuilding" | tee -a $O/env.log
  mkdir -p $W/src && tar xzf devbin/v3-src.tgz -C $W/src && cd $W/src &&
  cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON >> $O/env.log 2>&1 &&
  cmake --build b -j16 --target moeroute_static test_cuda moeroute_cli >> $O/env.log 2>&1 &&
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/stamp_lab.cu b/libmoeroute.a -o b/stamp_lab >> $O/env.log 2>&1 &&
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu b/libmoeroute.a -o b/cuda_check >> $O/env.log 2>&1 &&
  cp b/tests/gpu/test_cuda b/tools/moeroute b/stamp_lab b/cuda_check $B/ || { tail -30 $O/env.log; exit 1; }
  cd $R
fi
echo "setup $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/test_cuda --quick > $O/t_quick.log 2>&1; echo "rc=$?" >> $O/t_quick.log
timeout 50 $B/test_cuda --group random --configs 1500 > $O/t_random.log 2>&1; echo "rc=$?" >> $O/t_random.log
for g in special engine_mask sort_ids misaligned graph; do timeout 30 $B/test_cuda --group $g; echo "rc=$?"; done > $O/t_groups.log 2>&1
timeout 60 $B/moeroute bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b,deepseek-r1,kimi-k2,qwen3-next --tokens 1,4,16 --kernel-only > $O/bench.csv 2>> $O/env.log; echo "bench rc=$?" >> $O/env.log
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
timeout 70 $B/cuda_check --quick-time --configs 150 > $O/check.log 2>&1; echo "rc=$?" >> $O/check.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
echo "===== correctness"; for f in t_quick t_random t_groups; do grep -E "passed, [0-9]+ failed|^rc=|FAIL|FATAL|SKIP" $O/$f.log | head -12; done
grep -E "^check:|FAIL" $O/check.log | head -8
echo "===== stamps (cycles)"; cat $O/stamps.log
echo "===== lab timing (us)"; sed -n '/^kernel metric/,$p' $O/check.log
echo "===== bench (us, kernel metric)"; awk -F, '{printf "%-20s %3s %8s %8s %7s %8s %8s %8s %5s\n", $1,$2,$9,$12,$15,$16,$17,$18,$21}' $O/bench.csv
tail -4 $O/env.log
