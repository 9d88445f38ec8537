/*
 * sort.cu - topk_ids [T, k] (+ weights) -> the sorted layouts, and moe_buf
 * cleared (contract section 3). Two paths:
 *
 * 1. One launch, for T*k <= 1024 (decode; sort.cuh explains the mask table):
 *    R routing CTAs each read all T*k ids, build the full mask table in their
 *    own shared memory and scan it (the redundant part is small), then each
 *    places 1/R of the entries and pads 1/R of the experts (the small sort of
 *    sort.cuh, shared with the fused route). More CTAs, none routing, clear
 *    moe_buf.
 *
 * 2. General (any T*k): without a moe_buf the large path of large.cu (three
 *    launches chained by programmatic dependent launch; see large.cu and
 *    dev/large-notes.md); with one, the run-1 general path below, whose clear
 *    measured faster (mr_cuda_large_v1 in common.cuh). Three launches,
 *    deterministic, no host sync:
 *    A count:   CTA c histograms chunk c (CE consecutive entries) into
 *               counts[e][c] (shared atomics: counts are order-free).
 *    B scan:    one warp per expert scans counts[e][*] over the chunks in
 *               place (exclusive) and writes tot[e].
 *    C scatter: the first CTAs of the grid clear moe_buf (the share the
 *               caller left: route's gate launch clears 5/8 of it under the
 *               gating, large.cu), the others run beside them. CTA c recomputes the padded expert scan from tot[] (E values,
 *               cheap), then places its chunk's entries: the position of an
 *               entry is start_e + counts[e][c] + (entries of e earlier in the
 *               chunk). The last term comes from warps that each walk a
 *               contiguous slice of the chunk 32 entries at a time, ranking
 *               equal experts with ballots (mr_warp_peers), with per-warp running
 *               counters (pass 1 counts per warp, a prefix over the 8 warps,
 *               pass 2 places). CTA c also writes the padding and block ids of
 *               experts e with e % 8NC in its warps' share.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/sort.cuh"
#include "cuda/large.cuh"

/* ======================================================================== */
/* 1. one launch                                                             */
/* ======================================================================== */

/* Entries -> shared memory, then the small sort of sort.cuh (which gives the
 * fused route kernel's bits). No dry-run warp here (measured in run 3: the ids
 * arrive within ~200 cycles, so a dry pass cannot hide behind them and delays
 * the first CTA barrier by ~2000 cycles; dev/cuda-notes.md v3). */
__global__ void __launch_bounds__(MR_SORT_THREADS, 1)
    mr_small_sort_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_small_p sp,
                         const int32_t* topk_ids, const float* topk_weights, uint32_t routing_ctas) {
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, routing_ctas)) return;
  MR_STAMP(0);
  extern __shared__ __align__(16) uint32_t mr_small_smem[];
  uint32_t* sm = mr_small_smem;
  const uint32_t tid = threadIdx.x;
  const uint32_t n = sp.n;
  const uint32_t en_bits = mr_small_enabled(&o);
  /* this thread's entries (n <= 1024: at most 4), loads in flight together */
  uint32_t id[4], wb[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint32_t i = tid + (uint32_t)m * MR_SORT_THREADS;
    id[m] = 0xffffffffu;
    wb[m] = 0u;
    if (i < n) {
      id[m] = (uint32_t)__ldg(topk_ids + i);
      if (topk_weights) wb[m] = __ldg((const unsigned int*)topk_weights + i);
    }
  }
  uint32_t* maskw = mr_small_mask(sm, sp);
  const uint32_t mask_words = sp.E * sp.nw;
#pragma unroll 1
  for (uint32_t i = tid; i < mask_words; i += MR_SORT_THREADS) maskw[i] = 0u;
  MR_STAMP(1);
  uint32_t* ent = mr_small_ent(sm);
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint32_t i = tid + (uint32_t)m * MR_SORT_THREADS;
    if (i < n) *(uint2*)(ent + 2u * i) = make_uint2(id[m], wb[m]);
  }
  MR_STAMP(4);
  mr_small_post(o, sp, sm, blockIdx.x, routing_ctas, en_bits, true);
  MR_STAMP(7);
}

