#!/bin/bash
# Device call 117 (session 38; written, not run): v44's lab form (gate.cuh MR_SOFTMAX_SUM_CANON: the 16-bit softmax
# denominator in one summation order in every row form, docs/perf-log.md v44), built with -DMR_SOFTMAX_SUM_CANON=1 into
# its own build folder. With it, gx.cu's rule takes rows without renormalize at every T of its range, so the suite's
# route-vs-gate bit checks (fused against unfused) test the claim: test_cuda (full) and test_cuda --no-pdl, then
# gxs_lab --bounds for OLMoE and Qwen1.5-MoE (no renormalize) at T = 512 / 1024, whose checks compare every route form's
# words (the paths before gx, gx forced) with auto's: under v44 they must agree (lab calls 114 - 115 had 1 - 2 ulp
# apart without it). Then the default build's numbers are unaffected (the default's PTX is unchanged: session 38
# compared gate.cu's and gx.cu's PTX before and after).
# Usage on the device, repo root: bash dev/lab_run117.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-canon
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_FLAGS=-DMR_SOFTMAX_SUM_CANON=1 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "== test_cuda (full) at $SECONDS s"; timeout 200 $T > $OUT/full.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/full.log | head -5; tail -1 $OUT/full.log
echo "== test_cuda --no-pdl at $SECONDS s"; timeout 150 $T --no-pdl > $OUT/nopdl.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/nopdl.log | head -5; tail -1 $OUT/nopdl.log
if [ $SECONDS -lt 520 ]; then
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -DMR_SOFTMAX_SUM_CANON=1 -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab 2>&1 &&
    timeout 40 $B/gxs_lab --bounds --models olmoe,qwen1.5-moe --ts 512,1024 2>&1
fi
echo "== all done at $SECONDS s"
