#!/bin/bash
# Device call 100 (session 33): the ncu half of dev/lab_run98.sh (targets.md L6), plus v35's kernel:
#   - v34's `mr_gate_filt_kernel<BF16, 16, PACKED, 1>` (Qwen3-Next T = 32768; gxs_lab --gatefilt launches the merge
#     form first, then the filter: skip 1);
#   - v33b's segment kernel (Kimi-K2 T = 32768; skip 3: merge, filter, approx, then seg);
#   - v35's grouped segment kernel (grouped DeepSeek-R1 T = 32768; the same order, skip 3).
# Summary sections only. Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run100.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
NCU="ncu --clock-control none --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats"
K='regex:mr_gate_sigseg_kernel|mr_gate_filt_kernel|mr_gate_kernel'
timeout ${NCU_S:-50} $NCU --launch-skip 1 -k "$K" $B/gxs_lab --gatefilt --no-time --models qwen3-next --ts 32768 \
  > $OUT/lab/ncu_packed.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_packed.log
timeout ${NCU_S:-50} $NCU --launch-skip 3 -k "$K" $B/gxs_lab --gatefilt --no-time --models kimi-k2 --ts 32768 \
  > $OUT/lab/ncu_sigseg.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_sigseg.log
timeout ${NCU_S:-50} $NCU --launch-skip 3 -k "$K" $B/gxs_lab --gatefilt --no-time --models deepseek-r1 --ts 32768 \
  > $OUT/lab/ncu_sigseg_grouped.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_sigseg_grouped.log
for f in packed sigseg sigseg_grouped; do
  echo "== ncu $f"; grep -E "mr_gate|rc=|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible" \
    $OUT/lab/ncu_$f.log | head -10
done
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
