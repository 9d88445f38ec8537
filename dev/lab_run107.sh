#!/bin/bash
# Device call 107 (session 36; written after results run 62's place.log and lab call 106, `dev/runs/run106/`):
# L5's two states at DeepSeek-R1 softmax T = 128 without moe_buf follow the graph instance with PDL on (two
# instantiations of one placement: 7.38 / 6.35) and vanish with PDL off (route 7.25 - 7.74, the chain 6.50 - 6.88,
# each graph's two instances within 0.02). Does the mid sort's CTA count decide it? large_lab --v6-only 128 with the
# mid sort's share 64 (auto: 16 routing CTAs), 128 (8), 256 (4) and the mid sort off (midoff), four processes with PDL
# on, one with it off: gate, route, route + buf, sort per variant, each one graph. Then place_lab with route first
# and with the chain first, PDL on and off.
# Usage on the device, repo root: bash dev/lab_run107.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/b.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab >> $OUT/b.log 2>&1
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2 3 4; do echo "== run $i"; timeout 40 $B/large_lab --v6-only 128 --v6-variant 2,7,8; done > $OUT/share.log 2>&1
echo "== PDL off" >> $OUT/share.log
MOEROUTE_PDL=0 timeout 40 $B/large_lab --v6-only 128 --v6-variant 2,7,8 >> $OUT/share.log 2>&1
grep -E "^==|^v6 .*(gate|check)" $OUT/share.log | sed -E 's/  +/ /g'
# route without PDL measured ~0.8 us slower than the chain in lab call 106, where route's graphs were always timed
# first: the same with the chain first (a clock ramp after each placement's checks would favour the second)
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/place_lab.cu $B/libmoeroute.a -o $B/place_lab >> $OUT/b.log 2>&1
for order in "" --chain-first; do for pdl in 1 0; do
  echo "== place_lab $order MOEROUTE_PDL=$pdl"
  MOEROUTE_PDL=$pdl timeout 40 $B/place_lab --trials 8 --case dsr1-t128-nobuf $order | grep -E "^(base|all|check)"
done; done > $OUT/order.log 2>&1
cat $OUT/order.log
echo "done at $SECONDS s"
