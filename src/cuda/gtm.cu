/*
 * gtm.cu - the grid token-mask sort: two launches for any T, token masks per
 * expert over the whole grid, then a CTA per expert (v16, session 17; a lab path
 * behind the knob gtm, off by default: written without a device, not yet run on
 * a GPU).
 *
 * Why: every sort of the library from T*k ~ 2048 up spends its time on
 * dependent phases (the mid sort and ctm walk all entries in every CTA; the large
 * sort ranks slices, scans G chunk counts per expert, then places: 3 launches);
 * the sort alone costs 5.7 us at T = 1024 and 12.5 at T = 16384 (DeepSeek-R1 sizes,
 * results run 26), issue 4 asks <= 10 at 16384, and route = gate + sort asks <= 4 at
 * T = 1024. Here the order of the entries inside an expert comes from a bit mask
 * over the tokens (an OR is order-free, so it is deterministic without any scan over
 * CTAs), and the only cross-CTA dependency left is the experts' starts.
 *
 *   K1 (mr_gtm_mask_kernel; gtm.cuh): CTA c owns NB bytes of every mask row, i.e. the
 *      tokens [8 NB c, 8 NB (c+1)) (no other CTA writes them, so nothing needs to be
 *      zeroed beforehand and no global atomic is used). In shared memory it sets, for
 *      every entry i = t*k + j with a valid, enabled expert e, bit t of m[0][e] and bit t
 *      of m[1+p][e] for every set bit p of j (the slot's bit planes, P = ceil(log2 k) of
 *      them), then writes its bytes of every row to the workspace (zeros included). A bit
 *      that was already set means a token named e twice (only a sort input can): its bit
 *      in e's duplicate mask (one more row). CTA 0 also zeroes K2's status words. gtm_gate.cu's K1g does
 *      the same from the rows it gates (route).
 *   K2 (mr_gtm_place_kernel<NT>): CTA e owns expert e.
 *      A. loads its mask row, duplicate row and planes, counts its entries (popcounts;
 *         for a token in the duplicate row, the multiplicity of e in its row),
 *         publishes {pad_e, enabled_e} in status[e] with a flag bit (one 64-bit
 *         store: the flag and the value land together);
 *      B. reads status[x] of every x < e (spinning on the flag), sums them:
 *         start_e and local_id(e). A CTA waits only on lower CTAs, which publish
 *         before they wait and are dispatched first, so there is no cycle
 *         (the decoupled look-back's argument, here with all predecessors read
 *         at once: E <= 1024 words);
 *      C. one block scan of the per-thread counts gives every marked token's rank;
 *         entry (t, j) goes to start_e + rank, j read from the bit planes (a duplicated
 *         token: every j with ids[t*k + j] == e, ascending);
 *      D. its padding and block ids; CTA E - 1 the totals.
 *      CTAs before the expert CTAs clear moe_buf (they start once every K1 CTA has
 *      passed its PDL wait, so the previous work on the stream is done).
 *
 * Positions are a pure function of the ids (contract 3): the same bits as every
 * other sort. Workspace (sized by mr_cuda_gtm_workspace): status [E] (a 128-byte line
 * each) | masks [(2 + P) * E][Wp] (Wp = ceil(T/32) rounded up to 4 words;
 * words [W, Wp) are zeroes from K1's last CTA; gtm.cuh has the layout).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gtm.cuh"

#define MR_GTM_V 4                                 /* mask words per K2 thread and round (one uint4) */
#define MR_GTM_SMEM_WORDS (48 * 1024 / 4)          /* the first launch's budget (no opt-in) */
#define MR_GTM_MAX_MASK_BYTES ((size_t)64 << 20)   /* fits: the masks at most 64 MB */
#define MR_GTM_FLAG (1ull << 63)
#define MR_GTM_EN_SHIFT 40

__device__ __forceinline__ void mr_gtm_st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long mr_gtm_ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* Lab probe 3 (timing only, outputs right): thread 0 of each CTA writes %globaltimer at the
 * phase boundaries into the spare words of its status line (word n of 1..15). */
