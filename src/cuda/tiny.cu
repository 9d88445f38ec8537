/*
 * tiny.cu - route in ONE launch for 16-bit softmax rows when T <= 8, T*k <= 32,
 * T*E <= 512, min(T*k, E) <= 16, E <= 256 and T = 1 for E > 128
 * (mr_cuda_tiny_takes; DeepSeek-R1 sizes T = 1):
 * one routing CTA gates every row itself (a warp per row) and sorts the at
 * most 32 entries inside ONE warp, with no expert-sized table, no block-wide
 * scan and no cross-CTA exchange; the other CTAs of the launch clear moe_buf.
 *
 * Why (perf-log v4, stamp_lab run 4): the cluster kernel of fused.cu spent
 * ~3100 cycles after gating at T = 1 (exchange ~900, mask table ~290, the
 * block scan over E ~880, emission ~1050), all of it dependent latency, not
 * cold caches (the same code run twice in a row costs the same). Here:
 *
 *   1. warps w < T gate rows w, w + 8, ...; lanes j < k put entry i = t*k + j
 *      (expert, weight bits) into shared memory. Meanwhile the last warp (or
 *      warp 0 after its rows) turns expert_mask into a bitmap of E bits and
 *      the prefix counts of its words (local ids, design.md 7).
 *   2. one CTA barrier; warp 0, lane i = entry i:
 *        match = the lanes with the same expert (mr_warp_peers): cnt = popc(match), rank = popc of
 *        the lanes below (ascending i = ascending token, then slot);
 *        leader (rank 0, expert enabled): blocks = ceil(cnt / U);
 *        start block = sum of blocks of the leaders with a smaller expert
 *        (32 independent shuffles), total = sum of all;
 *      entry i goes to start * U + rank; each leader publishes a record
 *      (start, cnt, blocks, local id).
 *   3. one CTA barrier; warp w writes the padding and block ids of records
 *      w, w + 8, ... (coalesced); thread 0 the totals.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

#define MR_TINY_THREADS 256
#define MR_TINY_WARPS (MR_TINY_THREADS / 32)
#define MR_TINY_MAX_E 1024
#define MR_TINY_SMEM_BYTES (48 * 1024 - 64) /* dynamic; 48 KB less room for the static s_nrec */
/* default bounds (mr_cuda_tune.tiny_max_n overrides both, lab): T*k, and T*E */
#define MR_TINY_DEFAULT_N 32
#define MR_TINY_DEFAULT_TE 512

/* T*k bound of this kernel; above 32 entries the sort takes the multi-warp form */
#define MR_TINY_MAX_N 128u
/* shared memory, words: entries [2 * 128] | mask bitmap [32] | its prefix counts [32] |
 * per-warp leader counts [16] | packed (expert, blocks) [128] | records [4 * 128] |
 * entry bit table [E * ceil(n/32)] (n > 32 only) | grouped scratch (tk.scratch_off) */
#define MR_TINY_ENT 0u
#define MR_TINY_BM 256u
#define MR_TINY_PRE 288u
#define MR_TINY_WL 320u
#define MR_TINY_PK 336u
#define MR_TINY_REC 464u
#define MR_TINY_TBL 976u

typedef struct mr_tiny_k {
  uint32_t n;             /* T*k <= MR_TINY_MAX_N */
  uint32_t k;
  uint32_t kmagic;        /* t = (i * kmagic) >> 20 */
  uint32_t U;
  uint32_t umagic;        /* ceil(2^32 / U), 0 when U == 1 */
  uint32_t T;
  uint32_t E;
  uint32_t nw;            /* ceil(n / 32) */
  uint32_t scratch_off;   /* word offset of the grouped scratch */
  uint32_t scratch_words; /* per gating warp, 0 without grouping */
  int32_t gate_warps;
} mr_tiny_k;

/* One warp: expert_mask as a bitmap of E bits (non-zero = enabled) and the
 * exclusive prefix counts of its words, for the local ids (design.md 7). */
__device__ __forceinline__ void mr_tiny_mask_bitmap(const int32_t* mask, uint32_t E, uint32_t* sm, uint32_t lane) {
  const uint32_t mw = (E + 31u) / 32u;
#pragma unroll 1
  for (uint32_t w = 0; w < mw; ++w) {
    const uint32_t e = w * 32u + lane;
    const uint32_t b = __ballot_sync(MR_FULL_MASK, e < E && __ldg(mask + e) != 0);
    if (lane == 0) sm[MR_TINY_BM + w] = b;
  }
  __syncwarp();
  const uint32_t c = lane < mw ? __popc(sm[MR_TINY_BM + lane]) : 0u;
  sm[MR_TINY_PRE + lane] = mr_warp_incl_scan(c, lane) - c;
}

