#!/bin/bash
# Device call 64 (session 25): results run 35 of main with gxs's measured rule (k >= 8, T*k >= 327680; lab call
# 63 found gxs's floor ~9.5 us and wins only there), then dev/gxs_lab.cu again (its checks with the legacy-stream
# poison fixed; gxs and the paths before it timed, and gxs's phases by its probes), then memcheck / racecheck /
# synccheck on gxs_lab --quick and racecheck on test_cuda's thresholds group up to T = 4097 (gx's pairs; call 63's
# ran out of time at 80 s).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run64.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
COMMIT=${COMMIT:-?} CTEST_S=150 LARGE_S=100 SANITIZE_S=110 SCALING_S=130 BENCH_S=80 CUDA_CHECK=400 \
  bash bench/run_device_results.sh > $OUT/summary.txt 2>&1
tail -42 $OUT/summary.txt
echo "results run done at $((SECONDS-T0)) s"
mkdir -p $OUT/lab
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs.log 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/lab/gxs.log
timeout ${GXS_S:-100} $B/gxs_lab --probes --ts 256,1024,4096,16384,65536 >> $OUT/lab/gxs.log 2>&1; echo "gxs rc=$?" >> $OUT/lab/gxs.log
echo "gxs lab done at $((SECONDS-T0)) s"
grep -vE "^check .* ok$" $OUT/lab/gxs.log | tail -32
for t in memcheck racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${SAN_S:-150} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
( timeout ${SAN_S:-150} compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 10 $B/tests/gpu/test_cuda \
    --group thresholds --max-tokens 4097 --no-cluster > $OUT/lab/gx_racecheck.log 2>&1; echo "rc=$?" >> $OUT/lab/gx_racecheck.log ) &
wait
{ for t in memcheck racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done
  echo "== gx racecheck: $(grep -E "passed|SUMMARY|rc=" $OUT/lab/gx_racecheck.log | tail -3 | tr '\n' ' ')"; } | tee $OUT/lab/sanitize_gx.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
