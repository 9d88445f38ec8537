/*
 * tmsort.cu - the token-mask sort: the one-pass decode sort of tiny.cu
 * (mr_tiny_sort_kernel) for any U, up to T = 256 and T*k = 2048 (v10, session 11).
 *
 * tiny.cu's one-pass sort needs U >= T: then every expert present holds one
 * block and a block's start is a popcount of the presence bitmap. Here an expert
 * e holds ceil(c_e / U) blocks, so the starts come from a scan over the experts:
 *
 *   0. (before the PDL wait: shared memory only) zero the token masks tm[W][E],
 *      W = ceil(T/32) words per expert (word-major: lanes of different experts hit
 *      different banks), and the duplicate flag;
 *   1. thread j loads entries j, j + 512, ... (at most 4, kept in registers) and
 *      sets bit t of tm[.][e] (shared atomics); a bit already set means a token named
 *      one expert twice (the atomic's old value), which raises the flag;
 *   2. thread e sums expert e's popcounts (0 for a masked expert), keeping the
 *      running sum before each word in P[w][e]; its blocks packed with its enabled
 *      flag, one block-wide scan: st[e] = start block | local id << 16, C[e] = c_e;
 *   3. entry i of expert e goes to st[e] * U + P[w][e] + (tokens below t in word w);
 *   4. block b: its expert is the last e with start(e) <= b (a binary search over
 *      st), its id the expert's local id, its padding the slots past the expert's
 *      entries; the warp writes the padding of its lanes' blocks;
 *   5. CTA 0 writes the totals.
 * With a duplicate (only a sort input can have one) the CTAs take the exact
 * fallback instead of 1-3: counts by shared atomics, the same scan, ranks by
 * counting the equal ids before (an id table in shared memory).
 *
 * R = 2^ctas_log2 routing CTAs do all of this alike and each writes the blocks
 * b with b % R == its index and their entries (one SM writes about one slot per
 * cycle: lab call 22); further CTAs clear moe_buf. Positions are a pure function
 * of the ids: the same bits as every other sort of the library.
 *
 * Shared memory (words): tm [W * E] (the fallback's counts [E] there) | P [W * E] |
 * st [E] | C [E] | ids [n] | flag, warp sums [16].
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/sort.cuh"

#define MR_TM_THREADS 512
#define MR_TM_WARPS (MR_TM_THREADS / 32)
#define MR_TM_MAX_T 256
#define MR_TM_MAX_N 2048
#define MR_TM_PER (MR_TM_MAX_N / MR_TM_THREADS) /* entries per thread */
#define MR_TM_MAX_E 1024
#define MR_TM_SMEM_WORDS (48 * 1024 / 4 - 16)

typedef struct mr_tm_k {
  uint32_t n, E, U, W; /* W = ceil(T / 32) */
  uint32_t ctas_log2;
  uint32_t off_p, off_st, off_c, off_ids, off_misc; /* word offsets (tm at 0) */
} mr_tm_k;

__global__ void __launch_bounds__(MR_TM_THREADS, 1)
    mr_tm_sort_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_tm_k tk,
                      const int32_t* topk_ids, const float* topk_weights) {
  extern __shared__ __align__(16) uint32_t mr_tm_smem[];
  uint32_t* tm = mr_tm_smem;
  uint32_t* P = mr_tm_smem + tk.off_p;
  uint32_t* st = mr_tm_smem + tk.off_st;
  uint32_t* C = mr_tm_smem + tk.off_c;
  uint32_t* ids = mr_tm_smem + tk.off_ids;
  uint32_t* misc = mr_tm_smem + tk.off_misc; /* [0] flag, [1..16] warp sums */
  const uint32_t tid = threadIdx.x;
  const uint32_t ctas = 1u << tk.ctas_log2, cta = blockIdx.x;
  const uint32_t E = tk.E, W = tk.W, U = tk.U, n = tk.n;
  if (cta < ctas) { /* 0. shared memory only: before the wait, under the previous kernel's tail */
    for (uint32_t w = tid; w < E * W; w += MR_TM_THREADS) tm[w] = 0u;
    if (tid == 0) misc[0] = 0u;
    __syncthreads();
  }
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, ctas)) return; /* clear-only CTAs */
  /* 1. entries into registers (loads first), then the token masks */
  uint32_t id[MR_TM_PER], wb[MR_TM_PER];
