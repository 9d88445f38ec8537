/*
 * sort.cuh - the sorting steps that the one-launch sort (sort.cu) and the
 * fused route kernel (fused.cu) share (contract section 3).
 *
 * The small-T*k sort keeps, per expert e, a bit mask over the entries
 * i = t*k + slot: bit (i % 32) of word maskw[e * NW + i / 32] is set when
 * entry i has expert e (NW = ceil(T*k / 32) words per expert). Setting the bits
 * needs atomics (atomicOr, or red.or into another CTA's shared memory), but an
 * OR is order-free, so the table is the same whatever order the atomics land in:
 * the result is deterministic. From the table:
 *
 *   cnt_e   = sum of popcounts of e's words;
 *   rank of entry i within e = popcount of e's bits below i, which is exactly
 *             "ascending token, then ascending slot" because i = t*k + slot;
 *   start_e = padded exclusive scan over e (one block-wide scan).
 *
 * No comparison sort, no ordering from atomics, and duplicate ids in a row
 * (possible in sort's input) are just two bits.
 *
 * Work split: scan thread tid owns experts [tid*EPT, tid*EPT + EPT) with
 * EPT = ceil(E/256). Among R cooperating CTAs, CTA r places the entries
 * i % R == r (one thread each) and writes the padding and block ids of the
 * experts e % R == r (a warp per expert). mr_emit_entry / mr_emit_padding /
 * mr_emit_totals are also used by the general path (sort.cu, section 2).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_SORT_CUH
#define MOEROUTE_CUDA_SORT_CUH

#include "cuda/common.cuh"

#define MR_SORT_THREADS 256
/* The one-launch sort's limits: T*k entries, and the mask table in words
 * (E * NW <= 6144 words = 24 KB of shared memory). */
#define MR_SMALL_MAX_ENTRIES 1024
#define MR_SMALL_MAX_MASK_WORDS 6144
/* The sort entry point and route's pair take the mask-table sort up to this E * nw
 * (the cluster kernel of fused.cu, PDL off, keeps 6144). Lab call 20 (kernel
 * metric, sort alone): Kimi-K2 (E = 384) T = 48 (4608 words) 4.55 us, T = 64
 * (6144) 6.87, where the mid sort takes T = 128 in 4.57; Qwen3-Next T = 32 (5120)
 * 4.70. */
#define MR_SMALL_SORT_MASK_WORDS 5120

/* One entry of the sorted layouts: entry i = t*k + slot at position pos, its weight
 * bits wb (contract: the weight is copied bit-exact). */
__device__ __forceinline__ void mr_emit_entry_at(const mr_sort_out* o, uint32_t pos, uint32_t i, uint32_t t,
                                                 uint32_t slot, uint32_t wb) {
  if (o->sorted_ids) {
    o->sorted_ids[pos] = (int32_t)((slot << 24) | t);
    if (o->sorted_weights) ((uint32_t*)o->sorted_weights)[pos] = wb;
  }
  if (o->sorted_token_ids) o->sorted_token_ids[pos] = (int32_t)i;
}
/* The same, t and slot from i, the weight from weight_bits[i]. */
__device__ __forceinline__ void mr_emit_entry(const mr_sort_out* o, uint32_t pos, uint32_t i,
                                              const uint32_t* weight_bits) {
  const uint32_t k = (uint32_t)o->top_k;
  const uint32_t t = mr_udiv(i, k, o->k_magic);
  mr_emit_entry_at(o, pos, i, t, i - t * k, o->sorted_ids && o->sorted_weights ? weight_bits[i] : 0u);
}

/* Position pos is padding: the sentinel of each layout, (k << 24) | T (CK, with
 * weight 0) and T*k (vLLM). */
__device__ __forceinline__ void mr_emit_pad_slot(const mr_sort_out* o, uint32_t pos) {
  const uint32_t T = (uint32_t)o->num_tokens, k = (uint32_t)o->top_k;
  if (o->sorted_ids) {
    o->sorted_ids[pos] = (int32_t)((k << 24) | T);
    if (o->sorted_weights) o->sorted_weights[pos] = 0.0f;
  }
  if (o->sorted_token_ids) o->sorted_token_ids[pos] = (int32_t)(T * k);
}

