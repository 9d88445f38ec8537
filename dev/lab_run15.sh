#!/bin/bash
# Lab device call (session 9, call 15): tiny.cu at T = 1 sorts from registers (no peers, no
# barrier without a mask); the wide form's barriers with one group are CTA barriers.
# Builds this tree and the base (ee0ec4a) side by side; racecheck (PDL, no cluster; the
# report printed); tests and cuda_check; wide_lab --tiny; the SASS of tiny.cu's packed
# bf16 E <= 256 kernel; then the decode bench of every preset, base and new, twice.
# At most eight files under $OUT (the device tool returns about eight).
# The base tarball is not committed; make it first, here:
#   git archive --format=tar.gz -o dev/runs/run13/base-ee0ec4a.tgz ee0ec4a
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab15}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn; BB=/tmp/bb; SB=/tmp/base; L=/tmp/logs; mkdir -p $L
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
mkdir -p $SB && tar xzf dev/runs/run13/base-ee0ec4a.tgz -C $SB
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $L/build.log 2>&1 && cmake --build $B -j10 >> $L/build.log 2>&1 ) &
( cmake -S $SB -B $BB -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $L/build_base.log 2>&1 && cmake --build $BB -j6 --target moeroute_cli >> $L/build_base.log 2>&1 ) &
wait
test -x $B/tests/gpu/test_cuda || { tail -30 $L/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common"
$NV dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $L/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $L/build.log 2>&1 &
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
TOBJ=$(find $B -name 'tiny.cu.o' | head -1)
cuobjdump -sass -fun '_Z20mr_tiny_route_kernelILi1ELi8ELi0ELb0EEv9mr_gate_p11mr_sort_out9mr_tiny_kPiPf' $TOBJ > $O/tiny_sass.txt 2>&1
TC=$B/tests/gpu/test_cuda
( timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 10 --error-exitcode 9 $TC --quick --configs 20 --max-tokens 2048 --no-cluster > $L/race.log 2>&1; echo "rc=$?" >> $L/race.log ) &
( for g in "--quick" "--group thresholds" "--group random --configs 1000" "--no-pdl --group thresholds" "--group special" "--group graph"; do echo "== $g"; timeout 100 $TC $g 2>&1 | tail -1; echo "rc=${PIPESTATUS[0]}"; done > $L/tests.log ) &
( timeout 100 $B/cuda_check --configs 1500 --no-time > $L/cuda_check.log 2>&1; echo "rc=$?" >> $L/cuda_check.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 60 $B/wide_lab --tiny > $L/tiny_wide.log 2>&1; echo "rc=$?" >> $L/tiny_wide.log
for r in 1 2; do
  timeout 40 $BB/tools/moeroute bench --backend cuda --format csv > $L/bench_base$r.csv 2>> $L/bench.err
  timeout 40 $B/tools/moeroute bench --backend cuda --format csv > $L/bench_new$r.csv 2>> $L/bench.err
done
echo "total $((SECONDS-T0)) s" >> $O/env.log
{ echo "## tests"; cat $L/tests.log; echo "## cuda_check"; tail -3 $L/cuda_check.log; echo "## racecheck"; grep -E "RACECHECK SUMMARY|rc=" $L/race.log; grep -m12 -E "Error: Potential|Write Thread|Read Thread" $L/race.log; echo "## bench.err"; cat $L/bench.err; } > $O/summary.log
cp $L/tiny_wide.log $L/bench_base1.csv $L/bench_base2.csv $L/bench_new1.csv $L/bench_new2.csv $O/
cat $O/summary.log
grep -E "check:|MISMATCH" $L/tiny_wide.log | head
paste -d, <(cut -d, -f1,2,9,12 $L/bench_base1.csv) <(cut -d, -f9,12 $L/bench_new1.csv) <(cut -d, -f9 $L/bench_base2.csv) <(cut -d, -f9,21 $L/bench_new2.csv) | head -40
grep -c . $O/tiny_sass.txt
cat $O/env.log