extern "C" int mr_cuda_small_sort_fits(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  const int64_t nw = (n + 31) / 32;
  /* shared memory: mr_small_words <= 64 + 2048 + 6144 + 1024 + 8 words (< 48 KB) */
  return n <= MR_SMALL_MAX_ENTRIES && (int64_t)cfg->num_experts * nw <= MR_SMALL_SORT_MASK_WORDS;
}

extern "C" cudaError_t mr_cuda_launch_small_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                                 const float* topk_weights, cudaStream_t stream) {
  /* Routing CTAs: 8. Each builds and scans the whole table (the same latency
   * anywhere) and writes 1/8 of the entries and of the experts' padding;
   * measured best or within noise at T = 1..16 for every preset timed
   * (dev/cuda-notes.md, run 2). */
  int r = 8;
  if (mr_cuda_tune.small_sort_ctas > 0) r = mr_cuda_tune.small_sort_ctas;
  mr_small_p sp;
  mr_small_p_init(cfg, (uint32_t)r, &sp);
  const int clear = mr_cuda_clear_ctas(cfg->moe_buf_bytes, MR_SORT_THREADS);
  const size_t smem = (size_t)mr_small_words(sp.n, sp.E, sp.nw) * 4u;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(r + clear), MR_SORT_THREADS, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_small_sort_kernel, *o, sp, topk_ids, topk_weights, (uint32_t)r));
  return cudaSuccess;
}

/* ======================================================================== */
/* 2. general                                                                */
/* ======================================================================== */

/* Chunking: about 256 chunks (enough CTAs to fill the GPU for A and C), each
 * at most 4096 entries (so the counts table stays at most E*N/4096 words and
 * C's per-warp walks stay short). Pure function of (T, k): the workspace size
 * does not depend on the device. */
static void mr_general_chunks(const mr_config* cfg, int64_t* chunk_entries, int64_t* num_chunks) {
  const int64_t T = cfg->num_tokens, k = cfg->top_k;
  int64_t ct = (T + 255) / 256; /* tokens per chunk */
  int64_t cap = 4096 / k;
  if (cap < 1) cap = 1;
  if (ct > cap) ct = cap;
  if (ct < 1) ct = 1;
  *chunk_entries = ct * k;
  *num_chunks = (T + ct - 1) / ct;
}

#define MR_ALIGN_UP(x) (((x) + 255u) & ~(size_t)255u)

static size_t mr_general_v1_workspace(const mr_config* cfg) {
  int64_t ce, nc;
  mr_general_chunks(cfg, &ce, &nc);
  return MR_ALIGN_UP((size_t)cfg->num_experts * (size_t)nc * 4u) + MR_ALIGN_UP((size_t)cfg->num_experts * 4u);
}

/* The larger of the two general paths' needs, so that the fallback knob can be
 * flipped between calls without changing the size callers were told. */
extern "C" size_t mr_cuda_general_sort_workspace(const mr_config* cfg) {
  const size_t v1 = mr_general_v1_workspace(cfg), large = mr_cuda_large_sort_workspace(cfg);
  return v1 > large ? v1 : large;
}

