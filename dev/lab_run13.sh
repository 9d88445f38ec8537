#!/bin/bash
# Lab device call (session 9, call 13): tiny.cu v8 (one-pass emission; the wide form for
# sigmoid / sqrt_softplus rows). Builds this tree and the base commit (ee0ec4a, from
# dev/runs/run13/base-ee0ec4a.tgz) side by side; wide_lab --tiny (bit-identity of route by
# tiny's wide form against the pair, then its timing); test_cuda quick / thresholds /
# random 1000 / no-pdl thresholds and cuda_check (random knobs) with three sanitizers in
# parallel; then, alone on the GPU, the decode bench of every preset, base and new, twice,
# alternating.
# The base tarball is not committed; make it first, here:
#   git archive --format=tar.gz -o dev/runs/run13/base-ee0ec4a.tgz ee0ec4a
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab13}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn; BB=/tmp/bb; SB=/tmp/base
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
mkdir -p $SB && tar xzf dev/runs/run13/base-ee0ec4a.tgz -C $SB
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j10 >> $O/build.log 2>&1 ) &
( cmake -S $SB -B $BB -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build_base.log 2>&1 && cmake --build $BB -j6 --target moeroute_cli >> $O/build_base.log 2>&1 ) &
wait
test -x $B/tests/gpu/test_cuda || { tail -30 $O/build.log; exit 1; }
NV="nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common"
$NV dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1 &
$NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1 &
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
timeout 90 $B/wide_lab --tiny > $O/tiny_wide.log 2>&1; echo "rc=$?" >> $O/tiny_wide.log
TC=$B/tests/gpu/test_cuda
( for g in "--quick" "--group thresholds" "--group random --configs 1000" "--no-pdl --group thresholds" "--group special"; do echo "== $g"; timeout 100 $TC $g 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"; done > $O/tests.log ) &
( timeout 100 $B/cuda_check --configs 1500 --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log ) &
( SANITIZE_TOOLS="memcheck racecheck_pdl synccheck" SANITIZE_TIMEOUT=110 bash bench/sanitize.sh $B $O/sanitize.log > /dev/null 2>&1 ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
for r in 1 2; do
  timeout 40 $BB/tools/moeroute bench --backend cuda --format csv > $O/bench_base$r.csv 2>> $O/bench.err
  timeout 40 $B/tools/moeroute bench --backend cuda --format csv > $O/bench_new$r.csv 2>> $O/bench.err
done
echo "total $((SECONDS-T0)) s" >> $O/env.log
tar czf $O/logs.tgz -C $O build.log build_base.log sanitize.log cuda_check.log bench.err 2>/dev/null
tail -3 $O/cuda_check.log; cat $O/tests.log; sed -n '/verdicts/,$p' $O/sanitize.log
grep -E "check:|MISMATCH" $O/tiny_wide.log | head; sed -n '/kernel metric/,$p' $O/tiny_wide.log
paste -d, <(cut -d, -f1,2,9,12 $O/bench_base1.csv) <(cut -d, -f9,12 $O/bench_new1.csv) <(cut -d, -f9 $O/bench_base2.csv) <(cut -d, -f9,21 $O/bench_new2.csv) | head -110
cat $O/env.log
