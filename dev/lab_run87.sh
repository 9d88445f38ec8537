#!/bin/bash
# Device call 87 (session 30): targets.md L6, the fp32-key rows' gate kernel at large T, measured before a change:
# 1. gxs_lab --gatewide (lab_run86's step, never run: the default warp-per-row kernel against the wide kernel forced,
#    topk word for word, then the gate alone's kernel metric) for Kimi-K2, grouped DeepSeek-R1, GLM-4.5, MiniMax-M2;
# 2. ncu of the warp-per-row gate kernel (Kimi-K2 and grouped DeepSeek-R1, T = 32768) and of the softmax segment
#    kernel (DeepSeek-R1 softmax, same T) for comparison: speed of light, warp states, occupancy, instructions,
#    scheduler; the Kimi-K2 report's per-instruction page (stall samples by SASS line) as CSV.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run87.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${GW_S:-60} $B/gxs_lab --gatewide --models ${MODELS:-kimi-k2,deepseek-r1,glm-4.5,minimax-m2} \
  --ts ${TS:-1024,4096,16384,65536} > $OUT/lab/gatewide.log 2>&1; echo "rc=$?" >> $OUT/lab/gatewide.log
cat $OUT/lab/gatewide.log
NCU="ncu --clock-control none --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis"
for m in kimi-k2 deepseek-r1; do
  echo "=== $m mr_gate_kernel T=32768" >> $OUT/lab/ncu.log
  timeout 60 $NCU -k regex:mr_gate_kernel $B/gxs_lab --gatewide --models $m --ts 32768 >> $OUT/lab/ncu.log 2>&1
  echo "rc=$?" >> $OUT/lab/ncu.log
done
echo "=== deepseek-r1-softmax mr_gate_seg_kernel T=32768" >> $OUT/lab/ncu.log
timeout 60 $NCU -k regex:mr_gate_seg_kernel $B/gxs_lab --gatewide --models deepseek-r1-softmax --ts 32768 >> $OUT/lab/ncu.log 2>&1
echo "rc=$?" >> $OUT/lab/ncu.log
timeout 90 ncu --clock-control none --launch-count 1 --set full --import-source no -k regex:mr_gate_kernel -o $OUT/lab/kimi \
  $B/gxs_lab --gatewide --models kimi-k2 --ts 32768 > $OUT/lab/ncu_full.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_full.log
timeout 60 ncu --import $OUT/lab/kimi.ncu-rep --page source --csv --print-source sass > $OUT/lab/kimi_sass.csv 2>> $OUT/lab/ncu_full.log
echo "rc=$?" >> $OUT/lab/ncu_full.log
grep -E "^===|rc=|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Instructions  |Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Memory Throughput|Compute \(SM\)|Block Limit Reg|Executed Ipc A|One or More|Stall" \
  $OUT/lab/ncu.log | head -120
tail -5 $OUT/lab/ncu_full.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
