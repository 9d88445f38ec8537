#!/bin/bash
# Device call 140 (session 44), the slim form of dev/lab_run139.sh for a short device budget (five failed starts this
# session): v49's probe (dev/lab_run138.sh, carried build-probe/wide_lab.xz), then main's library (test_cuda and the
# CLI only) for test_cuda's thresholds group (v47's corrected rule: the pair 2048 / 2049) and the kernel metric of
# route / chain with moe_buf at its edges (moeroute bench), each only while the call's time allows (END, default 250 s).
# Usage on the device, repo root, carry ["build-probe/wide_lab.xz"]: export C=<sha>; bash dev/lab_run140.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
[ -f build-probe/wide_lab.xz ] && timeout 90 bash dev/lab_run138.sh
echo "== probe done at $SECONDS s (commit ${C:-?})"
B=build-lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/b.log 2>&1 &&
  timeout $((${END:-250} - 40 - SECONDS)) cmake --build $B -j16 --target test_cuda moeroute_cli >> $OUT/b.log 2>&1 || { tail -5 $OUT/b.log; echo "build cut or failed at $SECONDS s"; exit 1; }
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
CLI=$(find $B -name moeroute -type f -perm -u+x | head -1)
echo "== built at $SECONDS s; thresholds"
timeout 40 $T --group thresholds > $OUT/thresholds.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/thresholds.log | head; tail -1 $OUT/thresholds.log
echo "== route / chain with moe_buf at v47's edges at $SECONDS s"
timeout $((${END:-250} - SECONDS)) $CLI bench --backend cuda --format csv --kernel-only --models deepseek-r1-softmax --tokens 2032,2048,2049,2112,2113 > $OUT/edges.csv 2> $OUT/edges.err; echo "rc=$?"
cat $OUT/edges.csv
echo "== all done at $SECONDS s"
