#!/bin/bash
# Device call 111 (session 37; written after lab call 109, `dev/runs/run109/`): L5's slow state at DeepSeek-R1 softmax
# T = 128 without moe_buf survived CTAs added to the mid sort's grid and more routing CTAs. Next candidate: the gate
# kernel's grid. At T <= 128 it launches one gating warp per CTA (128 CTAs of 64 threads at T = 128, about one per
# SM), at T > 128 four (T = 192: 48 CTAs, where route measured a steady 6.27). The mid sort's CTAs (1024 threads,
# 36 KB of shared memory) launched early by PDL may find no SM free of gate CTAs. Knob gate_live: 2 or 3 gating warps
# per CTA at T <= 128 (large_lab v6 variants glive2 = 32, glive3 = 33), at T = 128 (five processes), 96, 112 and 64,
# PDL on; T = 128 with PDL off. Every variant's outputs are checked bit for bit against auto's first.
# (lab call 110, dev/lab_run110.sh, asked for 4: above the kernels' 128-thread bound with the dry-run warp)
# Usage on the device, repo root: bash dev/lab_run111.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $OUT/b.log 2>&1 || { tail -20 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name --format=csv,noheader
V=32,33
{ for i in 1 2 3 4 5; do echo "== T=128 run $i"; timeout 40 $B/large_lab --v6-only 128 --v6-variant $V; done
  for t in 96 112 64; do echo "== T=$t"; timeout 40 $B/large_lab --v6-only $t --v6-variant $V; done
  echo "== T=128 PDL off"; MOEROUTE_PDL=0 timeout 40 $B/large_lab --v6-only 128 --v6-variant $V; } > $OUT/glive.log 2>&1
grep -E "^==|^v6 " $OUT/glive.log | sed -E 's/  +/ /g'
echo "done at $SECONDS s"