__device__ __forceinline__ void mr_gtm_stamp(const mr_gtm_k& g, uint32_t line, uint32_t n) {
  if (g.probe != 3u || threadIdx.x != 0u) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  g.status[(size_t)line * MR_GTM_SSTRIDE + n] = t;
}

/* ---- K1: the token masks from topk_ids -------------------------------------------- */

__global__ void __launch_bounds__(MR_GTM_K1_THREADS)
    mr_gtm_mask_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_gtm_k g,
                       const int32_t* topk_ids) {
  extern __shared__ __align__(16) uint32_t mr_gtm_smem[]; /* mr_gtm_k1_words */
  uint32_t* sm = mr_gtm_smem;
  const uint32_t* en = sm + mr_gtm_rows(g) * g.swr; /* the enabled flags after the masks */
  mr_gtm_k1_begin(o, g, sm);
  if (blockIdx.x == 0u) mr_gtm_stamp(g, 0u, 8u);
  const uint32_t E = g.E, k = g.k, tid = threadIdx.x;
  const uint32_t t0 = blockIdx.x * g.NB * 8u;
  const uint32_t t1 = min(g.T, t0 + g.NB * 8u); /* t0 >= T: a CTA of padding bytes only */
  const uint32_t i1 = t0 < t1 ? t1 * k : 0u;
  /* four loads in flight per thread before the shared atomics */
  for (uint32_t i = t0 * k + tid; i < i1; i += 4u * MR_GTM_K1_THREADS) {
    int32_t x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint32_t iu = i + (uint32_t)u * MR_GTM_K1_THREADS;
      x[u] = iu < i1 ? __ldg(topk_ids + iu) : -1;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint32_t e = (uint32_t)x[u]; /* negative ids wrap above E */
      if (e >= E || en[e] == 0u) continue; /* dropped: out of range or masked */
      const uint32_t iu = i + (uint32_t)u * MR_GTM_K1_THREADS;
      const uint32_t t = mr_udiv(iu, k, o.k_magic);
      mr_gtm_k1_mark(g, sm, e, t - t0, iu - t * k);
    }
  }
  if (blockIdx.x == 0u) mr_gtm_stamp(g, 0u, 9u);
  mr_gtm_k1_publish(g, sm);
  if (blockIdx.x == 0u) mr_gtm_stamp(g, 0u, 10u);
}

/* ---- K2: a CTA per expert ----------------------------------------------------- */

/* Block-wide exclusive scan of v (every thread calls); *total = the sum. */
template <int NT>
__device__ __forceinline__ uint32_t mr_gtm_block_scan(uint32_t v, uint32_t* total, uint32_t* s_warp) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t inc = mr_warp_incl_scan(v, lane);
  if (lane == 31u) s_warp[warp] = inc;
  __syncthreads();
  uint32_t before = 0u, sum = 0u;
#pragma unroll
  for (int q = 0; q < NT / 32; ++q) {
    const uint32_t s = s_warp[q];
    before += (uint32_t)q < warp ? s : 0u;
    sum += s;
  }
  __syncthreads(); /* s_warp may be reused */
  *total = sum;
  return before + inc - v;
}
template <int NT>
__device__ __forceinline__ unsigned long long mr_gtm_block_sum64(unsigned long long v, unsigned long long* s_warp) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(MR_FULL_MASK, v, off);
  if (lane == 0u) s_warp[warp] = v;
  __syncthreads();
  unsigned long long sum = 0ull;
#pragma unroll
  for (int q = 0; q < NT / 32; ++q) sum += s_warp[q];
  __syncthreads();
  return sum;
}

/* Entries of expert e in token t's row (duplicates only). */
__device__ __forceinline__ uint32_t mr_gtm_mult(const int32_t* ids, uint32_t t, uint32_t k, uint32_t e) {
  uint32_t n = 0u;
  for (uint32_t j = 0; j < k; ++j) n += (uint32_t)__ldg(ids + (size_t)t * k + j) == e ? 1u : 0u;
  return n;
}

