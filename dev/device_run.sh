#!/bin/bash
# One device call: run prebuilt lab binaries (devbin/, carried), rebuild there if
# they do not start; per-phase stamps (if devbin/stamp_lab exists); correctness
# check + timing; the team's GPU test; sanitizers.
# Usage (on the device machine, repo root): bash dev/device_run.sh [configs]
set -o pipefail
CONFIGS=${1:-400}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B=devbin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/smi.txt 2>&1
if ! $B/cuda_check --no-time --no-check > $OUT/probe.txt 2>&1; then
  echo "prebuilt binary did not start: $(tail -2 $OUT/probe.txt); rebuilding"
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release > $OUT/build.log 2>&1 &&
  cmake --build build-dev -j16 --target moeroute_static test_cuda >> $OUT/build.log 2>&1 &&
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu build-dev/libmoeroute.a \
       -o build-dev/cuda_check >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
  mkdir -p build-dev/b && cp build-dev/cuda_check build-dev/tests/gpu/test_cuda build-dev/b/ && B=build-dev/b
fi
if [ -x $B/stamp_lab ]; then  # per-phase cycles inside one launch (dev/stamp_lab.cu)
  echo "== stamp_lab"; timeout 60 $B/stamp_lab > $OUT/stamps.log 2>&1; cat $OUT/stamps.log
fi
echo "== cuda_check"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 250 > $OUT/clocks.csv 2>&1 &
SMI=$!
timeout 200 $B/cuda_check --configs $CONFIGS > $OUT/check.log 2>&1; echo "cuda_check rc=$?" >> $OUT/check.log
kill $SMI 2>/dev/null
echo "== test_cuda (team suite)"
timeout 120 $B/test_cuda > $OUT/test_cuda.log 2>&1; echo "test_cuda rc=$?" >> $OUT/test_cuda.log
echo "== sanitizers"
timeout 80 compute-sanitizer --tool memcheck $B/cuda_check --configs 25 --no-time --seed 7 > $OUT/memcheck.log 2>&1
echo "memcheck rc=$?" >> $OUT/memcheck.log
timeout 60 compute-sanitizer --tool racecheck $B/cuda_check --configs 8 --no-time --seed 9 > $OUT/racecheck.log 2>&1
echo "racecheck rc=$?" >> $OUT/racecheck.log
echo "== summaries"
cat $OUT/smi.txt
awk -F, 'NR>1{print $2}' $OUT/clocks.csv | sort | uniq -c | sort -rn | head -5
grep -c FAIL $OUT/check.log; grep FAIL $OUT/check.log | head -25
tail -4 $OUT/test_cuda.log; grep -iE "fail|error" $OUT/test_cuda.log | head -15
tail -6 $OUT/memcheck.log; tail -6 $OUT/racecheck.log
sed -n '/^check:/,$p' $OUT/check.log
