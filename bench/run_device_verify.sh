#!/usr/bin/env bash
# One short device call after a results run (run 7 of session 5): build, then in
# parallel ctest (test_cuda full, with the thresholds group), test_cuda --large and
# compute-sanitizer racecheck (PDL off, no cluster kernel); then the scaling sweep alone.
# Results in $OUT/verify.tgz. Usage: COMMIT=<sha> bash bench/run_device_verify.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
R=${OUT:?}; O=/tmp/mr-verify; rm -rf $O; mkdir -p $O; T0=$SECONDS
B=build-dev
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout 150 ctest --test-dir $B -j 8 -V --timeout 600 > $O/ctest.log 2>&1; echo "ctest rc=$?" >> $O/ctest.log ) &
( timeout ${LARGE_S:-90} $B/tests/gpu/test_cuda --large --group large > $O/test_cuda_large.log 2>&1; echo "large rc=$?" >> $O/test_cuda_large.log ) &
( SANITIZE_TOOLS="racecheck_nocluster" SANITIZE_TIMEOUT=${RACE_S:-110} bash bench/sanitize.sh $B $O/sanitize.log > /dev/null 2>&1 ) &
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
MOEROUTE_BIN=$B/tools/moeroute timeout ${SCALING_S:-120} bash bench/scaling.sh $O > $O/scaling.log 2>&1; echo "scaling rc=$?" >> $O/scaling.log
echo "total $((SECONDS-T0)) s" >> $O/env.log
tar czf $R/verify.tgz -C $O .
grep -E "tests passed|tests failed|ctest rc" $O/ctest.log | tail -3
N=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: test_cuda ' $O/ctest.log | sed -E 's/.*#([0-9]+):.*/\1/' | head -1)
[ -n "$N" ] && grep -E "^$N: " $O/ctest.log | sed -E "s/^$N: //" | sed -n '/^group /,/passed, [0-9]* failed/p'
grep -E "FAIL" $O/ctest.log | head -5
tail -3 $O/test_cuda_large.log
sed -n '/verdicts/,$p' $O/sanitize.log
tail -2 $O/scaling.log; grep -E "\| (16384|32768|65536) \|" $O/h200-scaling.md | head -12
cat $O/env.log
