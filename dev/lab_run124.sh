#!/bin/bash
# Device call 124 (session 41): v46d and v46e against v46 and the grid barrier, one build of main (perf-log v46d, v46e).
#  - v46d (the default's flagged form, on at G <= 32; gx_flag = 1 forces it at any G): the rows not landed yet are
#    all loaded again together each round, in place of v46's per-row repeat loops (gx_flag = 2 keeps v46's form).
#  - v46e (gx_flag = 3): warp 0 polls the first 16 bytes of every row (5 loads per lane, all in flight), then a
#    __syncthreads, then v46d's loads: 32 pollers per CTA on the hot lines instead of 256.
# Prediction: v46d within 0.1 us of v46 at G <= 32 and G = 64 (the serial repeats cost at most a round trip per row
# that landed late); v46e at or below the barrier at G = 64 - 128 (-0.1 to -0.4 us), within 0.1 of v46d at G <= 32.
# Runs: test_cuda full (default: v46d at G <= 32; expected 4663 / 0) and dev/cuda_check 200 (gx_flag from the shape:
# v46d / v46 / v46e at any G) while gxs_lab builds; then gxs_lab --bounds alone on the GPU (every form's words against
# auto's, auto's against the CPU sort, then the kernel metric); then memcheck and racecheck of gxs_lab's check.
# Usage on the device, repo root: bash dev/lab_run124.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"
( nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1 ) &
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $OUT/cc_build.log 2>&1 &&
  timeout 200 $B/cuda_check --configs 200 --no-time > $OUT/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/cuda_check.log ) &
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "== test_cuda (full) at $SECONDS s"; timeout 230 $T > $OUT/full.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/full.log | head -8; tail -1 $OUT/full.log
wait
echo "== cuda_check at $SECONDS s"; grep -E "^check:|rc=" $OUT/cuda_check.log; grep -E "FAIL" $OUT/cuda_check.log | head -5
if [ -x $B/gxs_lab ]; then
  echo "== gx's forms (gxs_lab --bounds) at $SECONDS s"
  timeout 60 $B/gxs_lab --bounds --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
  timeout 45 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 512,2048,4096 2>&1
  echo "== memcheck / racecheck of gx's forms at $SECONDS s"
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gxs_lab --bounds --no-time --models deepseek-r1-softmax,gpt-oss-20b --ts 512,2048 2>&1 | tail -3
  [ $SECONDS -lt 470 ] && timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $B/gxs_lab --bounds --no-time --models deepseek-r1-softmax --ts 2048 2>&1 | tail -3
else tail -5 $OUT/gxs_build.log; fi
echo "== all done at $SECONDS s"
