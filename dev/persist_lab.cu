/*
 * persist_lab.cu - lab for a persistent (cooperative) large-T launch (session 12).
 * Lab code only, never the library. Answers, on the device, before any library
 * kernel is written:
 *  1. how fast kernels clear a moe_buf-sized buffer, against cudaMemsetAsync of it
 *     (16-byte streaming stores grid-stride / per-CTA contiguous, at 1-8 CTAs per
 *     SM; bulk copies from zeroed shared memory issued by one thread);
 *  2. whether a cooperative launch is captured in a graph, alone and together with
 *     the programmatic-serialization (PDL) attribute, and what one grid barrier costs;
 *  3. what a clear costs beside gate-like work in the same persistent launch (the
 *     clear issued by one thread as bulk copies, or by dedicated warps' stores),
 *     against each alone.
 * Metric: the kernel metric of bench/README (graph of `calls` launches, median
 * replay / calls), us.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "lab_util.h"

static int g_sms;

/* ---- clears -------------------------------------------------------------------- */

__global__ void k_st_stride(uint4* p, size_t units) {
  const size_t n = (size_t)gridDim.x * blockDim.x;
  const uint4 z = make_uint4(0, 0, 0, 0);
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * n < units; i += 4 * n) {
    __stcs(p + i, z);
    __stcs(p + i + n, z);
    __stcs(p + i + 2 * n, z);
    __stcs(p + i + 3 * n, z);
  }
  for (; i < units; i += n) __stcs(p + i, z);
}

/* CTA b clears its contiguous share [u0, u1), the threads striding by blockDim */
__device__ __forceinline__ void st_share(uint4* p, size_t u0, size_t u1, uint32_t tid, uint32_t nt) {
  const uint4 z = make_uint4(0, 0, 0, 0);
  size_t u = u0 + tid;
  for (; u + 3 * nt < u1; u += 4 * nt) {
    __stcs(p + u, z);
    __stcs(p + u + nt, z);
    __stcs(p + u + 2 * nt, z);
    __stcs(p + u + 3 * nt, z);
  }
  for (; u < u1; u += nt) __stcs(p + u, z);
}

__global__ void k_st_chunk(uint4* p, size_t units) {
  const size_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  st_share(p, u0, u1, threadIdx.x, blockDim.x);
}

#define ZB 16384
__device__ __forceinline__ void bulk_zero(void* gdst, uint32_t ssrc, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n\t"
      "cp.async.bulk.commit_group;\n\t"
      "cp.async.bulk.wait_group.read 8;" ::"l"((unsigned long long)__cvta_generic_to_global(gdst)),
      "r"(ssrc), "r"(bytes)
      : "memory");
}
__device__ __forceinline__ void bulk_wait_all(void) {
  asm volatile("cp.async.bulk.wait_group 0;\n\tfence.proxy.async.global;" ::: "memory");
}
/* zero ZB bytes of shared memory (all threads), make them visible to the async proxy */
__device__ __forceinline__ void zero_smem(uint4* s) {
  for (uint32_t j = threadIdx.x; j < ZB / 16; j += blockDim.x) s[j] = make_uint4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
}
/* one thread: bulk copies of `piece` bytes over [u0, u1) units */
__device__ __forceinline__ void bulk_share(uint4* p, size_t u0, size_t u1, const uint4* s, uint32_t piece) {
  const uint32_t src = (uint32_t)__cvta_generic_to_shared(s);
  for (size_t u = u0; u < u1;) {
    const size_t n = (u1 - u) < (size_t)(piece / 16) ? (u1 - u) : (size_t)(piece / 16);
    bulk_zero(p + u, src, (uint32_t)(n * 16));
    u += n;
  }
}
__global__ void k_bulk(uint4* p, size_t units, uint32_t piece) {
  __shared__ __align__(128) uint4 s[ZB / 16];
  zero_smem(s);
  if (threadIdx.x == 0) {
    bulk_share(p, units * blockIdx.x / gridDim.x, units * (blockIdx.x + 1) / gridDim.x, s, piece);
    bulk_wait_all();
  }
}

