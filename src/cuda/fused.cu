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
 * warp reductions per token); spread over C SMs, each SM gates ceil(T/C)
 * tokens. The gating lane of entry i = t*k + slot sends (expert id, weight) to
 * slot i of EVERY CTA of the cluster with st.async, which completes on the
 * receiving CTA's mbarrier (8 bytes per entry expected): a CTA knows that all
 * T*k entries have landed by waiting on its own mbarrier, without a cluster
 * barrier or a fence after the gating. Each CTA then runs the small sort of
 * sort.cuh on its copy (the table and the scan redundantly, cheap), and writes
 * the entries i % C == rank and the padding of the experts e % C == rank.
 *
 * Per routing CTA:
 *   0. gating warps issue their first row's loads (and the bias);
 *   1. clear the mask table; the last thread sets up the mbarrier; a CTA
 *      barrier (both visible to this CTA's threads); cluster arrive (relaxed:
 *      only the mbarrier init must reach the other CTAs, fenced);
 *   2. gate tokens t = rank + C * (warp + gate_warps * m); before the first
 *      send, cluster wait (every CTA's mbarrier is initialised);
 *   3. wait on the own mbarrier (threads that sent nothing: then the cluster
 *      barrier); the small sort (sort.cuh).
 *
 * Warming (dev/cuda-notes.md v3): at decode the time of this kernel is mostly
 * fetching instructions into a cold instruction cache, once per SM, on the
 * critical path. Idle warps run the code ahead of the real warps on dummy data
 * (live = false: no global access, no remote access, named one-warp barriers):
 * warp 7 runs the small sort (step 3) as soon as the kernel starts, while the
 * gating runs; warp 6 runs the gating of a zero row while the real gating warp
 * waits for its row. Both only in CTAs where those warps have no token.
 * mr_cuda_perf.no_warm switches this off (lab).
 *
 * Shared memory: small sort (mr_small_words) | mbarrier (8 bytes) | per gating
 * warp grouped-selection scratch (GROUPED only).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

mr_cuda_perf_knobs mr_cuda_perf = {0, 0};

/* Shared memory the fused kernel may use without an opt-in attribute (which
 * would need a cudaFuncSetAttribute call, unsafe during stream capture). */
#define MR_FUSED_SMEM_BYTES (48 * 1024)
#define MR_WARPS (MR_SORT_THREADS / 32)

/* What the kernel needs besides the gating and sorting arguments. */
typedef struct mr_fused_k {
  uint32_t mbar_word;     /* word offset of the mbarrier (even) */
  uint32_t scratch_word;  /* word offset of the grouped scratch (multiple of 4) */
  uint32_t scratch_words; /* per gating warp (multiple of 4), 0 without grouping */
  int32_t gate_warps;     /* warps per CTA that gate */
  int32_t warm;           /* dry-run warps on */
  int32_t dry_gate_warp;  /* > 0: this warp runs the dry gating (lab), else warp 6 */
} mr_fused_k;

typedef struct mr_fused_layout {
  uint32_t n, nw;
  mr_fused_k k;
  size_t smem; /* bytes */
} mr_fused_layout;

template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(MR_SORT_THREADS, 1)
    mr_fused_route_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_sort_out o,
                          const __grid_constant__ mr_small_p sp, const __grid_constant__ mr_fused_k fk,
                          int32_t* topk_ids, float* topk_weights) {
  constexpr int W = MR_ESZ(DT);
  const uint32_t C = mr_cluster_size();
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, C)) return; /* clear-only clusters: no cluster barrier, no DSMEM */
  MR_STAMP(0);
  extern __shared__ __align__(16) uint32_t mr_fused_smem[];
  uint32_t* sm = mr_fused_smem;
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t rank = mr_cluster_rank();
  const int E = g.num_experts, k = g.top_k;
  const int64_t T = g.num_tokens;
  uint32_t* ent = mr_small_ent(sm);
  uint32_t* maskw = mr_small_mask(sm, sp);
  const uint32_t bar = mr_smem_addr(sm + fk.mbar_word);
  float* gbuf = (float*)(sm + fk.scratch_word + warp * fk.scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + E);
  const uint32_t en_bits = mr_small_enabled(&o); /* expert_mask loads in flight early */

  const int gw = fk.gate_warps;
  const int64_t t0 = (int)warp < gw ? (int64_t)rank + (int64_t)C * warp : T;
  const int64_t step = (int64_t)C * gw;
  const bool has_row = t0 < T;
  /* the dry gating warp: has a scratch slot, is not warp 7 */
  const int dgw = fk.dry_gate_warp > 0 ? fk.dry_gate_warp : (gw < MR_WARPS ? gw : MR_WARPS - 1) - 1;
  const bool dry_gate =
      fk.warm && (int)warp == dgw && dgw >= 1 && dgw < gw && dgw < MR_WARPS - 1 && !has_row && (int64_t)rank < T;
  const bool dry_post = fk.warm && warp == MR_WARPS - 1 && !has_row;

  /* 0. */
  uint32_t raw[EPL], braw[EPL];
  const unsigned char* row0 = g.logits + (has_row ? t0 : 0) * g.row_bytes;
  const uint32_t ninf = mr_raw_neg_inf<DT>(g.f16 != 0);
  mr_load_lane<W, EPL>(row0, lane, E, ninf, has_row, raw);
  if (KIND != MR_KIND_PACKED)
    mr_load_lane<4, EPL>((const unsigned char*)g.bias, lane, E, 0u, has_row && g.bias != NULL, braw);

  /* 1. */
  const uint32_t mask_words = sp.E * sp.nw;
