#!/bin/bash
# Device call 137 (session 44): v49, tiny.cu's rows form (lab knob tiny_rows; perf-log v49): T = 2 .. 4 rows of 16-bit
# softmax gated by one warp side by side, the layout from its registers, no barrier. First its correctness:
# wide_lab --trows's bits (tiny_rows 1 and 2 against the default route, odd E and the presets, five input kinds), then
# cuda_check --rows (300 cases that the form can take, both layouts, masks, PDL as drawn) beside the default draws
# (200, tiny_rows among them), and wide_lab --trows --quick under memcheck and racecheck; then, alone on the GPU, the
# timing table (kernel and eager metrics, default / on, T = 2 .. 4) and test_cuda's quick group with the knob off.
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run137.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${C:-?}"; date -u; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
LIB=$(find $B -name libmoeroute_static.a -o -name libmoeroute.a | head -1)
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $LIB -o $B/cuda_check >> $OUT/b.log 2>&1 &
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $LIB -o $B/wide_lab >> $OUT/b.log 2>&1 &
wait
echo "built at $SECONDS s ($LIB)"; ls $B/cuda_check $B/wide_lab || { tail -20 $OUT/b.log; exit 1; }
echo "== wide_lab --trows --no-time (bits)"
timeout 100 $B/wide_lab --trows --no-time > $OUT/trows_bits.log 2>&1; echo "rc=$?" >> $OUT/trows_bits.log
grep -E "check:|MISMATCH|rc=" $OUT/trows_bits.log | head -12
echo "== cuda_check --rows 300, default 200; memcheck / racecheck of --trows --quick at $SECONDS s"
( timeout 150 $B/cuda_check --rows --seed 5 --configs 300 --no-time > $OUT/cc_rows.log 2>&1; echo "rc=$?" >> $OUT/cc_rows.log ) &
( timeout 150 $B/cuda_check --seed 6 --configs 200 --no-time > $OUT/cc_def.log 2>&1; echo "rc=$?" >> $OUT/cc_def.log ) &
( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --trows --no-time --quick > $OUT/trows_memcheck.log 2>&1; echo "rc=$?" >> $OUT/trows_memcheck.log ) &
( timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/wide_lab --trows --no-time --quick > $OUT/trows_racecheck.log 2>&1; echo "rc=$?" >> $OUT/trows_racecheck.log ) &
wait
for f in cc_rows cc_def; do echo "-- $f"; grep -E "^check:|rows form|rc=" $OUT/$f.log; grep -E "FAIL" $OUT/$f.log | head -5; done
for f in trows_memcheck trows_racecheck; do echo "-- $f"; grep -E "check:|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$f.log | head -6; tail -1 $OUT/$f.log; done
echo "== wide_lab --trows (timing) at $SECONDS s"
timeout ${TIME_S:-120} $B/wide_lab --trows > $OUT/trows.log 2>&1; echo "rc=$?" >> $OUT/trows.log
grep -E "check:|MISMATCH|rc=" $OUT/trows.log | head -8; grep -E "^(us,|shape|ds-|qwen|gpt|olmoe|e1024)" $OUT/trows.log
tar czf $OUT/lab_logs.tgz -C $OUT b.log trows_bits.log cc_rows.log cc_def.log trows_memcheck.log trows_racecheck.log 2>/dev/null && rm -f $OUT/b.log $OUT/trows_bits.log $OUT/cc_rows.log $OUT/cc_def.log $OUT/trows_memcheck.log $OUT/trows_racecheck.log
echo "== all done at $SECONDS s"