/*
 * The sort for 32 < n <= 128, thread i = entry i (warps 0 .. nw-1), three CTA
 * barriers: (a) each entry clears its expert's row of the bit table (only the
 * rows of experts that occur: no expert-sized clear); (b) sets its bit
 * (atomicOr: order-free, so deterministic); (c) count and rank from the row's
 * popcounts, leaders publish (expert, blocks) and count themselves per warp;
 * (d) start block = sum over the published blocks of smaller experts, the
 * entry is placed, each leader writes its record. Returns after the barrier
 * that publishes the records (*nrec).
 */
__device__ __forceinline__ void mr_tiny_sort_multi(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t* sm,
                                                   bool has_mask, uint32_t* nrec) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t n = tk.n, nw = tk.nw, U = tk.U;
  const bool valid = tid < n;
  uint32_t* tbl = sm + MR_TINY_TBL;
  const uint32_t e = valid ? sm[MR_TINY_ENT + 2u * tid] : 0u;
  uint32_t* row = tbl + e * nw;
  if (valid)
    for (uint32_t w = 0; w < nw; ++w) row[w] = 0u;
  __syncthreads();
  if (valid) atomicOr(row + (tid >> 5), 1u << lane);
  __syncthreads();
  uint32_t cnt = 0u, rank = 0u, blocks = 0u, local = e, en = valid ? 1u : 0u;
  if (valid) {
    for (uint32_t w = 0; w < nw; ++w) {
      const uint32_t b = row[w];
      cnt += __popc(b);
      rank += w < warp ? __popc(b) : (w == warp ? __popc(b & mr_lanemask_lt()) : 0u);
    }
    if (has_mask) {
      const uint32_t bw = sm[MR_TINY_BM + (e >> 5)];
      en = (bw >> (e & 31u)) & 1u;
      local = sm[MR_TINY_PRE + (e >> 5)] + __popc(bw & ((1u << (e & 31u)) - 1u));
    }
    const uint32_t x = cnt + U - 1u;
    if (en && rank == 0u) blocks = tk.umagic ? __umulhi(x, tk.umagic) : x;
  }
  const uint32_t lb = warp < nw ? __ballot_sync(MR_FULL_MASK, blocks > 0u) : 0u;
  if (valid) sm[MR_TINY_PK + tid] = (e << 8) | blocks; /* e < 1024, blocks <= 128 / U + 1 */
  if (warp < nw && lane == 0) sm[MR_TINY_WL + warp] = __popc(lb);
  __syncthreads();
  if (valid) {
    uint32_t start = 0u, total = 0u;
    const uint4* pk4 = (const uint4*)(sm + MR_TINY_PK);
#pragma unroll 1
    for (uint32_t j = 0; j < (n + 3u) / 4u; ++j) {
      const uint4 q = pk4[j];
      const uint32_t v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const uint32_t bj = 4u * j + (uint32_t)c < n ? v[c] & 0xffu : 0u;
        start += (v[c] >> 8) < e ? bj : 0u;
        total += bj;
      }
    }
    if (en) {
      const uint32_t pos = start * U + rank;
      const uint32_t t = (tid * tk.kmagic) >> 20, slot = tid - t * tk.k;
      if (o.sorted_ids) {
        o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
        if (o.sorted_weights) o.sorted_weights[pos] = __uint_as_float(sm[MR_TINY_ENT + 2u * tid + 1u]);
      }
      if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)tid;
    }
    uint32_t r = __popc(lb & mr_lanemask_lt());
    for (uint32_t w = 0; w < warp; ++w) r += sm[MR_TINY_WL + w];
    if (blocks > 0u) *(uint4*)(sm + MR_TINY_REC + 4u * r) = make_uint4(start, cnt, blocks, local);
    if (tid == 0) {
      uint32_t nr = 0u;
      for (uint32_t w = 0; w < nw; ++w) nr += sm[MR_TINY_WL + w];
      *nrec = nr;
      mr_emit_totals(&o, total * U);
    }
  }
}