/* A: per-chunk histograms. counts is [E][NC] (expert-major: B scans rows). */
__global__ void __launch_bounds__(MR_SORT_THREADS)
    mr_sort_count_kernel(const int32_t* ids, int64_t n, int32_t E, int64_t ce, uint32_t nc, uint32_t* counts) {
  extern __shared__ uint32_t mr_hist[];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  for (int e = (int)tid; e < E; e += MR_SORT_THREADS) mr_hist[e] = 0u;
  __syncthreads();
  const int64_t i0 = (int64_t)blockIdx.x * ce;
  const int64_t i1 = min(n, i0 + ce);
  for (int64_t base = i0 + warp * 32; base < i1; base += MR_SORT_THREADS) { /* warp-uniform trip count */
    const int64_t i = base + lane;
    const uint32_t e = i < i1 ? (uint32_t)__ldg(ids + i) : 0xffffffffu;
    const bool valid = e < (uint32_t)E;
    /* one atomic per distinct expert in the 32 entries: a hot expert does not
     * serialise 32 atomics on one address */
    const uint32_t peers = mr_warp_peers(valid ? e : (uint32_t)E, mr_key_bits((uint32_t)E));
    if (valid && lane == (uint32_t)(__ffs(peers) - 1)) atomicAdd(&mr_hist[e], (uint32_t)__popc(peers));
  }
  __syncthreads();
  for (int e = (int)tid; e < E; e += MR_SORT_THREADS) counts[(size_t)e * nc + blockIdx.x] = mr_hist[e];
}

/* B: exclusive scan of each expert's row over the chunks. */
__global__ void __launch_bounds__(MR_SORT_THREADS)
    mr_sort_scan_kernel(uint32_t* counts, uint32_t* tot, int32_t E, uint32_t nc) {
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t e = blockIdx.x * (MR_SORT_THREADS / 32) + (threadIdx.x >> 5);
  if (e >= (uint32_t)E) return; /* whole warp */
  uint32_t* row = counts + (size_t)e * nc;
  uint32_t carry = 0;
  for (uint32_t c0 = 0; c0 < nc; c0 += 32) {
    const uint32_t c = c0 + lane;
    const uint32_t v = c < nc ? row[c] : 0u;
    const uint32_t incl = mr_warp_incl_scan(v, lane);
    if (c < nc) row[c] = carry + incl - v;
    carry += __shfl_sync(MR_FULL_MASK, incl, 31);
  }
  if (lane == 0) tot[e] = carry;
}

