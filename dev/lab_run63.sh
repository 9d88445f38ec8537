#!/bin/bash
# Device call 63 (session 25): gxs (v23, gx.cu: the sort in one cooperative launch over the grid; knob
# gxs, automatic rule off) checked and timed by dev/gxs_lab.cu beside the paths before it (route: the
# gate kernel + gxs against the default; sort: gxs against the default; each output word for word, and
# the sort's against the CPU sort; sort inputs with duplicate and out-of-range ids), then the results run
# of main with gx's automatic rule on (MR_GX_AUTO 1; cuda_check now also draws the knob gxs), then
# memcheck / racecheck / synccheck on test_cuda's thresholds group up to T = 4097 (gx's pairs) and on
# gxs_lab --quick.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run63.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
mkdir -p $OUT/lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/lab/build0.log 2>&1 && cmake --build $B -j16 >> $OUT/lab/build0.log 2>&1 || { tail -30 $OUT/lab/build0.log; exit 1; }
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs.log 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader >> $OUT/lab/gxs.log
timeout ${GXS_S:-130} $B/gxs_lab >> $OUT/lab/gxs.log 2>&1; echo "gxs rc=$?" >> $OUT/lab/gxs.log
echo "gxs lab done at $((SECONDS-T0)) s"
grep -vE "^check .* ok$" $OUT/lab/gxs.log | tail -45
COMMIT=${COMMIT:-?} CTEST_S=150 LARGE_S=100 SANITIZE_S=110 SCALING_S=130 BENCH_S=80 CUDA_CHECK=600 \
  bash bench/run_device_results.sh > $OUT/summary.txt 2>&1
tail -42 $OUT/summary.txt
echo "results run done at $((SECONDS-T0)) s"
for t in memcheck racecheck synccheck; do
  ( timeout ${SAN_S:-80} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/tests/gpu/test_cuda \
      --group thresholds --max-tokens 4097 > $OUT/lab/gx_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gx_$t.log ) &
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${SAN_S:-80} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
wait
for f in gx gxs; do for t in memcheck racecheck synccheck; do echo "== $f $t: $(grep -E "passed|failure|SUMMARY|rc=" $OUT/lab/${f}_$t.log | tail -3 | tr '\n' ' ')"; done; done | tee $OUT/lab/sanitize_gx.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
