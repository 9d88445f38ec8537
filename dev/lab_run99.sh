#!/bin/bash
# Device call 99 (session 33): the two rules that lab call 98 (H100, dev/runs/run98) measured, in main's default now:
#   - tiny.cu's cluster form with C = 16 (a non-portable cluster) for the wide rows with E <= 256 at T = 9 - 16;
#   - v35, grouped sigmoid rows by segments (gate.cu mr_gate_sigseg_on) from T = 16384, E <= 256, k <= 8.
# 1. wide_lab --tcl from T = 8 on the four wide-row presets (the bits of every C against the route without the form,
#    the library's rule asked case by case; then the kernel metric, this card);
# 2. its quick set at T = 16 (C = 16 and 8) under memcheck and synccheck (racecheck hangs in cluster kernels, design 34);
# 3. gxs_lab --gatefilt for grouped DeepSeek-R1 at T = 8192 / 16384 (v35's bound, word for word and timed).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run99.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab > $OUT/lab/wide_build.log 2>&1
TCL_SHAPES=${TCL_SHAPES-deepseek-r1,kimi-k2,glm-4.5,minimax-m2} TCL_TMIN=${TCL_TMIN-8} timeout ${TCL_S:-100} $B/wide_lab --tcl > $OUT/lab/tcl.log 2>&1
echo "rc=$?" >> $OUT/lab/tcl.log
grep -E "check:|MISMATCH|rc=" $OUT/lab/tcl.log | head -5
grep -E "^(deepseek-r1|kimi-k2|glm-4.5|minimax-m2) " $OUT/lab/tcl.log | head -40
for t in memcheck synccheck; do
  TCL_SHAPES=deepseek-r1,glm-4.5 TCL_TMIN=9 timeout ${SAN_S:-60} compute-sanitizer --tool $t --error-exitcode 9 \
    $B/wide_lab --tcl --no-time --quick > $OUT/lab/tcl_$t.log 2>&1
  echo "rc=$?" >> $OUT/lab/tcl_$t.log; echo "== tcl $t"; grep -E "check:|ERROR SUMMARY|rc=" $OUT/lab/tcl_$t.log | head -4
done
timeout ${GF_S:-50} $B/gxs_lab --gatefilt --models deepseek-r1 --ts ${GTS:-8192,16384} > $OUT/lab/gatefilt_grouped.log 2>&1
echo "rc=$?" >> $OUT/lab/gatefilt_grouped.log; grep -E "gate alone|FAIL|MISMATCH|rc=|failure" $OUT/lab/gatefilt_grouped.log | sed -E 's/  +/ /g'
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
