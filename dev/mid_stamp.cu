/*
 * mid_stamp.cu - where the mid sort's time goes (lab file, not built by default).
 *
 * Includes src/cuda/mid.cu with MR_STAMP defined (thread 0 of CTA 0 records
 * clock64 at each marker; empty in the library) and times the kernel three ways
 * for DeepSeek-R1 sizes (E = 256, k = 8, U = 32, CK + vLLM layouts, no moe_buf):
 * one call at a time (stamps, median of 15), 50 calls in a graph (kernel metric),
 * with PDL on and off. Markers: 0 entry | 1 after griddepcontrol.wait | 2 histograms
 * zeroed | 3 all ids counted | 4 scan + counters zeroed | 5 padding issued | 6 pass 1
 * | 7 prefix | 8 placed.
 * Build: nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common \
 *          dev/mid_stamp.cu BUILD/libmoeroute.a -o BUILD/mid_stamp
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAB_STAMP_STRIDE 9
#include "lab_stamp.h"
#define mr_mid_sort_kernel lab_mid_sort_kernel
#define mr_cuda_launch_mid_sort lab_launch_mid_sort
#define mr_cuda_mid_sort_fits lab_mid_sort_fits
#include "../src/cuda/mid.cu"
#include "lab_util.h"
#include "lab_sortcase.h"

/* the same body twice in one launch: pass 1's stamps against pass 0's separate
 * the cold cost (first execution of the code on this SM) from the work */
__global__ void __launch_bounds__(MR_MID_THREADS, 1)
    lab_mid_twice(const __grid_constant__ mr_sort_out o, const int32_t* ids, const float* w, uint32_t R) {
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 0;
  __syncthreads();
  mr_mid_sort_body(o, ids, w, R);
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 1;
  __syncthreads();
  mr_mid_sort_body(o, ids, w, R);
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 0;
}

int main(void) {
  const int E = 256, k = 8, U = 32;
  const int64_t Ts[] = {130, 1024, 4096, 16384};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  srand(7);
  for (int ti = 0; ti < 4; ++ti) {
    const int64_t T = Ts[ti];
    lab_sort_case sc;
    lab_sort_case_make(&sc, T, E, k, U);
    const mr_sort_out o = sc.o;
    const int32_t* ids = sc.ids;
    const float* w = sc.w;
    for (int pdl = 1; pdl >= -1; pdl -= 2) {
      mr_cuda_tune.decode_pdl = pdl;
      char label[64];
      snprintf(label, sizeof label, "T=%6lld pdl=%2d", (long long)T, pdl);
      lab_stamp_report(lab_launch_mid_sort, &sc, 9, label, s);
    }
    { /* twice in one launch: R as the library picks it, same shared memory */
      const int64_t share = 1024;
      int64_t R = (T * k + share - 1) / share;
      if (R > 132) R = 132;
      const size_t smem = (3u * E + 36u + (size_t)MR_MID_COUNTER_WORDS) * 4u;
      double c0[15][9], c1[15][9];
      for (int rep = 0; rep < 15; ++rep) {
        lab_mid_twice<<<(unsigned)R, MR_MID_THREADS, smem, s>>>(o, ids, w, (uint32_t)R);
        CK(cudaStreamSynchronize(s));
        unsigned long long st[32];
        CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
        for (int q = 2; q < 9; ++q) {
          c0[rep][q] = (double)(st[q] - st[q - 1]);
          c1[rep][q] = (double)(st[9 + q] - st[9 + q - 1]);
        }
      }
      printf("   twice in one launch (R = %lld), pass 0 / pass 1 cycles:", (long long)R);
      for (int q = 2; q < 9; ++q) {
        double a[15], b2[15];
        for (int rep = 0; rep < 15; ++rep) a[rep] = c0[rep][q], b2[rep] = c1[rep][q];
        qsort(a, 15, sizeof(double), lab_cmp_d);
        qsort(b2, 15, sizeof(double), lab_cmp_d);
        if (q >= 3) printf(" | %d: %.0f / %.0f", q, a[7], b2[7]);
      }
      printf("\n");
    }
    lab_sort_case_free(&sc);
  }
  return 0;
}