#pragma unroll
  for (int m = 0; m < MR_TM_PER; ++m) {
    const uint32_t i = tid + (uint32_t)m * MR_TM_THREADS;
    id[m] = E;
    wb[m] = 0u;
    if (i < n) {
      const int32_t x = __ldg(topk_ids + i);
      id[m] = (uint32_t)x < E ? (uint32_t)x : E; /* out of range: dropped */
      if (topk_weights) wb[m] = __float_as_uint(__ldg(topk_weights + i));
    }
  }
#pragma unroll
  for (int m = 0; m < MR_TM_PER; ++m) {
    const uint32_t i = tid + (uint32_t)m * MR_TM_THREADS;
    if (i < n) ids[i] = id[m];
    if (id[m] < E) {
      const uint32_t t = mr_udiv(i, (uint32_t)o.top_k, o.k_magic);
      const uint32_t bit = 1u << (t & 31u);
      const uint32_t old = atomicOr(tm + (t >> 5) * E + id[m], bit);
      if (old & bit) atomicOr(misc, 1u); /* this token named the expert twice */
    }
  }
  __syncthreads();
  const bool dup = misc[0] != 0u; /* uniform */
  if (dup) { /* the fallback: counts by atomics (tm is reused for them) */
    for (uint32_t e = tid; e < E; e += MR_TM_THREADS) tm[e] = 0u;
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MR_TM_PER; ++m)
      if (id[m] < E) atomicAdd(tm + id[m], 1u);
    __syncthreads();
  }
  /* 2. blocks per expert (thread j: experts j*ept .. j*ept + ept - 1), one scan;
   * packed: blocks (< 2^16: at most n + E) | enabled experts << 16 */
  const uint32_t ept = (E + MR_TM_THREADS - 1u) / MR_TM_THREADS; /* <= 2 */
  const uint32_t e0 = tid * ept;
  uint32_t sum = 0u;
  for (uint32_t q = 0; q < ept; ++q) {
    const uint32_t e = e0 + q;
    if (e >= E) break;
    const bool en = o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0;
    uint32_t c = 0u;
    if (en) {
      c = dup ? tm[e] : mr_tm_count(tm, P, W, E, e);
    }
    C[e] = c;
    const uint32_t v = mr_udiv(c + U - 1u, U, o.u_magic) | (en ? 1u << 16 : 0u);
    st[e] = v;
    sum += v;
  }
  const uint32_t D = mr_tm_starts<MR_TM_WARPS>(st, e0, ept, E, sum, misc);
  /* 3. entries: position, then only those of this CTA's blocks */
#pragma unroll
  for (int m = 0; m < MR_TM_PER; ++m) {
    const uint32_t i = tid + (uint32_t)m * MR_TM_THREADS, e = id[m];
    if (e >= E || C[e] == 0u) continue; /* dropped or masked */
    const uint32_t t = mr_udiv(i, (uint32_t)o.top_k, o.k_magic);
    uint32_t rank = 0u;
    if (dup) {
      for (uint32_t j = 0; j < i; ++j) rank += ids[j] == e ? 1u : 0u;
    } else {
      rank = mr_tm_rank(tm, P, E, t, e);
    }
    const uint32_t blk = (st[e] & 0xffffu) + mr_udiv(rank, U, o.u_magic);
    if ((blk & (ctas - 1u)) != cta) continue;
    mr_emit_entry_at(&o, (st[e] & 0xffffu) * U + rank, i, t, i - t * (uint32_t)o.top_k, wb[m]);
  }
  /* 4. blocks b = cta + ctas * j: ids and padding */
  mr_tm_write_blocks<MR_TM_THREADS>(o, st, C, D, cta, ctas);
  if (tid == 0 && cta == 0u) mr_emit_totals(&o, D * U);
}

/* ---- host ---- */

