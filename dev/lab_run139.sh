#!/bin/bash
# Device call 139 (session 44): first dev/lab_run138.sh's probe of v49 (where the rows form loses: wide_lab
# --trows-probe and the SASS counts, from the carried build-probe/wide_lab.xz; alone on the GPU, before the build),
# then a results run of main (v47's exception only while T*k <= 16384, not yet run on a device; test_cuda's pair
# 2048 / 2049; v49's rows form, off, drawn by cuda_check) with cuda_check --gxclear (GXC_CHECK=60).
# Usage on the device, repo root, carry ["build-probe/wide_lab.xz"]: export C=<sha>; bash dev/lab_run139.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
[ -f build-probe/wide_lab.xz ] && timeout 100 bash dev/lab_run138.sh
echo "== probe done at $SECONDS s; the results run"
COMMIT=${C:-?} CTEST_S=200 LARGE_S=90 SANITIZE_S=120 SCALING_S=80 BENCH_S=60 CUDA_CHECK=200 GXC_CHECK=60 bash bench/run_device_results.sh
echo "== all done at $SECONDS s"