/* One round's words of a row: words [base, base + V) of row r, zero past W. */
__device__ __forceinline__ uint4 mr_gtm_load4(const mr_gtm_k& g, uint32_t r, uint32_t base) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (base < g.W) {
    v = __ldcg((const uint4*)(g.mask + (size_t)r * g.Wp + base));
    if (base + 1u >= g.W) v.y = 0u;
    if (base + 2u >= g.W) v.z = 0u;
    if (base + 3u >= g.W) v.w = 0u;
  }
  return v;
}
__device__ __forceinline__ uint32_t mr_gtm_word(const uint4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

/* The thread's entries in its four words m (tokens 32 base ...): popcounts, plus for the
 * tokens in its duplicate words dm the multiplicity beyond one. */
__device__ __forceinline__ uint32_t mr_gtm_count(const uint4& m, const uint4& dm, uint32_t base,
                                                 const int32_t* ids, uint32_t k, uint32_t e) {
  uint32_t c = 0u;
#pragma unroll
  for (int q = 0; q < MR_GTM_V; ++q) {
    uint32_t bits = mr_gtm_word(dm, q);
    c += __popc(mr_gtm_word(m, q) & ~bits);
    while (bits) {
      const uint32_t b = __ffs(bits) - 1u;
      bits &= bits - 1u;
      c += mr_gtm_mult(ids, (base + (uint32_t)q) * 32u + b, k, e);
    }
  }
  return c;
}

/* The thread's marked tokens in order: the next one's index in its four words (32 q + b),
 * or MR_GTM_NONE; (q, bits) is the cursor (start: q = 0, bits = m.x). */
#define MR_GTM_NONE 0xffffffffu
#define MR_GTM_BATCH 8 /* entries whose weight loads are in flight together */
__device__ __forceinline__ uint32_t mr_gtm_next(const uint4& m, uint32_t& q, uint32_t& bits) {
  while (bits == 0u && q < (uint32_t)MR_GTM_V - 1u) bits = mr_gtm_word(m, (int)++q);
  if (bits == 0u) return MR_GTM_NONE;
  const uint32_t b = __ffs(bits) - 1u;
  bits &= bits - 1u;
  return q * 32u + b;
}
/* The slot j of marked token l (its index in the thread's words) from the bit planes. */
template <int MP>
__device__ __forceinline__ uint32_t mr_gtm_slot(const uint4* pl, uint32_t l) {
  const int q = (int)(l >> 5);
  const uint32_t b = l & 31u;
  uint32_t j = 0u;
#pragma unroll
  for (int p = 0; p < MP; ++p) j |= ((mr_gtm_word(pl[p], q) >> b) & 1u) << p;
  return j;
}
/* The next batch of the thread's entries (no duplicates): their indices in its words and,
 * with weights wanted, their weight bits, every load issued before any is used. */
template <int MP>
__device__ __forceinline__ void mr_gtm_batch(const uint4& m, const uint4* pl, uint32_t& q, uint32_t& bits,
                                             uint32_t base, uint32_t k, bool want_w, const float* topk_weights,
                                             uint32_t* li, uint32_t* wb) {
#pragma unroll
  for (int u = 0; u < MR_GTM_BATCH; ++u) li[u] = mr_gtm_next(m, q, bits);
#pragma unroll
  for (int u = 0; u < MR_GTM_BATCH; ++u) {
    wb[u] = 0u;
    if (li[u] != MR_GTM_NONE && want_w) {
      const uint32_t j = mr_gtm_slot<MP>(pl, li[u]);
      /* j < k always without duplicates; the guard keeps a speculative batch (taken before the
       * duplicate words are looked at, when the planes may hold ORed slots) inside topk_weights */
      if (j < k) wb[u] = __float_as_uint(__ldg(topk_weights + (base * 32u + li[u]) * k + j));
    }
  }
}

/* NT threads; MP bit planes kept (3: k <= 8, 5: k <= 32). (64, 1): without the minimum ptxas
 * held the 64-thread instance to 72 registers and spilled; (256, 2): at 3 CTAs per SM (80
 * registers) it spills */
template <int NT, int MP>
__global__ void __launch_bounds__(NT, NT == 256 ? 2 : 1)
    mr_gtm_place_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_gtm_k g,
                        const int32_t* topk_ids, const float* topk_weights) {
  __shared__ uint32_t s_warp[NT / 32];
  __shared__ unsigned long long s_warp64[NT / 32];
  const uint32_t tid = threadIdx.x, E = g.E, k = g.k, U = g.U, C = gridDim.x - E;
  if (blockIdx.x < C) {
    /* the CTAs that clear moe_buf come first, so that they are placed at once beside the expert
     * CTAs (last, they would wait for free slots). No wait: K2 launches only once every first-launch
     * CTA has passed its own wait (mr_gtm_k1_begin), so the previous work on the stream is done. */
    mr_pdl_launch_dependents();
    mr_clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)blockIdx.x * NT + tid, (size_t)C * NT);
    return;
  }
  const uint32_t e = blockIdx.x - C; /* expert CTAs in expert order: a CTA waits only on lower ones */
  mr_pdl_enter(); /* K1's masks and zeroed status words are visible */
  if (g.probe == 2u) return; /* lab probe: the two launches' skeleton alone */
  mr_gtm_stamp(g, e, 1u);
  /* A. every load of round 0 at once: the mask words, the duplicate words, the planes */
  const uint32_t base0 = tid * MR_GTM_V, drow = (1u + g.planes) * E + e;
  uint4 m0 = mr_gtm_load4(g, e, base0), dm0 = mr_gtm_load4(g, drow, base0);
  uint4 pl0[MP];
