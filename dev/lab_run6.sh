#!/bin/bash
# Lab device call (session 5, call A): build HEAD + lab files; correctness of the
# post-run-5 dispatch (test_cuda quick + random); cuda_check (checks with random PDL,
# then decode timing: PDL, no-buf, tiny128, cluster sizes); stamps of the v4 kernels;
# (v5 truncated-key selection vs pick loop: stamp_lab thrice); moeroute bench (decode presets, kernel metric); large_lab timing of the run-1 chain's
# clear split vs large.cu; racecheck at small sizes (where does it stall?).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab6}; mkdir -p $O; T0=$SECONDS
B=/tmp/b6
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 &&
cmake --build $B -j16 --target moeroute_static test_cuda moeroute_cli >> $O/build.log 2>&1 || cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
$NV dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $O/build.log 2>&1 &
$NV -O3 dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab >> $O/build.log 2>&1 &
$NV -O3 -DMR_FULL_TRUNC=0 dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab0 >> $O/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1 &
wait
TC=$(find $B -name test_cuda -type f | head -1); MR=$(find $B -name moeroute -type f -perm -u+x | head -1)
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $TC --quick > $O/t_quick.log 2>&1; echo "rc=$?" >> $O/t_quick.log
timeout 60 $TC --group random --configs 1000 > $O/t_random.log 2>&1; echo "rc=$?" >> $O/t_random.log
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 100 $B/cuda_check --configs 300 --quick-time > $O/decode_paths.log 2>&1; echo "rc=$?" >> $O/decode_paths.log
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; echo "rc=$?" >> $O/stamps.log
timeout 40 $B/stamp_lab0 > $O/stamps0.log 2>&1; echo "rc=$?" >> $O/stamps0.log
timeout 60 $MR bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b,deepseek-r1,kimi-k2,qwen3-next --tokens 1,2,4,8,12,16 --kernel-only > $O/bench.csv 2> $O/bench.err; echo "rc=$?" >> $O/bench.err
echo "time $((SECONDS-T0)) s" >> $O/env.log
{ timeout 60 $B/large_lab --no-check --quick --variant 1; timeout 50 $B/large_lab --no-check --quick --variant 0; } > $O/large_time.log 2>&1
echo "large $((SECONDS-T0)) s" >> $O/env.log
CS=compute-sanitizer
( timeout 80 $CS --tool racecheck $TC --quick --configs 10 --max-tokens 16 -v > $O/race16.log 2>&1; echo "rc=$?" >> $O/race16.log ) &
( timeout 80 $CS --tool racecheck $TC --quick --configs 10 --max-tokens 2048 --group random -v > $O/race2k.log 2>&1; echo "rc=$?" >> $O/race2k.log ) &
wait
echo "total $((SECONDS-T0)) s" >> $O/env.log
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
echo "== tests"; for f in t_quick t_random; do grep -E "passed, [0-9]+ failed|^rc=|FAIL|FATAL|SKIP" $O/$f.log | head -8; done
echo "== decode"; grep -E "^check:|FAIL" $O/decode_paths.log | head -5; sed -n '/kernel metric/,$p' $O/decode_paths.log | head -24
echo "== stamps"; grep -v thrice $O/stamps.log | head -30; grep thrice $O/stamps.log | grep "warp 0" | head; echo "-- pick loop only (MR_FULL_TRUNC=0)"; grep thrice $O/stamps0.log | grep "warp 0" | head
echo "== large"; grep -E "^time" $O/large_time.log | sed 's/  */ /g'
echo "== race"; for f in race16 race2k; do tail -5 $O/$f.log; done
cat $O/env.log