template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(MR_TINY_THREADS, 1)
    mr_tiny_route_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_sort_out o,
                         const __grid_constant__ mr_tiny_k tk, int32_t* topk_ids, float* topk_weights) {
  constexpr int W = MR_ESZ(DT);
  mr_pdl_enter();
  if (blockIdx.x > 0) { /* clear-only CTAs */
    mr_clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)(blockIdx.x - 1) * blockDim.x + threadIdx.x,
                   (size_t)(gridDim.x - 1) * blockDim.x);
    return;
  }
  MR_STAMP(0);
  extern __shared__ __align__(16) uint32_t mr_tiny_smem[];
  uint32_t* sm = mr_tiny_smem;
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const int E = g.num_experts, k = g.top_k;
  const int64_t T = g.num_tokens;
  const int gw = tk.gate_warps;
  const bool has_mask = o.expert_mask != NULL;
  /* the bitmap warp: the last warp when it gates nothing, else warp 0 after its rows */
  const uint32_t mask_warp = gw < MR_TINY_WARPS ? MR_TINY_WARPS - 1u : 0u;

  /* 1. gating; rows are loaded first */
  uint32_t raw[EPL], braw[EPL];
  const int64_t t0 = (int)warp < gw ? (int64_t)warp : T;
  const bool has_row = t0 < T;
  const unsigned char* row0 = g.logits + (has_row ? t0 : 0) * g.row_bytes;
  const uint32_t ninf = mr_raw_neg_inf<DT>(g.f16 != 0);
  mr_load_lane<W, EPL>(row0, lane, E, ninf, has_row, raw);
  if (KIND != MR_KIND_PACKED)
    mr_load_lane<4, EPL>((const unsigned char*)g.bias, lane, E, 0u, has_row && g.bias != NULL, braw);
  if (warp == mask_warp && mask_warp != 0u && has_mask) /* while the rows load and gate */
    mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane);
  if (has_row) {
    float* gbuf = (float*)(sm + tk.scratch_off + warp * tk.scratch_words);
    unsigned char* gsel = (unsigned char*)(gbuf + E);
    const int64_t step = gw;
#pragma unroll 1
    for (int64_t t = t0; t < T; t += step) {
      const unsigned char* row = g.logits + t * g.row_bytes;
      if (t != t0) mr_load_lane<W, EPL>(row, lane, E, ninf, true, raw);
      int32_t id;
      float w;
      mr_gate_row<DT, EPL, KIND>(g, lane, raw, braw, row, true, gbuf, gsel, &id, &w);
      if ((int)lane < k) {
        const uint32_t i = (uint32_t)t * (uint32_t)k + lane;
        sm[MR_TINY_ENT + 2u * i] = (uint32_t)id;
        sm[MR_TINY_ENT + 2u * i + 1u] = __float_as_uint(w);
        if (topk_ids) topk_ids[i] = id;
        if (topk_weights) topk_weights[i] = w;
      }
    }
  }
  MR_STAMP(2);
  if (warp == mask_warp && mask_warp == 0u && has_mask) mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane);
  __syncthreads();
  MR_STAMP(4);

  /* 2. the sort: one warp (n <= 32), or one thread per entry (n <= 128) */
  __shared__ uint32_t s_nrec;
  if (tk.n > 32u) {
    mr_tiny_sort_multi(o, tk, sm, has_mask, &s_nrec);
  } else if (warp == 0) {
    const uint32_t n = tk.n, U = tk.U;
    const bool valid = lane < n;
    const uint32_t e = valid ? sm[MR_TINY_ENT + 2u * lane] : tk.E; /* E: no entry, matches no valid lane */
    const uint32_t wb = valid ? sm[MR_TINY_ENT + 2u * lane + 1u] : 0u;
    const uint32_t match = mr_warp_peers(e, mr_key_bits(tk.E));
    const uint32_t cnt = __popc(match), rank = __popc(match & mr_lanemask_lt());
    MR_STAMP(5);
    uint32_t en = valid ? 1u : 0u, local = e;
    if (has_mask && valid) {
      const uint32_t bw = sm[MR_TINY_BM + (e >> 5)];
      en = (bw >> (e & 31u)) & 1u;
      local = sm[MR_TINY_PRE + (e >> 5)] + __popc(bw & ((1u << (e & 31u)) - 1u));
    }
    const bool leader = en && rank == 0u;
    const uint32_t x = cnt + U - 1u;
    const uint32_t blocks = leader ? (tk.umagic ? __umulhi(x, tk.umagic) : x) : 0u;
    /* start block: the blocks of the leaders with a smaller expert */
    const uint32_t pk = valid ? (e << 8) | blocks : 0u; /* e < 1024, blocks <= 32 */
    uint32_t start = 0u, total = 0u;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const uint32_t o2 = __shfl_sync(MR_FULL_MASK, pk, j);
      const uint32_t bj = o2 & 0xffu;
      start += (o2 >> 8) < e ? bj : 0u;
      total += bj;
    }
    if (en) {
      const uint32_t pos = start * U + rank;
      const uint32_t t = (lane * tk.kmagic) >> 20, slot = lane - t * tk.k;
      if (o.sorted_ids) {
        o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
        if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = wb;
      }
      if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)lane;
    }
    const uint32_t lb = __ballot_sync(MR_FULL_MASK, leader);
    if (leader) {
      const uint32_t r = __popc(lb & mr_lanemask_lt());
      *(uint4*)(sm + MR_TINY_REC + 4u * r) = make_uint4(start, cnt, blocks, local);
    }
    if (lane == 0) {
      s_nrec = __popc(lb);
      mr_emit_totals(&o, total * U);
    }
  }
  __syncthreads();
  MR_STAMP(6);

  /* 3. padding and block ids, a warp per record */
  const uint32_t nrec = s_nrec;
