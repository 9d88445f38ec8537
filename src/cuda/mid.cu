/*
 * mid.cu - the one-launch sort for middle T*k (above the mask-table sort of
 * sort.cuh, up to MR_MID_MAX_ENTRIES): topk_ids [T, k] (+ weights) -> the
 * sorted layouts, moe_buf cleared, in ONE launch with no workspace.
 *
 * R routing CTAs of 1024 threads; CTA r owns the entries [s_r, s_{r+1}) of a
 * balanced split of the n = T*k entries (about MR_MID_SHARE each). Every
 * routing CTA:
 *   1. reads ALL n ids (coalesced, from L2 after the first CTA) and counts
 *      them into two shared histograms, "before my share" and "the rest"
 *      (warp-aggregated with __match_any_sync, then a shared atomicAdd of the
 *      group's size: counts are order-free, so the result is deterministic);
 *   2. one block-wide scan over the experts (thread e = expert e): padded
 *      start, enabled-expert count (the local id), count; an expert switched
 *      off by the mask counts 0 and its entries are dropped;
 *   3. ranks its own share in token order: 8 warps each walk a contiguous
 *      sub-slice 32 entries at a time (pass 1: entries per expert per warp;
 *      a prefix over the 8 warps from start + "before"; pass 2: place, rank
 *      by __match_any_sync ties in lane = entry order), while the other 24
 *      warps write the padding and block ids of the CTA's share of experts;
 *   4. CTA 0 writes the totals.
 * Further CTAs clear moe_buf (what the caller left of it) without waiting.
 *
 * The redundant counting (every CTA reads every id) costs n*4 bytes of L2
 * reads per CTA; it buys the absence of any cross-CTA exchange, so the whole
 * sort is one launch and one dependent chain. Positions are a pure function
 * of the ids: the same bits on every run, equal to the CPU backend's.
 *
 * Shared memory (words): start [E] | count [E] | local id [E] | warp sums
 * [2*32] | big [8E]: the two histograms [2E] in steps 1-2, then the rank
 * warps' counters [8][E] (<= 44 KB at E = 1024).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/sort.cuh"

#define MR_MID_THREADS 1024
#define MR_MID_WARPS (MR_MID_THREADS / 32)
#define MR_MID_RANK_WARPS 8
#define MR_MID_SHARE 1024 /* entries per routing CTA (auto) */
/* Largest T*k the mid sort takes by default. Set from the lab's side-by-side
 * timing against the large path (docs/perf-log.md v6). */
#define MR_MID_MAX_ENTRIES 131072
#define MR_MID_NONE 0xffffffffu

static __device__ __forceinline__ uint32_t mr_mid_split(uint32_t n, uint32_t parts, uint32_t i) {
  return (uint32_t)(((unsigned long long)n * i) / parts);
}

