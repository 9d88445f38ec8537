#!/bin/bash
# Device call 71 (for session 27): gx's lean grid barrier (knob gx_lean_bar now also reaches gx, v24b; not measured
# there) timed beside gxs's, and both checked: gxs_lab's checks (the lean form; its "before" route at T = 2048 is gx's
# lean form, compared word for word with gxs's and the CPU sort), its quick set under racecheck / synccheck, and the
# timing at T = 1024 - 4096 (gx's range) and 16384. Then flip gx.cu's MR_GX_LEAN_BAR to 1 and run a results run.
# Usage on the device, repo root: bash dev/lab_run71.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
mkdir -p $OUT/lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/lab/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/lab/build.log 2>&1 || { tail -30 $OUT/lab/build.log; exit 1; }
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs_build.log 2>&1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree: ${COMMIT:-?}"; } | tee $OUT/lab/env.log
echo "built at $((SECONDS-T0)) s"
timeout 60 $B/gxs_lab --no-check --ts 1024,2048,4096,16384 --models deepseek-r1-softmax,gpt-oss-120b > $OUT/lab/gxs_time.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_time.log
grep -E "^gxs |v24|rc=" $OUT/lab/gxs_time.log
( timeout 90 $B/gxs_lab --no-time > $OUT/lab/gxs_check.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_check.log ) &
for t in racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout 90 compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
wait
{ echo "== gxs checks: $(grep -E "gxs check|FAIL|rc=" $OUT/lab/gxs_check.log | tail -4 | tr '\n' ' ')"
  for t in racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done; } | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
