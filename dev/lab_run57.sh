#!/bin/bash
# Device call 57 (session 24): the results run of main with v21's automatic form (3bcca87), which no
# results run, scaling sweep or full test_cuda had run, then ncu of route's L1 by segments in the packed
# form (large_lab v6 variant 13, pk2, at T = 16384): lab call 55 measured it 1.57 - 1.63x slower than
# v20's form for DeepSeek-R1 softmax at T = 16384 / 32768, only in the wide (16-warp) L1; the 8-warp
# packed L1 was not slower, and the two kernels' SASS has the same instruction mix (session 24, cuobjdump
# of large.o; 71 registers, no spills). ncu gives each launch's duration, grid, registers, shared memory
# and occupancy limits for v20's form (variant 0 of the check) and the packed one side by side.
# Then dev/gx_lab.cu (session 24): route in one cooperative launch over the grid for middle T, its
# checks (bit for bit against the CPU sort of its own top-k; top-k against the library route's) and
# its times beside the library's route and gate kernel, then its checks under memcheck.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run57.sh
COMMIT=${COMMIT:-?} FILT_LAB=1 FILT_VARIANTS=26 FILT_S=100 CTEST_S=150 LARGE_S=110 SANITIZE_S=120 SCALING_S=130 \
  BENCH_S=90 LARGE_LAB=1 LARGE_LAB_S=120 CUDA_CHECK=1000 SEG_CHECK=400 bash bench/run_device_results.sh > $OUT/summary.txt 2>&1
tail -70 $OUT/summary.txt
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gx_lab.cu build-dev/libmoeroute.a \
  -o build-dev/gx_lab > $OUT/gx.log 2>&1
timeout ${GX_S:-60} build-dev/gx_lab >> $OUT/gx.log 2>&1; echo "gx rc=$?" >> $OUT/gx.log
timeout ${GX_S:-60} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 build-dev/gx_lab --no-time \
  > $OUT/gx_memcheck.log 2>&1; echo "gx memcheck rc=$?" >> $OUT/gx_memcheck.log
grep -vE "^check .* ok " $OUT/gx.log | tail -40; tail -4 $OUT/gx_memcheck.log
timeout ${NCU_S:-60} ncu --clock-control none -k regex:mr_large --section LaunchStats --section Occupancy \
  --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg \
  build-dev/large_lab --v6 --v6-notime --v6-variant 13 --v6-ts 16384 > $OUT/ncu_pk.log 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_ ]*mr_large.*\(|duration|Block Limit|Achieved Occupancy|Registers Per|Shared Memory Per|Grid Size|Waves" $OUT/ncu_pk.log | head -120
