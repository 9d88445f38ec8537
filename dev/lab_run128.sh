#!/bin/bash
# Device call 128 (session 42): v47, route WITH a moe_buf by gx with the clear inside gx's launch (gx.cu, knob
# gx_clear; perf-log v47), against the paths with a moe_buf and the clear after gx (v25), in one build of the tree.
# Prediction (H100, DeepSeek-R1 softmax, kernel metric, route + buf / a memset of the same moe_buf): T = 4096 1.42
# (results run 70) -> 1.05 - 1.15 (the routing, ~9 us alone, under the clear's ~19 us if its loads are not held up
# more than ~2x by the clear's stores); T = 1024 - 2048 (memset ~5 - 10 us, routing ~6.3 - 7) 1.3 - 1.6 -> ~1.1 - 1.3.
# gx_clear 2 (the clearing warps after their CTA's gating) within 0.3 us of 1 at T = 4096, better where the gating is
# a larger share (T <= 1024).
# Runs: dev/cuda_check 200 (gx_clear from the shape) while gxs_lab builds; gxs_lab --gxclear (checks with and without
# a mask: every output word for word against the paths before, the CPU sort, moe_buf zero; then the kernel metric);
# memcheck / racecheck / synccheck of its check; then, from a carried binary (build-probe/gxs_lab.xz, made here by
# `bash dev/build_probe.sh`), gx's probes (targets.md 0l, L1).
# Usage on the device, repo root (carry ["build-probe/gxs_lab.xz"]): bash dev/lab_run128.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"
( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check > $OUT/cc_build.log 2>&1 &&
  timeout 200 $B/cuda_check --configs 200 --no-time > $OUT/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/cuda_check.log ) &
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1 || tail -5 $OUT/gxs_build.log
if [ -x $B/gxs_lab ]; then
  echo "== v47 checks at $SECONDS s"
  timeout 60 $B/gxs_lab --gxclear --no-time --models deepseek-r1-softmax,gpt-oss-120b,dbrx --ts 256,1024,4096 2>&1 | grep -v " ok$"
fi
wait
echo "== cuda_check at $SECONDS s"; grep -E "^check:|rc=" $OUT/cuda_check.log; grep -E "FAIL" $OUT/cuda_check.log | head -5
if [ -x $B/gxs_lab ]; then
  echo "== v47 timing at $SECONDS s"
  timeout 70 $B/gxs_lab --gxclear --no-check --models deepseek-r1-softmax,gpt-oss-120b --ts 256,512,1024,2048,4096 2>&1
  timeout 45 $B/gxs_lab --gxclear --no-check --models qwen3-235b,olmoe,dbrx,gpt-oss-20b --ts 1024,4096 2>&1
  echo "== sanitizers of v47's check at $SECONDS s"
  for t in memcheck racecheck synccheck; do
    echo "-- $t"; timeout 60 compute-sanitizer --tool $t --error-exitcode 9 $B/gxs_lab --gxclear --quick 2>&1 | tail -2
  done
fi
if [ -f build-probe/gxs_lab.xz ] && [ $SECONDS -lt 480 ]; then
  xz -d -k -T4 build-probe/gxs_lab.xz && chmod +x build-probe/gxs_lab && echo "== probes at $SECONDS s ($(cat build-probe/TREE 2>/dev/null))" &&
    timeout 90 build-probe/gxs_lab --gx-probes --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
fi
echo "== all done at $SECONDS s"
