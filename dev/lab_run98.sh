#!/bin/bash
# Device call 98 (written in session 32, not yet run; targets.md next call 0):
# 1. wide_lab --tcl: tiny.cu's cluster form against the route without it (bits, then the kernel metric at
#    T = 1 - 32, every shape; the question: grouped DeepSeek-R1 at T = 9 - 16, where results runs 54 / 56 / 57 have
#    route 1.5 - 3 % above the chain at T = 12, and whether the wide rows' cluster bound should stop at T = 8 for
#    grouped rows; TCL_SHAPES limits the shapes, T = 9 - 14 each since 310c7bc);
# 2. ncu of v34's gate kernel (`mr_gate_filt_kernel<BF16, 16, PACKED, 1>`, Qwen3-Next T = 32768: --gatefilt's check
#    launches the merge form first, then the filter: skip 1) and of v33b's segment kernel (Kimi-K2 T = 32768, skip 3 as
#    lab_run95 did), summary sections; with FULL=1 also the segment kernel's SASS page as CSV.
# 3 - 4 (session 33): step 3 below, then v36's memset first against the other moe_buf forms (gxs_lab --tail). NCU_ON=0
# skips the ncu runs; TCL_TMIN limits --tcl's T (C = 16 since session 33).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run98.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1
TCL_SHAPES=${TCL_SHAPES-deepseek-r1,kimi-k2,glm-4.5,minimax-m2} TCL_TMIN=${TCL_TMIN-1} timeout ${TCL_S:-150} $B/wide_lab --tcl > $OUT/lab/tcl.log 2>&1
echo "rc=$?" >> $OUT/lab/tcl.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tcl.log | head -5
grep -E "^(deepseek-r1|kimi-k2|glm-4.5|minimax-m2|ds-softmax|gpt-oss-120b) " $OUT/lab/tcl.log | head -60
# 3. (v35, the lab form) grouped DeepSeek-R1 by segments: gxs_lab --gatefilt's fourth form, word for word against the
#    merge, then timed
timeout ${GF_S:-60} $B/gxs_lab --gatefilt --models deepseek-r1 --ts ${GTS:-4096,16384,65536} > $OUT/lab/gatefilt_grouped.log 2>&1
echo "rc=$?" >> $OUT/lab/gatefilt_grouped.log; grep -E "gate alone|FAIL|MISMATCH|rc=|failure" $OUT/lab/gatefilt_grouped.log | sed -E 's/  +/ /g'
# 4. (v36, session 33, knob clear_tail = 3) route + buf with the moe_buf cleared by a memset before the routing, against
#    the clear inside, the tail launch and auto, each checked word for word (gxs_lab --tail)
timeout ${TAIL_S:-100} $B/gxs_lab --tail --models ${TAIL_MODELS:-deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next} \
  --ts ${TAIL_TS:-4096,16384,32768,65536} > $OUT/lab/tail.log 2>&1
echo "rc=$?" >> $OUT/lab/tail.log; grep -E "^tail|FAIL|MISMATCH|WRONG|failure|rc=" $OUT/lab/tail.log | sed -E 's/  +/ /g'
if [ "${NCU_ON:-1}" = 1 ]; then
NCU="ncu --clock-control none --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
 --section LaunchStats --section InstructionStats --section SchedulerStats"
timeout 60 $NCU --launch-skip 1 -k regex:"mr_gate_filt_kernel|mr_gate_kernel" $B/gxs_lab --gatefilt --no-time \
  --models qwen3-next --ts 32768 > $OUT/lab/ncu_packed.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_packed.log
timeout 60 $NCU --launch-skip 3 -k regex:"mr_gate_sigseg_kernel|mr_gate_filt_kernel|mr_gate_kernel" $B/gxs_lab \
  --gatefilt --no-time --models kimi-k2 --ts 32768 > $OUT/lab/ncu_sigseg.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_sigseg.log
for f in packed sigseg; do
  echo "== ncu $f"; grep -E "mr_gate|rc=|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible" \
    $OUT/lab/ncu_$f.log | head -10
done
fi
if [ "${FULL:-0}" = 1 ]; then
  timeout 90 ncu --clock-control none --launch-count 1 --launch-skip 3 --set full --import-source no \
    -k regex:"mr_gate_sigseg_kernel|mr_gate_filt_kernel|mr_gate_kernel" -o $OUT/lab/sigseg $B/gxs_lab --gatefilt --no-time \
    --models kimi-k2 --ts 32768 > $OUT/lab/ncu_full.log 2>&1
  timeout 60 ncu --import $OUT/lab/sigseg.ncu-rep --page source --csv --print-source sass > $OUT/lab/sigseg_sass.csv 2>> $OUT/lab/ncu_full.log
  gzip -f $OUT/lab/sigseg_sass.csv; rm -f $OUT/lab/sigseg.ncu-rep
fi
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
