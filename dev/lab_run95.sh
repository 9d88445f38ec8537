#!/bin/bash
# Device call 95 (session 32): perf-log v33b, the filter forms' rows without branches per element, measured side by
# side with the code before it (ebb68ed's gate.cuh, carried as build-old/gate.cuh: gxs_lab_old links a gate.cu object
# built with it ahead of the library, whose other objects are the same):
# 1. gxs_lab --gatefilt for Kimi-K2, GLM-4.5, MiniMax-M2 (the four forms word for word against the merge, then timed),
#    the new binary and the old one in turn at each model;
# 2. ncu of the segment kernel at Kimi-K2 T = 32768, new and old (launch-skip 3: --gatefilt's check runs each form
#    once first), summary sections; with FULL=1 also --set full of the new one and its SASS page as CSV;
# 3. memcheck of the new binary's --gatefilt check at T = 4096.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run95.sh > $OUT/lab_summary.txt 2>&1
mkdir -p /tmp/oldsrc && cp -r src/. /tmp/oldsrc/ && cp build-old/gate.cu* /tmp/oldsrc/cuda/ # (lab call 96: gate.cu too)
( /usr/local/cuda/bin/nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -DMOEROUTE_WITH_CUDA=1 -Iinclude \
    -I/tmp/oldsrc -I/tmp/oldsrc/common -c /tmp/oldsrc/cuda/gate.cu -o /tmp/gate_old.o > /tmp/old_gate.log 2>&1 ) &
OLDPID=$!
. dev/lab_gxs_prelude.sh
wait $OLDPID
( cat /tmp/old_gate.log; nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu /tmp/gate_old.o \
    $B/libmoeroute.a -o $B/gxs_lab_old ) > $OUT/lab/old_build.log 2>&1; echo "old build rc=$? at $((SECONDS-T0)) s"
for m in ${GMODELS:-kimi-k2,glm-4.5,minimax-m2}; do
  for bin in gxs_lab gxs_lab_old; do
    echo "== $bin $m" >> $OUT/lab/gatefilt.log
    timeout ${GF_S:-60} $B/$bin --gatefilt --models ${m} --ts ${GTS:-4096,16384,65536} >> $OUT/lab/gatefilt.log 2>&1
    echo "rc=$?" >> $OUT/lab/gatefilt.log
  done
done
grep -E "==|gate alone|FAIL|MISMATCH|rc=|failure" $OUT/lab/gatefilt.log | sed -E 's/  +/ /g'
echo "gatefilt done at $((SECONDS-T0)) s"
NCU="ncu --clock-control none --launch-count 1 --launch-skip 3 --section SpeedOfLight --section WarpStateStats \
 --section Occupancy --section LaunchStats --section InstructionStats --section SchedulerStats"
for bin in $([ "${NCU_S:-1}" = 1 ] && echo gxs_lab gxs_lab_old); do
  timeout 60 $NCU -k regex:"mr_gate_sigseg_kernel|mr_gate_filt_kernel|mr_gate_kernel" $B/$bin --gatefilt --no-time \
    --models kimi-k2 --ts 32768 > $OUT/lab/ncu_$bin.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_$bin.log
  echo "== ncu $bin"; grep -E "mr_gate|rc=|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible" \
    $OUT/lab/ncu_$bin.log | head -12
done
[ "${FULL:-0}" = 1 ] && timeout 90 ncu --clock-control none --launch-count 1 --launch-skip 3 --set full --import-source no \
  -k regex:"mr_gate_sigseg_kernel|mr_gate_filt_kernel|mr_gate_kernel" -o $OUT/lab/sigseg \
  $B/gxs_lab --gatefilt --no-time --models kimi-k2 --ts 32768 > $OUT/lab/ncu_full.log 2>&1; echo "rc=$?" >> $OUT/lab/ncu_full.log
[ "${FULL:-0}" = 1 ] && timeout 60 ncu --import $OUT/lab/sigseg.ncu-rep --page source --csv --print-source sass > $OUT/lab/sigseg_sass.csv 2>> $OUT/lab/ncu_full.log
[ "${FULL:-0}" = 1 ] && { echo "rc=$?" >> $OUT/lab/ncu_full.log; gzip -f $OUT/lab/sigseg_sass.csv; rm -f $OUT/lab/sigseg.ncu-rep; tail -2 $OUT/lab/ncu_full.log; }
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $B/gxs_lab --gatefilt --no-time \
  --models kimi-k2,glm-4.5 --ts 4096 > $OUT/lab/san_gf_memcheck.log 2>&1; echo "gatefilt memcheck rc=$?" | tee -a $OUT/lab/san_gf_memcheck.log
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