#pragma unroll
  for (int p = 0; p < MP; ++p)
    pl0[p] = (uint32_t)p < g.planes ? mr_gtm_load4(g, (1u + (uint32_t)p) * E + e, base0) : make_uint4(0u, 0u, 0u, 0u);
  /* the first batch of round 0's entries and their weights, in flight across B's wait */
  const bool want_w = o.sorted_ids != NULL && o.sorted_weights != NULL && topk_weights != NULL;
  uint32_t cq = 0u, cbits = m0.x, li[MR_GTM_BATCH], wb[MR_GTM_BATCH];
  mr_gtm_batch<MP>(m0, pl0, cq, cbits, base0, k, want_w, topk_weights, li, wb);
  mr_gtm_stamp(g, e, 7u);
  uint32_t cnt = mr_gtm_count(m0, dm0, base0, topk_ids, k, e);
  for (uint32_t r = 1; r < g.rounds; ++r) {
    const uint32_t base = (r * NT + tid) * MR_GTM_V;
    cnt += mr_gtm_count(mr_gtm_load4(g, e, base), mr_gtm_load4(g, drow, base), base, topk_ids, k, e);
  }
  const unsigned long long total64 = mr_gtm_block_sum64<NT>(cnt, s_warp64);
  const uint32_t total = (uint32_t)total64;
  const bool en = o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0;
  const uint32_t pad = mr_udiv(total + U - 1u, U, o.u_magic) * U; /* 0 for a masked expert: no entries */
  mr_gtm_stamp(g, e, 2u);
  if (tid == 0u)
    mr_gtm_st_relaxed(g.status + (size_t)e * MR_GTM_SSTRIDE,
                      MR_GTM_FLAG | ((unsigned long long)(en ? 1u : 0u) << MR_GTM_EN_SHIFT) | pad);
  /* B. the starts: every lower expert's status (published before its CTA waits), read by warp 0
   * alone, eight loads in flight per lane, the unready ones re-polled with a short sleep: fewer
   * requests on the status lines, which every higher CTA reads */
  unsigned long long acc = 0ull;
  if (tid < 32u) {
    for (uint32_t x0 = tid; x0 < e; x0 += 8u * 32u) {
      unsigned long long v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const uint32_t x = x0 + (uint32_t)u * 32u;
        v[u] = x < e ? mr_gtm_ld_relaxed(g.status + (size_t)x * MR_GTM_SSTRIDE) : MR_GTM_FLAG;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        while ((v[u] & MR_GTM_FLAG) == 0ull) {
          __nanosleep(32);
          v[u] = mr_gtm_ld_relaxed(g.status + (size_t)(x0 + (uint32_t)u * 32u) * MR_GTM_SSTRIDE);
        }
        acc += v[u] & ~MR_GTM_FLAG;
      }
    }
  }
  mr_gtm_stamp(g, e, 3u);
  acc = mr_gtm_block_sum64<NT>(acc, s_warp64);
  mr_gtm_stamp(g, e, 4u);
  const uint32_t start = (uint32_t)(acc & ((1ull << MR_GTM_EN_SHIFT) - 1ull));
  const uint32_t local = (uint32_t)(acc >> MR_GTM_EN_SHIFT);
  /* C. the entries: ranks by one block scan per round */
  uint32_t done = 0u; /* entries of earlier rounds */
  for (uint32_t r = 0; r < g.rounds; ++r) {
    const uint32_t base = (r * NT + tid) * MR_GTM_V;
    uint32_t c = cnt;
    if (g.rounds > 1u) { /* cnt spans every round: this round's words (round 0's are m0, pl0) */
      if (r > 0u) {
        m0 = mr_gtm_load4(g, e, base);
        dm0 = mr_gtm_load4(g, drow, base);
#pragma unroll
        for (int p = 0; p < MP; ++p)
          pl0[p] = (uint32_t)p < g.planes ? mr_gtm_load4(g, (1u + (uint32_t)p) * E + e, base) : make_uint4(0u, 0u, 0u, 0u);
      }
      c = mr_gtm_count(m0, dm0, base, topk_ids, k, e);
    }
    uint32_t round_total;
    uint32_t pos = start + done + mr_gtm_block_scan<NT>(c, &round_total, s_warp);
    done += round_total;
    if ((dm0.x | dm0.y | dm0.z | dm0.w) == 0u) { /* batches of entries; round 0's first batch was taken in A */
      if (r > 0u) {
        cq = 0u;
        cbits = m0.x;
        mr_gtm_batch<MP>(m0, pl0, cq, cbits, base, k, want_w, topk_weights, li, wb);
      }
      for (;;) {
#pragma unroll
        for (int u = 0; u < MR_GTM_BATCH; ++u) {
          if (li[u] == MR_GTM_NONE) continue;
          const uint32_t t = base * 32u + li[u], j = mr_gtm_slot<MP>(pl0, li[u]);
          mr_emit_entry_at(&o, pos++, t * k + j, t, j, wb[u]);
        }
        if (li[MR_GTM_BATCH - 1] == MR_GTM_NONE) break; /* the batch was not full: no more */
        mr_gtm_batch<MP>(m0, pl0, cq, cbits, base, k, want_w, topk_weights, li, wb);
      }
      continue;
    }
    /* a duplicate among the thread's tokens: one entry at a time; a duplicated token gives every
     * slot that names e, ascending (its planes hold the OR of them), the others their plane slot */
#pragma unroll
    for (int q = 0; q < MR_GTM_V; ++q) {
      uint32_t bits = mr_gtm_word(m0, q);
      const uint32_t dbits = mr_gtm_word(dm0, q);
      while (bits) {
        const uint32_t b = __ffs(bits) - 1u;
        bits &= bits - 1u;
        const uint32_t t = (base + (uint32_t)q) * 32u + b;
        if (((dbits >> b) & 1u) == 0u) {
          const uint32_t j = mr_gtm_slot<MP>(pl0, (uint32_t)q * 32u + b), i = t * k + j;
          mr_emit_entry_at(&o, pos++, i, t, j, want_w ? __float_as_uint(__ldg(topk_weights + i)) : 0u);
          continue;
        }
        for (uint32_t j = 0; j < k; ++j) {
          const uint32_t i = t * k + j;
          if ((uint32_t)__ldg(topk_ids + i) != e) continue;
          mr_emit_entry_at(&o, pos++, i, t, j, want_w ? __float_as_uint(__ldg(topk_weights + i)) : 0u);
        }
      }
    }
  }
  mr_gtm_stamp(g, e, 5u);
  /* D. padding and block ids of e; the totals */
  for (uint32_t j = total + tid; j < pad; j += NT) mr_emit_pad_slot(&o, start + j);
  const uint32_t b1 = mr_udiv(start + pad, U, o.u_magic);
  for (uint32_t b = mr_udiv(start, U, o.u_magic) + tid; b < b1; b += NT) mr_emit_block_id(&o, b, (int32_t)local);
  if (e == E - 1u && tid == 0u) mr_emit_totals(&o, start + pad);
  mr_gtm_stamp(g, e, 6u);
}