/* Block b belongs to the expert with local id `local` (both layouts). */
__device__ __forceinline__ void mr_emit_block_id(const mr_sort_out* o, uint32_t b, int32_t local) {
  if (o->sorted_expert_ids) o->sorted_expert_ids[b] = local;
  if (o->expert_ids) o->expert_ids[b] = local;
}

/* Padding of expert e's unit: positions [start + cnt, start + pad), and the
 * block ids of its blocks [start/U, (start+pad)/U). One warp, lanes striding. */
__device__ __forceinline__ void mr_emit_padding(const mr_sort_out* o, uint32_t start, uint32_t cnt, uint32_t pad,
                                                uint32_t local_id, uint32_t lane) {
  const uint32_t U = (uint32_t)o->unit_size;
  for (uint32_t j = cnt + lane; j < pad; j += 32) mr_emit_pad_slot(o, start + j);
  const uint32_t b1 = mr_udiv(start + pad, U, o->u_magic);
  for (uint32_t b = mr_udiv(start, U, o->u_magic) + lane; b < b1; b += 32) mr_emit_block_id(o, b, (int32_t)local_id);
}

/* The padded scan over experts of large.cu's place step and gx.cu: the exclusive prefix of v (one
 * 64-bit value per thread, in thread order) over threads [0, 32 NW), which all call it, and the sum
 * of all in *total. s_w64: NW words of shared memory. Named barrier 1 over those threads only (P's
 * clearing warps beyond them do not take part). */
template <uint32_t NW>
__device__ __forceinline__ unsigned long long mr_cta_excl_scan64(unsigned long long v, unsigned long long* s_w64,
                                                                 unsigned long long* total) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned long long incl = mr_warp_incl_scan64(v, lane);
  if (lane == 31) s_w64[warp] = incl;
  asm volatile("bar.sync 1, %0;" ::"n"(NW * 32) : "memory");
  unsigned long long before = 0ull, sum = 0ull;
#pragma unroll
  for (uint32_t w = 0; w < NW; ++w) {
    const unsigned long long x = s_w64[w];
    before += w < warp ? x : 0ull;
    sum += x;
  }
  *total = sum;
  return before + incl - v;
}

__device__ __forceinline__ void mr_emit_totals(const mr_sort_out* o, uint32_t total) {
  if (o->num_valid_ids) {
    o->num_valid_ids[0] = (int32_t)total;
    o->num_valid_ids[1] = (int32_t)o->num_tokens;
  }
  if (o->num_tokens_post_pad) o->num_tokens_post_pad[0] = (int32_t)total;
}

/* Bit q set: expert tid*EPT + q is enabled. Read at kernel start so that the
 * global load overlaps the gating / table building instead of the scan. */
__device__ __forceinline__ uint32_t mr_small_enabled(const mr_sort_out* o) {
  if (o->expert_mask == NULL) return 0xfu;
  const int E = o->num_experts;
  const int ept = (E + MR_SORT_THREADS - 1) / MR_SORT_THREADS;
  uint32_t bits = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int e = (int)threadIdx.x * ept + q;
    if (q < ept && e < E && __ldg(o->expert_mask + e) != 0) bits |= 1u << q;
  }
  return bits;
}

/*
 * ---- The small sort after its inputs are in shared memory (v3) -------------
 *
 * Shared by the one-launch sort kernel (sort.cu) and the fused route kernel
 * (fused.cu), so both give the same bits. Shared memory (words, in this
 * order; mr_small_words): dry-run scratch [64] | entries [2n] (expert id,
 * weight bits of entry i = t*k + slot) | mask table [E*NW] | start table [E] |
 * warp totals [8].
 *
 * Per routing CTA `rank` of `nranks`, after the entries are complete:
 *   1. mask table from the entries (shared atomicOr: order-free, deterministic);
 *   2. counts (popcounts), blocks per expert ceil(cnt/U), one block-wide scan of
 *      (blocks | enabled << 16): start block and local id of every expert
 *      together; the start table publishes them (bit 31: expert masked off);
 *   3. entries, in parallel: entry i (i % nranks == rank) goes to
 *      start + popcount of its expert's bits below i;
 *   4. padding and block ids of the experts e % nranks == rank that have entries
 *      (a warp per expert: coalesced stores), walking only those experts;
 *   5. totals (rank 0).
 * Four CTA barriers. Integer divisions by run-time k, U and nranks are
 * multiplications by host-computed reciprocals (exact in these ranges).
 *
 * live = false is a dry run (instruction-cache warming, fused.cu): the same
 * instructions on the dry-run scratch with every global store off and a named
 * barrier of one warp in place of the CTA barrier; loop trip counts stay tiny.
 */
