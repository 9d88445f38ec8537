/*
 * mid.cu - the one-launch sort for middle T*k (above the mask-table sort of
 * sort.cuh, up to MR_MID_MAX_ENTRIES): topk_ids [T, k] (+ weights) -> the
 * sorted layouts, moe_buf cleared, in ONE launch with no workspace.
 *
 * R routing CTAs of 1024 threads; CTA r owns the entries [s_r, s_{r+1}) of a
 * balanced split of the n = T*k entries (MR_MID_SHARE each, at most
 * MR_MID_MAX_CTAS CTAs; 32 with moe_buf above 12288 entries). Every
 * routing CTA:
 *   1. reads ALL n ids (coalesced, 8 loads in flight per lane, from L2 after
 *      the first CTA) and counts them into two shared histograms, "before my
 *      share" and "the rest" (shared atomics, one per run of equal keys in
 *      neighbouring lanes: counts are order-free, so the result is
 *      deterministic);
 *   2. one block-wide scan over the experts (thread e = expert e): padded
 *      start, enabled-expert count (the local id), count; an expert switched
 *      off by the mask counts 0 and its entries are dropped;
 *   3. writes the padding and block ids of its share of the experts;
 *   4. ranks its own share in token order: RW rank warps (8192 / E rounded
 *      down to 8, 16 or 32) each walk a contiguous sub-slice of at most 4 x 32 entries, kept in
 *      registers: pass 1 counts entries per expert per warp and ranks inside
 *      each 32-entry round (mr_warp_peers: ballots, ties by lane = entry
 *      order); a prefix over the rank warps from start + "before"; pass 2
 *      places;
 *   5. CTA 0 writes the totals.
 * Further CTAs clear moe_buf (after the PDL wait, not waiting for the routing).
 *
 * The redundant counting (every CTA reads every id) costs n*4 bytes of L2
 * reads per CTA; it buys the absence of any cross-CTA exchange, so the whole
 * sort is one launch and one dependent chain. Positions are a pure function
 * of the ids: the same bits on every run, equal to the CPU backend's.
 *
 * Shared memory (words): start [E] | count [E] | local id [E] | warp sums
 * [2*32] | big [8192]: the two histograms [2E] in steps 1-2, then the rank
 * warps' counters [RW][E] (<= 45 KB at E = 1024).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/sort.cuh"

#define MR_MID_THREADS 1024
#define MR_MID_WARPS (MR_MID_THREADS / 32)
#define MR_MID_COUNTER_WORDS 8192 /* rank warps x E counters (32 KB) */
#define MR_MID_ROUNDS 4           /* 32-entry rounds per rank warp: share <= 128 x rank warps */
#define MR_MID_LOADS 8            /* ids in flight per lane while counting */
/* Entries per routing CTA and the largest T*k taken by default, from lab run
 * 8e (large_lab --v6, kernel metric, sort alone, DeepSeek-R1 sizes, us): share
 * 512 / 1024 / 2048 at T = 1024: 7.50 / 9.28 / 13.15 (large path 9.29); the
 * placing is bound by scattered stores per SM, so more CTAs place faster, while
 * every CTA's redundant count grows with T*k: T*k = 16384 (T = 2048) 9.10 against
 * the large path's 9.75, 32768 12.25 against 10.52 (GPT-OSS-120B: 16384 8.81
 * against 9.02, 32768 11.96 against 9.53). docs/perf-log.md v6. */
/* Lab call 20 (dev/runs/run20/share_sweep.log, large_lab --share-sweep, kernel
 * metric, four presets, T = 48 - 2048) swept the share at small n: 64 entries per
 * CTA up to n = 4096 and 64 CTAs above are the best or within noise for the sort
 * alone and route (DeepSeek-R1 softmax sort at T = 128 / 256 / 1024: 4.90 / 5.04 /
 * 6.29 us against 8.03 / 6.97 / 7.52 with 512; Qwen3-Next T = 48 5.17 against
 * 13.08; Kimi-K2 T = 128 4.57 against 7.67): the CTAs' count is redundant but
 * parallel, the placing is not. With moe_buf at T*k = 16384 the clear CTAs want
 * the SMs: 32 routing CTAs (DeepSeek-R1 softmax route + buf 14.20 against 15.60
 * with 64, Kimi-K2 18.88 against 19.94). mr_cuda_launch_mid_sort. */