/* ---- grid barrier (counter zeroed by the launch before) ---------------------------- */

__device__ __forceinline__ void grid_bar(unsigned* bar, unsigned* target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    *target += gridDim.x;
    unsigned v;
    asm volatile("atom.add.release.gpu.u32 %0, [%1], 1;" : "=r"(v) : "l"(bar) : "memory");
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
    } while ((int)(v - *target) < 0);
  }
  __syncthreads();
}

__global__ void k_zero_bar(unsigned* bar) {
  if (threadIdx.x == 0) *bar = 0;
  asm volatile("griddepcontrol.launch_dependents;");
}

__global__ void k_bars(unsigned* bar, int n, int pdl) {
  if (pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  unsigned target = 0;
  for (int i = 0; i < n; ++i) grid_bar(bar, &target);
}

/* ---- gate-like work + clear in one persistent launch ------------------------------ */

/* rows of 512 bytes (E = 256 bf16): each warp loads a row (16 B per lane), a
 * chain of 5 max-butterflies x 8 picks, writes 8 words; mode 0 work only, 1 work
 * + bulk clear (thread 0 issues its CTA's share first), 2 work warps + 4 extra
 * clearing warps, 3 clear only (bulk), 4 work + bulk issued after the work. */
__global__ void k_mix(const uint4* rows, int64_t T, uint32_t* out, uint4* buf, size_t units, int mode, int work_warps) {
  __shared__ __align__(128) uint4 s[ZB / 16];
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  if (mode == 1 || mode == 3 || mode == 4) zero_smem(s);
  if ((mode == 1 || mode == 3) && threadIdx.x == 0) bulk_share(buf, u0, u1, s, ZB);
  if (mode == 2 && (int)warp >= work_warps) {
    st_share(buf, u0, u1, threadIdx.x - work_warps * 32, blockDim.x - work_warps * 32);
    return;
  }
  if (mode != 3 && (int)warp < work_warps) {
    const int64_t gw = (int64_t)blockIdx.x * work_warps + warp, nw = (int64_t)gridDim.x * work_warps;
    for (int64_t t = gw; t < T; t += nw) {
      const uint4 v = __ldg(rows + t * 32 + lane);
      uint32_t key = v.x ^ v.y ^ v.z ^ v.w ^ lane;
      uint32_t res = 0;
#pragma unroll 1
      for (int j = 0; j < 8; ++j) {
        uint32_t m = key;
#pragma unroll
        for (int o = 16; o; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (key == m) key = 0;
        if (lane == (uint32_t)j) res = m;
      }
      if (lane < 8) out[t * 8 + lane] = res;
    }
  }
  if (mode == 4) {
    __syncthreads();
    if (threadIdx.x == 0) bulk_share(buf, u0, u1, s, ZB);
  }
  if ((mode == 1 || mode == 3 || mode == 4) && threadIdx.x == 0) bulk_wait_all();
}


/* ---- 4. where a cooperative launch puts its clear CTAs; 5. load latency under a clear ---- */

__device__ __forceinline__ unsigned long long gtime(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t smid(void) {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
/* q = 0: CTAs [0, C) clear; q >= 2: every q-th CTA clears. The others spin `ns`. */
__global__ void __launch_bounds__(256, 3) k_place(uint4* buf, size_t units, uint32_t C, uint32_t q,
                                                  unsigned long long ns, uint32_t* sm_of) {
  const uint32_t b = blockIdx.x;
  const bool clr = q ? b % q == 0 : b < C;
  if (clr) {
    const uint32_t ci = q ? b / q : b;
    if (threadIdx.x == 0) sm_of[ci] = smid();
    const size_t n = (size_t)C * 256;
    const uint4 z = make_uint4(0, 0, 0, 0);
    size_t i = (size_t)ci * 256 + threadIdx.x;
    for (; i + 3 * n < units; i += 4 * n) {
      __stcs(buf + i, z);
      __stcs(buf + i + n, z);
      __stcs(buf + i + 2 * n, z);
      __stcs(buf + i + 3 * n, z);
    }
    for (; i < units; i += n) __stcs(buf + i, z);
    return;
  }
  if (threadIdx.x == 0 && ns) {
    const unsigned long long t0 = gtime();
    while (gtime() - t0 < ns) {
    }
  }
  __syncthreads();
}

/* CTA 0 lane 0: `steps` dependent loads through chain[] (every step a new line far
 * away); CTAs 1..C clear grid-stride meanwhile (C = 0: alone). ns_out = ns per load. */
__global__ void k_probe(const uint32_t* chain, int steps, uint4* buf, size_t units, uint32_t C, double* ns_out,
                        uint32_t* sink) {
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      uint32_t j = 0;
      const unsigned long long t0 = gtime();
      for (int s = 0; s < steps; ++s) j = __ldcg(chain + j);
      const unsigned long long t1 = gtime();
      *ns_out = (double)(t1 - t0) / steps;
      *sink = j;
    }
    return;
  }
  const uint32_t ci = blockIdx.x - 1;
  const size_t n = (size_t)C * 256;
  const uint4 z = make_uint4(0, 0, 0, 0);
  for (size_t i = (size_t)ci * 256 + threadIdx.x; i < units; i += n) __stcs(buf + i, z);
}

/* ---- driver ------------------------------------------------------------------------ */

static cudaStream_t g_s;
static const int CALLS = 20, REPS = 9;

#define TIME(label, ...)                                                    \
  do {                                                                      \
    cudaGraph_t g_;                                                         \
    CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeThreadLocal));      \
    for (int c_ = 0; c_ < CALLS; ++c_) { __VA_ARGS__; }                        \
    cudaError_t e_ = cudaStreamEndCapture(g_s, &g_);                        \
    if (e_ != cudaSuccess) {                                                \
      printf("%-44s capture failed: %s\n", label, cudaGetErrorString(e_)); \
      (void)cudaGetLastError();                                             \
      break;                                                                \
    }                                                                       \
    printf("%-44s %9.2f us\n", label, lab_graph_us(g_, CALLS, REPS, 2, g_s)); \
  } while (0)

