#!/bin/bash
# Device call 94 (written in session 31, not yet run): perf-log v33's open questions (targets.md next call 0):
# 1. gxs_lab --gatefilt for the sigmoid presets lab call 93 did not time (MiniMax-M2: E = 256, 16 elements on every
#    segment lane; Llama-4 Maverick: E = 128, k = 1) and Kimi-K2 between its measured points (T = 8192, 32768), the
#    four forms word for word, then timed (main's rule takes the segments only for 256 < E <= 384 from T = 16384);
# 2. ncu of the segment kernel and of the warp-per-row approximate form, Kimi-K2 T = 32768 (instructions per row,
#    registers, occupancy, issue), to place v33's miss of its prediction (81.84 us at 65536 against 45 - 55).
# 3. (added in session 32) the segment kernel's SASS page under ncu --set full, as CSV (sigseg_sass.csv.gz).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run94.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${GF_S:-150} $B/gxs_lab --gatefilt --models ${GMODELS:-minimax-m2,llama4-maverick} \
  --ts ${GTS:-1024,4096,16384,65536} > $OUT/lab/gatefilt.log 2>&1; echo "rc=$?" >> $OUT/lab/gatefilt.log
timeout 60 $B/gxs_lab --gatefilt --models kimi-k2 --ts 8192,32768 >> $OUT/lab/gatefilt.log 2>&1
echo "rc=$?" >> $OUT/lab/gatefilt.log; cat $OUT/lab/gatefilt.log
NCU="ncu --clock-control none --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats"
# --gatefilt's check launches the gate kernel once per form (merge, filter, approx, seg) on random rows first:
# skip 2 for the approximate form, 3 for the segments
for skip in 2 3; do
  timeout 60 $NCU -k regex:"mr_gate_filt_kernel|mr_gate_sigseg_kernel|mr_gate_kernel" --launch-skip $skip \
    $B/gxs_lab --gatefilt --no-time --models kimi-k2 --ts 32768 > $OUT/lab/ncu_$skip.log 2>&1
  echo "rc=$?" >> $OUT/lab/ncu_$skip.log
  grep -E "mr_gate|rc=|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy" \
    $OUT/lab/ncu_$skip.log | head -12
done
# 3. (session 32) the segment kernel's per-instruction page: --set full of skip 3, its SASS source page as CSV
timeout 90 ncu --clock-control none --launch-count 1 --launch-skip 3 --set full --import-source no \
  -k regex:"mr_gate_filt_kernel|mr_gate_sigseg_kernel|mr_gate_kernel" -o $OUT/lab/sigseg \
  $B/gxs_lab --gatefilt --no-time --models kimi-k2 --ts 32768 > $OUT/lab/ncu_full.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_full.log
timeout 60 ncu --import $OUT/lab/sigseg.ncu-rep --page source --csv --print-source sass > $OUT/lab/sigseg_sass.csv 2>> $OUT/lab/ncu_full.log
echo "rc=$?" >> $OUT/lab/ncu_full.log; gzip -f $OUT/lab/sigseg_sass.csv; rm -f $OUT/lab/sigseg.ncu-rep; tail -3 $OUT/lab/ncu_full.log
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
