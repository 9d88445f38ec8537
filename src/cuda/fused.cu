/*
 * fused.cu - route in ONE launch for small T*k (decode): gating, top-k,
 * counting, padded scan, scatter into the layout(s), padding, block ids,
 * totals, and moe_buf cleared, with the top-k never going through global
 * memory (except the optional topk_ids / topk_weights outputs).
 *
 * Grid: one thread-block cluster of C routing CTAs (C = 8, blocks 0..C-1),
 * then whole clusters of CTAs that only clear moe_buf.
 *
 * Why a cluster: gating is the longest step and is latency-bound (a chain of
 * warp reductions per token); 16 tokens on one SM put four gating warps on
 * each scheduler. Spread over C SMs, each SM gates ceil(T/C) tokens. The
 * results meet through distributed shared memory: the gating warp of token t
 * ORs the bit of each entry into the mask table (sort.cuh) of EVERY CTA of the
 * cluster and stores the entry's weight into the CTA that will emit that
 * expert (e % C). After one cluster barrier every CTA holds the complete table,
 * scans it redundantly (cheap: E <= 1024), and emits its share of experts, so
 * the output writes are spread over C SMs too.
 *
 * Per routing CTA (each step's barrier says why it is there):
 *   0. gating warps issue their first row's loads (the longest latency);
 *   1. clear the local mask table; cluster arrive (release): "my table is clear";
 *   2. gate tokens t = rank + C * (warp + gate_warps * n); before the first
 *      remote OR, cluster wait (acquire): every table of the cluster is clear;
 *   3. cluster arrive + wait: every bit and weight of the cluster has landed;
 *   4. block scan (one __syncthreads), emit from the scan registers (sort.cuh).
 * Shared memory: mask table [E*NW] | weights [T*k] | scratch that is first the
 * gating warps' grouped-selection buffers, then (after step 3) the scan's warp
 * totals.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

/* Shared memory the fused kernel may use without an opt-in attribute (which
 * would need a cudaFuncSetAttribute call, unsafe during stream capture). */
#define MR_FUSED_SMEM_BYTES (48 * 1024)

typedef struct mr_fused_layout {
  int nw;                 /* mask words per expert */
  uint32_t mask_words;    /* E * nw */
  uint32_t scratch_words; /* per gating warp (grouped selection), 0 otherwise */
  int gate_warps;         /* warps per CTA that gate */
  size_t smem;            /* bytes */
} mr_fused_layout;

template <int DT, int EPL>
__global__ void __launch_bounds__(MR_SORT_THREADS, 1)
    mr_fused_route_kernel(const __grid_constant__ mr_gate_args a, const __grid_constant__ mr_sort_out o,
                          int32_t* topk_ids, float* topk_weights, int nw, int gate_warps, uint32_t scratch_words) {
  const uint32_t C = mr_cluster_size();
  if (blockIdx.x >= C) { /* clear-only clusters: no cluster barrier, no DSMEM */
    mr_clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)(blockIdx.x - C) * blockDim.x + threadIdx.x,
                   (size_t)(gridDim.x - C) * blockDim.x);
    return;
  }
  MR_STAMP(0);
  extern __shared__ uint32_t mr_fused_smem[];
  const int E = a.num_experts, k = a.top_k;
  const int64_t T = a.num_tokens;
  const uint32_t n = (uint32_t)(T * k);
  const uint32_t rank = mr_cluster_rank();
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  uint32_t* maskw = mr_fused_smem;
  uint32_t* wts = maskw + E * nw;
  uint32_t* scratch = wts + n;
  float* gbuf = (float*)(scratch + warp * scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + E);
  const uint32_t en_bits = mr_small_enabled(&o); /* expert_mask load in flight early */

  /* 0. first row in flight */
  int64_t t = (int)warp < gate_warps ? (int64_t)rank + (int64_t)C * warp : T;
  const int64_t step = (int64_t)C * gate_warps;
  uint32_t raw[EPL];
  if (t < T) mr_gate_load<DT, EPL>(&a, t, lane, raw);

  /* 1. */
  for (uint32_t i = tid; i < (uint32_t)(E * nw); i += MR_SORT_THREADS) maskw[i] = 0u;
  mr_cluster_arrive();
  MR_STAMP(1);

  /* 2. */
  bool waited = false;
  for (; t < T; t += step) {
    if (waited) mr_gate_load<DT, EPL>(&a, t, lane, raw);
    int32_t id;
    float w;
    mr_gate_compute<DT, EPL>(&a, t, lane, raw, gbuf, gsel, &id, &w);
    MR_STAMP(2);
    if (!waited) {
      mr_cluster_wait();
      waited = true;
      MR_STAMP(3);
    }
    if ((int)lane < k) {
      const uint32_t i = (uint32_t)t * (uint32_t)k + lane;
      if (topk_ids) topk_ids[i] = id;
      if (topk_weights) topk_weights[i] = w;
      /* gated ids are always in [0, E); the mask is applied by the scan */
      const uint32_t* word = &maskw[(uint32_t)id * (uint32_t)nw + i / 32u];
      const uint32_t bit = 1u << (i % 32u);
      for (uint32_t q = 0; q < C; ++q) mr_dsmem_or(mr_dsmem_addr(word, q), bit);
      mr_dsmem_store_f32(mr_dsmem_addr(&wts[i], (uint32_t)id % C), w);
    }
  }
  if (!waited) mr_cluster_wait();

  MR_STAMP(4);
  /* 3. */
  mr_cluster_arrive();
  mr_cluster_wait();
  MR_STAMP(5);

  /* 4. the scan's warp totals reuse the gating scratch (all gating is done) */
  const uint32_t total = mr_small_scan_emit(&o, maskw, nw, scratch, wts, rank, C, en_bits);
  if (rank == 0 && tid == 0) mr_emit_totals(&o, total);
  MR_STAMP(7);
}

