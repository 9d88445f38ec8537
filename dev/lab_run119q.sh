#!/bin/bash
# Device call 119q (session 39): the shortest check of v45b's lab form that fits the session's last ~248 s of device
# time (dev/lab_run119.sh is the full call): the library and test_cuda built with -DMR_GX_PAIR_RULE=1, then test_cuda's
# thresholds group (354 cases: the pairs at v45's and v45b's bounds) with PDL on, then with PDL off while time is left.
# Usage on the device, repo root: bash dev/lab_run119q.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-pair
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_FLAGS=-DMR_GX_PAIR_RULE=1 > $OUT/b.log 2>&1 &&
  cmake --build $B -j16 --target test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
echo "== test_cuda --group thresholds at $SECONDS s"; timeout 60 $T --group thresholds > $OUT/thr.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/thr.log | head -5; tail -1 $OUT/thr.log
echo "== test_cuda --no-pdl --group thresholds at $SECONDS s"; timeout 60 $T --no-pdl --group thresholds > $OUT/thr_nopdl.log 2>&1; echo "rc=$?"; grep -E "FAIL" $OUT/thr_nopdl.log | head -5; tail -1 $OUT/thr_nopdl.log
echo "== all done at $SECONDS s"