/* launch with attributes; returns the launch error (printed once) */
static cudaError_t launch_bars(unsigned* bar, int grid, int n, int coop, int pdl) {
  cudaLaunchConfig_t lc;
  memset(&lc, 0, sizeof lc);
  lc.gridDim = dim3(grid);
  lc.blockDim = dim3(256);
  lc.stream = g_s;
  cudaLaunchAttribute at[2];
  int na = 0;
  if (coop) {
    at[na].id = cudaLaunchAttributeCooperative;
    at[na].val.cooperative = 1;
    ++na;
  }
  if (pdl) {
    at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[na].val.programmaticStreamSerializationAllowed = 1;
    ++na;
  }
  lc.attrs = at;
  lc.numAttrs = na;
  return cudaLaunchKernelEx(&lc, k_bars, bar, n, pdl);
}

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  printf("%s, %d SMs\n", prop.name, g_sms);
  CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
  const size_t per_token = 14336; /* DeepSeek-R1 moe_buf row */
  const size_t maxb = per_token * 16384;
  uint4* buf;
  CK(cudaMalloc(&buf, maxb));
  unsigned* bar;
  CK(cudaMalloc(&bar, 64));
  CK(cudaMemset(bar, 0, 64));

  /* 1. clear rates */
  for (int64_t T : {4096, 16384}) {
    const size_t bytes = per_token * T, units = bytes / 16;
    char l[96];
    printf("== clear %zu MB (T = %lld)\n", bytes >> 20, (long long)T);
    snprintf(l, sizeof l, "memset");
    TIME(l, CK(cudaMemsetAsync(buf, 0, bytes, g_s)));
    for (int c : {1, 2, 4, 8}) {
      snprintf(l, sizeof l, "st16 stride %dx256/SM", c);
      TIME(l, (k_st_stride<<<g_sms * c, 256, 0, g_s>>>(buf, units)));
      snprintf(l, sizeof l, "st16 chunk %dx256/SM", c);
      TIME(l, (k_st_chunk<<<g_sms * c, 256, 0, g_s>>>(buf, units)));
    }
    snprintf(l, sizeof l, "st16 chunk 2x1024/SM");
    TIME(l, (k_st_chunk<<<g_sms * 2, 1024, 0, g_s>>>(buf, units)));
    for (int c : {1, 2, 4})
      for (uint32_t piece : {4096u, 16384u}) {
        snprintf(l, sizeof l, "bulk %dx/SM piece %u", c, piece);
        TIME(l, (k_bulk<<<g_sms * c, 128, 0, g_s>>>(buf, units, piece)));
      }
  }

  /* 2. cooperative launch in a graph; barrier cost */
  printf("== grid barrier (counter zeroed by a 1-thread kernel before; PDL between them where on)\n");
  for (int per : {1, 2})
    for (int coop : {0, 1})
      for (int pdl : {0, 1})
        for (int n : {0, 1, 4, 16}) {
          const int grid = g_sms * per;
          cudaError_t le = cudaSuccess;
          char l[96];
          snprintf(l, sizeof l, "bars %d/SM coop %d pdl %d n %d", per, coop, pdl, n);
          TIME(l, {
            k_zero_bar<<<1, 32, 0, g_s>>>(bar);
            le = launch_bars(bar, grid, n, coop, pdl);
            if (le != cudaSuccess) break;
          });
          if (le != cudaSuccess) printf("   launch error: %s\n", cudaGetErrorString(le));
        }
  /* eager: does a cooperative + PDL launch run at all outside capture? */
  {
    k_zero_bar<<<1, 32, 0, g_s>>>(bar);
    cudaError_t le = launch_bars(bar, g_sms, 4, 1, 1);
    cudaError_t se = cudaStreamSynchronize(g_s);
    printf("eager coop+pdl: launch %s, sync %s\n", cudaGetErrorString(le), cudaGetErrorString(se));
  }

  /* 3. gate-like work + clear in one launch */
  {
    const int64_t T = 16384;
    uint4* rows;
    uint32_t* out;
    CK(cudaMalloc(&rows, (size_t)T * 512));
    CK(cudaMemset(rows, 1, (size_t)T * 512));
    CK(cudaMalloc(&out, (size_t)T * 32));
    for (int64_t TT : {4096, 16384}) {
      const size_t units = per_token * TT / 16;
      printf("== mix, T = %lld (clear %zu MB, %lld rows)\n", (long long)TT, per_token * TT >> 20, (long long)TT);
      char l[96];
      snprintf(l, sizeof l, "memset");
      TIME(l, CK(cudaMemsetAsync(buf, 0, units * 16, g_s)));
      for (int per : {1, 2}) {
        const int grid = g_sms * per;
        snprintf(l, sizeof l, "%d/SM work only (8 warps)", per);
        TIME(l, (k_mix<<<grid, 256, 0, g_s>>>(rows, TT, out, buf, units, 0, 8)));
        snprintf(l, sizeof l, "%d/SM bulk clear only", per);
        TIME(l, (k_mix<<<grid, 256, 0, g_s>>>(rows, TT, out, buf, units, 3, 8)));
        snprintf(l, sizeof l, "%d/SM work + bulk first", per);
        TIME(l, (k_mix<<<grid, 256, 0, g_s>>>(rows, TT, out, buf, units, 1, 8)));
        snprintf(l, sizeof l, "%d/SM work + bulk after", per);
        TIME(l, (k_mix<<<grid, 256, 0, g_s>>>(rows, TT, out, buf, units, 4, 8)));
        snprintf(l, sizeof l, "%d/SM 8 work + 8 st16 warps", per);
        TIME(l, (k_mix<<<grid, 512, 0, g_s>>>(rows, TT, out, buf, units, 2, 8)));
        snprintf(l, sizeof l, "%d/SM 8 work + 24 st16 warps", per);
        TIME(l, (k_mix<<<grid, 1024, 0, g_s>>>(rows, TT, out, buf, units, 2, 8)));
      }
    }
  }

  /* 4. placement of the clear CTAs in a cooperative launch of 3 CTAs per SM */
  {
    const size_t units = per_token * 16384 / 16;
    uint32_t* sm_of;
    CK(cudaMalloc(&sm_of, 4096 * 4));
    printf("== placement: cooperative, %d clear + %d other CTAs (224 MB)\n", g_sms, 2 * g_sms);
    for (uint32_t q : {0u, 3u})
      for (unsigned long long ns : {0ull, 15000ull}) {
        char l[96];
        snprintf(l, sizeof l, "clear %s, others spin %llu us", q ? "every 3rd" : "first", ns / 1000);
        cudaLaunchConfig_t lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDim = dim3(3 * g_sms);
        lc.blockDim = dim3(256);
        lc.dynamicSmemBytes = 8192;
        lc.stream = g_s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeCooperative;
        at[0].val.cooperative = 1;
        lc.attrs = at;
        lc.numAttrs = 1;
        const uint32_t C = (uint32_t)g_sms;
        TIME(l, CK(cudaLaunchKernelEx(&lc, k_place, buf, units, C, q, ns, sm_of)));
        CK(cudaLaunchKernelEx(&lc, k_place, buf, units, C, q, ns, sm_of));
        CK(cudaStreamSynchronize(g_s));
        uint32_t h[4096];
        CK(cudaMemcpy(h, sm_of, C * 4, cudaMemcpyDeviceToHost));
        int seen[1024] = {0}, distinct = 0, most = 0;
        for (uint32_t i = 0; i < C; ++i)
          if (h[i] < 1024) {
            if (seen[h[i]]++ == 0) distinct++;
            if (seen[h[i]] > most) most = seen[h[i]];
          }
        printf("   clear CTAs on %d distinct SMs (at most %d on one)\n", distinct, most);
      }
    CK(cudaFree(sm_of));
  }

  /* 5. dependent-load latency, alone and beside a clear at the memset's rate */
  {
    const size_t N = (size_t)64 << 20; /* 256 MB of chain words */
    uint32_t* chain;
    CK(cudaMalloc(&chain, N * 4));
    uint32_t* h = (uint32_t*)malloc(N * 4);
    const size_t jump = 65537 * 16 + 5; /* ~4 MB: a new line every step */
    for (size_t i = 0; i < N; ++i) h[i] = (uint32_t)((i + jump) % N);
    CK(cudaMemcpy(chain, h, N * 4, cudaMemcpyHostToDevice));
    free(h);
    double* d_ns;
    uint32_t* sink;
    CK(cudaMalloc(&d_ns, 8));
    CK(cudaMalloc(&sink, 4));
    const size_t units = per_token * 16384 / 16;
    printf("== dependent loads (L2 misses), ns per load\n");
    for (uint32_t C : {0u, 66u, 132u, 264u}) {
      k_probe<<<1 + C, 256, 0, g_s>>>(chain, 40, buf, units, C, d_ns, sink);
      CK(cudaStreamSynchronize(g_s));
      double ns;
      CK(cudaMemcpy(&ns, d_ns, 8, cudaMemcpyDeviceToHost));
      printf("probe beside %3u clear CTAs: %7.1f ns per load\n", C, ns);
    }
    CK(cudaFree(chain));
  }
  CK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
