#!/bin/bash
# Check call (session 9, call 18) after results run 13 (bbd4663): mr_wide_bar uses the
# non-aligned barrier.sync. synccheck (PDL on and off), racecheck (PDL, no cluster),
# memcheck, the test_cuda groups of ctest, and the decode bench (numbers against run 13).
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab18}; mkdir -p $O; T0=$SECONDS
B=build-dev
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( SANITIZE_TOOLS="synccheck synccheck_nopdl racecheck_pdl memcheck" SANITIZE_TIMEOUT=100 bash bench/sanitize.sh $B $O/sanitize.log > /dev/null 2>&1 ) &
( timeout 110 $B/tests/gpu/test_cuda > $O/test_cuda.log 2>&1; echo "rc=$?" >> $O/test_cuda.log; timeout 60 $B/tests/gpu/test_cuda --no-pdl --group thresholds >> $O/test_cuda.log 2>&1; echo "rc=$?" >> $O/test_cuda.log ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
timeout 40 $B/tools/moeroute bench --backend cuda --format csv > $O/h200-decode.csv 2> $O/bench.err
echo "total $((SECONDS-T0)) s" >> $O/env.log
grep -E "passed, [0-9]+ failed|rc=" $O/test_cuda.log
sed -n '/verdicts/,$p' $O/sanitize.log
cut -d, -f1,2,9,12,15,21 $O/h200-decode.csv | head -40
cat $O/env.log
tar czf $O/logs.tgz -C $O sanitize.log build.log bench.err test_cuda.log && rm -f $O/sanitize.log $O/build.log $O/bench.err
