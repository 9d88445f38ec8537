#!/bin/bash
# Device call 133 (session 43): a results run of main (ca1f02f: v47's final rule, not yet run on a device) with
# cuda_check --gxclear (GXC_CHECK=60, v47's shapes) beside the usual 200 drawn configurations; then 6 --gxclear
# cases under memcheck. Replaces dev/lab_run132.sh (never run): the full test_cuda under ctest holds its thresholds group.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run133.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 GXC_CHECK=60 bash bench/run_device_results.sh
echo "== results done at $SECONDS s"
echo "== cuda_check --gxclear under memcheck"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/cuda_check --gxclear --seed 4 --configs 6 --no-time > $OUT/cc_memcheck.log 2>&1; echo "rc=$?" >> $OUT/cc_memcheck.log
tail -3 $OUT/cc_memcheck.log
echo "== all done at $SECONDS s"
