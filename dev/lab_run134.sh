#!/bin/bash
# Device call 134 (session 43): a results run of main (v47's final rule, not yet run on a device; v48's lab form, off,
# drawn by cuda_check) with cuda_check --gxclear (GXC_CHECK=60), then v48 (tiny_op_own 2, perf-log v48):
# wide_lab --tent (bits against the default route, then the kernel and eager metrics at T = 2 - 8), and under memcheck
# its quick check and 6 cuda_check --gxclear cases.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run134.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 GXC_CHECK=60 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/wl_build.log 2>&1 || tail -5 $OUT/wl_build.log
echo "== wide_lab --tent"
timeout 150 $B/wide_lab --tent > $OUT/tent.log 2>&1; echo "rc=$?" >> $OUT/tent.log
grep -E "check:|MISMATCH|rc=" $OUT/tent.log | head -12; sed -n '/kernel metric/,$p' $OUT/tent.log
echo "== memcheck: tent quick, cuda_check --gxclear 6 at $SECONDS s"
( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tent --no-time --quick > $OUT/tent_memcheck.log 2>&1; echo "rc=$?" >> $OUT/tent_memcheck.log ) &
( timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/wide_lab --tent --no-time --quick > $OUT/tent_racecheck.log 2>&1; echo "rc=$?" >> $OUT/tent_racecheck.log ) &
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/cuda_check --gxclear --seed 4 --configs 6 --no-time > $OUT/cc_memcheck.log 2>&1; echo "rc=$?" >> $OUT/cc_memcheck.log
wait
for f in tent_memcheck tent_racecheck cc_memcheck; do echo "-- $f"; tail -3 $OUT/$f.log; done
tar czf $OUT/lab_logs.tgz -C $OUT tent_memcheck.log tent_racecheck.log cc_memcheck.log wl_build.log 2>/dev/null && rm -f $OUT/tent_memcheck.log $OUT/tent_racecheck.log $OUT/cc_memcheck.log $OUT/wl_build.log
echo "== all done at $SECONDS s"
