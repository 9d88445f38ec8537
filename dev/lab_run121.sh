#!/bin/bash
# Device call 121 (session 40): two lab forms in one build, -DMR_GX_PAIR_RULE=1 -DMR_GX_FLAG=1.
#  - v45b (gx.cu MR_GX_PAIR_RULE; session 39's lab call 119, never run): gx for 16 <= E <= 256 at 256 <= T <= 4096
#    wherever no one-launch decode sort fits.
#  - v46 (gx.cu MR_GX_FLAG, knob gx_flag): gx's count rows flagged in every byte over a matrix the zeroing launch clears,
#    polled by the readers, no grid barrier. Predicted: -0.6 to -1.2 us at every gx point (the barrier's arrival, spin
#    and the loads after it, ~0.7 + part of the 1.2 / 1.7 us of lab call 60's stamps, become one round of loads).
# Runs test_cuda full and --no-pdl's thresholds group with both on (expected 4663 / 354 cases, 0 failures; a test that
# hangs in the poll is cut by its timeout), then gxs_lab --bounds: every route form's words against auto's and the
# kernel metric of auto | gx (v46) | ... | gx-bar (gx with the barrier, gx_flag = -1).
# Usage on the device, repo root: bash dev/lab_run121.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
FL="-DMR_GX_PAIR_RULE=1 -DMR_GX_FLAG=1"
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON "-DCMAKE_CUDA_FLAGS=$FL" > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
( nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr $FL -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1 ) &
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "== test_cuda (full) at $SECONDS s"; timeout 200 $T > $OUT/full.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/full.log | head -8; tail -1 $OUT/full.log
wait
if [ -x $B/gxs_lab ]; then
  echo "== gx's forms (gxs_lab --bounds) at $SECONDS s"
  timeout 40 $B/gxs_lab --bounds --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,4096 2>&1
  timeout 40 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 257,512,2048,4096 2>&1
  timeout 20 $B/gxs_lab --bounds --models qwen1.5-moe --ts 264,288 2>&1
  timeout 15 $B/gxs_lab --bounds --models gpt-oss-120b --ts 257 2>&1
else tail -5 $OUT/gxs_build.log; fi
echo "== route + buf at gx's T, v46 then the barrier (gxs_lab --tail) at $SECONDS s"
timeout 30 $B/gxs_lab --tail --no-check --models deepseek-r1-softmax,gpt-oss-120b --ts 1024,4096 2>&1
timeout 30 $B/gxs_lab --tail --no-check --gx-flag -1 --models deepseek-r1-softmax,gpt-oss-120b --ts 1024,4096 2>&1
echo "== test_cuda --no-pdl --group thresholds at $SECONDS s"; timeout 90 $T --no-pdl --group thresholds > $OUT/nopdl.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/nopdl.log | head -5; tail -1 $OUT/nopdl.log
if [ $SECONDS -lt 480 ]; then
  echo "== memcheck of gx's forms at $SECONDS s"
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gxs_lab --bounds --no-time --models deepseek-r1-softmax --ts 1024 2>&1 | tail -4
fi
echo "== all done at $SECONDS s"