__global__ void __launch_bounds__(MR_MID_THREADS, 1)
    mr_mid_sort_kernel(const __grid_constant__ mr_sort_out o, const int32_t* topk_ids, const float* topk_weights,
                       uint32_t routing_ctas) {
  mr_pdl_enter();
  if (blockIdx.x >= routing_ctas) {
    mr_clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)(blockIdx.x - routing_ctas) * blockDim.x + threadIdx.x,
                   (size_t)(gridDim.x - routing_ctas) * blockDim.x);
    return;
  }
  extern __shared__ __align__(16) uint32_t mr_mid_smem[];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t E = (uint32_t)o.num_experts, U = (uint32_t)o.unit_size;
  const uint32_t n = (uint32_t)(o.num_tokens * o.top_k); /* < 2^31 (validated) */
  const uint32_t r = blockIdx.x, R = routing_ctas;
  const uint32_t s0 = mr_mid_split(n, R, r), s1 = mr_mid_split(n, R, r + 1u);
  uint32_t* s_start = mr_mid_smem;
  uint32_t* s_cnt = s_start + E;
  uint32_t* s_loc = s_cnt + E;
  unsigned long long* s_w64 = (unsigned long long*)(s_loc + E + (E & 1u)); /* 8-byte aligned */
  uint32_t* big = (uint32_t*)(s_w64 + MR_MID_WARPS);
  uint32_t* hist = big; /* [0, E): entries before s0; [E, 2E): the rest */

  /* the mask is an input: read before anything waits (design.md 7) */
  const bool my_e = tid < E;
  const bool en = my_e && (o.expert_mask == NULL || __ldg(o.expert_mask + tid) != 0);
  for (uint32_t i = tid; i < 2u * E; i += MR_MID_THREADS) hist[i] = 0u;
  __syncthreads();

  /* 1. both histograms over all n entries: 4 loads in flight per lane */
  for (uint32_t base = warp * 32u; base < n; base += 4u * MR_MID_THREADS) { /* warp-uniform */
    uint32_t ev[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t i = base + (uint32_t)j * MR_MID_THREADS + lane;
      ev[j] = i < n ? (uint32_t)__ldg(topk_ids + i) : MR_MID_NONE;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t b = base + (uint32_t)j * MR_MID_THREADS;
      if (b >= n) break; /* warp-uniform */
      const uint32_t i = b + lane;
      const uint32_t key = ev[j] < E ? ev[j] + (i < s0 ? 0u : E) : MR_MID_NONE; /* out of range: dropped */
      const uint32_t peers = __match_any_sync(MR_FULL_MASK, key);
      if (key != MR_MID_NONE && lane == (uint32_t)(__ffs(peers) - 1)) atomicAdd(hist + key, (uint32_t)__popc(peers));
    }
  }
  __syncthreads();

  /* 2. padded scan over the experts, 64-bit: padded count low, enabled high */
  uint32_t cnt = 0u, before = 0u;
  if (my_e) {
    before = hist[tid];
    cnt = en ? before + hist[E + tid] : 0u;
  }
  const unsigned long long v = (unsigned long long)((cnt + U - 1u) / U * U) | ((unsigned long long)(en ? 1u : 0u) << 32);
  const unsigned long long incl = mr_warp_incl_scan64(v, lane);
  if (lane == 31u) s_w64[warp] = incl;
  __syncthreads(); /* also: every histogram read is done, big becomes the counters */
  unsigned long long pre = 0ull, total = 0ull;
