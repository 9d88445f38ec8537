#!/bin/bash
# Device call 135 (session 43): the slim form of dev/lab_run134.sh for a short device budget (four failed starts).
# Main's checks without the sanitizer suite and the sweeps: test_cuda's thresholds group (v47's final rule's edges),
# and the full program beside it (cut at 280 s of the call); cuda_check 200 drawn (v48's knob value 2 among them) and --gxclear 60; v48's wide_lab --tent
# quick check under memcheck; then, alone on the GPU, wide_lab --tent (bits, then the kernel and eager metrics at
# T = 2 - 8) and the kernel metric of route / chain with moe_buf at the v47 rule's edges (moeroute bench).
# (FULL_END: the second of the call where the full program is cut, default 280; TENT_S: --tent's limit, default 120)
# Usage on the device, repo root: export C=<sha>; bash dev/lab_run135.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-lab
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${C:-?}"; date -u; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target test_cuda moeroute_cli moeroute_static >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
LIB=$(find $B -name libmoeroute_static.a -o -name libmoeroute.a | head -1)
CLI=$(find $B -name moeroute -type f -perm -u+x | head -1)
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $LIB -o $B/cuda_check >> $OUT/b.log 2>&1
nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $LIB -o $B/wide_lab >> $OUT/b.log 2>&1
echo "built at $SECONDS s ($LIB, $CLI)"
( timeout 150 $B/cuda_check --configs 200 --no-time > $OUT/cuda_check.log 2>&1; echo "rc=$?" >> $OUT/cuda_check.log
  timeout 100 $B/cuda_check --gxclear --seed 3 --configs 60 --no-time >> $OUT/cuda_check.log 2>&1; echo "gxclear rc=$?" >> $OUT/cuda_check.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/wide_lab --tent --no-time --quick > $OUT/tent_memcheck.log 2>&1; echo "rc=$?" >> $OUT/tent_memcheck.log ) &
( timeout $((${FULL_END:-280} - SECONDS)) $T > $OUT/full.log 2>&1; echo "rc=$?" >> $OUT/full.log ) &
echo "== thresholds"; timeout 60 $T --group thresholds > $OUT/thresholds.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/thresholds.log | head; tail -1 $OUT/thresholds.log
wait
echo "== full (cut at 280 s of the call) at $SECONDS s"; grep -E "FAIL" $OUT/full.log | head -5; tail -2 $OUT/full.log
echo "== cuda_check"; grep -E "^check:|rc=" $OUT/cuda_check.log; grep -E "FAIL" $OUT/cuda_check.log | head -5
echo "== tent memcheck"; tail -3 $OUT/tent_memcheck.log
echo "== wide_lab --tent at $SECONDS s"
timeout ${TENT_S:-120} $B/wide_lab --tent > $OUT/tent.log 2>&1; echo "rc=$?" >> $OUT/tent.log
grep -E "check:|MISMATCH|rc=" $OUT/tent.log | head -12; sed -n '/kernel metric/,$p' $OUT/tent.log
echo "== route / chain with moe_buf at v47's edges at $SECONDS s"
timeout 60 $CLI bench --backend cuda --format csv --kernel-only --models deepseek-r1-softmax,qwen3-235b --tokens 1024,2032,2048,2112,2113,4096 > $OUT/edges.csv 2> $OUT/edges.err; echo "rc=$?" >> $OUT/edges.err
cat $OUT/edges.csv; tail -2 $OUT/edges.err
tar czf $OUT/lab_logs.tgz -C $OUT b.log thresholds.log cuda_check.log tent_memcheck.log edges.err 2>/dev/null && rm -f $OUT/b.log $OUT/thresholds.log $OUT/cuda_check.log $OUT/tent_memcheck.log $OUT/edges.err
echo "== all done at $SECONDS s"
