#!/usr/bin/env bash
# One device call for a results run (session 6, run 8): build; then in parallel ctest
# (test_cuda full, quick, no-PDL), test_cuda --large and bench/sanitize.sh (every tool);
# then, alone on the GPU, the scaling sweep (bench/scaling.sh) and the decode benchmark
# (every preset, kernel/graph/eager). Files under $OUT: the CSVs, ctest.log and env.log as
# they are, the other logs in logs.tgz.
# Usage on the device, repo root: COMMIT=<sha> bash bench/run_device_results.sh
# (optional parts below: WIDE_LAB, LARGE_LAB, CUDA_CHECK, VERIFY_SEEDS)
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:?}; T0=$SECONDS
B=build-dev
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; nvcc --version | tail -2; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
echo "build $((SECONDS-T0)) s" >> $O/env.log
( timeout ${CTEST_S:-150} ctest --test-dir $B -j 8 -V --timeout 600 > $O/ctest.log 2>&1; echo "ctest rc=$?" >> $O/ctest.log ) &
( timeout ${LARGE_S:-100} $B/tests/gpu/test_cuda --large --group large > $O/test_cuda_large.log 2>&1; echo "large rc=$?" >> $O/test_cuda_large.log ) &
( SANITIZE_TIMEOUT=${SANITIZE_S:-120} bash bench/sanitize.sh $B $O/sanitize.log > /dev/null 2>&1 ) &
# optional (LARGE_LAB=1): dev/large_lab's check of every large-path variant (P included: its
# moe_buf clear, guards, layouts bit for bit against the CPU sort; --quick: T <= 4097), and the
# default variant's quick check under memcheck / racecheck / synccheck
if [ "${LARGE_LAB:-0}" = 1 ]; then
  ( nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu $B/libmoeroute.a -o $B/large_lab > $O/large_lab_build.log 2>&1
    ( timeout ${LARGE_LAB_S:-120} $B/large_lab --no-time --quick > $O/large_lab_check.log 2>&1; echo "rc=$?" >> $O/large_lab_check.log ) &
    for t in memcheck racecheck synccheck; do
      ( timeout ${LARGE_LAB_S:-120} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/large_lab --no-time --quick --variant 0 > $O/ll_$t.txt 2>&1; echo "rc=$?" >> $O/ll_$t.txt ) &
    done
    wait
    for t in memcheck racecheck synccheck; do echo "== $t"; tail -4 $O/ll_$t.txt; rm -f $O/ll_$t.txt; done > $O/large_lab_sanitize.log 2>&1 ) &
fi
wait
echo "tests $((SECONDS-T0)) s" >> $O/env.log
MOEROUTE_BIN=$B/tools/moeroute timeout ${SCALING_S:-130} bash bench/scaling.sh $O > $O/scaling.log 2>&1; echo "scaling rc=$?" >> $O/scaling.log
echo "scaling $((SECONDS-T0)) s" >> $O/env.log
CMD="$B/tools/moeroute bench --backend cuda --format csv${BENCH_MODELS:+ --models $BENCH_MODELS}"
echo "$CMD" > $O/h200-decode.cmd
timeout ${BENCH_S:-110} $CMD > $O/h200-decode.csv 2> $O/bench.err; echo "bench rc=$?" >> $O/bench.err
# optional lab timing (WIDE_LAB=1): dev/wide_lab's A/B modes (WIDE_MODES), and the check of one
# mode (WIDE_SAN_MODE, default tsort; its arguments WIDE_SAN_ARGS, default --no-time) under the
# sanitizers (TSORT_TOOLS)
LABLOGS=""
if [ "${WIDE_LAB:-0}" = 1 ]; then
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu $B/libmoeroute.a -o $B/wide_lab >> $O/build.log 2>&1
  LABLOGS=""
  for m in ${WIDE_MODES:-tiny tiny-pk tiny-1p tsort}; do timeout ${WIDE_S:-60} $B/wide_lab --$m > $O/wide_lab_$m.log 2>&1; echo "rc=$?" >> $O/wide_lab_$m.log; LABLOGS="$LABLOGS wide_lab_$m.log"; done
  for t in ${TSORT_TOOLS:-memcheck racecheck synccheck}; do
    ( timeout ${TSORT_S:-100} compute-sanitizer --tool $t --error-exitcode 9 --print-limit 10 $B/wide_lab --${WIDE_SAN_MODE:-tsort} ${WIDE_SAN_ARGS:---no-time} > $O/ts_$t.txt 2>&1; echo "rc=$?" >> $O/ts_$t.txt ) &
  done
  wait
  for t in ${TSORT_TOOLS:-memcheck racecheck synccheck}; do echo "== $t"; tail -4 $O/ts_$t.txt; rm -f $O/ts_$t.txt; done > $O/wide_lab_tsort_sanitize.log 2>&1
  LABLOGS="$LABLOGS wide_lab_tsort_sanitize.log"