#pragma unroll 1
  for (uint32_t r = warp; r < nrec; r += MR_TINY_WARPS) {
    const uint4 rec = *(const uint4*)(sm + MR_TINY_REC + 4u * r);
    const uint32_t U = tk.U;
    mr_emit_padding(&o, rec.x * U, rec.y, rec.z * U, rec.w, lane);
  }
  MR_STAMP(7);
}

/* Host: the launch plan, or 0 when the tiny path does not apply. */
static int mr_tiny_plan(const mr_config* cfg, int grouped, mr_tiny_k* K, size_t* smem) {
  if (mr_cuda_tune.no_tiny) return 0;
  const int64_t n = cfg->num_tokens * cfg->top_k;
  const int64_t max_n = mr_cuda_tune.tiny_max_n > 0 ? mr_cuda_tune.tiny_max_n : MR_TINY_DEFAULT_N;
  if (cfg->num_tokens < 1 || n > max_n || n > (int64_t)MR_TINY_MAX_N || cfg->num_experts > MR_TINY_MAX_E) return 0;
  /* one SM gates every row: measured to pay (run 5) only while T*E is small;
   * beyond, the cluster kernel's spread of the gating wins */
  if (mr_cuda_tune.tiny_max_n <= 0 && cfg->num_tokens * cfg->num_experts > MR_TINY_DEFAULT_TE) return 0;
  memset(K, 0, sizeof *K);
  K->n = (uint32_t)n;
  K->k = (uint32_t)cfg->top_k;
  K->kmagic = ((1u << 20) + K->k - 1u) / K->k;
  K->U = (uint32_t)cfg->unit_size;
  K->umagic = K->U <= 1u ? 0u : (uint32_t)((((uint64_t)1 << 32) + K->U - 1u) / K->U);
  K->T = (uint32_t)cfg->num_tokens;
  K->E = (uint32_t)cfg->num_experts;
  K->nw = (K->n + 31u) / 32u;
  K->scratch_off = (MR_TINY_TBL + (K->n > 32u ? K->E * K->nw : 0u) + 3u) & ~3u;
  K->gate_warps = cfg->num_tokens < MR_TINY_WARPS ? (int32_t)cfg->num_tokens : MR_TINY_WARPS;
  if (K->scratch_off > MR_TINY_SMEM_BYTES / 4u) return 0;
  if (grouped) {
    uint32_t sw = K->E;
    if (cfg->num_groups > 32) sw += ((uint32_t)cfg->num_groups + 3u) / 4u;
    K->scratch_words = (sw + 3u) & ~3u;
    const uint32_t fit = (MR_TINY_SMEM_BYTES / 4u - K->scratch_off) / K->scratch_words;
    if (fit < 1u) return 0;
    if ((uint32_t)K->gate_warps > fit) K->gate_warps = (int32_t)fit;
  }
  *smem = (size_t)(K->scratch_off + (uint32_t)K->gate_warps * K->scratch_words) * 4u;
  return 1;
}

