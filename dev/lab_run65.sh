#!/bin/bash
# Device call 65 (session 25): the count matrix's read-back from each CTA's own row (knob gx_stagger, v23b; off
# by default): call 64's probes put ~5 us of gxs's ~9.5 us floor in the read-back, every CTA reading the same
# rows of the [132][Ep] matrix at once. dev/gxs_lab.cu times gx (route's default at T = 1024 - 4096) and gxs
# with it off and on, and checks both orders (every output word for word against the paths before gxs and the
# CPU sort); then gxs_lab --quick (both orders) under memcheck / racecheck / synccheck, and cuda_check 200 with
# the knob drawn.
# Usage on the device, repo root: bash dev/lab_run65.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
mkdir -p $OUT/lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/lab/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/lab/build.log 2>&1 || cmake --build $B -j16 >> $OUT/lab/build.log 2>&1 || { tail -30 $OUT/lab/build.log; exit 1; }
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $OUT/lab/build.log 2>&1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git log -1 --format=%h 2>/dev/null; } >> $OUT/lab/gxs.log
echo "built at $((SECONDS-T0)) s"
timeout ${GXS_S:-100} $B/gxs_lab --ts 1024,2048,16384,65536 --models deepseek-r1-softmax,gpt-oss-120b,qwen3-next >> $OUT/lab/gxs.log 2>&1; echo "gxs rc=$?" >> $OUT/lab/gxs.log
echo "gxs lab done at $((SECONDS-T0)) s"
grep -vE "^check .* ok$" $OUT/lab/gxs.log | tail -48
for t in memcheck racecheck synccheck; do
  ( MOEROUTE_CUDA_NO_CLUSTER=1 timeout ${SAN_S:-90} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 \
      $B/gxs_lab --quick > $OUT/lab/gxs_$t.log 2>&1; echo "rc=$?" >> $OUT/lab/gxs_$t.log ) &
done
( timeout 90 $B/cuda_check --configs 200 --no-time > $OUT/lab/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/lab/cuda_check.log ) &
wait
{ for t in memcheck racecheck synccheck; do echo "== gxs $t: $(grep -E "failure|SUMMARY|rc=" $OUT/lab/gxs_$t.log | tail -3 | tr '\n' ' ')"; done
  echo "== cuda_check: $(grep -E "^check:|rc=" $OUT/lab/cuda_check.log | tr '\n' ' ')"; } | tee $OUT/lab/verdicts.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
