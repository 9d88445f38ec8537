#!/usr/bin/env bash
# One device call for a full results run: part 1 (build, ctest, sanitizers, decode bench)
# then part 2 (stamps, scaling, large-T tests, Python GPU tests). Usage on the device:
#   COMMIT=<sha> bash bench/run_device_final.sh     (results: $OUT/part1.tgz, $OUT/part2.tgz)
set -u
cd "$(dirname "$0")/.."
BUDGET_S=${BUDGET_S:-300} BENCH_S=${BENCH_S:-100} bash bench/run_device_part1.sh
SCALING_S=${SCALING_S:-120} bash bench/run_device_part2.sh