/* CTAs writing the layout (log2): knob tm_sort_ctas, else 16 up to T*k = 256, 32 above
 * (lab call 25: 32 the fastest of 8 / 16 / 32 at every T*k > 256 measured). */
static uint32_t mr_tm_ctas_log2(const mr_config* cfg) {
  int c = mr_cuda_tune.tm_sort_ctas;
  if (c <= 0) c = cfg->num_tokens * cfg->top_k <= 256 ? 16 : 32;
  uint32_t l = 0u;
  while (l < 5u && (2 << l) <= c) ++l;
  return l;
}

/* Where the token-mask sort is the default (knob tm_sort 0): T*k >= 192 and up to 1536 for
 * E <= 384, 1024 for E <= 512, 768 above. Lab call 35 (dev/runs/run35/tm_time.log, kernel
 * metric, moe_buf cleared, U = 32, after the block writer interleaved its blocks over the
 * warps, v12; route as the pair with it / without it, i.e. with the mask-table or mid sort):
 * DeepSeek-R1 softmax T = 33 / 64 / 128 / 192 4.72 / 4.92 / 6.22 / 6.71 us against 5.04 / 6.46 /
 * 6.74 / 7.10, T = 256 (T*k 2048) 7.62 against 7.20; GPT-OSS-120B T = 48 4.38 / 4.44, T = 33
 * (T*k 132) 4.30 / 4.07; Qwen3-Next T = 96 6.53 / 7.62, T = 128 (T*k 1280) 7.99 / 7.39; E =
 * 1024 T = 96 7.25 / 8.39, T = 128 8.49 / 8.04; Kimi-K2 bf16 k = 16 T = 96 9.66 / 10.22. The
 * one loss inside: MiniMax-M2 T = 33 5.12 / 4.96. (Before the block writer, lab calls 26 -
 * 27: 384 <= T*k <= 768, or 1024 for E <= 160.) */
static int mr_tm_wanted(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * cfg->top_k, E = cfg->num_experts;
  return n >= 192 && n <= (E <= 384 ? 1536 : E <= 512 ? 1024 : 768);
}

static int mr_tm_plan(const mr_config* cfg, mr_tm_k* K, size_t* smem) {
  const int64_t T = cfg->num_tokens, n = T * cfg->top_k, E = cfg->num_experts;
  if (mr_cuda_tune.tm_sort < 0 || T < 1 || T > MR_TM_MAX_T || n > MR_TM_MAX_N || E > MR_TM_MAX_E) return 0;
  memset(K, 0, sizeof *K);
  K->n = (uint32_t)n;
  K->E = (uint32_t)E;
  K->U = (uint32_t)cfg->unit_size;
  K->W = (uint32_t)((T + 31) / 32);
  K->ctas_log2 = mr_tm_ctas_log2(cfg);
  const uint32_t tmw = K->E * K->W; /* >= E: the fallback's counts */
  K->off_p = tmw;
  K->off_st = K->off_p + tmw;
  K->off_c = K->off_st + K->E;
  K->off_ids = K->off_c + K->E;
  K->off_misc = K->off_ids + K->n;
  const uint32_t words = K->off_misc + 1u + MR_TM_WARPS;
  if (words > MR_TM_SMEM_WORDS) return 0;
  *smem = (size_t)words * 4u;
  return mr_cuda_tune.tm_sort > 0 || mr_tm_wanted(cfg);
}

extern "C" int mr_cuda_tm_sort_fits(const mr_config* cfg) {
  mr_tm_k K;
  size_t smem;
  return mr_tm_plan(cfg, &K, &smem);
}

extern "C" cudaError_t mr_cuda_launch_tm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                              const float* topk_weights, cudaStream_t stream) {
  mr_tm_k K;
  size_t smem;
  if (!mr_tm_plan(cfg, &K, &smem)) return cudaErrorInvalidConfiguration;
  MR_TRY(mr_launch_decode_sort_kernel(mr_tm_sort_kernel, K, 1u << K.ctas_log2, MR_TM_THREADS, smem, o, topk_ids,
                                      topk_weights, stream));
  return cudaSuccess;
}
