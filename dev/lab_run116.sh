#!/bin/bash
# Device call 116 (session 38; written, NOT run: the device refused to start a machine, too little time left): the fix after results run 66's one failure (test_cuda thresholds, Qwen1.5 T = 512: route's
# weights 1 ulp from the gate's under v43b's gx rule; gx.cu mr_gx_auto now takes rows without renormalize only where the
# gate kernel's rows have gx's 16 lanes). The session had ~350 s of device time left, too little for a results run: the
# library and test_cuda only, then the groups the rule touches (thresholds with its new pairs, engine), then the quick set.
# Usage on the device, repo root: bash dev/lab_run116.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/b.log 2>&1 && cmake --build $B -j16 --target test_cuda >> $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "built at $SECONDS s"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$(find $B -name test_cuda -type f -perm -u+x | head -1)
for g in thresholds engine; do
  echo "== test_cuda --group $g at $SECONDS s"; timeout 60 $T --group $g > $OUT/$g.log 2>&1; echo "rc=$?"; grep -E "FAIL|passed" $OUT/$g.log | tail -4
done
echo "== test_cuda --quick at $SECONDS s"; timeout 60 $T --quick > $OUT/quick.log 2>&1; echo "rc=$?"; tail -1 $OUT/quick.log
echo "== all done at $SECONDS s"
