#!/usr/bin/env bash
# Device call 1 of the results run: build, every test (GPU included), the four
# compute-sanitizer tools, and the decode benchmark (csv). Results land in $OUT/part1.tgz.
# Usage on the device, repo root: COMMIT=<sha> bash bench/run_device_part1.sh
set -u
export PATH=$PATH:/usr/local/cuda/bin
R=${OUT:?}; O=/tmp/mr-part1; rm -rf $O; mkdir -p $O
OUT=$O STEPS="build test sanitize" BUDGET_S=${BUDGET_S:-390} bash bench/device_run.sh 2>&1 | tee $O/device_run.log | tail -40
echo "== bench (decode, every preset, kernel/graph/eager)"
CMD="build-dev/tools/moeroute bench --backend cuda --format csv"
echo "$CMD" > $O/h200-decode.cmd
timeout ${BENCH_S:-170} $CMD > $O/h200-decode.csv 2> $O/bench.err; echo "bench rc=$?" | tee -a $O/bench.err
tail -3 $O/bench.err; cut -d, -f1,2,9,12,15,16,17,18,20 $O/h200-decode.csv | head -40
tar czf $R/part1.tgz -C $O .
