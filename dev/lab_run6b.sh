#!/bin/bash
# Lab device call (session 5, call B): PDL on by default, parameter touch, racecheck
# without the cluster kernel. Build; test_cuda quick + random 1000; cuda_check (checks,
# decode timing with a no-PDL column); stamps with and without the parameter touch;
# moeroute bench (decode presets, kernel metric); racecheck --no-cluster.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab6b}; mkdir -p $O; T0=$SECONDS
B=/tmp/b6
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 &&
cmake --build $B -j16 --target moeroute_static test_cuda moeroute_cli >> $O/build.log 2>&1 || cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV -O3 dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab >> $O/build.log 2>&1 &
$NV -O3 -DMR_NO_PARAM_TOUCH dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab0 >> $O/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1 &
wait
TC=$(find $B -name test_cuda -type f | head -1); MR=$(find $B -name moeroute -type f -perm -u+x | head -1)
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $TC --quick > $O/t_quick.log 2>&1; echo "rc=$?" >> $O/t_quick.log
timeout 60 $TC --group random --configs 1000 > $O/t_random.log 2>&1; echo "rc=$?" >> $O/t_random.log
timeout 30 $TC --group graph > $O/t_graph.log 2>&1; echo "rc=$?" >> $O/t_graph.log
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 90 $B/cuda_check --configs 300 --quick-time > $O/decode_paths.log 2>&1; echo "rc=$?" >> $O/decode_paths.log
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
timeout 40 $B/stamp_lab0 > $O/stamps0.log 2>&1; echo "rc=$?" >> $O/stamps0.log
timeout 100 $MR bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b,deepseek-r1,kimi-k2,qwen3-next --tokens 1,2,4,8,12,16 > $O/bench.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "time $((SECONDS-T0)) s" >> $O/env.log
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 $TC --quick --configs 20 --max-tokens 2048 --no-cluster > $O/race.log 2>&1; echo "rc=$?" >> $O/race.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
echo "== tests"; for f in t_quick t_random t_graph; do grep -E "passed, [0-9]+ failed|^rc=|FAIL|FATAL|SKIP" $O/$f.log | head -8; done
echo "== decode"; grep -E "^check:|FAIL" $O/decode_paths.log | head -5; sed -n '/kernel metric/,$p' $O/decode_paths.log | head -24
echo "== stamps (touch)"; grep -E " route | sort " $O/stamps.log | grep -E " 1 " | head -12
echo "== stamps (no touch)"; grep -E " route | sort " $O/stamps0.log | grep -E " 1 " | head -12
echo "== bench"; cut -d, -f1,2,9,10,11,12,13,14,15,18,19,20,21 $O/bench.csv
echo "== race"; tail -4 $O/race.log
cat $O/env.log