/* ---- host ---- */

static uint32_t mr_gtm_planes(uint32_t k) {
  uint32_t p = 0u;
  while ((1u << p) < k) ++p;
  return p;
}

#define MR_GTM_ALIGN(x) (((x) + 255u) & ~(size_t)255u)

/* The launch plan and the workspace layout (offsets from the workspace's start);
 * 0 where the path does not fit. The first launch: about two CTAs per SM, NB bytes of
 * every row each (gtm.cuh), within 48 KB of shared memory. K2's threads: 64 up to W =
 * 256 words (T = 8192), else 256 (rounds of 1024 words). */
extern "C" int mr_gtm_plan(const mr_config* cfg, int gate, mr_gtm_k* g, unsigned* nt, size_t* smem,
                           size_t off[2], size_t* bytes) {
  const int64_t T = cfg->num_tokens, E = cfg->num_experts, k = cfg->top_k;
  if (T < 1 || E < 1 || E > 1024 || k < 1 || k > 32 || T * k >= ((int64_t)1 << 31)) return 0;
  memset(g, 0, sizeof *g);
  g->T = (uint32_t)T;
  g->E = (uint32_t)E;
  g->k = (uint32_t)k;
  g->U = (uint32_t)cfg->unit_size;
  g->probe = mr_cuda_tune.gtm_probe == 2 || mr_cuda_tune.gtm_probe == 3 ? (uint32_t)mr_cuda_tune.gtm_probe : 0u;
  g->planes = mr_gtm_planes(g->k);
  g->W = (uint32_t)((T + 31) / 32);
  g->Wp = (g->W + 3u) & ~3u;
  const uint32_t rows = mr_gtm_rows(*g);
  const size_t mask_bytes = (size_t)rows * g->Wp * 4u;
  if (mask_bytes > MR_GTM_MAX_MASK_BYTES) return 0;
  const uint32_t max_swr = (MR_GTM_SMEM_WORDS - g->E) / rows;
  if (max_swr < 1u) return 0;
  const uint32_t b4 = 4u * g->W, target = 2u * (uint32_t)mr_cuda_sm_count();
  uint32_t NB = (b4 + target - 1u) / target;
  /* K1 (not K1g): whole 32-byte sectors of each row per CTA where shared memory allows (lab call 51:
   * shares of 1 - 8 bytes, partial sectors that several CTAs write, took 1 - 4 us to publish) */
  if (!gate && NB < 32u) NB = max_swr >= 8u ? 32u : 4u * max_swr;
  if (NB > 2u) {
    uint32_t swr = (NB + 3u) / 4u;
    if (swr > max_swr) swr = max_swr;
    NB = 4u * swr;
  }
  g->NB = NB;
  g->swr = (NB + 3u) / 4u;
  g->swr_magic = mr_magic(g->swr);
  g->G1 = (b4 + NB - 1u) / NB;
  *smem = (size_t)mr_gtm_k1_words(*g) * 4u;
  *nt = g->W <= 256u ? 64u : 256u;
  g->rounds = (g->W + *nt * MR_GTM_V - 1u) / (*nt * MR_GTM_V);
  off[0] = 0;                                                /* status [E], a 128-byte line each */
  off[1] = MR_GTM_ALIGN((size_t)g->E * MR_GTM_SSTRIDE * 8u); /* masks */
  *bytes = off[1] + MR_GTM_ALIGN(mask_bytes);
  return 1;
}