#define MR_MID_SHARE 64
#define MR_MID_MAX_CTAS 64
#define MR_MID_BUF_MIN_N 12288 /* with moe_buf above this many entries: MR_MID_BUF_CTAS */
#define MR_MID_BUF_CTAS 32
#define MR_MID_MAX_ENTRIES 16384
#define MR_MID_NONE 0xffffffffu

static __device__ __forceinline__ uint32_t mr_mid_split(uint32_t n, uint32_t parts, uint32_t i) {
  return (uint32_t)(((unsigned long long)n * i) / parts);
}
/* Rank warps for E experts: 8192 / E, at most 32 (E <= 256: 32, 512: 16, 1024: 8). */
__host__ __device__ __forceinline__ uint32_t mr_mid_rank_warps(uint32_t E) {
  const uint32_t w = MR_MID_COUNTER_WORDS / E;
  return w >= 32u ? 32u : w >= 16u ? 16u : 8u;
}

/* One routing CTA's work (the kernel below; dev/mid_stamp.cu also runs it twice
 * in one launch to tell cold-code costs from the work). */
__device__ __forceinline__ void mr_mid_sort_body(const mr_sort_out& o, const int32_t* topk_ids,
                                                 const float* topk_weights, uint32_t routing_ctas) {
  extern __shared__ __align__(16) uint32_t mr_mid_smem[];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t E = (uint32_t)o.num_experts, U = (uint32_t)o.unit_size;
  const uint32_t n = (uint32_t)(o.num_tokens * o.top_k); /* <= MR_MID_MAX_ENTRIES */
  const uint32_t r = blockIdx.x, R = routing_ctas; /* routing CTAs come first */
  const uint32_t s0 = mr_mid_split(n, R, r), s1 = mr_mid_split(n, R, r + 1u);
  const uint32_t RW = mr_mid_rank_warps(E);
  uint32_t* s_start = mr_mid_smem;
  uint32_t* s_cnt = s_start + E;
  uint32_t* s_loc = s_cnt + E;
  uint32_t* s_wsum = s_loc + E; /* [33]: warp totals, then exclusive warp prefixes and the total */
  uint32_t* big = s_wsum + 36;
  uint32_t* hist = big; /* [0, E): entries before s0; [E, 2E): the rest */

  /* the mask is an input (design.md 7: non-zero = enabled) */
  const bool my_e = tid < E;
  const bool en = my_e && (o.expert_mask == NULL || __ldg(o.expert_mask + tid) != 0);
  for (uint32_t i = tid; i < 2u * E; i += MR_MID_THREADS) hist[i] = 0u;
  __syncthreads();
  MR_STAMP(2);

  /* 1. both histograms over all n entries, MR_MID_LOADS ids in flight per lane.
   * Shared atomics, aggregated over runs of equal keys in neighbouring lanes
   * (a hot expert, or sorted ids, costs one atomic per run, not 32 on one
   * address). Counts are order-free: the result is deterministic. */
  const uint32_t lt = mr_lanemask_lt();
  for (uint32_t base = warp * 32u; base < n; base += MR_MID_LOADS * MR_MID_THREADS) { /* warp-uniform */
    uint32_t ev[MR_MID_LOADS];
#pragma unroll
    for (int j = 0; j < MR_MID_LOADS; ++j) {
      const uint32_t i = base + (uint32_t)j * MR_MID_THREADS + lane;
      ev[j] = i < n ? (uint32_t)__ldg(topk_ids + i) : MR_MID_NONE;
    }
#pragma unroll
    for (int j = 0; j < MR_MID_LOADS; ++j) {
      const uint32_t b = base + (uint32_t)j * MR_MID_THREADS;
      if (b >= n) break; /* warp-uniform */
      const uint32_t i = b + lane;
      const uint32_t key = ev[j] < E ? ev[j] + (i < s0 ? 0u : E) : MR_MID_NONE; /* out of range: dropped */
      const uint32_t left = __shfl_up_sync(MR_FULL_MASK, key, 1);
      const uint32_t heads = __ballot_sync(MR_FULL_MASK, lane == 0u || key != left);
      if (key != MR_MID_NONE && ((heads >> lane) & 1u)) {
        const uint32_t after = heads & ~(lt | (1u << lane)); /* later heads */
        const uint32_t end = after ? (uint32_t)(__ffs(after) - 1) : 32u;
        atomicAdd(hist + key, end - lane);
      }
    }
  }
  __syncthreads();
  MR_STAMP(3);

  /* 2. scan over the experts in blocks of U (no divisions: blocks by the
   * magic reciprocal; positions are blocks * U), 32-bit: blocks << 11 |
   * enabled (blocks <= n + E <= 2^18, enabled <= 1024 < 2^11). Each warp scans
   * its 32 experts; warp 0 scans the 32 warp totals; every thread adds its
   * warp's prefix (two barriers, no per-thread loop over the warps). */
  uint32_t cnt = 0u, before = 0u;
  if (my_e) {
    before = hist[tid];
    cnt = en ? before + hist[E + tid] : 0u;
  }
  const uint32_t blocks = mr_udiv(cnt + U - 1u, U, o.u_magic);
  const uint32_t v = (blocks << 11) | (en ? 1u : 0u);
  const uint32_t incl = mr_warp_incl_scan(v, lane);
  if (lane == 31u) s_wsum[warp] = incl;
  __syncthreads(); /* also: every histogram read is done, big becomes the counters */
  if (warp == 0u) {
    const uint32_t x = s_wsum[lane];
    const uint32_t xi = mr_warp_incl_scan(x, lane);
    s_wsum[lane] = xi - x; /* exclusive prefix of warp `lane` */
    if (lane == 31u) s_wsum[32] = xi;
  }
  uint32_t* wc = big; /* [RW][E] */
  if (my_e)
    for (uint32_t w = 0; w < RW; ++w) wc[w * E + tid] = 0u;
  __syncthreads();
  const uint32_t ex = s_wsum[warp] + incl - v;
  const uint32_t total_blocks = s_wsum[32] >> 11;
  const uint32_t my_start = (ex >> 11) * U; /* first position of expert tid */
  if (my_e) {
    s_start[tid] = ex >> 11; /* in blocks */
    s_loc[tid] = ex & 0x7ffu;
    s_cnt[tid] = cnt;
  }
  __syncthreads();
  MR_STAMP(4);

  /* 3. padding and block ids of this CTA's share of the experts (stores only:
   * they drain while the ranking runs) */
  for (uint32_t e = r * MR_MID_WARPS + warp; e < E; e += R * MR_MID_WARPS) {
    const uint32_t c = s_cnt[e];
    if (c != 0u) mr_emit_padding(&o, s_start[e] * U, c, mr_udiv(c + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  MR_STAMP(5);
  /* 4. rank this CTA's share: rank warp w walks a contiguous sub-slice (at
   * most MR_MID_ROUNDS x 32 entries, kept in registers for both passes) */
  const uint32_t nb = mr_key_bits(E);
  const uint32_t span = s1 - s0;
  const uint32_t slice = ((span + RW - 1u) / RW + 31u) / 32u * 32u;
  const bool ranks = warp < RW;
  const uint32_t w0 = s0 + (ranks ? warp : 0u) * slice;
  const uint32_t w1 = ranks ? min(s1, w0 + slice) : w0;
  uint32_t* my_wc = wc + (ranks ? warp : 0u) * E;
  uint32_t ev[MR_MID_ROUNDS], pk[MR_MID_ROUNDS];
#pragma unroll
  for (int j = 0; j < MR_MID_ROUNDS; ++j) {
    const uint32_t i = w0 + (uint32_t)j * 32u + lane;
    const uint32_t e = i < w1 ? (uint32_t)__ldg(topk_ids + i) : MR_MID_NONE;
    ev[j] = e;
  }
  /* pass 1: entries per expert in the sub-slice; the rank inside each round */
#pragma unroll
  for (int j = 0; j < MR_MID_ROUNDS; ++j) {
    if (w0 + (uint32_t)j * 32u >= w1) break; /* warp-uniform */
    uint32_t e = ev[j];
    e = (e < E && s_cnt[e] != 0u) ? e : E; /* out of range or masked: dropped (key E) */
    ev[j] = e;
    const uint32_t peers = mr_warp_peers(e, nb);
    const uint32_t below = (uint32_t)__popc(peers & lt);
    pk[j] = below;
    if (e < E) pk[j] += my_wc[e]; /* entries of e in earlier rounds */
    __syncwarp();
    if (e < E && below == 0u) my_wc[e] += (uint32_t)__popc(peers);
    __syncwarp();
  }
  __syncthreads();
  MR_STAMP(6);
  /* prefix over the rank warps: wc[w][e] becomes the position of warp w's first e */
  if (my_e && cnt != 0u) {
    uint32_t pos = my_start + before;
    for (uint32_t w = 0; w < RW; ++w) {
      const uint32_t c = wc[w * E + tid];
      wc[w * E + tid] = pos;
      pos += c;
    }
  }
  __syncthreads();
  MR_STAMP(7);
  /* pass 2: place */
  const uint32_t* wbits = (const uint32_t*)topk_weights;
#pragma unroll
  for (int j = 0; j < MR_MID_ROUNDS; ++j) {
    if (w0 + (uint32_t)j * 32u >= w1) break; /* warp-uniform */
    const uint32_t e = ev[j];
    if (e < E) mr_emit_entry(&o, my_wc[e] + pk[j], w0 + (uint32_t)j * 32u + lane, wbits);
  }
  if (r == 0u && tid == 0u) mr_emit_totals(&o, total_blocks * U);
  MR_STAMP(8);
}

__global__ void __launch_bounds__(MR_MID_THREADS, 1)
    mr_mid_sort_kernel(const __grid_constant__ mr_sort_out o, const int32_t* topk_ids, const float* topk_weights,
                       uint32_t routing_ctas) {
  MR_STAMP(0);
  mr_pdl_enter();
  MR_STAMP(1);
  if (mr_clear_tail_ctas(o, routing_ctas)) return;
  mr_mid_sort_body(o, topk_ids, topk_weights, routing_ctas);
}

/* ======================================================================== */
/* host side                                                                 */
/* ======================================================================== */

static int64_t mr_mid_max_entries(void) {
  if (mr_cuda_tune.mid_max_entries < 0) return 0;
  if (mr_cuda_tune.mid_max_entries > 0) /* the packed block scan needs blocks < 2^21 */
    return mr_cuda_tune.mid_max_entries < (1 << 20) ? mr_cuda_tune.mid_max_entries : (1 << 20);
  return MR_MID_MAX_ENTRIES;
}

extern "C" int mr_cuda_mid_sort_fits(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  /* every CTA's share in registers needs n <= 128 * rank warps * SMs (the launch
   * raises R to that; 132 SMs x 1024 at E = 1024 is above the default bound) */
  return n > 0 && n <= mr_mid_max_entries() && cfg->num_experts <= MR_MID_THREADS;
}

extern "C" cudaError_t mr_cuda_launch_mid_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                               const float* topk_weights, cudaStream_t stream) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  int64_t r = (n + MR_MID_SHARE - 1) / MR_MID_SHARE;
  if (r > MR_MID_MAX_CTAS) r = MR_MID_MAX_CTAS;
  if (o->moe_buf_bytes > 0 && n > MR_MID_BUF_MIN_N) r = MR_MID_BUF_CTAS;
  if (mr_cuda_tune.mid_share > 0) r = (n + mr_cuda_tune.mid_share - 1) / mr_cuda_tune.mid_share;
  const size_t E = (size_t)cfg->num_experts;
  const int64_t rw = (int64_t)mr_mid_rank_warps((uint32_t)E);
  const int64_t rmin = (n + 32 * MR_MID_ROUNDS * rw - 1) / (32 * MR_MID_ROUNDS * rw); /* share in registers */
  const int64_t cap = mr_cuda_sm_count();
  if (r > cap) r = cap;
  if (r < rmin) r = rmin; /* more CTAs than SMs: they run in waves (only with a small mid_max knob bound) */
  if (r < 1) r = 1;
  const size_t smem = (3u * E + 36u + (size_t)MR_MID_COUNTER_WORDS) * 4u;
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_MID_THREADS);
  /* lab knob mid_pad_ctas (L5): CTAs with nothing to clear (moe_buf_bytes 0: mr_clear_bytes returns at once) */
  if (o->moe_buf_bytes == 0 && mr_cuda_tune.mid_pad_ctas > 0)
    clear = mr_cuda_tune.mid_pad_ctas < 1024 ? mr_cuda_tune.mid_pad_ctas : 1024;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(r + clear), MR_MID_THREADS, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_mid_sort_kernel, *o, topk_ids, topk_weights, (uint32_t)r));
  return cudaSuccess;
}