typedef struct mr_small_p {
  uint32_t n;      /* T*k entries */
  uint32_t nw;     /* mask words per expert, ceil(n / 32) */
  uint32_t k;
  uint32_t kmagic; /* t = (i * kmagic) >> 20 = i / k (i * k < 2^20) */
  uint32_t E;
  uint32_t ept;    /* experts per scan thread, ceil(E / 256) <= 4 */
  uint32_t U;
  uint32_t umagic; /* ceil(2^32 / U): x / U = umulhi(x, umagic) (x * U < 2^32); 0 when U == 1 */
  uint32_t T;
  uint32_t rmagic; /* ceil(2^20 / nranks): e / nranks = (e * rmagic) >> 20 (e * nranks < 2^20) */
} mr_small_p;

static inline void mr_small_p_init(const mr_config* cfg, uint32_t nranks, mr_small_p* p) {
  const uint32_t n = (uint32_t)(cfg->num_tokens * cfg->top_k);
  p->n = n;
  p->nw = (n + 31u) / 32u;
  p->k = (uint32_t)cfg->top_k;
  p->kmagic = ((1u << 20) + p->k - 1u) / p->k;
  p->E = (uint32_t)cfg->num_experts;
  p->ept = (p->E + MR_SORT_THREADS - 1u) / MR_SORT_THREADS;
  p->U = (uint32_t)cfg->unit_size;
  p->umagic = p->U <= 1u ? 0u : (uint32_t)((((uint64_t)1 << 32) + p->U - 1u) / p->U);
  p->T = (uint32_t)cfg->num_tokens;
  if (nranks < 1u) nranks = 1u;
  p->rmagic = ((1u << 20) + nranks - 1u) / nranks;
}

/* words of shared memory the small sort needs (layout above) */
#define MR_SMALL_DRY_WORDS 64u
static inline uint32_t mr_small_words(uint32_t n, uint32_t E, uint32_t nw) {
  return MR_SMALL_DRY_WORDS + 2u * n + E * nw + E + 8u;
}
/* the parts of that layout */
__device__ __forceinline__ uint32_t* mr_small_ent(uint32_t* sm) { return sm + MR_SMALL_DRY_WORDS; }
__device__ __forceinline__ uint32_t* mr_small_mask(uint32_t* sm, const mr_small_p& p) {
  return sm + MR_SMALL_DRY_WORDS + 2u * p.n;
}
/* Dry-run scratch contents (written by the dry warp itself before its dry
 * run): [0] = 1 (a mask word: one entry), everything else 0. */
__device__ __forceinline__ void mr_small_dry_init(uint32_t* dry, uint32_t lane) {
  dry[lane] = lane == 0 ? 1u : 0u;
  dry[32 + lane] = 0u;
  __syncwarp();
}

/* CTA barrier (real pass: barrier 0, every thread) or one warp (dry run: barrier 1) */
__device__ __forceinline__ void mr_pass_sync(bool live) {
  if (live)
    asm volatile("bar.sync 0;" ::: "memory");
  else
    asm volatile("bar.sync 1, 32;" ::: "memory");
}

