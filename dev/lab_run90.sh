#!/bin/bash
# Device call 90 (session 30): perf-log v31c, the gate kernel's grouped sigmoid rows (groups in whole lanes: grouped
# DeepSeek-R1) filtered on approximate keys when the kept groups are clear by the bound, and v31b's rule from T = 1024:
# 1. gxs_lab --gatefilt: the three forms word for word (random rows, then rows of ties, -inf, NaN / +inf, a hot
#    expert), then gate alone and route, each form, at T = 1024 - 65536;
# 2. the same check under compute-sanitizer memcheck and racecheck (T = 1024, 4100; no timing);
# 3. ncu of the approximate form, grouped DeepSeek-R1 T = 32768;
# 4. with RESULTS=1, a full results run of the tree at its tail (bench/run_device_results.sh).
# Usage on the device, repo root: COMMIT=<sha> RESULTS=1 bash dev/lab_run90.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${GF_S:-150} $B/gxs_lab --gatefilt --models ${MODELS:-deepseek-r1,kimi-k2,glm-4.5} \
  --ts ${TS:-1024,2048,4096,8192,16384,32768,65536} > $OUT/lab/gatefilt.log 2>&1; echo "rc=$?" >> $OUT/lab/gatefilt.log
cat $OUT/lab/gatefilt.log
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/gxs_lab --gatefilt --no-time \
    --models deepseek-r1,kimi-k2 --ts 1024,4100 > $OUT/lab/san_$tool.log 2>&1
  echo "$tool rc=$?" | tee -a $OUT/lab/san_$tool.log; tail -3 $OUT/lab/san_$tool.log
done
NCU="ncu --clock-control none --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats"
# launches per check: merge, filter, approx (random rows): the third is the approximate form
timeout 60 $NCU -k regex:mr_gate_kernel --launch-skip 2 $B/gxs_lab --gatefilt --no-time --models deepseek-r1 --ts 32768 \
  > $OUT/lab/ncu.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu.log
grep -E "mr_gate_kernel|rc=|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible|Compute \(SM\)" \
  $OUT/lab/ncu.log | head -30
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
if [ "${RESULTS:-0}" = 1 ]; then
  mkdir -p /tmp/r
  OUT=/tmp/r CTEST_S=${CTEST_S:-200} LARGE_S=${LARGE_S:-100} SANITIZE_S=${SANITIZE_S:-110} SCALING_S=${SCALING_S:-130} \
    BENCH_S=${BENCH_S:-80} CUDA_CHECK=${CUDA_CHECK:-400} bash bench/run_device_results.sh > /tmp/r/summary.txt 2>&1
  cp /tmp/r/summary.txt $OUT/; tar czf $OUT/results.tgz -C /tmp r
  echo "results run done at $((SECONDS-T0)) s"
fi