#pragma unroll 1
  for (uint32_t i = tid; i < mask_words; i += MR_SORT_THREADS) maskw[i] = 0u;
  if (dry_post) mr_small_dry_init(sm, lane);
  if (tid == MR_SORT_THREADS - 1) {
    mr_mbar_init(bar, 1u);
    mr_mbar_arrive_expect_tx(bar, 8u * sp.n);
    mr_fence_mbar_init();
  }
  __syncthreads(); /* this CTA's threads: the mbarrier is initialised, the table clear */
  mr_cluster_arrive_relaxed(); /* the other CTAs: after their wait, the mbarrier is initialised */
  MR_STAMP(1);

  /* 2. */
  bool waited = false;
  if (has_row || dry_gate) {
#pragma unroll 1
    for (int64_t t = has_row ? t0 : -1; t < T; t = t < 0 ? T : t + step) {
      const bool live = t >= 0;
      const unsigned char* row = g.logits + (live ? t : 0) * g.row_bytes;
      if (live && t != t0) mr_load_lane<W, EPL>(row, lane, E, ninf, true, raw);
      int32_t id;
      float w;
      mr_gate_row<DT, EPL, KIND>(g, lane, raw, braw, row, live, gbuf, gsel, &id, &w);
      MR_STAMP(2);
      if (live) {
        if (!waited) {
          mr_cluster_wait();
          waited = true;
        }
        if ((int)lane < k) {
          const uint32_t i = (uint32_t)t * (uint32_t)k + lane;
          const uint32_t la = mr_smem_addr(ent + 2u * i);
          const uint32_t wb = __float_as_uint(w);
#pragma unroll 1
          for (uint32_t q = 0; q < C; ++q) mr_st_async_v2(mr_mapa(la, q), (uint32_t)id, wb, mr_mapa(bar, q));
          if (topk_ids) topk_ids[i] = id;
          if (topk_weights) topk_weights[i] = w;
        }
        MR_STAMP(3);
      }
    }
  }

  /* 3. a dry pass first (warp 7 when idle), then the real one. A thread that
   * sent nothing needs the cluster barrier for nothing (its own mbarrier was
   * initialised before the __syncthreads of step 1), but waits on it (every
   * arrive gets its wait) after its mbarrier: the wait invalidates L1
   * (CCTL.IVALL), which must not hit the gating warps' rows. */
#pragma unroll 1
  for (int pass = dry_post ? 0 : 1; pass < 2; ++pass) {
    const bool live = pass == 1;
    if (live) {
      while (!mr_mbar_try_wait(bar, 0u)) {
      }
      if (!waited) mr_cluster_wait();
      MR_STAMP(4);
    }
    mr_small_post(o, sp, sm, rank, C, en_bits, live);
  }
  MR_STAMP(7);
}