__device__ __forceinline__ void mr_small_post(const mr_sort_out& o, const mr_small_p& p, uint32_t* sm, uint32_t rank,
                                              uint32_t nranks, uint32_t en_bits, bool live) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t n = p.n, nw = p.nw, E = p.E, U = p.U, ept = p.ept;
  uint32_t* dry = sm;
  uint32_t* ent = sm + MR_SMALL_DRY_WORDS;
  uint32_t* maskw = ent + 2u * n;
  uint32_t* s_start = maskw + E * nw;
  uint32_t* s_warp = s_start + E;
  /* dry run: every read goes to the scratch (index & im = 0), every write to a
   * lane-private scratch word */
  const uint32_t im = live ? 0xffffffffu : 0u;
  const uint32_t* rd_ent = live ? ent : dry + 2;
  uint32_t* tbl = live ? maskw : dry;
  const uint32_t* rd_start = live ? s_start : dry + 4;
  const uint32_t* rd_warp = live ? s_warp : dry + 8;

  mr_pass_sync(live); /* the table is clear and the entries are in */

  /* 1. mask table */
  {
    uint32_t i = live ? tid : lane;
    const uint32_t iend = live ? n : i + 1u;
#pragma unroll 1
    for (; i < iend; i += MR_SORT_THREADS) {
      const uint32_t e = rd_ent[(2u * i) & im];
      if (e < E) atomicOr(&tbl[(e * nw + (i >> 5)) & im], live ? 1u << (i & 31u) : 0u);
    }
  }
  mr_pass_sync(live);
  MR_STAMP(5);

  /* 2. counts and the scan: thread tid owns experts tid*ept + q */
  uint32_t v[4], cnt[4], sum = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t e = tid * ept + (uint32_t)q;
    v[q] = 0;
    cnt[q] = 0;
    if ((uint32_t)q < ept && e < E) {
      uint32_t c = 0;
      const uint32_t b = e * nw;
#pragma unroll 1
      for (uint32_t w = 0; w < nw; ++w) c += __popc(tbl[(b + w) & im]);
      const uint32_t en = (en_bits >> q) & 1u;
      c = en ? c : 0u; /* a masked expert's entries are dropped */
      cnt[q] = c;
      const uint32_t x = c + U - 1u;
      const uint32_t nb = p.umagic ? __umulhi(x, p.umagic) : x; /* ceil(c / U) */
      v[q] = nb | (en << 16);
    }
    sum += v[q];
  }
  const uint32_t incl = mr_warp_incl_scan(sum, lane);
  if (lane == 31u) *(live ? &s_warp[warp] : &dry[8 + (warp & 7u)]) = incl;
  mr_pass_sync(live);
  uint32_t pre = 0, tot = 0;