#pragma unroll 8
  for (uint32_t w = 0; w < MR_MID_WARPS; ++w) {
    const unsigned long long x = s_w64[w];
    pre += w < warp ? x : 0ull;
    total += x;
  }
  const unsigned long long ex = pre + incl - v;
  uint32_t* wc = big; /* [8][E] */
  if (my_e) {
    s_start[tid] = (uint32_t)ex;
    s_loc[tid] = (uint32_t)(ex >> 32);
    s_cnt[tid] = cnt;
#pragma unroll
    for (int w = 0; w < MR_MID_RANK_WARPS; ++w) wc[w * E + tid] = 0u;
  }
  __syncthreads();

  const uint32_t lt = mr_lanemask_lt();
  const uint32_t span = s1 - s0;
  const uint32_t slice = ((span + MR_MID_RANK_WARPS - 1u) / MR_MID_RANK_WARPS + 31u) / 32u * 32u;
  const uint32_t w0 = s0 + (warp < MR_MID_RANK_WARPS ? warp : 0u) * slice;
  const uint32_t w1 = min(s1, w0 + slice);
  uint32_t* my_wc = wc + warp * E;
  if (warp < MR_MID_RANK_WARPS) {
    /* 3a. pass 1: entries per expert in this warp's sub-slice */
    for (uint32_t b = w0; b < w1; b += 32u) {
      const uint32_t i = b + lane;
      uint32_t e = i < w1 ? (uint32_t)__ldg(topk_ids + i) : MR_MID_NONE;
      e = (e < E && s_cnt[e] != 0u) ? e : MR_MID_NONE; /* out of range or masked: dropped */
      const uint32_t peers = __match_any_sync(MR_FULL_MASK, e);
      if (e != MR_MID_NONE && lane == (uint32_t)(__ffs(peers) - 1)) my_wc[e] += (uint32_t)__popc(peers);
      __syncwarp();
    }
  } else {
    /* 3b. padding and block ids of this CTA's experts (24 warps) */
    for (uint32_t e = r * (MR_MID_WARPS - MR_MID_RANK_WARPS) + (warp - MR_MID_RANK_WARPS); e < E;
         e += R * (MR_MID_WARPS - MR_MID_RANK_WARPS)) {
      const uint32_t c = s_cnt[e];
      if (c != 0u) mr_emit_padding(&o, s_start[e], c, (c + U - 1u) / U * U, s_loc[e], lane);
    }
  }
  __syncthreads();
  /* prefix over the rank warps: wc[w][e] becomes the position of warp w's first e */
  if (my_e && cnt != 0u) {
    uint32_t pos = s_start[tid] + before;
#pragma unroll
    for (int w = 0; w < MR_MID_RANK_WARPS; ++w) {
      const uint32_t c = wc[w * E + tid];
      wc[w * E + tid] = pos;
      pos += c;
    }
  }
  __syncthreads();
  if (warp < MR_MID_RANK_WARPS) {
    /* 3c. pass 2: place */
    const uint32_t* wbits = (const uint32_t*)topk_weights;
    for (uint32_t b = w0; b < w1; b += 32u) {
      const uint32_t i = b + lane;
      uint32_t e = i < w1 ? (uint32_t)__ldg(topk_ids + i) : MR_MID_NONE;
      e = (e < E && s_cnt[e] != 0u) ? e : MR_MID_NONE;
      const uint32_t peers = __match_any_sync(MR_FULL_MASK, e);
      uint32_t pos = 0u;
      if (e != MR_MID_NONE) pos = my_wc[e] + (uint32_t)__popc(peers & lt);
      __syncwarp(); /* every peer has read the counter before the leader bumps it */
      if (e != MR_MID_NONE) {
        if (lane == (uint32_t)(__ffs(peers) - 1)) my_wc[e] += (uint32_t)__popc(peers);
        mr_emit_entry(&o, pos, i, wbits);
      }
      __syncwarp();
    }
  }
  if (r == 0u && tid == 0u) mr_emit_totals(&o, (uint32_t)total);
}

/* ======================================================================== */
/* host side                                                                 */
/* ======================================================================== */

static int64_t mr_mid_max_entries(void) {
  if (mr_cuda_tune.mid_max_entries < 0) return 0;
  if (mr_cuda_tune.mid_max_entries > 0) return mr_cuda_tune.mid_max_entries;
  return MR_MID_MAX_ENTRIES;
}

extern "C" int mr_cuda_mid_sort_fits(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  return n > 0 && n <= mr_mid_max_entries() && cfg->num_experts <= MR_MID_THREADS;
}

extern "C" cudaError_t mr_cuda_launch_mid_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                               const float* topk_weights, cudaStream_t stream) {
  const int64_t n = cfg->num_tokens * cfg->top_k;
  int64_t r = (n + MR_MID_SHARE - 1) / MR_MID_SHARE;
  if (mr_cuda_tune.mid_share > 0) r = (n + mr_cuda_tune.mid_share - 1) / mr_cuda_tune.mid_share;
  const int64_t cap = mr_cuda_sm_count();
  if (r > cap) r = cap;
  if (r < 1) r = 1;
  const size_t E = (size_t)cfg->num_experts;
  const size_t smem = (3u * E + (E & 1u)) * 4u + MR_MID_WARPS * 8u + (size_t)MR_MID_RANK_WARPS * E * 4u;
  const int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_MID_THREADS);
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)(r + clear), MR_MID_THREADS, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_mid_sort_kernel, *o, topk_ids, topk_weights, (uint32_t)r));
  return cudaSuccess;
}
