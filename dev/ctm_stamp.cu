/*
 * ctm_stamp.cu - where ctm's sort spends its time (lab file, not built by default; session 13).
 *
 * Includes src/cuda/ctm.cu with MR_STAMP defined (thread 0 of CTA 0 records clock64 at each
 * marker; empty in the library) and runs ctm's sort for DeepSeek-R1 sizes (E = 256, k = 8,
 * U = 32, CK + vLLM layouts, no moe_buf): one call at a time (stamps, median of 15) and 50
 * calls in a graph (kernel metric, the last call's stamps), cluster size R = 8 and 16, with
 * the cluster exchange (probe 0) and without it and without the cluster attribute (probe 2,
 * outputs wrong: timing only). Then probe 2's body twice in one launch: pass 1 against pass 0
 * separates the cost of running the code the first time on an SM from the work.
 * Markers: 0 entry | 1 after griddepcontrol.wait | 2 entries in, masks set | 3 counts |
 * 4 after the cluster barrier | 5 DSMEM reads | 6 starts (scan) | 7 entries placed |
 * 8 blocks written | 9 after the final cluster wait.
 * Build: nvcc -O3 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/ctm_stamp.cu BUILD/libmoeroute.a \
 *          -o BUILD/ctm_stamp
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAB_STAMP_STRIDE 10
#include "lab_stamp.h"
#define mr_ctm_sort_kernel lab_ctm_sort_kernel
#define mr_ctm_route_kernel lab_ctm_route_kernel
#define mr_cuda_ctm_route_takes lab_ctm_route_takes
#define mr_cuda_ctm_sort_takes lab_ctm_sort_takes
#define mr_cuda_ctm_refused lab_ctm_refused
#define mr_cuda_launch_ctm_sort lab_launch_ctm_sort
#define mr_cuda_launch_ctm_route lab_launch_ctm_route
#include "../src/cuda/ctm.cu"
#include "lab_util.h"
#include "lab_sortcase.h"

/* probe 2's body twice in one launch (no cluster: K.probe = 2) */
__global__ void __launch_bounds__(MR_CTM_THREADS, 1)
    lab_ctm_twice(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_ctm_k K, const int32_t* ids,
                  const float* w) {
  extern __shared__ __align__(16) uint32_t mr_ctm_smem[];
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 0;
  __syncthreads();
  if (mr_ctm_enter(o, K)) mr_ctm_body<false, MOEROUTE_DTYPE_BF16, 4, MR_KIND_PACKED>(NULL, o, K, ids, w, NULL, NULL);
  __syncthreads();
  for (uint32_t q = threadIdx.x; q < K.W * (uint32_t)o.num_experts; q += MR_CTM_THREADS) mr_ctm_smem[q] = 0u;
  if (threadIdx.x == 0) mr_ctm_smem[K.off_misc] = 0u;
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 1;
  __syncthreads();
  if (blockIdx.x < K.R) mr_ctm_body<false, MOEROUTE_DTYPE_BF16, 4, MR_KIND_PACKED>(NULL, o, K, ids, w, NULL, NULL);
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) g_pass = 0;
}

int main(void) {
  const int E = 256, k = 8, U = 32;
  const int64_t Ts[] = {4, 64, 1024};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  srand(7);
  printf("ctm's sort, DeepSeek-R1 sizes, no moe_buf; cycles between markers (1.98 GHz), thread 0 of CTA 0\n");
  for (int ti = 0; ti < 3; ++ti) {
    const int64_t T = Ts[ti];
    lab_sort_case sc;
    lab_sort_case_make(&sc, T, E, k, U);
    mr_config cfg = sc.cfg;
    mr_sort_out o = sc.o;
    int32_t* ids = sc.ids;
    float* w = sc.w;
    for (int R = 8; R <= 16; R += 8)
      for (int probe = 0; probe <= 2; probe += 2) {
        mr_cuda_tune.ctm_ctas = R;
        mr_cuda_tune.ctm_probe = probe;
        char label[64];
        snprintf(label, sizeof label, "T=%5lld R=%2d probe %d", (long long)T, R, probe);
        lab_stamp_report(lab_launch_ctm_sort, &sc, 10, label, s);
      }
    { /* probe 2 twice in one launch, R = 8 */
      mr_cuda_tune.ctm_probe = 2;
      mr_ctm_k K;
      size_t smem;
      if (!mr_ctm_plan(&cfg, NULL, 8u, &K, &smem)) {
        printf("no plan\n");
        return 2;
      }
      double c0[10][15], c1[10][15];
      for (int rep = 0; rep < 15; ++rep) {
        lab_ctm_twice<<<8, MR_CTM_THREADS, smem, s>>>(o, K, ids, w);
        CK(cudaStreamSynchronize(s));
        unsigned long long st[20];
        CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
        for (int q = 3; q < 9; ++q) {
          c0[q][rep] = (double)(st[q] - st[q - 1]);
          c1[q][rep] = (double)(st[10 + q] - st[10 + q - 1]);
        }
        c0[0][rep] = (double)(st[8] - st[2]);
        c1[0][rep] = (double)(st[18] - st[12]);
      }
      printf("    twice in one launch (probe 2, R = 8), pass 0 / pass 1 cycles: 2..8 %.0f / %.0f", lab_median15(c0[0]),
             lab_median15(c1[0]));
      for (int q = 3; q < 9; ++q) printf(" | %d: %.0f / %.0f", q, lab_median15(c0[q]), lab_median15(c1[q]));
      printf("\n");
      mr_cuda_tune.ctm_probe = 0;
      mr_cuda_tune.ctm_ctas = 0;
    }
    lab_sort_case_free(&sc);
  }
  return 0;
}
