#!/usr/bin/env bash
# Device call 2 of the results run (after part 1 on the same warm machine, build-dev kept):
# the scaling sweep and plot, per-phase stamps inside one launch, the decode paths side
# by side (dev/cuda_check.cu, timing only), the GPU test at
# T up to 262144, the Python GPU tests and the MoE-layer example. The Python overhead
# and the lab checks (dev/) run in lab calls: with them this call overran 600 s in run 5.
# Results land in $OUT/part2.tgz.
set -u
export PATH=$PATH:/usr/local/cuda/bin
R=${OUT:?}; O=/tmp/mr-part2; rm -rf $O; mkdir -p $O
B=build-dev
[ -x $B/tools/moeroute ] || { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1; }
NV="nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common"
( $NV dev/stamp_lab.cu $B/libmoeroute.a -o $B/stamp_lab > $O/stamp_build.log 2>&1;
  $NV dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/stamp_build.log 2>&1 ) &
LABPID=$!
echo "== scaling"
MOEROUTE_BIN=$B/tools/moeroute timeout ${SCALING_S:-170} bash bench/scaling.sh $O > $O/scaling.log 2>&1; echo "scaling rc=$?"
tail -3 $O/scaling.log; head -30 $O/h200-scaling.md 2>/dev/null
wait $LABPID
echo "== stamps"
timeout 40 $B/stamp_lab > $O/stamps.log 2>&1; tail -25 $O/stamps.log
echo "== decode paths side by side (dev/cuda_check.cu: cluster sizes, PDL off, tiny128, no moe_buf)"
timeout ${LABTIME_S:-60} $B/cuda_check --no-check --quick-time > $O/decode_paths.log 2>&1; echo "cuda_check rc=$?" | tee -a $O/decode_paths.log
sed -n "/kernel metric/,\$p" $O/decode_paths.log | head -24
echo "== test_cuda --large"
timeout ${LARGE_S:-90} $B/tests/gpu/test_cuda --large --group large > $O/test_cuda_large.log 2>&1; echo "large rc=$?" | tee -a $O/test_cuda_large.log
tail -4 $O/test_cuda_large.log
echo "== python"
export MOEROUTE_LIBRARY=$PWD/$B/libmoeroute.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
timeout ${PYTEST_S:-90} python3 -m pytest -q python/tests > $O/pytest.log 2>&1; echo "pytest rc=$?" | tee -a $O/pytest.log; tail -3 $O/pytest.log
timeout 40 python3 examples/moe_layer.py --backend torch --device cuda > $O/example.log 2>&1; echo "example rc=$?" | tee -a $O/example.log; tail -4 $O/example.log
tar czf $R/part2.tgz -C $O .