static int mr_fused_plan(const mr_config* cfg, int grouped, int num_groups, mr_fused_layout* L) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  if (n > MR_SMALL_MAX_ENTRIES) return 0;
  L->nw = (int)((n + 31) / 32);
  L->mask_words = (uint32_t)cfg->num_experts * (uint32_t)L->nw;
  if (L->mask_words > MR_SMALL_MAX_MASK_WORDS) return 0;
  L->scratch_words = 0;
  if (grouped) {
    L->scratch_words = (uint32_t)cfg->num_experts;
    if (num_groups > 32) L->scratch_words += ((uint32_t)num_groups + 3u) / 4u;
  }
  const uint32_t budget = MR_FUSED_SMEM_BYTES / 4;
  const uint32_t fixed = L->mask_words + (uint32_t)n;
  const uint32_t scan_words = 8u; /* the scan's warp totals */
  if (fixed + scan_words > budget) return 0;
  L->gate_warps = MR_SORT_THREADS / 32;
  if (L->scratch_words > 0) {
    const uint32_t fit = (budget - fixed) / L->scratch_words;
    if (fit < 1) return 0;
    if ((uint32_t)L->gate_warps > fit) L->gate_warps = (int)fit;
  }
  uint32_t scratch = (uint32_t)L->gate_warps * L->scratch_words;
  if (scratch < scan_words) scratch = scan_words;
  L->smem = (size_t)(fixed + scratch) * 4u;
  return 1;
}

extern "C" int mr_cuda_fused_fits(const mr_config* cfg) {
  mr_fused_layout L;
  const int grouped = cfg->num_groups > 1 && cfg->topk_groups < cfg->num_groups;
  return mr_fused_plan(cfg, grouped, cfg->num_groups, &L);
}

template <int DT, int EPL>
static cudaError_t mr_launch_fused_t(const mr_gate_args* a, const mr_sort_out* o, const mr_fused_layout* L,
                                     int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  /* C = 8 at every T >= 1: measured best or within noise at T = 1..16 for every
   * preset timed (dev/cuda-notes.md, run 2), also at T < 8, where the extra CTAs
   * gate nothing but share the emission of the experts. */
  const int64_t T = a->num_tokens;
  int C = T < 1 ? 1 : 8;
  if (mr_cuda_tune.fused_cluster > 0) C = mr_cuda_tune.fused_cluster;
  if (C < 1) C = 1;
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_SORT_THREADS);
  clear = (clear + C - 1) / C * C; /* the grid is whole clusters */
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(C + clear), MR_SORT_THREADS, L->smem, stream);
  /* always a cluster launch, also for C = 1, so that DSMEM addressing and the
   * cluster barrier are used exactly as defined for clusters */
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  lc.attrs = attr;
  lc.numAttrs = 1;
  MR_TRY(cudaLaunchKernelEx(&lc, mr_fused_route_kernel<DT, EPL>, *a, *o, topk_ids, topk_weights, L->nw,
                            L->gate_warps, L->scratch_words));
  return cudaSuccess;
}

extern "C" cudaError_t mr_cuda_launch_fused_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                  int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  mr_fused_layout L;
  if (!mr_fused_plan(cfg, a->grouped, a->num_groups, &L)) return cudaErrorInvalidConfiguration;
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
#define MR_FUSED_CASE(DT, EPL) \
  if (cfg->dtype == DT && epl == EPL) return mr_launch_fused_t<DT, EPL>(a, o, &L, topk_ids, topk_weights, stream);
  MR_FOR_EACH_GATE_SPEC(MR_FUSED_CASE)
#undef MR_FUSED_CASE
  return cudaErrorInvalidConfiguration;
}
