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

__device__ unsigned long long g_stamp[32];
__device__ int g_pass;
#define MR_STAMP(slot)                                                                  \
  do {                                                                                  \
    if (threadIdx.x == 0 && blockIdx.x == 0) g_stamp[(slot) + 9 * g_pass] = clock64(); \
  } while (0)
#define mr_mid_sort_kernel lab_mid_sort_kernel
#define mr_cuda_launch_mid_sort lab_launch_mid_sort
#define mr_cuda_mid_sort_fits lab_mid_sort_fits
#include "../src/cuda/mid.cu"
#include "lab_util.h"

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

static int cmp_d(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  const int E = 256, k = 8, U = 32;
  const int64_t Ts[] = {130, 1024, 4096, 16384};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  srand(7);
  for (int ti = 0; ti < 4; ++ti) {
    const int64_t T = Ts[ti], n = T * k;
    int32_t* h = (int32_t*)malloc(n * 4);
    for (int64_t t = 0; t < T; ++t)
      for (int j = 0; j < k; ++j) {
        int e, dup;
        do {
          e = rand() % E;
          dup = 0;
          for (int q = 0; q < j; ++q) dup |= h[t * k + q] == e;
        } while (dup);
        h[t * k + j] = e;
      }
    const size_t cap = (size_t)n + (size_t)E * (U - 1);
    int32_t *ids, *sids, *seids, *nv, *stids, *eids, *ntpp;
    float *w, *sw;
    CK(cudaMalloc(&ids, n * 4));
    CK(cudaMalloc(&w, n * 4));
    CK(cudaMalloc(&sids, cap * 4));
    CK(cudaMalloc(&sw, cap * 4));
    CK(cudaMalloc(&stids, cap * 4));
    CK(cudaMalloc(&seids, cap / U * 4 + 4));
    CK(cudaMalloc(&eids, cap / U * 4 + 4));
    CK(cudaMalloc(&nv, 8));
    CK(cudaMalloc(&ntpp, 4));
    CK(cudaMemcpy(ids, h, n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(w, 0, n * 4));
    mr_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.num_tokens = T;
    cfg.num_experts = E;
    cfg.top_k = k;
    cfg.unit_size = U;
    mr_sort_out o;
    memset(&o, 0, sizeof o);
    o.sorted_ids = sids;
    o.sorted_weights = sw;
    o.sorted_expert_ids = seids;
    o.num_valid_ids = nv;
    o.sorted_token_ids = stids;
    o.expert_ids = eids;
    o.num_tokens_post_pad = ntpp;
    o.num_tokens = T;
    o.num_experts = E;
    o.top_k = k;
    o.unit_size = U;
    o.u_magic = mr_magic(U);
    o.k_magic = mr_magic(k);
    for (int pdl = 1; pdl >= -1; pdl -= 2) {
      mr_cuda_tune.decode_pdl = pdl;
      double cyc[15][9], ev[15];
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      for (int rep = 0; rep < 15; ++rep) {
        CK(cudaEventRecord(e0, s));
        CK(lab_launch_mid_sort(&cfg, &o, ids, w, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaStreamSynchronize(s));
        unsigned long long st[16];
        CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
        for (int q = 0; q < 9; ++q) cyc[rep][q] = q ? (double)(st[q] - st[q - 1]) : (double)(st[8] - st[0]);
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ev[rep] = ms * 1000.0;
      }
      printf("T=%6lld pdl=%2d one call: event %.2f us; cycles: span", (long long)T, pdl, ev[7]);
      for (int q = 0; q < 9; ++q) {
        double col[15];
        for (int rep = 0; rep < 15; ++rep) col[rep] = cyc[rep][q];
        qsort(col, 15, sizeof(double), cmp_d);
        printf(q ? " | %d: %.0f" : " %.0f", q, col[7]);
      }
      /* kernel metric: 50 calls in a graph, median of 9 replays */
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < 50; ++i) CK(lab_launch_mid_sort(&cfg, &o, ids, w, s));
      CK(cudaStreamEndCapture(s, &g));
      const double km = lab_graph_us(g, 50, 9, 1, s);
      unsigned long long st[16];
      CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
      printf("\n   kernel metric %.2f us; last graph call's stamps: span %llu", km, st[8] - st[0]);
      for (int q = 1; q < 9; ++q) printf(" | %d: %llu", q, st[q] - st[q - 1]);
      printf("\n");
    }
    { /* twice in one launch: R as the library picks it, same shared memory */
      const int64_t share = 1024;
      int64_t R = (n + share - 1) / share;
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
        qsort(a, 15, sizeof(double), cmp_d);
        qsort(b2, 15, sizeof(double), cmp_d);
        if (q >= 3) printf(" | %d: %.0f / %.0f", q, a[7], b2[7]);
      }
      printf("\n");
    }
    cudaFree(ids); cudaFree(w); cudaFree(sids); cudaFree(sw); cudaFree(stids);
    cudaFree(seids); cudaFree(eids); cudaFree(nv); cudaFree(ntpp);
    free(h);
  }
  return 0;
}