static int mr_fused_plan(const mr_config* cfg, int grouped, int num_groups, mr_fused_layout* L) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  if (n > MR_SMALL_MAX_ENTRIES) return 0;
  const uint32_t E = (uint32_t)cfg->num_experts;
  L->n = (uint32_t)n;
  L->nw = (uint32_t)((n + 31) / 32);
  if (E * L->nw > MR_SMALL_MAX_MASK_WORDS) return 0;
  const uint32_t small = mr_small_words(L->n, E, L->nw);
  L->k.mbar_word = (small + 1u) & ~1u;
  L->k.scratch_word = (L->k.mbar_word + 2u + 3u) & ~3u;
  L->k.scratch_words = 0;
  if (grouped) {
    uint32_t sw = E;
    if (num_groups > 32) sw += ((uint32_t)num_groups + 3u) / 4u;
    L->k.scratch_words = (sw + 3u) & ~3u;
  }
  const uint32_t budget = MR_FUSED_SMEM_BYTES / 4;
  if (L->k.scratch_word > budget) return 0;
  L->k.gate_warps = MR_WARPS;
  if (L->k.scratch_words > 0) {
    const uint32_t fit = (budget - L->k.scratch_word) / L->k.scratch_words;
    if (fit < 1) return 0;
    if ((uint32_t)L->k.gate_warps > fit) L->k.gate_warps = (int32_t)fit;
  }
  L->k.warm = !mr_cuda_perf.no_warm;
  L->k.dry_gate_warp = mr_cuda_perf.dry_gate_warp;
  L->smem = (size_t)(L->k.scratch_word + (uint32_t)L->k.gate_warps * L->k.scratch_words) * 4u;
  return 1;
}

extern "C" int mr_cuda_fused_fits(const mr_config* cfg) {
  if (mr_cuda_no_cluster()) return 0;
  mr_fused_layout L;
  const int grouped = cfg->num_groups > 1 && cfg->topk_groups < cfg->num_groups;
  return mr_fused_plan(cfg, grouped, cfg->num_groups, &L);
}

template <int DT, int EPL, int KIND>
static cudaError_t mr_launch_fused_t(const mr_gate_p* g, const mr_sort_out* o, const mr_config* cfg,
                                     const mr_fused_layout* L, int32_t* topk_ids, float* topk_weights,
                                     cudaStream_t stream) {
  /* C = 8 at every T >= 1: measured best or within noise at T = 1..16 for every
   * preset timed (dev/cuda-notes.md, run 2), also at T < 8, where the extra CTAs
   * gate nothing but share the emission. */
  const int64_t T = g->num_tokens;
  int C = T < 1 ? 1 : 8;
  if (mr_cuda_tune.fused_cluster > 0) C = mr_cuda_tune.fused_cluster;
  if (C < 1) C = 1;
  mr_small_p sp;
  mr_small_p_init(cfg, (uint32_t)C, &sp);
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_SORT_THREADS);
  clear = (clear + C - 1) / C * C; /* the grid is whole clusters */
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(C + clear), MR_SORT_THREADS, L->smem, stream);
  /* always a cluster launch, also for C = 1, so that DSMEM addressing and the
   * cluster barrier are used exactly as defined for clusters */
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  lc.attrs = attr;
  lc.numAttrs = 1;
  unsigned na = 1;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_fused_route_kernel<DT, EPL, KIND>, *g, *o, sp, L->k, topk_ids, topk_weights));
  return cudaSuccess;
}

extern "C" cudaError_t mr_cuda_launch_fused_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                  int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  mr_fused_layout L;
  if (!mr_fused_plan(cfg, a->grouped, a->num_groups, &L)) return cudaErrorInvalidConfiguration;
  mr_gate_p g;
  mr_gate_p_init(a, cfg->dtype, &g);
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int kind = mr_gate_kind(a, cfg->dtype);
  /* the specialisation list of common.cuh, times the kinds (gate.cuh) */
#define MR_FUSED_LAUNCH(DT, EPL, KIND)                                                                      \
  return mr_launch_fused_t<MR_KIND_DT(DT, MR_KIND_FIX(DT, KIND)), EPL, MR_KIND_FIX(DT, KIND)>(&g, o, cfg, &L, \
                                                                                              topk_ids,      \
                                                                                              topk_weights, stream)
#define MR_FUSED_CASE(DT, EPL)                                                                 \
  if (cfg->dtype == DT && epl == EPL) {                                                        \
    if (kind == MR_KIND_PACKED) MR_FUSED_LAUNCH(DT, EPL, MR_KIND_PACKED);                      \
    if (kind == MR_KIND_GROUPED) MR_FUSED_LAUNCH(DT, EPL, MR_KIND_GROUPED);                    \
    MR_FUSED_LAUNCH(DT, EPL, MR_KIND_FULL);                                                    \
  }
  MR_FOR_EACH_GATE_SPEC(MR_FUSED_CASE)
#undef MR_FUSED_CASE
#undef MR_FUSED_LAUNCH
  return cudaErrorInvalidConfiguration;
}
