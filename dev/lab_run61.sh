#!/bin/bash
# Device call 61 (session 24): the results run of main with gx (v22: gx.cu, route in one cooperative
# launch over the grid at 1024 <= T <= 4096 for PACKED rows without moe_buf) and the wide L1's new bound,
# then memcheck / racecheck / synccheck on test_cuda's thresholds group up to T = 4097 (gx's pairs at
# T = 1023 / 1024 and 4096 / 4097 among them: E = 256 / 128 / 160 fp16 / 64, with and without a mask).
# gx's automatic rule is off in the library until this run passes: set gx.cu's MR_GX_AUTO to 1 in the
# commit this runs (session 24 had no device time left to run it).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run61.sh
COMMIT=${COMMIT:-?} CTEST_S=150 LARGE_S=100 SANITIZE_S=110 SCALING_S=130 BENCH_S=80 CUDA_CHECK=600 \
  bash bench/run_device_results.sh > $OUT/summary.txt 2>&1
tail -45 $OUT/summary.txt
for t in memcheck racecheck synccheck; do
  ( timeout ${GXSAN_S:-90} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 build-dev/tests/gpu/test_cuda \
      --group thresholds --max-tokens 4097 > $OUT/gx_$t.txt 2>&1; echo "rc=$?" >> $OUT/gx_$t.txt ) &
done
wait
for t in memcheck racecheck synccheck; do echo "== $t"; grep -E "passed|SUMMARY|rc=" $OUT/gx_$t.txt | tail -3; done > $OUT/gx_sanitize.log
rm -f $OUT/gx_*.txt; cat $OUT/gx_sanitize.log
