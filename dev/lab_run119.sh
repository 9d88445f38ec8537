#!/bin/bash
# Device call 119 (session 39; written, not run: the device time went to failed starts): v45b's lab form (gx.cu
# MR_GX_PAIR_RULE, off by default; built here with -DMR_GX_PAIR_RULE=1: gx for 16 <= E <= 256 at 256 <= T <= 4096
# wherever no one-launch decode sort fits, i.e. where route is not the pair), after results run 67 (d1d214a, every check passed). The rule
# changes no point of the results run's sweeps (GPT-OSS-120B T = 256 stays the pair; the other sweep points in gx's range
# were gx already), so this call runs the GPU suite (test_cuda full, --no-pdl's thresholds group) with the
# rule (--no-pdl: the thresholds group only, for device time), then gxs_lab --bounds at the new edges: DBRX (E = 16) and GPT-OSS-20B (E = 32) from T = 257 to 4096, Qwen1.5-MoE
# at 264 / 288 and GPT-OSS-120B at 257 (just above the pair's T*k = 1024). (Trimmed to ~300 s after
# failed starts left 443 s of device time: no memcheck, no Mixtral.) Expected: test_cuda 4663 cases, --no-pdl thresholds 354, 0 failures; auto = gx faster than "before" at every new edge.
# If it passes: MR_GX_PAIR_RULE 1 in gx.cu (entry.cu's header and design.md 37 with it).
# Usage on the device, repo root: bash dev/lab_run119.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-pair
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_FLAGS=-DMR_GX_PAIR_RULE=1 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target moeroute_static test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git log -1 --format='commit %h %s' 2>/dev/null | cut -c1-80
( nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -DMR_GX_PAIR_RULE=1 -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/gxs_build.log 2>&1 ) &
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "== test_cuda (full) at $SECONDS s"; timeout 170 $T > $OUT/full.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/full.log | head -5; tail -1 $OUT/full.log
echo "== test_cuda --no-pdl --group thresholds at $SECONDS s"; timeout 90 $T --no-pdl --group thresholds > $OUT/nopdl.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/nopdl.log | head -5; tail -1 $OUT/nopdl.log
wait
if [ $SECONDS -lt 320 ] && [ -x $B/gxs_lab ]; then
  echo "== gx's edges (gxs_lab --bounds) at $SECONDS s"
  timeout 30 $B/gxs_lab --bounds --models dbrx,gpt-oss-20b --ts 257,512,2048,4096 2>&1
  timeout 20 $B/gxs_lab --bounds --models qwen1.5-moe --ts 264,288 2>&1
  timeout 15 $B/gxs_lab --bounds --models gpt-oss-120b --ts 257 2>&1
else tail -5 $OUT/gxs_build.log; fi
echo "== all done at $SECONDS s"