/* C: place the chunk's entries; padding and block ids of a share of experts. */
__global__ void __launch_bounds__(MR_SORT_THREADS)
    mr_sort_scatter_kernel(const __grid_constant__ mr_sort_out o, const int32_t* ids, const float* weights,
                           const uint32_t* counts, const uint32_t* tot, int64_t ce, uint32_t nc,
                           uint32_t clear_ctas) {
  if (mr_clear_lead_ctas(o.moe_buf, o.moe_buf_bytes, clear_ctas)) return; /* beside the placing */
  const uint32_t bx = blockIdx.x - clear_ctas; /* the chunk */
  extern __shared__ uint32_t mr_scatter_smem[];
  constexpr int W = MR_SORT_THREADS / 32;
  const int E = o.num_experts;
  const uint32_t U = (uint32_t)o.unit_size;
  uint32_t* s_start = mr_scatter_smem;                /* [E] padded start */
  uint32_t* s_cnt = s_start + E;                      /* [E] entries (0 for a masked expert) */
  uint32_t* s_loc = s_cnt + E;                        /* [E] local id */
  unsigned long long* s_w64 = (unsigned long long*)(s_loc + E + (E & 1)); /* [W] */
  uint32_t* wc = (uint32_t*)(s_w64 + W);              /* [W][E] per-warp counters */
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;

  /* 1. padded scan over experts, 64-bit: pad sum in the low half (< 2^32), the
   * enabled count in the high half */
  for (int i = (int)tid; i < W * E; i += MR_SORT_THREADS) wc[i] = 0u;
  const int ept = (E + MR_SORT_THREADS - 1) / MR_SORT_THREADS;
  unsigned long long v[4], sum = 0;
  uint32_t cnt[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int e = (int)tid * ept + q;
    v[q] = 0;
    cnt[q] = 0;
    if (q < ept && e < E) {
      const uint32_t en = (o.expert_mask == NULL || o.expert_mask[e] != 0) ? 1u : 0u;
      const uint32_t c = en ? tot[e] : 0u;
      cnt[q] = c;
      v[q] = (unsigned long long)(mr_udiv(c + U - 1u, U, o.u_magic) * U) | (unsigned long long)en << 32;
    }
    sum += v[q];
  }
  const unsigned long long incl = mr_warp_incl_scan64(sum, lane);
  if (lane == 31) s_w64[warp] = incl;
  __syncthreads();
  unsigned long long pre = 0, total = 0;
#pragma unroll
  for (int w = 0; w < W; ++w) {
    const unsigned long long x = s_w64[w];
    pre += (uint32_t)w < warp ? x : 0ull;
    total += x;
  }
  unsigned long long run = pre + incl - sum;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int e = (int)tid * ept + q;
    if (q < ept && e < E) {
      s_start[e] = (uint32_t)run;
      s_loc[e] = (uint32_t)(run >> 32);
      s_cnt[e] = cnt[q];
    }
    run += v[q];
  }
  __syncthreads();

  /* 2. this warp's slice of the chunk: [w0, w1), a multiple of 32 long */
  const int64_t i0 = (int64_t)bx * ce;
  const int64_t i1 = min(o.num_tokens * o.top_k, i0 + ce);
  const int64_t slice = ((i1 - i0 + W - 1) / W + 31) / 32 * 32;
  const int64_t w0 = i0 + warp * slice;
  const int64_t w1 = min(i1, w0 + slice);
  uint32_t* my_wc = wc + warp * E;
  /* pass 1: entries per expert in this warp's slice */
  for (int64_t base = w0; base < w1; base += 32) {
    const int64_t i = base + lane;
    uint32_t e = i < w1 ? (uint32_t)__ldg(ids + i) : 0xffffffffu;
    e = (e < (uint32_t)E && s_cnt[e] != 0u) ? e : 0xffffffffu; /* dropped: out of range or masked */
    const uint32_t peers = mr_warp_peers(e < (uint32_t)E ? e : (uint32_t)E, mr_key_bits((uint32_t)E));
    if (e != 0xffffffffu && lane == (uint32_t)(__ffs(peers) - 1)) my_wc[e] += (uint32_t)__popc(peers);
    __syncwarp(); /* a later leader of the same expert may be another lane */
  }
  __syncthreads();
  /* prefix over the warps: my_wc[e] becomes the position of the slice's first e */
  for (int e = (int)tid; e < E; e += MR_SORT_THREADS) {
    uint32_t pos = s_start[e] + counts[(size_t)e * nc + bx];
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const uint32_t c = wc[w * E + e];
      wc[w * E + e] = pos;
      pos += c;
    }
  }
  __syncthreads();
  /* pass 2: place */
  const uint32_t* wbits = (const uint32_t*)weights;
  const uint32_t lt = mr_lanemask_lt();
  for (int64_t base = w0; base < w1; base += 32) {
    const int64_t i = base + lane;
    uint32_t e = i < w1 ? (uint32_t)__ldg(ids + i) : 0xffffffffu;
    e = (e < (uint32_t)E && s_cnt[e] != 0u) ? e : 0xffffffffu;
    const uint32_t peers = mr_warp_peers(e < (uint32_t)E ? e : (uint32_t)E, mr_key_bits((uint32_t)E));
    uint32_t pos = 0;
    if (e != 0xffffffffu) pos = my_wc[e] + (uint32_t)__popc(peers & lt);
    __syncwarp(); /* every peer has read the counter before the leader bumps it */
    if (e != 0xffffffffu) {
      if (lane == (uint32_t)(__ffs(peers) - 1)) my_wc[e] += (uint32_t)__popc(peers);
      mr_emit_entry(&o, pos, (uint32_t)i, wbits);
    }
    __syncwarp();
  }

  /* 3. padding and block ids: experts gw, gw + W*NC, ... */
  for (uint32_t e = bx * W + warp; e < (uint32_t)E; e += W * nc) {
    const uint32_t c = s_cnt[e];
    if (c == 0) continue;
    mr_emit_padding(&o, s_start[e], c, mr_udiv(c + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  if (bx == 0 && tid == 0) mr_emit_totals(&o, (uint32_t)total);
}

extern "C" cudaError_t mr_cuda_launch_general_sort(const mr_config* cfg, const mr_sort_out* o,
                                                   const int32_t* topk_ids, const float* topk_weights,
                                                   void* workspace, cudaStream_t stream) {
  if (mr_cuda_persist_wanted(cfg))
    return mr_cuda_launch_persist_sort(cfg, o, topk_ids, topk_weights, workspace, stream);
  if (!mr_cuda_large_v1(o->moe_buf_bytes))
    return mr_cuda_launch_large_sort(cfg, o, topk_ids, topk_weights, workspace, stream);
  int64_t ce, nc;
  mr_general_chunks(cfg, &ce, &nc);
  const int E = cfg->num_experts;
  const int64_t n = cfg->num_tokens * cfg->top_k;
  uint32_t* counts = (uint32_t*)workspace;
  uint32_t* tot = (uint32_t*)((unsigned char*)workspace + MR_ALIGN_UP((size_t)E * (size_t)nc * 4u));

  cudaLaunchConfig_t a = mr_launch_config((unsigned)nc, MR_SORT_THREADS, (size_t)E * 4u, stream);
  MR_TRY(cudaLaunchKernelEx(&a, mr_sort_count_kernel, topk_ids, n, (int32_t)E, ce, (uint32_t)nc, counts));

  const unsigned scan_ctas = (unsigned)((E + 7) / 8);
  cudaLaunchConfig_t b = mr_launch_config(scan_ctas, MR_SORT_THREADS, 0, stream);
  MR_TRY(cudaLaunchKernelEx(&b, mr_sort_scan_kernel, counts, tot, (int32_t)E, (uint32_t)nc));

  /* moe_buf (what the caller left of it, see large.cu) is cleared by the first
   * CTAs of the last launch, beside the placing (perf-log v4) */
  const unsigned clear = (unsigned)mr_cuda_clear_ctas(o->moe_buf_bytes, MR_SORT_THREADS);
  const size_t smem_c = ((size_t)E * 3u + 1u + 2u * 8u + 8u * (size_t)E) * 4u + 8u;
  cudaLaunchConfig_t c = mr_launch_config((unsigned)nc + clear, MR_SORT_THREADS, smem_c, stream);
  MR_TRY(cudaLaunchKernelEx(&c, mr_sort_scatter_kernel, *o, topk_ids, topk_weights, (const uint32_t*)counts,
                            (const uint32_t*)tot, ce, (uint32_t)nc, clear));
  return cudaSuccess;
}

/* ======================================================================== */
/* shared host helpers                                                       */
/* ======================================================================== */

extern "C" void mr_cuda_sort_out_init(const mr_config* cfg, const moeroute_buffers* b, mr_sort_out* o) {
  memset(o, 0, sizeof *o);
  const int ck = (cfg->layouts & MOEROUTE_LAYOUT_CK) != 0;
  const int vllm = (cfg->layouts & MOEROUTE_LAYOUT_VLLM) != 0;
  o->sorted_ids = ck ? b->sorted_ids : NULL;
  o->sorted_weights = ck ? b->sorted_weights : NULL;
  o->sorted_expert_ids = ck ? b->sorted_expert_ids : NULL;
  o->num_valid_ids = ck ? b->num_valid_ids : NULL;
  o->sorted_token_ids = vllm ? b->sorted_token_ids : NULL;
  o->expert_ids = vllm ? b->expert_ids : NULL;
  o->num_tokens_post_pad = vllm ? b->num_tokens_post_pad : NULL;
  o->expert_mask = b->expert_mask;
  o->num_tokens = cfg->num_tokens;
  o->num_experts = cfg->num_experts;
  o->top_k = cfg->top_k;
  o->unit_size = cfg->unit_size;
  o->moe_buf = cfg->moe_buf_bytes > 0 ? (unsigned char*)b->moe_buf : NULL;
  o->moe_buf_bytes = cfg->moe_buf_bytes;
  o->u_magic = mr_magic((uint32_t)cfg->unit_size);
  o->k_magic = mr_magic((uint32_t)cfg->top_k);
}
