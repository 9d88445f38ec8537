#!/bin/bash
# Device call 96 (session 32): v33b's second step against the first (53d4c5d's gate.cu and gate.cuh, carried as
# build-old/): the segment form with 12 elements per lane for 128 < E <= 192 (GLM-4.5) against 16, mr_top_filter back
# to ebb68ed's code (the exact-key filter form was 3 - 5 % slower with v33b's bit word in lab call 95), and every form
# at T = 8192 (the segments' threshold is 16384; 4096 measured even in lab call 95). dev/lab_run95.sh with these
# settings, no ncu; then bench/run_device_results.sh in the same call.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run96.sh > $OUT/lab_summary.txt 2>&1
GMODELS=${GMODELS:-glm-4.5,kimi-k2,minimax-m2} GTS=${GTS:-8192,16384,65536} NCU_S=0 bash dev/lab_run95.sh