/* Route takes tiny.cu: it fits, and the row kind is PACKED (16-bit softmax, no
 * bias, no grouping). Run 5: for the fp32-key kinds the one-SM kernel was
 * slower than the cluster kernel already at T = 1 (grouped DeepSeek-R1 7.0 us
 * against 6.4 in v3). */
extern "C" int mr_cuda_tiny_takes(const mr_config* cfg, const mr_gate_args* a) {
  /* Run 6 (bench/results/run6, kernel metric, tiny.cu against the pair of
   * gate kernel + one-launch sort): tiny.cu wins by 1.01 - 1.26x while every
   * warp gates at most one row (T <= 8) and the warps emit at most two records
   * each (min(T*k, E) <= 16 distinct experts); beyond, it lost: Mixtral T = 12,
   * 16 (two rows per warp) 0.86 - 0.89x, Qwen3-235B and OLMoE at T = 4 (32
   * entries, up to 32 records, ~900 cycles each) 0.94 - 0.95x. */
  /* Run 8 (bench/results/run8) adds: with E = 512 (Qwen3-Next, T = 1) tiny.cu
   * lost to the pair in runs 6, 7 and 8 (4.14 / 4.14 / 4.37 us against 4.05 /
   * 4.11 / 4.02): rows of E > 256 take the pair. */
  /* Results runs 9 and 11 add: DeepSeek-R1 softmax (E = 256) at T = 2 lost to the
   * chain (3.71 / 3.65 us against 3.64 / 3.50; run 6 3.51 / 3.54), while E <= 128
   * at T = 2 still wins (Qwen3-235B 3.52 / 3.47 against 3.74 / 3.54): rows of
   * E > 128 take tiny.cu at T = 1 only. */
  if (mr_cuda_tune.tiny_max_n <= 0) {
    const int64_t n = cfg->num_tokens * cfg->top_k;
    const int64_t rec = n < cfg->num_experts ? n : cfg->num_experts;
    if (cfg->num_tokens > MR_TINY_WARPS || rec > 16 || cfg->num_experts > 256) return 0;
    if (cfg->num_experts > 128 && cfg->num_tokens > 1) return 0;
  }
  return mr_gate_kind(a, cfg->dtype) == MR_KIND_PACKED && mr_cuda_tiny_fits(cfg);
}

extern "C" int mr_cuda_tiny_fits(const mr_config* cfg) {
  mr_tiny_k K;
  size_t smem;
  const int grouped = cfg->num_groups > 1 && cfg->topk_groups < cfg->num_groups;
  return mr_tiny_plan(cfg, grouped, &K, &smem);
}

template <int DT, int EPL, int KIND>
static cudaError_t mr_launch_tiny_t(const mr_gate_p* g, const mr_sort_out* o, const mr_tiny_k* K, size_t smem,
                                    int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  const int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_TINY_THREADS);
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(1 + clear), MR_TINY_THREADS, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_tiny_route_kernel<DT, EPL, KIND>, *g, *o, *K, topk_ids, topk_weights));
  return cudaSuccess;
}

extern "C" cudaError_t mr_cuda_launch_tiny_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                 int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  mr_tiny_k K;
  size_t smem;
  if (!mr_tiny_plan(cfg, a->grouped, &K, &smem)) return cudaErrorInvalidConfiguration;
  mr_gate_p g;
  mr_gate_p_init(a, cfg->dtype, &g);
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int kind = mr_gate_kind(a, cfg->dtype);
#define MR_TINY_LAUNCH(DT, EPL, KIND)                                                                  \
  return mr_launch_tiny_t<MR_KIND_DT(DT, MR_KIND_FIX(DT, KIND)), EPL, MR_KIND_FIX(DT, KIND)>(&g, o, &K, smem, \
                                                                                           topk_ids,      \
                                                                                           topk_weights, stream)
#define MR_TINY_CASE(DT, EPL)                                                   \
  if (cfg->dtype == DT && epl == EPL) {                                         \
    if (kind == MR_KIND_PACKED) MR_TINY_LAUNCH(DT, EPL, MR_KIND_PACKED);        \
    if (kind == MR_KIND_GROUPED) MR_TINY_LAUNCH(DT, EPL, MR_KIND_GROUPED);      \
    MR_TINY_LAUNCH(DT, EPL, MR_KIND_FULL);                                      \
  }
  MR_FOR_EACH_GATE_SPEC(MR_TINY_CASE)
#undef MR_TINY_CASE
#undef MR_TINY_LAUNCH
  return cudaErrorInvalidConfiguration;
}