#pragma unroll
  for (uint32_t w = 0; w < MR_SORT_THREADS / 32; ++w) {
    const uint32_t x = rd_warp[w];
    pre += w < warp ? x : 0u;
    tot += x;
  }
  /* st = start block | local id << 16 */
  uint32_t st[4];
  uint32_t run = pre + incl - sum;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    st[q] = run;
    const uint32_t e = tid * ept + (uint32_t)q;
    if ((uint32_t)q < ept && e < E)
      *(live ? &s_start[e] : &dry[32 + lane]) = run | ((en_bits >> q) & 1u ? 0u : 0x80000000u);
    run += v[q];
  }
  mr_pass_sync(live);
  MR_STAMP(6);

  /* 3. entries, one thread each */
  {
    const uint32_t k = p.k;
    uint32_t i = live ? rank + nranks * tid : 32u + lane;
    const uint32_t iend = live ? n : i + 1u;
#pragma unroll 1
    for (; i < iend; i += nranks * MR_SORT_THREADS) {
      const uint2 ev = *(const uint2*)&rd_ent[(2u * i) & im];
      const uint32_t e = ev.x;
      if (e >= E) continue; /* sort's input: an id out of range is dropped */
      const uint32_t s = rd_start[e & im];
      if (s >> 31) continue; /* masked expert: dropped */
      const uint32_t b = e * nw, wi = i >> 5;
      uint32_t r = __popc(tbl[(b + wi) & im] & ((1u << (i & 31u)) - 1u));
#pragma unroll 1
      for (uint32_t w = 0; w < wi; ++w) r += __popc(tbl[(b + w) & im]);
      const uint32_t pos = (s & 0xffffu) * U + r;
      const uint32_t t = (i * p.kmagic) >> 20, slot = i - t * k;
      if (live) {
        if (o.sorted_ids) {
          o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
          if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = ev.y;
        }
        if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)i;
      }
    }
  }

  /* 4. padding and block ids of my experts (e % nranks == rank) with entries */
  {
    const int32_t ck_sentinel = (int32_t)((p.k << 24) | p.T);
    const int32_t vllm_sentinel = (int32_t)(p.T * p.k);
#pragma unroll 1
    for (uint32_t q = 0; q < ept; ++q) {
      const uint32_t stq = q == 0 ? st[0] : q == 1 ? st[1] : q == 2 ? st[2] : st[3];
      const uint32_t vq = q == 0 ? v[0] : q == 1 ? v[1] : q == 2 ? v[2] : v[3];
      const uint32_t cq = q == 0 ? cnt[0] : q == 1 ? cnt[1] : q == 2 ? cnt[2] : cnt[3];
      const uint32_t e = tid * ept + q;
      const bool mine = live ? (e < E && cq != 0u && e - ((e * p.rmagic) >> 20) * nranks == rank) : lane == 0u;
      uint32_t todo = __ballot_sync(MR_FULL_MASK, mine);
      while (todo) { /* warp-uniform */
        const uint32_t src = (uint32_t)__ffs(todo) - 1u;
        todo &= todo - 1u;
        const uint32_t s = __shfl_sync(MR_FULL_MASK, stq, src);
        const uint32_t c = __shfl_sync(MR_FULL_MASK, cq, src);
        const uint32_t nb = __shfl_sync(MR_FULL_MASK, vq, src) & 0xffffu;
        const uint32_t b0 = s & 0xffffu, lid = (s >> 16) & 0x7fffu;
        const uint32_t start = b0 * U, end = (b0 + nb) * U;
#pragma unroll 1
        for (uint32_t j = start + c + lane; j < end; j += 32u) {
          if (live) {
            if (o.sorted_ids) {
              o.sorted_ids[j] = ck_sentinel;
              if (o.sorted_weights) o.sorted_weights[j] = 0.0f;
            }
            if (o.sorted_token_ids) o.sorted_token_ids[j] = vllm_sentinel;
          }
        }
#pragma unroll 1
        for (uint32_t bb = b0 + lane; bb < b0 + nb; bb += 32u) {
          if (live) {
            if (o.sorted_expert_ids) o.sorted_expert_ids[bb] = (int32_t)lid;
            if (o.expert_ids) o.expert_ids[bb] = (int32_t)lid;
          }
        }
      }
    }
  }

  /* 5. totals */
  if (live && rank == 0 && tid == 0) mr_emit_totals(&o, (tot & 0xffffu) * U);
}

/*
 * ---- Token masks (tmsort.cu, ctm.cu) ------------------------------------------
 *
 * Per expert e and word w, bit (t % 32) of tm[w * E + e] is set when token
 * t = 32 w + bit has an entry of e (word-major: the lanes of a warp that touch
 * different experts hit different banks). P[w * E + e] holds e's entries in the
 * words before w, so an entry's rank among its expert's entries is two loads and
 * a popcount, in ascending token order (a token names an expert at most once; the
 * callers detect a second naming and take their exact fallback).
 */

/* Expert e's entries in the W words of tm; writes e's running counts into P (32 bits, or 16 where the
 * counts fit: gxs). */
template <typename PT>
__device__ __forceinline__ uint32_t mr_tm_count(const uint32_t* tm, PT* P, uint32_t W, uint32_t E, uint32_t e) {
  uint32_t c = 0u;
  for (uint32_t w = 0; w < W; ++w) {
    P[w * E + e] = (PT)c;
    c += (uint32_t)__popc(tm[w * E + e]);
  }
  return c;
}

/* Entries of expert e in the tokens before token lt (lt < 32 W). */
template <typename PT>
__device__ __forceinline__ uint32_t mr_tm_rank(const uint32_t* tm, const PT* P, uint32_t E, uint32_t lt, uint32_t e) {
  const uint32_t x = (lt >> 5) * E + e;
  return (uint32_t)P[x] + (uint32_t)__popc(tm[x] & ((1u << (lt & 31u)) - 1u));
}

/* Block-wide exclusive scan of v over NW warps (every thread calls); *total gets
 * the sum. Uses misc[1 .. NW] for the warp sums and one barrier (plus the
 * caller's before misc is reused). */
