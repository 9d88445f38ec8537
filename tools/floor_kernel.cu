/*
 * floor_kernel.cu - the smallest useful launch, for `moeroute bench`: one
 * block of 32 threads that reads and writes one 128-byte line. Its time in
 * each metric is the floor no routing call can beat on the same card and
 * stream, measured in the same run as the routing paths.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>

__global__ void mr_floor_kernel(float* line) {
  float v = line[threadIdx.x];
  line[threadIdx.x] = v + 1.0f;
}

extern "C" int mr_floor_kernel_launch(void* line, void* stream) {
  mr_floor_kernel<<<1, 32, 0, (cudaStream_t)stream>>>((float*)line);
  return (int)cudaGetLastError();
}