extern "C" int mr_cuda_gtm_fits(const mr_config* cfg) {
  mr_gtm_k g;
  unsigned nt;
  size_t smem, off[2], bytes;
  return mr_gtm_plan(cfg, 0, &g, &nt, &smem, off, &bytes);
}

extern "C" int mr_cuda_gtm_takes(const mr_config* cfg, int op) {
  const int knob = mr_cuda_tune.gtm;
  if (knob <= 0 || mr_cuda_tune.force_general) return 0;
  if (knob == 2 && op != (int)MOEROUTE_OP_SORT) return 0;
  return mr_cuda_gtm_fits(cfg);
}

extern "C" size_t mr_cuda_gtm_workspace(const mr_config* cfg) {
  mr_gtm_k g;
  unsigned nt;
  size_t smem, off[2], bytes;
  return mr_gtm_plan(cfg, 0, &g, &nt, &smem, off, &bytes) ? bytes : 0u;
}

/* K2 (after a first launch that built g's masks): a CTA per expert, then the CTAs that
 * clear moe_buf; PDL as the decode launches. */
extern "C" cudaError_t mr_gtm_launch_place(const mr_gtm_k* g, unsigned nt, const mr_sort_out* o,
                                           const int32_t* topk_ids, const float* topk_weights, cudaStream_t stream) {
  /* clear CTAs: 256 storing threads per SM at most (lab call 28: one 256-thread CTA per SM,
   * grid-stride, clears at the memset's rate), so that the expert CTAs still fit beside them */
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, (int)nt);
  const int cap = mr_cuda_sm_count() * (int)(256u / nt);
  if (clear > cap) clear = cap;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)clear + g->E, nt, 0, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  const bool p3 = g->planes <= 3u;
  if (nt == 64u)
    MR_TRY(cudaLaunchKernelEx(&lc, p3 ? mr_gtm_place_kernel<64, 3> : mr_gtm_place_kernel<64, 5>, *o, *g, topk_ids,
                              topk_weights));
  else
    MR_TRY(cudaLaunchKernelEx(&lc, p3 ? mr_gtm_place_kernel<256, 3> : mr_gtm_place_kernel<256, 5>, *o, *g, topk_ids,
                              topk_weights));
  return cudaSuccess;
}

extern "C" void mr_gtm_bind(mr_gtm_k* g, const size_t off[2], void* workspace) {
  unsigned char* ws = (unsigned char*)workspace;
  g->status = (unsigned long long*)(ws + off[0]);
  g->mask = (uint32_t*)(ws + off[1]);
}

extern "C" cudaError_t mr_cuda_launch_gtm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                               const float* topk_weights, void* workspace, cudaStream_t stream) {
  mr_gtm_k g;
  unsigned nt;
  size_t smem, off[2], bytes;
  if (!mr_gtm_plan(cfg, 0, &g, &nt, &smem, off, &bytes) || workspace == NULL) return cudaErrorInvalidConfiguration;
  mr_gtm_bind(&g, off, workspace);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  cudaLaunchConfig_t lc = mr_launch_config(g.G1, MR_GTM_K1_THREADS, smem, stream);
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_gtm_mask_kernel, *o, g, topk_ids));
  return mr_gtm_launch_place(&g, nt, o, topk_ids, topk_weights, stream);
}
