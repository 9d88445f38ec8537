#!/bin/bash
# Lab device call 25 (session 11): lab call 24 again for the part its harness cut (wide_lab's
# cases had route's workspace only; the reference sort of T*k > the mask-table bound asks for
# the general sort's): wide_lab --tmsort --no-time (bit for bit) plain and under memcheck /
# racecheck (--quick), then wide_lab --tmsort timing. The library's tests and cuda_check
# passed at the same kernels in lab call 24.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab25}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $O/wl_build.log 2>&1 || { tail -20 $O/wl_build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout 90 $B/wide_lab --tmsort --no-time > $O/tmsort_check.log 2>&1; echo "rc=$?" >> $O/tmsort_check.log ) &
for t in memcheck racecheck; do ( timeout 100 compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --tmsort --no-time --quick > $O/san_$t.txt 2>&1; echo "rc=$?" >> $O/san_$t.txt ) & done
wait
for t in memcheck racecheck; do echo "== $t"; tail -4 $O/san_$t.txt; done > $O/tmsort_sanitize.log; rm -f $O/san_*.txt
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 120 $B/wide_lab --tmsort > $O/tmsort.log 2>&1; echo "rc=$?" >> $O/tmsort.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
cd $O && tar czf lab25.tgz *.log
tail -3 $O/tmsort_check.log; cat $O/tmsort_sanitize.log; sed -n '/kernel metric/,$p' $O/tmsort.log; cat $O/env.log
