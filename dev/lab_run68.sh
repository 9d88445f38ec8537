#!/bin/bash
# Device call 68 (session 26): gxs's v24 forms (knobs gxs_place, gxs_xchg; perf-log v24, off by default).
# 1. build; 2. correctness in parallel: dev/gxs_lab.cu's checks (every form, every output word for word against
#    the paths before gxs and against the CPU sort, masks, duplicate and out-of-range ids), gxs_lab --quick under
#    memcheck / racecheck / synccheck, cuda_check 300 with the knobs drawn; 3. alone on the GPU: the timing of
#    each form, route with both, and the probes of the forms none and both (probe 5: no entry stores).
# Usage on the device, repo root: bash dev/lab_run68.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
mkdir -p $OUT/lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/lab/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/lab/build.log 2>&1 || { tail -30 $OUT/lab/build.log; exit 1; }
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs_build.log 2>&1 &
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $OUT/lab/build.log 2>&1 &
wait
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree: ${COMMIT:-?}"; } | tee $OUT/lab/env.log
echo "built at $((SECONDS-T0)) s"
( timeout ${CHK_S:-120} $B/gxs_lab --no-time > $OUT/lab/gxs_check.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_check.log ) &
for t in memcheck racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${SAN_S:-120} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
( timeout ${CHK_S:-120} $B/cuda_check --configs 300 --no-time > $OUT/lab/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/lab/cuda_check.log ) &
wait
{ echo "== gxs checks: $(grep -E "gxs check|FAIL|rc=" $OUT/lab/gxs_check.log | tail -4 | tr '\n' ' ')"
  for t in memcheck racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done
  echo "== cuda_check: $(grep -E "^check:|rc=" $OUT/lab/cuda_check.log | tr '\n' ' ')"; } | tee $OUT/lab/verdicts.log
echo "checks done at $((SECONDS-T0)) s"
timeout ${GXS_S:-150} $B/gxs_lab --no-check --probes --ts ${TS:-1024,4096,16384,32768,65536} > $OUT/lab/gxs_time.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_time.log
grep -vE "^check .* ok$" $OUT/lab/gxs_time.log | tail -70
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
