#!/bin/bash
# Device call 111 (session 37; after lab calls 108 - 110, `dev/runs/run108/` - `run110/`): L5's slow state at
# DeepSeek-R1 softmax T = 128 without moe_buf survived CTAs added to the mid sort's grid and more routing CTAs. The
# candidate now: the gate kernel's grid. At T <= 128 it launched one gating warp per CTA (128 CTAs of 64 threads at
# T = 128, about one per SM); at T = 192 (four per CTA, 48 CTAs) the point is steady at 6.27. v42 (this tree's default,
# gate.cu MR_GATE_LIVE2_T) gives the 16-bit softmax rows two gating warps per CTA at 64 < T <= 128. large_lab v6
# variants: glive1 (34: one warp per CTA, the form before v42), glive3 (33: three), against auto (v42); T = 128 in four
# processes, 80, 96 and 112 once, PDL on; every variant's outputs bit for bit against auto's first (the v6 check). Then
# test_cuda --quick --exact-allocs on this tree (the GPU tests' quick set, v42 in it).
# (lab call 110, dev/lab_run110.sh, asked for 4 warps: above the kernels' 128-thread bound with the dry-run warp)
# Usage on the device, repo root: bash dev/lab_run111.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 && cmake --build $B -j16 --target moeroute_static test_cuda >> $OUT/b.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $OUT/b.log 2>&1 || { tail -20 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name --format=csv,noheader
V=33,34
{ for i in 1 2 3 4; do echo "== T=128 run $i"; timeout 40 $B/large_lab --v6-only 128 --v6-variant $V; done
  for t in 80 96 112; do echo "== T=$t"; timeout 40 $B/large_lab --v6-only $t --v6-variant $V; done; } > $OUT/glive.log 2>&1
grep -E "^==|^v6 |failed" $OUT/glive.log | sed -E 's/  +/ /g'
echo "== test_cuda --quick --exact-allocs at $SECONDS s"
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
timeout 90 $T --quick --exact-allocs > $OUT/tq.log 2>&1; echo "rc=$?"; tail -3 $OUT/tq.log
echo "done at $SECONDS s"
