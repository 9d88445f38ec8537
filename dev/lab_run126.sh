#!/bin/bash
# Device call 126 (session 41; targets.md L1): where gx's route time goes, by phase, in its three exchange forms
# (the barrier, v46d, v46), from gxs_lab --gx-probes with the library built -DMR_GX_PROBES=1 (gx.cu: the route kernel
# returns at phase end N when the knob gx_probe says so; outputs wrong there, the whole call checked after).
# Two ways to run it:
#  - carried (a short call): build here first with `bash dev/build_probe.sh` (build-probe/gxs_lab.xz), then `run`
#    with carry ["build-probe/gxs_lab.xz"] and the command
#    `xz -d -k build-probe/gxs_lab.xz && bash dev/lab_run126.sh > $OUT/lab_summary.txt 2>&1`;
#  - on a bare machine it builds the same (~150 s).
# Prediction (DeepSeek-R1 softmax T = 1024, H100, whole ~6.2 us with v46d): prologue ~2.0 (the launch pair with its
# zeroing launch; the floor is ~1), gating +1.8 - 2.2, exchange +0.8 - 1.2 (v46d; +1.3 - 1.6 with the barrier), scan
# +0.3, placing +0.5 - 0.8.
export PATH=$PATH:/usr/local/cuda/bin
B=build-probe
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
if [ ! -x $B/gxs_lab ]; then
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_FLAGS=-DMR_GX_PROBES=1" > $OUT/b.log 2>&1 &&
    cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1 &&
    nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -DMR_GX_PROBES=1 -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab >> $OUT/b.log 2>&1 || { tail -20 $OUT/b.log; exit 1; }
  echo "built at $SECONDS s"
fi
timeout 100 $B/gxs_lab --gx-probes --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
[ $SECONDS -lt 150 ] && timeout 40 $B/gxs_lab --gx-probes --models dbrx,gpt-oss-20b --ts 512,2048 2>&1
echo "== all done at $SECONDS s"
