#!/bin/bash
# Device call 109 (session 37; written after lab call 108's share.log, `dev/runs/run108/`): L5's two states at
# DeepSeek-R1 softmax T = 128 without moe_buf. With PDL on, route (the gate kernel, then the mid sort with 16 routing
# CTAs) measured 6.25 - 6.32 or 7.24 - 7.30 us, with 8 / 4 routing CTAs and with the mid sort off too; route + buf,
# whose mid sort has the same 16 routing CTAs plus 28 clear CTAs, measured 6.06 - 6.36 in all 16 rows. Do CTAs added to
# the mid sort's grid (knob mid_pad_ctas: 8, 28, 64 that leave at once) or more routing CTAs (share 32: 32 CTAs,
# share 16: 64) remove the slow state? large_lab --v6-only at T = 128 (six processes), 192 and 256, PDL on; T = 128
# with PDL off. Every variant's outputs are checked bit for bit against auto's first (the v6 check).
# Usage on the device, repo root: bash dev/lab_run109.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $OUT/b.log 2>&1 || { tail -20 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name --format=csv,noheader
V=6,27,28,29,30,31
{ for i in 1 2 3 4 5 6; do echo "== T=128 run $i"; timeout 40 $B/large_lab --v6-only 128 --v6-variant $V; done
  for t in 192 256; do echo "== T=$t"; timeout 40 $B/large_lab --v6-only $t --v6-variant $V; done
  echo "== T=128 PDL off"; MOEROUTE_PDL=0 timeout 40 $B/large_lab --v6-only 128 --v6-variant $V; } > $OUT/pad.log 2>&1
grep -E "^==|^v6 .*(deepseek|check)" $OUT/pad.log | sed -E 's/  +/ /g'
echo "done at $SECONDS s"
