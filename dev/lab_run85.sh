#!/bin/bash
# Device call 85 (session 29): v30's final rule in the tree (gx.cu mr_gxs_auto: the sort by gxs from T*k = 49152 for
# E <= 256, 16384 for 256 < E <= 384, 20480 above; route's rows not segmented from 16384 / 30720; ctm.cu
# mr_cuda_ctm_route_sort_takes: segmented rows with E >= 128 above T*k = 16384 take large.cu's L1 by segments instead of
# the gate kernel + ctm's sort). gxs_lab --bounds on both sides of the changed bounds (checks and times, as lab call
# 84); then a whole results run of the tree in $OUT/r.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run85.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
L=$OUT/lab/bounds.log
for spec in "gpt-oss-120b 4096,4097,6144,6145" "deepseek-r1-softmax 2048,6143,6144" "kimi-k2 2047,2048"; do
  set -- $spec
  timeout 60 $B/gxs_lab --bounds --models $1 --ts $2 >> $L 2>&1; echo "rc=$? ($1)" >> $L
done
grep -E "^bounds [a-z]|FAIL|MISMATCH|WRONG|failure|rc=" $L
echo "bounds done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
mkdir -p /tmp/r
OUT=/tmp/r CTEST_S=${CTEST_S:-200} LARGE_S=${LARGE_S:-100} SANITIZE_S=${SANITIZE_S:-110} SCALING_S=${SCALING_S:-130} \
  BENCH_S=${BENCH_S:-80} CUDA_CHECK=${CUDA_CHECK:-400} bash bench/run_device_results.sh > /tmp/r/summary.txt 2>&1
cp /tmp/r/summary.txt $OUT/; tar czf $OUT/results.tgz -C /tmp r
echo "results run done at $((SECONDS-T0)) s"