fi
# optional (FILT_LAB=1, with LARGE_LAB=1): large_lab --v6 with the variants FILT_VARIANTS (default 10,11: the
# segment rows without the filter, and v20's filter at every T; v21's lab forms are 12 - 25, large_lab.cu V6S,
# and dev/lab_run55.sh runs them): every output of each bit for bit against the automatic default's, then gate /
# route / route + buf / sort timed side by side (FILT_TS: the T list of DeepSeek-R1 softmax and GPT-OSS-120B,
# default large_lab's 64 .. 65536)
if [ "${FILT_LAB:-0}" = 1 ] && [ -x $B/large_lab ]; then
  timeout ${FILT_S:-90} $B/large_lab --v6 --v6-variant ${FILT_VARIANTS:-10,11} ${FILT_TS:+--v6-ts $FILT_TS} > $O/large_lab_filt.log 2>&1; echo "rc=$?" >> $O/large_lab_filt.log
  LABLOGS="$LABLOGS large_lab_filt.log"
fi
# optional (CUDA_CHECK=N): dev/cuda_check, N random configurations with the lab knobs drawn
if [ "${CUDA_CHECK:-0}" -gt 0 ]; then
  nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/cuda_check.cu $B/libmoeroute.a -o $B/cuda_check >> $O/build.log 2>&1
  ( timeout 150 $B/cuda_check --configs $CUDA_CHECK --no-time > $O/cuda_check.log 2>&1; echo "rc=$?" >> $O/cuda_check.log
    # optional (SEG_CHECK=N): N more configurations on the segment rows alone (cuda_check --seg)
    if [ "${SEG_CHECK:-0}" -gt 0 ]; then
      timeout 120 $B/cuda_check --seg --seed 2 --configs $SEG_CHECK --no-time >> $O/cuda_check.log 2>&1; echo "seg rc=$?" >> $O/cuda_check.log
    fi
    # optional (GXC_CHECK=N): N more configurations where v47 can take route with a moe_buf (cuda_check --gxclear)
    if [ "${GXC_CHECK:-0}" -gt 0 ]; then
      timeout 120 $B/cuda_check --gxclear --seed 3 --configs $GXC_CHECK --no-time >> $O/cuda_check.log 2>&1; echo "gxclear rc=$?" >> $O/cuda_check.log
    fi ) &
  LABLOGS="$LABLOGS cuda_check.log"
fi
# optional (VERIFY_SEEDS="2 3"): moeroute verify --count ${VERIFY_COUNT:-800} per seed, in parallel,
# every backend and path (ctest's cli test runs seed 1 with 200)
for sd in ${VERIFY_SEEDS:-}; do
  ( timeout 150 $B/tools/moeroute verify --count ${VERIFY_COUNT:-800} --seed $sd > $O/verify_$sd.log 2>&1; echo "rc=$?" >> $O/verify_$sd.log ) &
  LABLOGS="$LABLOGS verify_$sd.log"
done
wait
echo "total $((SECONDS-T0)) s" >> $O/env.log
# the device tool returns about eight files: the small logs travel in one tarball
# (the plot and its table are redrawn from the CSVs: bench/plot_scaling.py)
[ "${LARGE_LAB:-0}" = 1 ] && LABLOGS="$LABLOGS large_lab_check.log large_lab_sanitize.log large_lab_build.log"
LOGS="bench.err build.log sanitize.log test_cuda_large.log scaling.log h200-decode.cmd $LABLOGS"
tar czf $O/logs.tgz -C $O $LOGS 2>/dev/null
grep -E "tests passed|tests failed|ctest rc" $O/ctest.log | tail -3
for n in $(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: test_cuda' $O/ctest.log | sed -E 's/.*#([0-9]+):.*/\1/'); do grep -E "^$n: [0-9]+ passed, [0-9]+ failed" $O/ctest.log | tail -1; done
grep -E "FAIL" $O/ctest.log | head -5
tail -2 $O/test_cuda_large.log
sed -n '/verdicts/,$p' $O/sanitize.log
tail -2 $O/bench.err; cut -d, -f1,2,9,10,11,12 $O/h200-decode.csv | head -14
tail -2 $O/scaling.log; grep -E "\| (1024|16384|65536) \|" $O/h200-scaling.md | head -12
for f in $LABLOGS; do grep -E "check:|MISMATCH|FAIL" $O/$f | head -3; sed -n '/kernel metric/,$p' $O/$f; done
[ -f $O/large_lab_filt.log ] && grep -E "^v6 (deepseek-r1-softmax|gpt-oss-120b) +T= *(4096|16384|65536) " $O/large_lab_filt.log | sed -E 's/  +/ /g' 
for sd in ${VERIFY_SEEDS:-}; do echo "verify seed $sd: $(tail -2 $O/verify_$sd.log | tr '\n' ' ')"; done
[ "${CUDA_CHECK:-0}" -gt 0 ] && grep -E "^check:|rc=" $O/cuda_check.log
[ -f $O/wide_lab_tsort_sanitize.log ] && grep -E "==|SUMMARY|rc=" $O/wide_lab_tsort_sanitize.log
[ -f $O/large_lab_sanitize.log ] && { echo "large_lab check: $(grep -c '^ok' $O/large_lab_check.log) ok, $(tail -2 $O/large_lab_check.log | tr '\n' ' ')"; grep -E "==|SUMMARY|rc=" $O/large_lab_sanitize.log; }
cat $O/env.log
(cd $O && rm -f $LOGS h200-scaling.md h200-scaling.png)