template <int NW>
__device__ __forceinline__ uint32_t mr_block_excl_scan(uint32_t v, uint32_t* misc, uint32_t* total) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t incl = mr_warp_incl_scan(v, lane);
  if (lane == 31u) misc[1 + warp] = incl;
  __syncthreads();
  uint32_t before = 0u, all = 0u;
#pragma unroll
  for (uint32_t w = 0; w < (uint32_t)NW; ++w) {
    const uint32_t s = misc[1 + w];
    before += w < warp ? s : 0u;
    all += s;
  }
  *total = all;
  return before + incl - v;
}

/* The starts from the blocks: thread j's experts e0 .. e0 + ept - 1 hold st[e] = blocks |
 * enabled << 16 and `sum` is their sum; one block-wide scan (NW warps) turns st[e] into
 * start block | local id << 16 (the enabled experts before e). Returns the total blocks
 * (low 16 bits); every thread's st is visible to the CTA on return. */
template <int NW>
__device__ __forceinline__ uint32_t mr_tm_starts(uint32_t* st, uint32_t e0, uint32_t ept, uint32_t E, uint32_t sum,
                                                 uint32_t* misc) {
  uint32_t total;
  uint32_t run = mr_block_excl_scan<NW>(sum, misc, &total);
  for (uint32_t q = 0; q < ept; ++q) {
    const uint32_t e = e0 + q;
    if (e >= E) break;
    const uint32_t v = st[e];
    st[e] = run;
    run += v;
  }
  __syncthreads();
  return total & 0xffffu;
}

/* Block ids and padding of the blocks b = r, r + R, r + 2R, ... < D, by the NT
 * threads of a CTA. st[e] = start block | local id << 16 (ascending in e), C[e] =
 * expert e's entries (0 when masked). Lane l of warp w takes the CTA's block
 * j = w + (NT / 32) l (per round of NT): its expert is the last e with start <= b
 * (a binary search over st); then each warp walks its lanes' blocks, writing each
 * one's padding slots over the lanes (coalesced). The blocks interleave over the
 * warps so that every warp walks about the same number (v12: with consecutive
 * blocks per warp, warp 0 walked up to 32 blocks alone, ~220 cycles each). */
template <int NT>
__device__ __forceinline__ void mr_tm_write_blocks(const mr_sort_out& o, const uint32_t* st, const uint32_t* C,
                                                   uint32_t D, uint32_t r, uint32_t R) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t E = (uint32_t)o.num_experts, U = (uint32_t)o.unit_size;
  const uint32_t lg = 32u - (uint32_t)__clz(E); /* search steps: 2^lg > E */
#pragma unroll 1
  for (uint32_t base = 0; base * R + r < D; base += (uint32_t)NT) { /* uniform */
    constexpr uint32_t NW = (uint32_t)NT / 32u;
    const uint32_t b = (base + warp + NW * lane) * R + r;
    const bool has = b < D;
    uint32_t cnt = U;
    if (has) {
      uint32_t e = 0u; /* the last expert with start <= b */
      for (uint32_t step = 1u << (lg - 1u); step >= 1u; step >>= 1) {
        const uint32_t cand = e + step;
        if (cand < E && (st[cand] & 0xffffu) <= b) e = cand;
      }
      const uint32_t s = st[e];
      const uint32_t inner = (b - (s & 0xffffu)) * U; /* entries before this block, in the expert */
      const uint32_t c = C[e] - inner;
      cnt = c < U ? c : U;
      mr_emit_block_id(&o, b, o.expert_mask ? (int32_t)(s >> 16) : (int32_t)e);
    }
    const uint32_t nb = (uint32_t)__popc(__ballot_sync(MR_FULL_MASK, has)); /* lanes 0 .. nb-1 */
#pragma unroll 1
    for (uint32_t j = 0; j < nb; ++j) {
      const uint32_t cj = __shfl_sync(MR_FULL_MASK, cnt, (int)j);
      const uint32_t bj = (base + warp + NW * j) * R + r;
      for (uint32_t q = cj + lane; q < U; q += 32u) mr_emit_pad_slot(&o, bj * U + q);
    }
  }
}

#endif /* MOEROUTE_CUDA_SORT_CUH */
