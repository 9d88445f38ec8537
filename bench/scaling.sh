#!/usr/bin/env bash
# The scaling sweep of the large-T issue: every path, kernel metric, T from 1 to 65536,
# with and without moe_buf, for the four presets; then the plot and its table.
# Usage (on the device, from the repo root, after a build in build-dev): bench/scaling.sh OUTDIR
set -uo pipefail
out=${1:-bench/results}
bin=${MOEROUTE_BIN:-build-dev/tools/moeroute}
T=1,2,4,8,16,17,24,32,48,64,128,256,512,1024,2048,4096,8192,16384,32768,65536
M=deepseek-r1-softmax,gpt-oss-120b,kimi-k2,qwen3-next
"$bin" bench --backend cuda --format csv --kernel-only --no-moe-buf --models $M --tokens $T > "$out/h200-scaling-nobuf.csv"
"$bin" bench --backend cuda --format csv --kernel-only --models $M --tokens $T > "$out/h200-scaling-buf.csv"
python3 "$(dirname "$0")/plot_scaling.py" "$out/h200-scaling-nobuf.csv" "$out/h200-scaling-buf.csv" \
  "$out/h200-scaling.png" "$out/h200-scaling.md"
