/*
 * tiny.cuh - tiny.cu's one-CTA decode route (see tiny.cu's header for what it does and why):
 * the kernel templates, their device code and the host plan, shared by tiny.cu (the default
 * kernels, the sort kernel and the entry points) and the lab kernels' translation units
 * (tiny_lab.cu, tiny_lab_rows.cu, tiny_lab_filt.cu: the instantiations of the lab knobs tiny_cluster,
 * tiny_warm, tiny_op_own, wide_rank_unroll and tiny_filt, compiled in parallel with tiny.cu instead of
 * lengthening its build).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_TINY_CUH
#define MOEROUTE_CUDA_TINY_CUH

#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

#define MR_TINY_THREADS 256
#define MR_TINY_WARPS (MR_TINY_THREADS / 32)
/* the route's CTA with the one-pass finish at 9 <= T <= 16: a gating warp per row (mr_tiny_cta16) */
#define MR_TINY_THREADS16 512
#define MR_TINY_WARPS16 (MR_TINY_THREADS16 / 32)
#define MR_TINY_MAX_E 1024
#define MR_TINY_SMEM_BYTES (48 * 1024 - 64) /* dynamic; 48 KB less room for the static s_nblk */
/* T*k bound of this kernel; above 32 entries the sort takes the multi-warp form */
#define MR_TINY_MAX_N 128u
/* T*k bound of the sort kernel (mr_tiny_sort_kernel): one entry per thread */
#define MR_TINY_SORT_MAX_N 256u
/* T bound of the wide form (auto); lab knob mr_cuda_tune.tiny_wide. Lab call 13
 * (dev/runs/run13/tiny_wide.log, kernel metric, route, pair / tiny wide): T = 1
 * wins for all seven shapes (Kimi-K2 4.49 / 4.20 us, grouped DeepSeek-R1 4.42 /
 * 3.96, E = 1024 grouped 7.22 / 6.85); T = 2 is mixed (Kimi-K2 4.88 / 4.65, grouped
 * DeepSeek-R1 4.48 / 4.48, DeepSeek-V4-Flash 3.97 / 4.11, Kimi bf16 k = 16 6.75 /
 * 7.42); T >= 3 (two rows per group) loses by 1.5 - 15 us. */
#define MR_TINY_WIDE_T 1
/* shared memory, words: entries [2 * 128] | mask bitmap [32] | its prefix counts [32] |
 * (unused) [16] | packed (expert, blocks) [128] | block table [128]:
 * (real entries << 16) | local id, by block | entry bit table [E * ceil(n/32)]
 * (n > 32 only) | the wide rows' scratch (tk.scratch_off) | the one-pass tables (tk.op_off) */
#define MR_TINY_ENT 0u
#define MR_TINY_BM 256u
#define MR_TINY_PRE 288u
#define MR_TINY_PK 336u
#define MR_TINY_BLK 464u
#define MR_TINY_TBL 592u

typedef struct mr_tiny_k {
  uint32_t n;             /* T*k <= MR_TINY_MAX_N */
  uint32_t k;
  uint32_t kmagic;        /* t = (i * kmagic) >> 20 */
  uint32_t U;
  uint32_t umagic;        /* ceil(2^32 / U), 0 when U == 1 */
  uint32_t T;
  uint32_t E;
  uint32_t nw;            /* ceil(n / 32) */
  uint32_t scratch_off;   /* word offset of the gating scratch: the wide rows', or (cluster form) grouped rows' a warp
                             per row (gate.cuh's gbuf); unused by 16-bit softmax rows */
  uint32_t scratch_words; /* per group of the wide form, or per gating warp (cluster form, grouped rows); else 0 */
  int32_t gate_warps;     /* gating warps, or groups of four warps in the wide form */
  uint32_t onepass;       /* mr_tiny_onepass (lab knob tiny_onepass): U >= T, T <= 32, E <= 1024 */
  uint32_t op_off;        /* its word offset: presence bitmap [32] | token mask per expert [E] */
  uint32_t ent_off;       /* word offset of the entry table read by the one-pass finish and the fallback: MR_TINY_ENT
                             (route), MR_TINY_TBL (the sort: up to 256 entries) */
  uint32_t ctas_log2;     /* log2 of the CTAs that write the one-pass layout (1, 2, 4, 8; 16 in the cluster form
                             since v37; knob tiny_ctas): each
                             builds the same tables and writes the blocks b with b % ctas == its index */
  uint32_t threads;       /* the route kernel's CTA: MR_TINY_THREADS, or MR_TINY_THREADS16 (mr_tiny_cta16) */
  uint32_t probe;         /* lab knob tiny_probe (timing only, WRONG outputs), the one-pass route: 1 = stop after
                             gating (no table atomics, barrier or layout), 2 = stop after the barrier, 3 = after
                             the presence prefix, 4 = after the entries (no blocks), 5 = no entries, 6 = the
                             layout twice, the same code (right outputs: the second pass rewrites the same) */
  uint32_t op_regs;       /* the one-pass route's presence words in registers (mr_tiny_onepass NWD; knob
                             tiny_op_regs): E <= 512 */
  uint32_t cl;            /* the cluster form (v15, knob tiny_cluster): the 2^ctas_log2 routing CTAs are one
                             cluster; CTA r gates rows r + C*j (C = 2^ctas_log2) and sends each entry to every
                             CTA's entry table (st.async, completing on the receiver's mbarrier) */
  uint32_t mbar_off;      /* its mbarrier's word offset (even) */
  uint32_t warm;          /* lab knob tiny_warm (v15): warp 6, when it gates no row and is not the mask warp, runs
                             the one-pass layout's code once during gating with its shared loads and stores off
                             (live = false), so that the layout's instructions are fetched before the barrier
                             (the one-pass route with 256 threads; a kernel instantiation of its own) */
  /* (three 8-bit flags and a spare byte in one word: the kernels' parameter block keeps its size and layout) */
  uint8_t own;            /* lab knob tiny_op_own: the one-pass route's blocks by word ownership (1, v17) or by
                             entry ownership (2, v48) (mr_tiny_onepass OWN; kernel instantiations of their own) */
  uint8_t ru;             /* lab knob wide_rank_unroll (v17): the grouped wide rows' group ranks by eight reads in
                             flight (mr_gate_wide_row RU; a kernel instantiation of its own) */
  uint8_t filt;           /* lab knob tiny_filt (v40): the sigmoid rows that the wide form would take, a warp per row
                             by gate.cuh's filter on approximate keys (mr_tiny_route_kernel FILT; kernel
                             instantiations of their own, tiny_lab_filt.cu). own, ru and filt: host-side flags, no
                             kernel reads them */
  uint8_t rows;           /* lab knob tiny_rows (v49): the rows form (mr_tiny_rows_kernel) takes the call, T = 2 .. 4 rows in
                             one warp: 1, or 2 with the padding of blocks 0 .. k-1 written during gating; 0 = not (the
                             byte was v39's late flag, then a spare, before session 44) */
} mr_tiny_k;
/* the parameter block's layout (the flags above share one word, which no kernel reads: v38 - v40 kept the block's
 * size; ru was a 16-bit field at 86 before v40; v39's late, at 85, went in session 35, ru and filt taking the byte
 * before theirs) */
static_assert(sizeof(mr_tiny_k) == 88 && offsetof(mr_tiny_k, own) == 84 && offsetof(mr_tiny_k, ru) == 85 &&
                  offsetof(mr_tiny_k, filt) == 86 && offsetof(mr_tiny_k, rows) == 87,
              "mr_tiny_k's layout");

/* Entry i = t*k + slot of the sorted layouts at position pos, its weight as bits
 * (contract: bit-exact). t by tiny.cu's 20-bit reciprocal of k: exact while
 * i * (kmagic * k - 2^20) < 2^20, and kmagic * k - 2^20 < k <= 32, so for i < 2^15
 * (here i < 256). */
__device__ __forceinline__ void mr_tiny_put_entry(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t pos, uint32_t i,
                                                  uint32_t wbits) {
  const uint32_t t = (i * tk.kmagic) >> 20, slot = i - t * tk.k;
  if (o.sorted_ids) {
    o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
    if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = wbits;
  }
  if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)i;
}

/* A leader's rows of the block table: blocks start .. start + blocks - 1 of
 * expert `local` holding cnt entries (U per block, the rest in the last). */
__device__ __forceinline__ void mr_tiny_blocks(uint32_t* sm, uint32_t start, uint32_t blocks, uint32_t cnt, uint32_t U,
                                               uint32_t local) {
  for (uint32_t q = 0; q < blocks; ++q) {
    const uint32_t left = cnt - q * U;
    sm[MR_TINY_BLK + start + q] = ((left < U ? left : U) << 16) | local;
  }
}

/* Step 3: the padding slots of [0, nblk * U) and the block ids, every thread. */
__device__ __forceinline__ void mr_tiny_emit(const mr_sort_out& o, const mr_tiny_k& tk, const uint32_t* sm,
                                             uint32_t nblk) {
  const uint32_t tid = threadIdx.x, U = tk.U, nslot = nblk * U; /* < 2^22: umulhi exact (mr_udiv) */
#pragma unroll 1
  for (uint32_t j = tid; j < nslot; j += MR_TINY_THREADS) {
    const uint32_t b = tk.umagic ? __umulhi(j, tk.umagic) : j;
    if (j - b * U < (sm[MR_TINY_BLK + b] >> 16)) continue; /* a real entry: placed by the sort */
    mr_emit_pad_slot(&o, j);
  }
  if (tid < nblk) mr_emit_block_id(&o, tid, (int32_t)(sm[MR_TINY_BLK + tid] & 0xffffu));
}

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
 * popcounts, leaders publish (expert, blocks);
 * (d) start block = sum over the published blocks of smaller experts, the
 * entry is placed, each leader fills its rows of the block table, thread 0
 * publishes the total (*nblk).
 */
__device__ __forceinline__ void mr_tiny_sort_multi(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t* sm,
                                                   bool has_mask, uint32_t* nblk) {
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
  if (valid) sm[MR_TINY_PK + tid] = (e << 8) | blocks; /* e < 1024, blocks <= 128 / U + 1 */
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
    if (en) mr_tiny_put_entry(o, tk, start * U + rank, tid, sm[MR_TINY_ENT + 2u * tid + 1u]);
    mr_tiny_blocks(sm, start, blocks, cnt, U, local);
    if (tid == 0) {
      *nblk = total;
      mr_emit_totals(&o, total * U);
    }
  }
}

/* T = 1 without a mask ("solo", v8): the k picks are k distinct experts, one
 * entry and one block each, so slot j of [0, k*U) is padding exactly when
 * j % U != 0 and the totals are k*U: the idle warps write the padding while the
 * row is gated, and the gating warp places its own picks. No barrier, no table.
 * mr_tiny_head_pad writes that padding known before the picks: with T rows and no mask, blocks 0 .. k-1 exist (each
 * token picks k distinct experts) and hold at most T entries, so their slots [T, U) are padding (solo: T = 1; the
 * rows form's tiny_rows 2, v49: T = 2 .. 4); threads from `first` on, over the rest of the CTA. */
__device__ __forceinline__ void mr_tiny_head_pad(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t first,
                                                 uint32_t T) {
  const uint32_t U = tk.U, nslot = tk.k * U, step = MR_TINY_THREADS - first;
#pragma unroll 1
  for (uint32_t j = threadIdx.x - first; j < nslot; j += step) {
    const uint32_t b = tk.umagic ? __umulhi(j, tk.umagic) : j; /* j < 2^22: exact (mr_udiv) */
    if (j - b * U >= T) mr_emit_pad_slot(&o, j); /* else one of the block's first T slots */
  }
}

/* Lanes j < n <= 32 whose v is below e (every lane calls it): a block's start from its leaders' experts */
__device__ __forceinline__ uint32_t mr_tiny_count_below(uint32_t v, uint32_t e, uint32_t n) {
  uint32_t c = 0u;
#pragma unroll 1
  for (uint32_t j0 = 0; j0 < n; j0 += 8u) {
#pragma unroll
    for (uint32_t q = 0; q < 8u; ++q) c += __shfl_sync(MR_FULL_MASK, v, (int)(j0 + q)) < e ? 1u : 0u; /* < 32 */
  }
  return c;
}

/* The gating warp: lane l < k holds pick l (expert id, weight); its block is the
 * number of picks with a smaller expert. */
__device__ __forceinline__ void mr_tiny_solo_sort(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t lane, int32_t id,
                                                  float w) {
  const uint32_t n = tk.n, U = tk.U;
  const bool valid = lane < n;
  const uint32_t e = valid ? (uint32_t)id : 0xffffffffu; /* no entry: never below a valid lane's id */
  const uint32_t start = mr_tiny_count_below(e, e, n);
  if (valid) {
    const uint32_t pos = start * U; /* entry i = lane: token 0, slot lane */
    if (o.sorted_ids) {
      o.sorted_ids[pos] = (int32_t)(lane << 24);
      if (o.sorted_weights) o.sorted_weights[pos] = w;
    }
    if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)lane;
    mr_emit_block_id(&o, start, (int32_t)e); /* local id = expert id: no mask */
  }
  if (lane == 0) mr_emit_totals(&o, n * U);
}

/* The local id of expert 32 * word + bit: its index among the enabled experts with a mask
 * (the bitmap's prefix table and the bits below it), else the expert id. */
__device__ __forceinline__ int32_t mr_tiny_local_id(const uint32_t* sm, bool has_mask, uint32_t word, uint32_t bit) {
  return has_mask ? (int32_t)(sm[MR_TINY_PRE + word] + __popc(sm[MR_TINY_BM + word] & ((1u << bit) - 1u)))
                  : (int32_t)(word * 32u + bit);
}

/* The one-pass finish (v8; the default where mr_tiny_onepass_wanted says, v9).
 * With U >= T every expert that occurs holds one block, so the layout follows from
 * two tables the gating warps fill with shared atomics (order-free: deterministic):
 * pb, a bitmap of the experts present, and tm[e], the tokens that picked e. Behind the
 * barrier after gating, with no further barrier: thread i < n places entry i at
 * U * (present enabled experts below e) + (tokens below t in tm[e]); lane l of warp w
 * writes the id of block w + 8*l: block b's expert is the b-th set bit of the enabled
 * presence bitmap, its padding the slots from popc(tm[e]) to U (written by the warp). */
template <bool FROM_IDS = false, /* entries from a caller's top-k (mr_tiny_sort_kernel): ids outside [0, E) */
          uint32_t NT = MR_TINY_THREADS, /* the CTA's threads: 256, or 512 for the route at 9 <= T <= 16 */
          uint32_t NWD = 0, /* 0: lane l holds presence word l (shuffles); else every thread holds the NWD >= E/32
                               words in registers (v14, knob tiny_op_regs; NWD % 4 == 0) */
          int OWN = 0> /* 1: the blocks by word ownership (v17, lab knob tiny_op_own 1): warp w takes presence
                          words w, w + NW, ...; lane l of word q is expert 32q + l, whose block is the word's
                          prefix plus popc of the bits below l: no search (see the block loop). 2: by entry
                          ownership (v48, tiny_op_own 2): entry i is thread (i % NW) * 32 + i / NW, and the entry
                          of the lowest token of each expert writes its block's id and (its warp) its padding: no
                          search, the entries spread evenly over the warps */
__device__ __forceinline__ void mr_tiny_onepass(const mr_sort_out& o, const mr_tiny_k& tk, const uint32_t* sm,
                                                bool has_mask,
                                                bool live = true) { /* false: the warm pass (tk.warm), the same
                                                                       code with no shared load and no store */
  static_assert(NWD % 4u == 0u && NWD <= 32u, "presence words in registers: a multiple of 4, at most 32");
  constexpr uint32_t NW = NT / 32u;
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t U = tk.U, nwords = (tk.E + 31u) / 32u;
  const uint32_t cta = blockIdx.x, rl = tk.ctas_log2; /* this CTA's blocks: b % 2^rl == cta */
  const uint32_t* pb = sm + tk.op_off;
  const uint32_t* tm = pb + 32;
  static_assert(OWN != 2 || !FROM_IDS, "entry ownership: the route's one-pass finish");
  /* entries (FROM_IDS: an id outside [0, E), stored as E, is dropped; gating gives none); OWN 2: entry ei is
   * warp ei % NW's lane ei / NW (n <= NT: at most one per thread) */
  const uint32_t ei = OWN == 2 ? lane * NW + warp : tid;
  bool valid = live && ei < tk.n;
  uint32_t e = valid ? sm[tk.ent_off + 2u * ei] : 0u;
  /* OWN 2: the tokens that picked e, loaded before the prefix (it needs only e) */
  const uint32_t tv_e = OWN == 2 && valid ? tm[e] : 0u;
  if (FROM_IDS && e >= tk.E) {
    valid = false;
    e = 0u;
  }
  /* the enabled presence bitmap: NWD == 0: lane l holds word l and its exclusive prefix
   * count (a warp scan); else every thread holds every word (16-byte broadcast loads; the
   * words past E / 32 are zero in pb, so also after the mask's AND) and its prefix */
  uint32_t word = 0u, excl = 0u, D, we, xe;
  uint32_t wd[NWD > 0 ? NWD : 1], ex[NWD > 0 ? NWD : 1];
  if constexpr (NWD > 0) {
#pragma unroll
    for (uint32_t q = 0; q < NWD; q += 4u) {
      uint4 v = live ? *reinterpret_cast<const uint4*>(pb + q) : make_uint4(0u, 0u, 0u, 0u);
      if (has_mask) {
        const uint4 m = live ? *reinterpret_cast<const uint4*>(sm + MR_TINY_BM + q) : make_uint4(0u, 0u, 0u, 0u);
        v.x &= m.x;
        v.y &= m.y;
        v.z &= m.z;
        v.w &= m.w;
      }
      wd[q] = v.x;
      wd[q + 1u] = v.y;
      wd[q + 2u] = v.z;
      wd[q + 3u] = v.w;
    }
    uint32_t acc = 0u;
#pragma unroll
    for (uint32_t q = 0; q < NWD; ++q) {
      ex[q] = acc;
      acc += (uint32_t)__popc(wd[q]);
    }
    D = acc;
    const uint32_t ew = e >> 5;
    we = wd[0];
    xe = 0u;
#pragma unroll
    for (uint32_t q = 1; q < NWD; ++q)
      if (q == ew) {
        we = wd[q];
        xe = ex[q];
      }
  } else {
    word = live && lane < nwords ? pb[lane] : 0u;
    if (has_mask && live && lane < nwords) word &= sm[MR_TINY_BM + lane];
    const uint32_t c = __popc(word), incl = mr_warp_incl_scan(c, lane);
    excl = incl - c;
    D = __shfl_sync(MR_FULL_MASK, incl, 31);
    we = __shfl_sync(MR_FULL_MASK, word, (int)(e >> 5));
    xe = __shfl_sync(MR_FULL_MASK, excl, (int)(e >> 5));
  }
  MR_STAMP(5); /* (stamp_lab: the prefix known) */
  if (tk.probe == 3u) { /* lab probe: the bitmap's prefix alone */
    if (live && tid == 0 && cta == 0u) mr_emit_totals(&o, D * U);
    return;
  }
  const uint32_t start = xe + __popc(we & ((1u << (e & 31u)) - 1u));
  /* entry ei (token t) of expert e, present, enabled and in a block of this CTA, goes to slot start * U + (tokens
   * below t in tm[e]) */
  const bool ours = tk.probe != 5u && valid && ((we >> (e & 31u)) & 1u) && (start & ((1u << rl) - 1u)) == cta;
  const uint32_t t = (ei * tk.kmagic) >> 20;
  if (ours) {
    const uint32_t below = (OWN == 2 ? tv_e : tm[e]) & ((1u << t) - 1u);
    mr_tiny_put_entry(o, tk, start * U + __popc(below), ei, sm[tk.ent_off + 2u * ei + 1u]);
  }
  MR_STAMP(6); /* (stamp_lab: the entry placed) */
  if (tk.probe == 4u) { /* lab probe: the prefix and the entries, no blocks */
    if (live && tid == 0 && cta == 0u) mr_emit_totals(&o, D * U);
    return;
  }
  if constexpr (OWN == 2) {
    /* blocks by entry ownership (v48): the entry whose token is e's lowest writes block start's id; then each warp
     * walks its first entries (ballot), writing slots popc(tm[e]) .. U-1 of their blocks over the lanes. Every
     * present enabled expert has exactly one first entry, so every block of this CTA is written once, as by the
     * search below. */
    const bool first = ours && (tv_e & ((1u << t) - 1u)) == 0u;
    if (first) mr_emit_block_id(&o, start, mr_tiny_local_id(sm, has_mask, e >> 5, e & 31u));
    const uint32_t cnt = (uint32_t)__popc(tv_e);
#pragma unroll 1
    for (uint32_t m = __ballot_sync(MR_FULL_MASK, first); m != 0u; m &= m - 1u) {
      const int j = __ffs(m) - 1;
      const uint32_t cj = __shfl_sync(MR_FULL_MASK, cnt, j), bj = __shfl_sync(MR_FULL_MASK, start, j);
      for (uint32_t r = cj + lane; r < U; r += 32u) mr_emit_pad_slot(&o, bj * U + r);
    }
  } else if constexpr (OWN == 1) {
    /* blocks by word ownership (v17): warp w takes presence words q = w, w + NW, ... (warp-uniform
     * loop); lane l stands for expert e = 32q + l. Present and enabled (bit l of the enabled word),
     * its block is b = prefix(q) + popc(word & lanes below): the same b as the search below finds for
     * e, with no search. Its token mask loads right after the barrier (e is known before it). Then
     * the warp walks its blocks of this CTA (b % ctas == cta), writing slots popc(tm[e]) .. U-1 of
     * each over the lanes, as below. */
#pragma unroll 1
    for (uint32_t q = warp; q < nwords; q += NW) {
      const uint32_t e = q * 32u + lane;
      const uint32_t tv = live && e < tk.E ? tm[e] : 0u;
      uint32_t wq, xq;
      if constexpr (NWD > 0) {
        wq = wd[0];
        xq = 0u;
#pragma unroll
        for (uint32_t r = 1; r < NWD; ++r)
          if (r == q) {
            wq = wd[r];
            xq = ex[r];
          }
      } else {
        wq = __shfl_sync(MR_FULL_MASK, word, (int)q);
        xq = __shfl_sync(MR_FULL_MASK, excl, (int)q);
      }
      const uint32_t b = xq + (uint32_t)__popc(wq & mr_lanemask_lt());
      const bool has = live && ((wq >> lane) & 1u) && (b & ((1u << rl) - 1u)) == cta;
      const uint32_t cnt = (uint32_t)__popc(tv);
      if (has) {
        mr_emit_block_id(&o, b, mr_tiny_local_id(sm, has_mask, q, lane));
      }
#pragma unroll 1
      for (uint32_t m = __ballot_sync(MR_FULL_MASK, has); m != 0u; m &= m - 1u) {
        const int j = __ffs(m) - 1;
        const uint32_t cj = __shfl_sync(MR_FULL_MASK, cnt, j), bj = __shfl_sync(MR_FULL_MASK, b, j);
        for (uint32_t r = cj + lane; r < U; r += 32u) mr_emit_pad_slot(&o, bj * U + r);
      }
    }
  } else {
    /* blocks: ids, then padding. Lane l of warp w holds block b = w + NW*l (+ NT per
     * round of each of the ctas CTAs; D <= n <= 256): its word src, the largest with excl <= b (a
     * 5-step search over the lanes' prefixes), its expert the (b - excl)-th set bit of
     * that word (a 5-step popc search), all lanes at once (v9; one block per warp and
     * round with a serial bit loop before, lab call 20: 1.2 us slower at T = 8). */
#pragma unroll 1
    for (uint32_t base = 0; live ? (base << rl) + cta < D : base == 0u; base += NT) { /* uniform */
      const uint32_t b = ((base + warp + NW * lane) << rl) | cta;
      const bool has = live ? b < D : lane == 0u; /* the warm pass: one block's code, lane 0 */
      uint32_t src = 0u, w = 0u, xs = 0u;
      if constexpr (NWD > 0) { /* the last word whose prefix is <= b: it holds bit b (b < D) */
        w = wd[0];
#pragma unroll
        for (uint32_t q = 1; q < NWD; ++q)
          if (ex[q] <= b) {
            src = q;
            w = wd[q];
            xs = ex[q];
          }
      } else {
#pragma unroll
        for (uint32_t step = 16u; step >= 1u; step >>= 1) {
          const uint32_t cand = src + step;
          const uint32_t xc = __shfl_sync(MR_FULL_MASK, excl, (int)(cand & 31u));
          if (cand < nwords && xc <= b) src = cand;
        }
        w = __shfl_sync(MR_FULL_MASK, word, (int)src);
        xs = __shfl_sync(MR_FULL_MASK, excl, (int)src);
      }
      uint32_t r = b - xs, bit = 0u; /* r < popc(w) when has */
#pragma unroll
      for (uint32_t width = 16u; width >= 1u; width >>= 1) {
        const uint32_t c = (uint32_t)__popc(w & ((1u << width) - 1u));
        if (r >= c) {
          r -= c;
          w >>= width;
          bit += width;
        }
      }
      const uint32_t eb = src * 32u + bit;
      /* the warm pass: U - 1, so that lane 0 walks the padding loop once, its store off */
      const uint32_t cnt = has ? (live ? (uint32_t)__popc(tm[eb]) : U - 1u) : U;
      if (has && live) {
        mr_emit_block_id(&o, b, mr_tiny_local_id(sm, has_mask, src, bit));
      }
      /* padding: the warp walks its blocks, slots cnt .. U-1 of each over the lanes */
      const uint32_t nb = (uint32_t)__popc(__ballot_sync(MR_FULL_MASK, has)); /* lanes 0 .. nb-1 */
#pragma unroll 1
      for (uint32_t j = 0; j < nb; ++j) {
        const uint32_t cj = __shfl_sync(MR_FULL_MASK, cnt, (int)j);
        const uint32_t bj = ((base + warp + NW * j) << rl) | cta;
        for (uint32_t q = cj + lane; q < U; q += 32u)
          if (live) mr_emit_pad_slot(&o, bj * U + q);
      }
    }
  }
  if (live && tid == 0 && cta == 0u) mr_emit_totals(&o, D * U);
}

/* The cluster form (v15, tk.cl): entry i's expert id and weight bits into slot i of the
 * entry table of every routing CTA of the cluster, each store completing 8 bytes of
 * transactions on the receiving CTA's mbarrier (which expects 8 * n bytes). */
__device__ __forceinline__ void mr_tiny_send(const mr_tiny_k& tk, uint32_t* sm, uint32_t i, uint32_t id, uint32_t wb) {
  const uint32_t la = mr_smem_addr(sm + tk.ent_off + 2u * i), bar = mr_smem_addr(sm + tk.mbar_off);
#pragma unroll 1
  for (uint32_t q = 0; q < (1u << tk.ctas_log2); ++q) mr_st_async_v2(mr_mapa(la, q), id, wb, mr_mapa(bar, q));
}

/* Gated entry i (expert id, weight) into the entry table: the CTA's own, or in the cluster form
 * every routing CTA's (mr_tiny_send); and into the top-k outputs where the caller asked for them. */
template <bool CL>
__device__ __forceinline__ void mr_tiny_publish(const mr_tiny_k& tk, uint32_t* sm, uint32_t i, int32_t id, float w,
                                                int32_t* topk_ids, float* topk_weights) {
  if constexpr (CL) {
    mr_tiny_send(tk, sm, i, (uint32_t)id, __float_as_uint(w));
  } else {
    sm[MR_TINY_ENT + 2u * i] = (uint32_t)id;
    sm[MR_TINY_ENT + 2u * i + 1u] = __float_as_uint(w);
  }
  if (topk_ids) topk_ids[i] = id;
  if (topk_weights) topk_weights[i] = w;
}

/* Step 1 of the wide form: group q (warps 4q .. 4q+3) gates rows q, q + ng, ...
 * with mr_gate_wide_row (its scratch after tk.scratch_off); warp 4q's lanes
 * l < k store the entries, and keep them in *id0 / *w0 (the last row's).
 * Barriers: with one group (T = 1, the default) the CTA barrier, the idle warps
 * taking part; with two (lab knob tiny_wide > 1) named barriers 1 and 2.
 * CL (the cluster form, v15): routing CTA r's group q gates rows r + C*q, r + C*(q + ng), ...
 * (C = 2^ctas_log2) and sends its entries to every CTA (mr_tiny_send) after the cluster
 * barrier's wait (*waited). */
template <int DT, int EPL, int KIND, bool CL = false, bool RU = false>
__device__ __forceinline__ void mr_tiny_gate_wide(const mr_gate_p& g, const mr_tiny_k& tk, uint32_t* sm,
                                                  int32_t* topk_ids, float* topk_weights, int32_t* id0,
                                                  float* w0, bool* waited) {
  constexpr bool GR = KIND == MR_KIND_GROUPED;
  const uint32_t lane = threadIdx.x & 31u, grp = threadIdx.x >> 7;
  const int ng = tk.gate_warps, k = g.top_k;
  const uint32_t bar_id = ng == 1 ? 0u : 1u + grp, bar_threads = ng == 1 ? MR_TINY_THREADS : MR_WIDE_THREADS;
  const int64_t T = g.num_tokens;
  const int64_t r0 = CL ? (int64_t)blockIdx.x : 0, C = CL ? (int64_t)1 << tk.ctas_log2 : 1;
  /* idle group: match the row's CTA barriers. ng == 1 only when group 0 gates one row
   * (T == 1, mr_tiny_plan: gate_warps = min(T, 2); in the cluster form T <= C, the CTA's row
   * r0 if r0 < T); MR_WIDE_ROW_BARS must count every barrier of mr_gate_wide_row, or the CTA
   * hangs. */
  if ((int)grp >= ng) {
    if (ng == 1 && r0 < T)
      for (int b = 0; b < MR_WIDE_ROW_BARS(GR); ++b) mr_wide_bar(0u, MR_TINY_THREADS); /* as group 0's form */
    return;
  }
  mr_wide_smem<EPL>& ws = ((mr_wide_smem<EPL>*)(sm + tk.scratch_off))[grp];
#pragma unroll 1
  for (int64_t t = r0 + C * grp; t < T; t += C * ng) {
    if (t >= r0 + C * ng) mr_wide_bar(bar_id, bar_threads); /* the previous row's readers of ws are done */
    const unsigned char* row = g.logits + t * g.row_bytes;
    int32_t id;
    float w;
    bool out;
    if (k <= 4)
      out = mr_gate_wide_row<DT, EPL, GR, 4, RU>(g, row, ws, bar_id, bar_threads, &id, &w);
    else if (k <= 8)
      out = mr_gate_wide_row<DT, EPL, GR, 8, RU>(g, row, ws, bar_id, bar_threads, &id, &w);
    else
      out = mr_gate_wide_row<DT, EPL, GR, 16, RU>(g, row, ws, bar_id, bar_threads, &id, &w);
    if (CL && out && !*waited) { /* warp 0 of the group: every CTA's mbarrier is initialised */
      mr_cluster_wait();
      *waited = true;
    }
    if (out && (int)lane < k) {
      mr_tiny_publish<CL>(tk, sm, (uint32_t)t * (uint32_t)k + lane, id, w, topk_ids, topk_weights);
      *id0 = id;
      *w0 = w;
    }
  }
}

/* WIDE: the wide form (step 1); ONEPASS: mr_tiny_onepass instead of steps 2-3 (a
 * separate instantiation, so the default kernels carry none of its code); NT: the
 * CTA's threads, 512 (16 gating warps, a row each at 9 <= T <= 16) only with ONEPASS.
 * CL: the cluster form (v15, tk.cl; ONEPASS, 256 threads, the rows split over the
 * routing CTAs, which are one cluster, blocks 0 .. C-1):
 *   0. before the PDL wait: the tables zeroed, the mbarrier set to expect 8 * n bytes,
 *      a CTA barrier, a relaxed cluster arrive (the mbarrier's init fenced to the cluster);
 *   1. CTA r gates rows r + C*j; before its first send a gating warp waits on the cluster
 *      barrier (every CTA's mbarrier is set up), then lane l < k sends entry t*k + l to
 *      every CTA (mr_tiny_send) and writes the top-k (each CTA its own rows);
 *   2. every thread waits on its own mbarrier (all n entries landed), then on the
 *      cluster barrier if it has not yet (every arrive gets its wait); thread i < n
 *      sets entry i's presence and token bits; the CTA barrier; mr_tiny_onepass, each
 *      CTA its blocks b % C == r (as with ctas_log2 without the cluster).
 * Why (perf-log v15): at 9 <= T <= 16 one SM's gating is issue-bound (~0.4 us per
 * extra warp per scheduler); here an SM gates ceil(T / C) rows. */
template <int DT, int EPL, int KIND, bool WIDE, bool ONEPASS, uint32_t NT = MR_TINY_THREADS, bool CL = false,
          bool WARM = false, /* the warm pass (tk.warm): its own instantiation, so the default code is unchanged */
          int OWN = 0,       /* the blocks by word (1, v17) or entry (2, v48) ownership (tk.own): likewise */
          bool RU = false,   /* the wide rows' group ranks unrolled (tk.ru, v17): likewise */
          int FILT = 0>      /* 2: the sigmoid rows a warp per row by gate.cuh's filter on approximate keys (tk.filt,
                                v40): likewise */
__global__ void __launch_bounds__(NT, 1)
    mr_tiny_route_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_sort_out o,
                         const __grid_constant__ mr_tiny_k tk, int32_t* topk_ids, float* topk_weights) {
  static_assert(NT == MR_TINY_THREADS || (ONEPASS && !WIDE && !CL), "512 threads: the one-pass finish only");
  static_assert(!CL || ONEPASS, "the cluster form finishes in one pass");
  static_assert(!(WIDE && ONEPASS) || CL, "the wide rows finish in one pass in the cluster form only");
  static_assert(!WARM || (ONEPASS && !CL && !WIDE), "the warm pass: the one-pass route, a warp per row");
  static_assert(!OWN || (ONEPASS && !CL && !WIDE && !WARM), "word ownership: the one-pass route, a warp per row");
  static_assert(!RU || (WIDE && !ONEPASS && !CL && KIND == MR_KIND_GROUPED), "ranks unrolled: grouped wide rows");
  static_assert(FILT == 0 || (FILT == 2 && !WIDE && !WARM && !OWN && KIND != MR_KIND_PACKED),
                "the filter rows: fp32-key rows a warp per row");
  constexpr uint32_t NW = NT / 32u;
  extern __shared__ __align__(16) uint32_t mr_tiny_smem[];
  uint32_t* sm = mr_tiny_smem;
  /* ONEPASS: 2^ctas_log2 CTAs gate every row alike (CL: their share) and split the layout's writes */
  const uint32_t ctas = ONEPASS ? 1u << tk.ctas_log2 : 1u;
  if constexpr (ONEPASS) { /* its tables zeroed before any gating warp sets a bit: shared memory
                              only, so before the wait, under the previous kernel's tail */
    if (blockIdx.x < ctas) {
      for (uint32_t w = threadIdx.x; w < 32u + tk.E; w += NT) sm[tk.op_off + w] = 0u;
      if constexpr (CL)
        if (threadIdx.x == NT - 1u) {
          const uint32_t bar = mr_smem_addr(sm + tk.mbar_off);
          mr_mbar_init(bar, 1u);
          mr_mbar_arrive_expect_tx(bar, 8u * tk.n);
          mr_fence_mbar_init();
        }
      __syncthreads();
      if constexpr (CL) mr_cluster_arrive_relaxed(); /* the others: after their wait, our mbarrier is set up */
    }
  }
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, ctas)) return; /* clear-only CTAs (CL: whole clusters of them, no cluster barrier) */
  if (ONEPASS && !CL && blockIdx.x > 0) { /* the top-k by CTA 0 alone */
    topk_ids = NULL;
    topk_weights = NULL;
  }
  MR_STAMP(0);
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  /* CL: this CTA's rows are rank + C*j */
  const uint32_t rank = CL ? blockIdx.x : 0u, C = CL ? ctas : 1u;
  bool waited = false; /* CL: this thread has waited on the cluster barrier */
  const int gw = tk.gate_warps;
  const bool has_mask = o.expert_mask != NULL;
  /* the bitmap warp: the last warp when it gates nothing, else warp 0 after its rows */
  const uint32_t gating_warps = WIDE ? (uint32_t)gw * MR_WIDE_WARPS : (uint32_t)gw;
  const uint32_t mask_warp = gating_warps < NW ? NW - 1u : 0u;
  /* mr_tiny_head_pad (T = 1: n = k <= 32; never with the one-pass finish, T >= 2) */
  const bool solo = !ONEPASS && tk.T == 1u && !has_mask;
  if (solo && warp >= gating_warps) mr_tiny_head_pad(o, tk, gating_warps * 32u, 1u);

  /* 1. gating; at T = 1 warp 0's lanes l < k keep pick l in id0 / w0 */
  int32_t id0 = 0;
  float w0 = 0.0f;
  if constexpr (WIDE) {
    if (warp == mask_warp && mask_warp != 0u && has_mask) mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane);
    mr_tiny_gate_wide<DT, EPL, KIND, CL, RU>(g, tk, sm, topk_ids, topk_weights, &id0, &w0, &waited);
  } else {
    constexpr int W = MR_ESZ(DT);
    const int k = g.top_k;
    const int64_t T = g.num_tokens;
    /* rows are loaded first */
    uint32_t raw[EPL], braw[EPL];
    const int64_t t0 = (int)warp < gw ? (int64_t)rank + (int64_t)C * warp : T;
    const bool has_row = t0 < T;
    const unsigned char* row0 = g.logits + (has_row ? t0 : 0) * g.row_bytes;
    const uint32_t ninf = mr_raw_neg_inf<DT>(g.f16 != 0);
    mr_load_lane<W, EPL>(row0, lane, tk.E, ninf, has_row, raw);
    if (KIND != MR_KIND_PACKED)
      mr_load_lane<4, EPL>((const unsigned char*)g.bias, lane, tk.E, 0u, has_row && g.bias != NULL, braw);
    /* FILT (v40): the approximate keys' bound eps = 2^-17 + (max |b| + 1) 2^-21 (gate.cuh mr_sig_filter_row), max |b|
     * over the row's bias, which this warp's lanes hold whole (0 past E and without one), as gate.cu's
     * mr_gate_sbias_eps takes it over the CTA; the filter's words end the warp's scratch (as in gate.cu) */
    float eps = 0.0f;
    unsigned long long* fsm = nullptr;
    if constexpr (FILT != 0) {
      uint32_t bm = 0u; /* non-negative floats order as their bits */
#pragma unroll
      for (int r = 0; r < EPL; ++r) bm = max(bm, braw[r] & 0x7fffffffu);
      eps = 0x1p-17f + (__uint_as_float(__reduce_max_sync(MR_FULL_MASK, bm)) + 1.0f) * 0x1p-21f;
      fsm = (unsigned long long*)(sm + tk.scratch_off + (warp + 1u) * tk.scratch_words - 2u * MR_FILT_WORDS);
    }
    if (warp == mask_warp && mask_warp != 0u && has_mask) /* while the rows load and gate */
      mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane);
    if (has_row) {
      float* gbuf = (float*)(sm + tk.scratch_off + warp * tk.scratch_words);
      unsigned char* gsel = (unsigned char*)(gbuf + tk.E);
      const int64_t step = (int64_t)C * gw;
#pragma unroll 1
      for (int64_t t = t0; t < T; t += step) {
        const unsigned char* row = g.logits + t * g.row_bytes;
        if (t != t0) mr_load_lane<W, EPL>(row, lane, tk.E, ninf, true, raw);
        int32_t id;
        float w;
        mr_gate_row<DT, EPL, KIND, FILT>(g, lane, raw, braw, row, true, gbuf, gsel, &id, &w, fsm, eps);
        if (CL && !waited) { /* the whole warp: every CTA's mbarrier is set up */
          mr_cluster_wait();
          waited = true;
        }
        if ((int)lane < k) {
          mr_tiny_publish<CL>(tk, sm, (uint32_t)t * (uint32_t)k + lane, id, w, topk_ids, topk_weights);
          if (ONEPASS && !CL && tk.probe != 1u) { /* the tables (every probe but 1 needs them) */
            atomicOr(sm + tk.op_off + (uint32_t)id / 32u, 1u << ((uint32_t)id & 31u));
            atomicOr(sm + tk.op_off + 32u + (uint32_t)id, 1u << (uint32_t)t);
          }
        }
        id0 = id;
        w0 = w;
      }
    }
  }
  MR_STAMP(2);
  if constexpr (CL) { /* every entry landed here; then the tables from the entry table */
    const uint32_t bar = mr_smem_addr(sm + tk.mbar_off);
    while (!mr_mbar_try_wait(bar, 0u)) {
    }
    if (!waited) mr_cluster_wait();
    if (tid < tk.n) {
      const uint32_t e = sm[tk.ent_off + 2u * tid], t = (tid * tk.kmagic) >> 20;
      atomicOr(sm + tk.op_off + e / 32u, 1u << (e & 31u));
      atomicOr(sm + tk.op_off + 32u + e, 1u << t);
    }
  }
  if (ONEPASS && tk.probe == 1u) return; /* lab probe: gating alone (uniform over the CTA) */
  if (solo) {
    if (warp == 0) mr_tiny_solo_sort(o, tk, lane, id0, w0);
    MR_STAMP(7);
    return;
  }
  if (warp == mask_warp && mask_warp == 0u && has_mask) mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane);
  if constexpr (ONEPASS) {
    constexpr uint32_t NWD = EPL <= 16 ? (uint32_t)EPL : 0u; /* EPL >= E / 32, a multiple of 4 */
    /* the warm pass (lab knob tiny_warm): warp NW - 2 without a row runs the layout's code
     * (the SAME code: one call site, below) before the barrier, live = false; every other
     * warp enters at pass 1. Each warp meets the barrier once, in pass 1. */
    const bool dry = WARM && warp == NW - 2u && (int)warp >= gw && warp != mask_warp;
#pragma unroll 1
    for (uint32_t pass = dry ? 0u : 1u; pass < 2u; ++pass) {
      const bool live = !WARM || pass == 1u;
      if (live) {
        __syncthreads();
        MR_STAMP(4);
        if (tk.probe == 2u) return; /* lab probe: gating and the barrier */
      }
#pragma unroll 1
      for (uint32_t rep = live && tk.probe == 6u ? 0u : 1u; rep < 2u; ++rep) /* lab probe 6: twice */
        if (NWD > 0u && tk.op_regs)
          mr_tiny_onepass<false, NT, NWD, OWN>(o, tk, sm, has_mask, live);
        else
          mr_tiny_onepass<false, NT, 0u, OWN>(o, tk, sm, has_mask, live);
    }
    MR_STAMP(7);
    return;
  }
  /* T = 1 (with a mask here): warp 0 sorts its own picks from registers
   * (distinct experts: one entry each, no peers) after the bitmap's barrier */
  const bool one_row = tk.T == 1u;
  __syncthreads();
  MR_STAMP(4);

  /* 2. the sort: one warp (n <= 32), or one thread per entry (n <= 128) */
  __shared__ uint32_t s_nblk;
  if (tk.n > 32u) {
    mr_tiny_sort_multi(o, tk, sm, has_mask, &s_nblk);
  } else if (warp == 0) {
    const uint32_t n = tk.n, U = tk.U;
    const bool valid = lane < n;
    uint32_t e, wb, cnt = 1u, rank = 0u;
    if (one_row) {
      e = valid ? (uint32_t)id0 : tk.E;
      wb = valid ? __float_as_uint(w0) : 0u;
    } else {
      e = valid ? sm[MR_TINY_ENT + 2u * lane] : tk.E; /* E: no entry, matches no valid lane */
      wb = valid ? sm[MR_TINY_ENT + 2u * lane + 1u] : 0u;
      const uint32_t match = mr_warp_peers(e, mr_key_bits(tk.E));
      cnt = __popc(match);
      rank = __popc(match & mr_lanemask_lt());
    }
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
    /* start block: the blocks of the leaders with a smaller expert; lanes >= n
     * hold pk = 0, so the eights past n add nothing */
    const uint32_t pk = valid ? (e << 8) | blocks : 0u; /* e < 1024, blocks <= 32 */
    uint32_t start = 0u, total = 0u;
#pragma unroll 1
    for (uint32_t j0 = 0; j0 < n; j0 += 8u) {
#pragma unroll
      for (uint32_t c = 0; c < 8u; ++c) {
        const uint32_t o2 = __shfl_sync(MR_FULL_MASK, pk, (int)(j0 + c));
        const uint32_t bj = o2 & 0xffu;
        start += (o2 >> 8) < e ? bj : 0u;
        total += bj;
      }
    }
    if (en) mr_tiny_put_entry(o, tk, start * U + rank, lane, wb);
    if (leader) mr_tiny_blocks(sm, start, blocks, cnt, U, local);
    if (lane == 0) {
      s_nblk = total;
      mr_emit_totals(&o, total * U);
    }
  }
  __syncthreads();
  MR_STAMP(6);

  /* 3. padding and block ids, every thread */
  mr_tiny_emit(o, tk, sm, s_nblk);
  MR_STAMP(7);
}

/* Host: tiny.cu's wide form serves the row kind (sigmoid / sqrt_softplus rows
 * that the wide gate rows take), T and n bounds aside. */
/* v40's rule (knob tiny_filt 0): the filter rows only where k >= 9 (where the wide form merges lists of 16 keys) and
 * E > 256 (where the wide form's lanes hold 3 - 4 keys), from two lab calls on the H100 (kernel metric, route with
 * moe_buf, the wide rows -> the filter rows):
 *   - lab call 103 (session 35, dev/runs/run103/tfilt.log): E = 384 k = 16 bf16 without bias T = 1 / 2 / 4 / 8
 *     5.43 / 6.27 / 6.40 / 6.41 -> 4.36 / 5.14 / 5.19 / 5.37; with k = 8 the filter rows lost at every T (Kimi-K2
 *     T = 1 / 8 3.30 / 4.13 -> 3.49 / 4.65, grouped DeepSeek-R1 3.00 / 4.13 -> 4.03 / 4.86, GLM-4.5 and MiniMax-M2
 *     +0.7 - 1.0);
 *   - lab call 105 (session 36, dev/runs/run105/tfilt9.log, wide_lab --tfilt9): the same E = 384 shape T = 1 / 2 / 4
 *     / 8 4.06 / 6.20 / 6.25 / 6.49 -> 4.21 / 5.11 / 5.21 / 5.29 (T = 1's wide rows 1.4 us faster than in call 103:
 *     the placement state of targets.md L5, not a code change); E = 512 k = 9 fp16 with bias T = 1 - 12 -0.26 to
 *     -0.50; but with E <= 256 the filter rows lost at every T but one: E = 256 k = 12 with bias +0.66 - 0.94,
 *     grouped E = 256 k = 10 +0.26 - 0.61 (-0.45 at T = 4), E = 160 k = 16 +1.27 - 4.22.
 * (perf-log v40, v41.) No preset of models.tsv has sigmoid rows with k >= 9: the rule serves other routers. */
#define MR_TINY_FILT_AUTO_K 9
#define MR_TINY_FILT_AUTO_E 256 /* the rule takes E above this */
/* 1: knob 0 takes the rule above; 0: the filter rows only by the knob (tiny_filt 1). On since session 36 (lab call
 * 105 timed it on five k = 9 - 16 shapes and narrowed it to E > 256). */
#define MR_TINY_FILT_AUTO 1
/* v40 (knob tiny_filt: 0 = the rule above, 1 = wherever the form applies, -1 = never): the rows that the wide form
 * would take, where they are sigmoid rows that gate.cuh's filter on approximate keys serves a warp per row
 * (mr_gate_full FILT 2: k <= 16; groups, if any, in whole lanes of the warp-per-row layout: mr_gate_p_init's
 * group_reg_lanes), E 129 - 512 (the instantiations of tiny_lab_filt.cu), T <= 16. Those rows are then not wide
 * rows: a warp per row, the solo form at T = 1, the cluster form above. */
static inline int mr_tiny_filt_kind(const mr_config* cfg, const mr_gate_args* a) {
  const int kind = mr_gate_kind(a, cfg->dtype), epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int knob = mr_cuda_tune.tiny_filt;
  const int by_rule = MR_TINY_FILT_AUTO && cfg->top_k >= MR_TINY_FILT_AUTO_K && cfg->num_experts > MR_TINY_FILT_AUTO_E;
  if (knob < 0 || (knob == 0 && !by_rule) || mr_cuda_tune.tiny_wide < 0 || a->score != MOEROUTE_SCORE_SIGMOID ||
      (epl != 8 && epl != 16) || cfg->num_tokens < 1 || cfg->num_tokens > 16 || !mr_cuda_gate_wide_shape(a, kind))
    return 0;
  if (kind == MR_KIND_GROUPED) {
    const int lpg = a->group_size % epl == 0 ? a->group_size / epl : 0; /* as mr_gate_p_init */
    if (lpg < 1 || lpg > 32 || (lpg & (lpg - 1)) != 0) return 0;
  }
  return 1;
}
static inline int mr_tiny_wide_kind(const mr_config* cfg, const mr_gate_args* a) {
  return mr_cuda_tune.tiny_wide >= 0 && mr_cuda_gate_wide_shape(a, mr_gate_kind(a, cfg->dtype)) &&
         !mr_tiny_filt_kind(cfg, a);
}

static inline uint32_t mr_tiny_wide_words(int epl) {
  switch (epl) {
    case 8: return (uint32_t)(sizeof(mr_wide_smem<8>) / 4u);
    case 16: return (uint32_t)(sizeof(mr_wide_smem<16>) / 4u);
    default: return (uint32_t)(sizeof(mr_wide_smem<32>) / 4u);
  }
}

/* The one-pass finish (mr_tiny_onepass) for 16-bit softmax rows: it needs
 * 2 <= T <= 32 and U >= T (T = 1 has the solo path or the sort from registers).
 * Auto (knob tiny_onepass 0, since lab call 23 with the layout over 4 - 8 CTAs,
 * mr_tiny_ctas_log2): T <= 8 (a row per gating warp), E >= 16 and T*k <= 40, or
 * T*k <= 64 for E <= 256. Lab call 23 (dev/runs/run23/spread.log, kernel metric,
 * route, tiny.cu with 8 CTAs / the pair with the one-pass sort by 4 CTAs):
 * DeepSeek-R1 softmax T = 8 3.40 / 3.53, Qwen3-235B T = 8 3.21 / 3.44, OLMoE T = 8
 * 3.22 / 3.42, Qwen3-Next (E = 512) T = 4 (T*k 40) 3.67 / 3.96 but T = 8 4.47 / 4.14,
 * E = 1024 T = 4 3.89 / 3.91, T = 8 4.59 / 4.02; at T = 12 - 16 (two rows per warp)
 * tiny.cu loses everywhere (GPT-OSS-120B T = 12 3.91 / 3.36).
 * Before, with one CTA (T*k <= 48, or 64 for E <= 128): results run 16 (bench/results/run16/wide_lab_tiny-1p.log,
 * kernel metric, route with moe_buf; one-pass forced / the default of dce1e02,
 * which ran the one-pass finish at T <= 3 only): with its blocks lane-parallel it
 * wins at T = 2 .. 8 for E <= 128 (GPT-OSS-120B T = 4 / 6 / 8 2.86 / 2.98, 3.11 /
 * 3.31, 3.21 / 3.47 us; Qwen3-235B T = 8 3.85 / 3.94; OLMoE T = 6, 8 3.57 / 4.04, 3.72
 * / 4.15) and up to T*k = 48 above (DeepSeek-R1 softmax T = 4, 6 3.43 / 3.77, 3.86 /
 * 4.10; Qwen3-Next T = 2 .. 4 3.76 - 4.01 / 4.05 - 4.52; E = 1024 T = 6 4.99 / 5.25),
 * and loses at T*k = 60 - 64 for E >= 256 (DeepSeek-R1 softmax T = 8 4.19 / 4.03,
 * Qwen3-Next T = 6 5.01 / 4.62, E = 1024 T = 8 5.38 / 5.17). Lab call 20 (the serial
 * block loop) had it winning at T <= 3 only. E < 16: tiny.cu's own sorts, which
 * results runs 13, 15 and 16 measured 2.58 - 2.61 us (T = 2) and 2.63 - 2.67 (T = 4)
 * for Mixtral (E = 8, k = 2), against 2.71 / 2.74 with the one-pass finish in run 17
 * (its fixed ten-step block search costs more than the one-warp sort of a few
 * entries; DBRX, E = 16: 2.74 against 2.66 - 2.70 at T = 2, even at 4, 2.96 against
 * 3.11 - 3.15 at 8, so it keeps the one-pass finish). */
static inline int mr_tiny_cta16(const mr_config* cfg);

static inline int mr_tiny_onepass_wanted(const mr_config* cfg) {
  const int64_t T = cfg->num_tokens, n = T * cfg->top_k, E = cfg->num_experts;
  if (T < 2 || T > 32 || cfg->unit_size < T || mr_cuda_tune.tiny_onepass < 0) return 0;
  if (mr_cuda_tune.tiny_onepass > 0) return 1;
  if (T <= MR_TINY_WARPS) return E >= 16 && (n <= 40 || (E <= 256 && n <= 64));
  return mr_tiny_cta16(cfg); /* 9 <= T <= 16 (the knob tiny_threads = 512 picks the width at T <= 8, not the finish) */
}

/* The one-pass route with 16 gating warps (512 threads, a row per warp) at
 * 9 <= T <= 16, where 8 warps gate two rows each one after the other (the dependent
 * chain of a row twice: lab call 23 had tiny.cu losing to the pair at T = 12 - 16,
 * GPT-OSS-120B T = 12 3.91 / 3.36 us). Knob tiny_threads: 0 auto (9 <= T <= 16,
 * 16 <= E <= 256, T*k <= 96, U >= T), 512 = wherever the one-pass route runs with
 * 2 <= T <= 16, T*k <= MR_TINY_MAX_N and E <= 512, -1 = never. Only where the one-pass
 * finish runs (mr_tiny_plan). Lab call 43 (dev/runs/run43/t16_time.log, kernel metric,
 * route with moe_buf, the pair / 16 warps): DeepSeek-R1 softmax T = 9 / 10 / 12 3.40 /
 * 3.41, 3.56 / 3.45, 3.63 / 3.49 but T = 14 / 16 (T*k 112 / 128) 3.61 / 3.87, 3.63 / 3.89;
 * Qwen3-235B T = 12 3.56 / 3.24, T = 16 3.54 / 3.59; OLMoE T = 12 3.41 / 3.25, 16 3.46 /
 * 3.60; GPT-OSS-120B (k = 4) T = 12 3.24 / 2.88, 16 3.21 / 3.11. The gating warps share the
 * 4 schedulers: gating alone (probe) grows ~0.4 us per extra warp per scheduler (DeepSeek-R1
 * softmax T = 4 / 8 / 12 / 16: 1.75 / 2.15 / 2.41 / 2.82 us). */
static inline int mr_tiny_cta16(const mr_config* cfg) {
  const int64_t T = cfg->num_tokens, n = T * cfg->top_k, E = cfg->num_experts;
  const int knob = mr_cuda_tune.tiny_threads;
  if (knob < 0 || T < 2 || T > MR_TINY_WARPS16 || n > (int64_t)MR_TINY_MAX_N || E > 512 || cfg->unit_size < T)
    return 0;
  if (knob == MR_TINY_THREADS16) return 1;
  return T > MR_TINY_WARPS && n <= 96 && E >= 16 && E <= 256;
}

/* T*k bound of tiny.cu's own sorts for 16-bit softmax rows at 2 <= T <= 8, by E
 * (where the one-pass finish does not apply: U < T).
 * Lab call 20 (dev/runs/run20/tiny_1p.log, kernel metric, route with moe_buf,
 * tiny.cu forced against the pair of gate kernel + one-launch sort):
 *   E = 64 (OLMoE, k = 8): wins at T*k = 24 - 48 (3.30 / 3.89, 3.46 / 3.87,
 *     4.06 / 4.19 us), loses at 64 (4.34 / 4.18);
 *   E = 128: wins up to 32 (GPT-OSS-120B k = 4 T = 6, 8: 3.33 / 3.54, 3.48 / 3.69;
 *     Qwen3-235B k = 8 T = 3, 4: 3.33 / 3.45, 3.50 / 3.76), loses at 48 (4.06 / 3.78);
 *   E = 256 (DeepSeek-R1 softmax): ties at 24 (3.58 / 3.58), loses at 32 (3.83 / 3.76);
 *   E = 512 (Qwen3-Next, k = 10): loses at every T >= 2 (4.26 / 4.06 at T = 2);
 *   E = 1024 (k = 8): wins up to 32 (4.15 / 4.64, 4.34 / 4.75, 4.48 / 4.91),
 *     loses at 48 (5.41 / 5.23).
 * The bound is the largest measured win, taken for the E bucket at and above it. */
static inline int64_t mr_tiny_packed_max_n(int64_t E) {
  if (E <= 64) return 48;
  if (E <= 128) return 32;
  if (E <= 256) return 24;
  if (E <= 512) return 0;
  return 32;
}

/* CTAs that write the one-pass layout (log2): knob tiny_ctas (1, 2, 4, 8), else 4 up
 * to T*k = 32 and 8 above. Why more than one: one SM writes the layout at about one
 * slot per cycle (the sort alone by one CTA grew ~0.13 us per token of k = 8 from
 * T = 1 to 16, lab call 22). Lab call 23 (dev/runs/run23/spread.log, kernel metric,
 * moe_buf cleared), R = 1 / 2 / 4 / 8: the sort alone of DeepSeek-R1 softmax T = 16
 * 3.63 / 2.65 / 2.15 / 1.85 us (mask-table sort 2.57), T = 2 1.83 / 1.66 / 1.65 / 1.65;
 * 8 is best or within 0.05 us everywhere; tiny.cu's route: DeepSeek-R1 softmax T = 2
 * 3.20 / 3.08 / 3.09 / 3.13, T = 8 4.13 / 3.76 / 3.50 / 3.40; GPT-OSS-120B T = 4 (T*k 16)
 * 2.91 / 2.78 / 2.77 / 2.81, T = 8 (32) 3.27 / 3.04 / 2.90 / 2.91; Qwen3-Next T = 4
 * (40) 4.12 / 3.87 / 3.75 / 3.67. */
static inline uint32_t mr_tiny_ctas_log2(const mr_config* cfg) {
  const int c = mr_cuda_tune.tiny_ctas;
  if (c > 0) return c >= 8 ? 3u : c >= 4 ? 2u : c >= 2 ? 1u : 0u;
  return cfg->num_tokens * cfg->top_k <= 32 ? 2u : 3u;
}
/* The route's (session 28): 8 CTAs also for k <= 4 from T = 3. Lab call 81 (dev/runs/run81/decode.log, H100, kernel
 * metric, both layouts, moe_buf cleared), GPT-OSS-120B 4 / 8 CTAs: T = 3 2.537 / 2.405, T = 4 2.543 / 2.404, T = 2
 * 2.392 / 2.410 (kept at 4); DeepSeek-R1 softmax (k = 8) T = 2 - 4 even (2.746 / 2.740, 2.765 / 2.762, 2.773 / 2.776).
 * Lab call 82 (dev/runs/run82/) with this rule: -0.11 to -0.14 us at T = 3 - 4 for GPT-OSS-120B / -20B, Qwen1.5-MoE
 * and DBRX in both layouts and CK alone, T = 2 and 8 even; moeroute bench (CK): T = 4 GPT-OSS-20B 2.66 -> 2.53,
 * Qwen1.5-MoE 2.52 -> 2.40, DBRX 2.65 -> 2.54 (against results run 44), GPT-OSS-120B 2.38 -> 2.40 (its bench inputs
 * already ran fast with 4). */
static inline uint32_t mr_tiny_route_ctas_log2(const mr_config* cfg) {
  if (mr_cuda_tune.tiny_ctas <= 0 && cfg->top_k <= 4 && cfg->num_tokens >= 3) return 3u;
  return mr_tiny_ctas_log2(cfg);
}

/* The automatic C (lab call 53, dev/runs/run53/tcl.log: H100, kernel metric, route with moe_buf,
 * U = 32, the previous default against C = 1, 2, 4, 8 for 17 shapes at T = 1 .. 16, 24, 32):
 *   - the wide gate rows (grouped DeepSeek-R1, Kimi-K2, GLM-4.5, ...) at 2 <= T <= 8, C = the
 *     power of two >= T (a row per group): e.g. grouped DeepSeek-R1 T = 2 / 4 / 8 4.58 / 4.59 /
 *     4.46 -> 4.01 / 4.07 / 4.15 us, Kimi-K2 4.49 / 4.50 / 4.40 -> 4.14 / 4.23 / 4.32; at T = 1 the
 *     one-CTA wide form stays (3.22 against 4.00 at C = 2), from T = 9 the pair (Kimi-K2 T = 12
 *     4.42 against 4.59); E >= 1024 up to T = 6 (E = 1024 grouped T = 8: 7.11 against 7.21);
 *   - the fp32-key rows a warp per row (softmax with bias or groups, fp32 softmax: DeepSeek-V2,
 *     ERNIE-4.5, Llama-4) at every T: two rows per CTA, C >= 2 (deepseek-v2 T = 1 / 8 / 16
 *     6.86 / 6.95 / 7.14 -> 6.45 / 6.65 / 6.70; llama4-maverick T = 1 3.85 -> 3.26);
 *   - the 16-bit softmax rows from T = 9 (from T = 6 for E >= 512), C = 8: DeepSeek-R1 softmax
 *     T = 9 / 12 / 16 3.55 / 3.59 / 3.76 -> 3.14 / 3.24 / 3.25, GPT-OSS-120B T = 16 / 32 3.05 /
 *     3.54 -> 2.70 / 2.85, Qwen3-Next T = 8 4.20 -> 3.88; at T <= 8 the one-CTA one-pass route
 *     (DeepSeek-R1 softmax T = 8 3.12 against 3.14, GPT-OSS-120B 2.67 against 2.72).
 * Results run 27 (bench/results/run27/wide_lab_tcl.log, H100, same metric) repeated these and
 * widened two edges, each seen in both runs (run 53 / run 27, off -> C = 8):
 *   - the wide gate rows with E <= 256 up to T = 16 (C = 8, two rows per CTA): GLM-4.5 T = 9 / 12 /
 *     16 4.11 / 4.15 / 4.12 -> 3.95 / 3.98 / 3.98 and 4.18 / 4.09 / 4.16 -> 3.97 / 3.99 / 3.99,
 *     MiniMax-M2 T = 12 3.96 -> 3.84 and 4.02 -> 3.85, DeepSeek-V4-Flash T = 12 4.05 -> 3.93 and
 *     4.08 -> 3.92, grouped DeepSeek-R1 T = 12 4.54 -> 4.45 and 4.56 -> 4.48; not Kimi-K2 (E = 384:
 *     T = 12 4.42 -> 4.59 and 4.42 -> 4.60) nor E = 1024;
 *   - the 16-bit softmax rows with k >= 8 and E <= 128 from T = 6: Qwen3-235B T = 6 / 8 2.91 /
 *     2.94 -> 2.87 / 2.83 and 2.93 / 2.96 -> 2.86 / 2.85, OLMoE 2.94 / 2.96 -> 2.90 / 2.87 and
 *     2.94 / 2.97 -> 2.86 / 2.86; not k = 4 (GPT-OSS-120B T = 6 2.64 -> 2.70 and 2.66 -> 2.72).
 *     Results run 28 (bench/results/run28, H100, with k >= 8 at any E) confirmed Qwen3-235B and
 *     OLMoE (-0.03 to -0.07) and showed E = 256 a little behind in all three runs taken together
 *     (DeepSeek-R1 softmax T = 6 / 8: 3.11 / 3.12 -> 3.11 / 3.14, 3.13 / 3.16 -> 3.13 / 3.15, 3.10 /
 *     3.11 -> 3.14 / 3.14), hence E <= 128.
 * Lab call 98 (dev/runs/run98/tcl.log, H100, same metric, session 33): the wide rows with E <= 256 at
 * T = 9 - 16 by C = 16 (one row per CTA; a non-portable cluster size) instead of 8 (two rows, so two
 * gating warps per scheduler): grouped DeepSeek-R1 T = 9 / 12 / 16 4.41 / 4.49 / 4.50 -> 4.31 / 4.31 /
 * 4.32 (off: 4.50 / 4.53 / 4.54; results runs 54 - 57 had route above the chain at T = 12), GLM-4.5
 * 3.77 / 3.79 / 3.80 -> 3.69 / 3.70 / 3.70, MiniMax-M2 3.77 / 3.80 / 4.34 -> 3.69 / 3.69 / 4.29; at T = 8
 * C = 16 is slower (grouped DeepSeek-R1 4.11 -> 4.30). Kimi-K2 (E = 384, off from T = 9) gained only at
 * T = 16 (4.43 -> 4.32; 4.28 -> 4.32 at T = 13): unchanged.
 * Never C = 1: under memcheck its DSMEM writes are reported as invalid ("Cluster needs to have at
 * least 2 blocks", dev/runs/run53/tcl_mem.log); where C = 1 won, C = 2 was 0.03 - 0.13 us behind. */
/* 1: route takes the cluster form by the rule below; 0: only by the knob (tiny_cluster > 0).
 * On since session 20: results runs 27 - 29 (bench/results/run27 - run29, H100) ran test_cuda,
 * memcheck, synccheck and initcheck with it on, all clean (lab call 53's memcheck report was
 * C = 1's, which this rule never takes). Racecheck runs with --no-cluster, as for the other
 * cluster kernel (bench/sanitize.sh). */
#define MR_TINY_CLUSTER_AUTO 1
static inline int mr_tiny_cluster_auto(const mr_config* cfg, const mr_gate_args* a) {
  const int64_t T = cfg->num_tokens;
  if (!MR_TINY_CLUSTER_AUTO || mr_cuda_cc_major() < 9 || cfg->num_experts < 64) return 0; /* E = 64 - 1024 measured */
  if (mr_tiny_filt_kind(cfg, a)) /* v40: one row per CTA, as the wide rows with E <= 256 (T = 1: the solo form) */
    return T >= 2 ? (T <= 2 ? 2 : T <= 4 ? 4 : T <= 8 ? 8 : 16) : 0;
  if (mr_tiny_wide_kind(cfg, a)) {
    const int64_t tmax = cfg->num_experts <= 256 ? 16 : cfg->num_experts >= 1024 ? 6 : 8;
    return T >= 2 && T <= tmax ? (T <= 2 ? 2 : T <= 4 ? 4 : T <= 8 ? 8 : 16) : 0;
  }
  if (mr_gate_kind(a, cfg->dtype) != MR_KIND_PACKED) {
    const int64_t rows2 = (T + 1) / 2; /* CTAs for two rows each */
    return rows2 <= 2 ? 2 : rows2 <= 4 ? 4 : 8;
  }
  return T >= 9 || (T >= 6 && (cfg->num_experts >= 512 || (cfg->top_k >= 8 && cfg->num_experts <= 128))) ? 8 : 0;
}
/* The cluster form's C (v15, knob tiny_cluster; 0 = not taken): the wide gate rows (a group of
 * four warps per row, at most 2 rows per CTA), or any other row kind by a warp per row (at most
 * 8 rows per CTA: the 16-bit softmax rows, and the fp32-key rows the wide form does not take:
 * softmax with bias or groups, fp32 softmax, E <= 128), 1 <= T <= 32, U >= T (the one-pass
 * finish), T*k <= MR_TINY_MAX_N. Knob tiny_cluster: 0 = the automatic C above, > 0 = C, < 0 = off. */
static inline int mr_tiny_cluster_size(const mr_config* cfg, const mr_gate_args* a) {
  const int knob = mr_cuda_tune.tiny_cluster;
  const int64_t T = cfg->num_tokens, n = T * cfg->top_k;
  if (knob < 0 || mr_cuda_no_cluster() || T < 1 || T > 32 || cfg->unit_size < T || n > (int64_t)MR_TINY_MAX_N ||
      cfg->num_experts > MR_TINY_MAX_E)
    return 0;
  const int want = knob > 0 ? knob : mr_tiny_cluster_auto(cfg, a);
  if (want <= 0) return 0;
  /* C = 16 (session 33): a non-portable cluster size (mr_launch_tiny_t sets the attribute; a device
   * that refuses it gets C = 8, mr_cuda_tiny16_refused), one wide row per CTA up to T = 16 */
  const int C = want >= 16 && !mr_cuda_tiny16_refused() ? 16 : want >= 8 ? 8 : want >= 4 ? 4 : want >= 2 ? 2 : 1;
  const int64_t rows = (T + C - 1) / C; /* per CTA */
  if (mr_tiny_wide_kind(cfg, a)) return rows <= MR_TINY_WARPS / MR_WIDE_WARPS ? C : 0;
  return rows <= MR_TINY_WARPS ? C : 0;
}

/* The one-pass route's presence words in registers (knob tiny_op_regs, v14): auto for E <= 256.
 * Lab call 44 (dev/runs/run44/op_time.log, kernel metric, route with moe_buf, shuffles /
 * registers): DeepSeek-R1 softmax T = 2 2.80 / 2.61, 8 3.17 / 3.00, 12 3.51 / 3.43;
 * GPT-OSS-120B T = 2 2.52 / 2.31; Qwen3-235B T = 4 2.77 / 2.49; but Qwen3-Next (E = 512,
 * 16 words) T = 2 3.33 / 3.46. */
static inline uint32_t mr_tiny_op_regs(const mr_config* cfg) {
  return mr_knob_on(mr_cuda_tune.tiny_op_regs, cfg->num_experts <= 256) ? 1u : 0u;
}

/* The v17 forms' automatic rules (perf-log v17; lab call 53, dev/runs/run53, H100, kernel metric,
 * route with moe_buf, off / on):
 *   - wide_rank_unroll on: grouped DeepSeek-R1 T = 1 3.21 / 3.03 us, E = 384 G = 12 4.18 / 4.08,
 *     E = 256 G = 4 3.18 / 3.12, E = 1024 G = 32 6.15 / 5.56;
 *   - tiny_op_own only where it won: k <= 4 and T*k <= 16 (GPT-OSS-120B T = 2 / 3 / 4 2.47 / 2.50 /
 *     2.50 -> 2.39 / 2.42 / 2.43); slower with k = 8 or more rows (OLMoE T = 3 2.68 -> 2.98,
 *     GPT-OSS-120B T = 8 2.66 -> 2.87). */
#define MR_TINY_RU_AUTO 1
static inline int mr_tiny_own_auto(const mr_config* cfg) {
  return cfg->top_k <= 4 && cfg->num_tokens * cfg->top_k <= 16;
}

/* The rows form (v49, lab knob tiny_rows 1 or 2) fits: 16-bit softmax rows (PACKED), 2 <= T <= 4, T*k <= 32 (an entry
 * per lane), k <= 16 (the merge's lists), E <= 512 (EPL <= 16), T <= U <= 128 (one block per expert; the padding loop
 * walks D*U slots). The expert mask is the launch's test (mr_tiny_route_plan_launch). */
static inline int mr_tiny_rows_fits(const mr_config* cfg, const mr_gate_args* a) {
  const int64_t T = cfg->num_tokens;
  return (mr_cuda_tune.tiny_rows == 1 || mr_cuda_tune.tiny_rows == 2) && mr_gate_kind(a, cfg->dtype) == MR_KIND_PACKED &&
         cfg->dtype != MOEROUTE_DTYPE_FP32 && T >= 2 && T <= 4 && T * cfg->top_k <= 32 && cfg->top_k <= 16 &&
         cfg->num_experts <= 512 && cfg->unit_size >= T && cfg->unit_size <= 128;
}

/* The shape fields of a plan (the route's and the sort's); the rest zero. */
static inline void mr_tiny_k_init(const mr_config* cfg, mr_tiny_k* K) {
  memset(K, 0, sizeof *K);
  K->n = (uint32_t)(cfg->num_tokens * cfg->top_k);
  K->k = (uint32_t)cfg->top_k;
  K->kmagic = ((1u << 20) + K->k - 1u) / K->k;
  K->U = (uint32_t)cfg->unit_size;
  K->umagic = K->U <= 1u ? 0u : (uint32_t)((((uint64_t)1 << 32) + K->U - 1u) / K->U);
  K->T = (uint32_t)cfg->num_tokens;
  K->E = (uint32_t)cfg->num_experts;
  K->nw = (K->n + 31u) / 32u;
  K->threads = MR_TINY_THREADS;
}

/* Host: the launch plan, or 0 when the tiny path does not apply. */
static inline int mr_tiny_plan(const mr_config* cfg, const mr_gate_args* a, mr_tiny_k* K, size_t* smem) {
  if (mr_cuda_tune.no_tiny) return 0;
  const int wide = mr_tiny_wide_kind(cfg, a);
  const int64_t n = cfg->num_tokens * cfg->top_k;
  const int cl = mr_tiny_cluster_size(cfg, a);
  /* what fits; when it pays is mr_cuda_tiny_takes' business */
  const int64_t max_n = mr_cuda_tune.tiny_max_n > 0 ? mr_cuda_tune.tiny_max_n : (int64_t)MR_TINY_MAX_N;
  if (cfg->num_tokens < 1 || (!wide && !cl && n > max_n) || n > (int64_t)MR_TINY_MAX_N ||
      cfg->num_experts > MR_TINY_MAX_E)
    return 0;
  mr_tiny_k_init(cfg, K);
  if (cl) { /* the cluster form: no sort tables (the one-pass finish), the rows split over C CTAs */
    K->cl = 1u;
    K->onepass = 1u;
    K->ctas_log2 = cl >= 16 ? 4u : cl >= 8 ? 3u : cl >= 4 ? 2u : cl >= 2 ? 1u : 0u;
    K->op_regs = mr_tiny_op_regs(cfg);
    K->gate_warps = (int32_t)((cfg->num_tokens + cl - 1) / cl); /* rows per CTA: warps, or groups of four */
    /* the other tiny knobs (tiny_max_n, tiny_onepass, tiny_ctas, tiny_threads, tiny_warm, tiny_op_own,
     * tiny_probe) do not apply */
    K->scratch_off = MR_TINY_TBL;
    /* per gating group (wide) or warp (grouped selection a warp per row: gate.cuh's gbuf, 16-byte aligned) */
    K->scratch_words = wide ? mr_tiny_wide_words(mr_cuda_epl_bucket(cfg->num_experts)) : mr_gate_scratch_words(a);
    if (mr_tiny_filt_kind(cfg, a)) { /* v40: the filter's words end each gating warp's scratch (8-byte aligned) */
      K->filt = 1;
      K->scratch_words += 2u * MR_FILT_WORDS;
    }
    K->op_off = (K->scratch_off + (uint32_t)K->gate_warps * K->scratch_words + 3u) & ~3u;
    K->mbar_off = (K->op_off + 32u + K->E + 1u) & ~1u;
    const uint32_t words = K->mbar_off + 2u;
    if (words > MR_TINY_SMEM_BYTES / 4u) return 0;
    *smem = (size_t)words * 4u;
    return 1;
  }
  K->scratch_off = (MR_TINY_TBL + (K->n > 32u ? K->E * K->nw : 0u) + 3u) & ~3u;
  if (K->scratch_off > MR_TINY_SMEM_BYTES / 4u) return 0;
  if (wide) { /* a group of four warps per row, two groups */
    const int32_t groups = MR_TINY_WARPS / MR_WIDE_WARPS;
    K->gate_warps = cfg->num_tokens < groups ? (int32_t)cfg->num_tokens : groups;
    K->scratch_words = mr_tiny_wide_words(mr_cuda_epl_bucket(cfg->num_experts));
    if (K->scratch_off + (uint32_t)K->gate_warps * K->scratch_words > MR_TINY_SMEM_BYTES / 4u) return 0;
    K->ru = mr_knob_on(mr_cuda_tune.wide_rank_unroll, MR_TINY_RU_AUTO) &&
                    mr_gate_kind(a, cfg->dtype) == MR_KIND_GROUPED
                ? 1
                : 0;
  } else { /* a warp per row: 16-bit softmax rows (mr_cuda_tiny_takes), no gating scratch; or (v40, lab knob
              tiny_filt) the filter rows at T = 1, each gating warp's scratch (gbuf, as in the cluster form) ending
              in the filter's words */
    const int nw = mr_tiny_onepass_wanted(cfg) && mr_tiny_cta16(cfg) ? MR_TINY_WARPS16 : MR_TINY_WARPS;
    K->threads = (uint32_t)nw * 32u;
    K->gate_warps = cfg->num_tokens < nw ? (int32_t)cfg->num_tokens : nw;
    if (mr_tiny_filt_kind(cfg, a)) {
      K->filt = 1;
      K->scratch_words = mr_gate_scratch_words(a) + 2u * MR_FILT_WORDS;
      if (K->scratch_off + (uint32_t)K->gate_warps * K->scratch_words > MR_TINY_SMEM_BYTES / 4u) return 0;
    }
  }
  uint32_t words = K->scratch_off + (uint32_t)K->gate_warps * K->scratch_words;
  if (!wide && mr_tiny_onepass_wanted(cfg)) {
    K->onepass = 1u;
    K->probe = mr_cuda_tune.tiny_probe > 0 ? (uint32_t)mr_cuda_tune.tiny_probe : 0u;
    K->op_regs = mr_tiny_op_regs(cfg);
    K->warm = mr_cuda_tune.tiny_warm > 0 && K->threads == MR_TINY_THREADS ? 1u : 0u; /* instantiated for 256 only */
    /* 256 and 512 threads; knob 2: entry ownership (v48, lab) */
    K->own = K->warm                                                            ? 0
             : mr_cuda_tune.tiny_op_own == 2                                       ? 2
             : mr_knob_on(mr_cuda_tune.tiny_op_own, mr_tiny_own_auto(cfg)) ? 1
                                                                                   : 0;
    K->ctas_log2 = mr_tiny_route_ctas_log2(cfg);
    K->rows = mr_tiny_rows_fits(cfg, a) && K->threads == MR_TINY_THREADS ? (uint8_t)mr_cuda_tune.tiny_rows : 0;
    K->op_off = (words + 3u) & ~3u;
    words = K->op_off + 32u + K->E;
    if (words > MR_TINY_SMEM_BYTES / 4u) return 0;
  }
  *smem = (size_t)words * 4u;
  return 1;
}

template <int DT, int EPL, int KIND, bool WIDE, bool ONEPASS, uint32_t NT = MR_TINY_THREADS, bool CL = false,
          bool WARM = false, int OWN = 0, bool RU = false, int FILT = 0>
static cudaError_t mr_launch_tiny_t(const mr_gate_p* g0, const mr_sort_out* o, const mr_tiny_k* K, size_t smem,
                                    int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  mr_gate_p g = *g0;
  if (WIDE && KIND == MR_KIND_GROUPED) g.group_reg_lanes = g.group_size / (EPL / MR_WIDE_WARPS); /* as gate.cu */
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, (int)NT);
  const unsigned ctas = ONEPASS ? 1u << K->ctas_log2 : 1u;
  if (CL) clear = (clear + (int)ctas - 1) / (int)ctas * (int)ctas; /* the grid is whole clusters */
  cudaLaunchConfig_t lc = mr_launch_config(ctas + (unsigned)clear, NT, smem, stream);
  cudaLaunchAttribute attr[2];
  unsigned na = 0;
  if (CL) { /* a cluster launch also for C = 1: DSMEM addressing and the cluster barrier as defined */
    memset(attr, 0, sizeof attr[0]);
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = ctas;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    lc.attrs = attr;
    lc.numAttrs = 1;
    na = 1;
    if (ctas > 8u) { /* C = 16 (v37): the non-portable size. Once per device and kernel, before any launch: the
                        attribute, then whether one cluster of 16 of this launch's shape fits
                        (cudaOccupancyMaxActiveClusters). Neither is a stream operation, so a first call inside a
                        graph capture is safe; a device that says no (MPS, green contexts, a partitioned device)
                        gets cudaErrorNotSupported here, with nothing launched, and mr_cuda_launch_tiny_route marks
                        it refused and re-plans with C <= 8 (session 33's review). */
      static signed char fits[MR_MAX_DEVICES]; /* 0 not asked, 1 fits, -1 refused */
      const int dev = mr_cuda_device_slot();
      signed char v = dev >= 0 ? fits[dev] : 0;
      if (v == 0) {
        auto kern = mr_tiny_route_kernel<DT, EPL, KIND, WIDE, ONEPASS, NT, CL, WARM, OWN, RU, FILT>;
        const cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (e != cudaSuccess) (void)cudaGetLastError(); /* the attribute's own error (not sticky) */
        v = e == cudaSuccess && mr_cluster_fits((const void*)kern, &lc) ? 1 : -1;
        if (dev >= 0) fits[dev] = v;
      }
      if (v < 0) return cudaErrorNotSupported;
    }
  }
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_tiny_route_kernel<DT, EPL, KIND, WIDE, ONEPASS, NT, CL, WARM, OWN, RU, FILT>,
                            g, *o, *K, topk_ids, topk_weights));
  return cudaSuccess;
}

/* ---- v49 (lab knob tiny_rows): the rows form, T = 2 .. 4 in ONE warp -----------------------------------------
 *
 * tiny.cu's one-pass route gates a row per warp, then meets the CTA at a barrier and builds the layout from shared
 * tables: ~0.8 us after gating at T = 2 - 8 (targets.md D2; v38 and v48 did not shorten it). Here the T = R rows of
 * 16-bit softmax (no expert mask) are gated by warp 0 alone, side by side (gate.cuh mr_gate_packed_rows: the same
 * keys and expressions, so the same bits), and the layout comes from its registers: lane l < n = T*k takes entry l
 * (token l / k, pick l % k), the entries of one expert find each other with match_any (rank: the lanes below, which
 * are the lower tokens; count), an expert's block is the number of distinct experts below it, and the blocks' counts
 * (1 .. 4) travel as two bit planes over the D <= 32 blocks (two REDUX), so that each lane writes its padding slots
 * with no further exchange. No shared memory, no barrier, no table. U >= T: one block per expert present. The other
 * CTAs clear moe_buf. tk.rows 2: warps 1 .. 7 write slots [T, U) of blocks 0 .. k-1 while warp 0 gates (padding
 * whatever the picks: every token picks k distinct experts, so blocks 0 .. k-1 exist and hold at most T entries).
 */
template <int DT, int EPL, int R>
__global__ void __launch_bounds__(MR_TINY_THREADS, 1)
    mr_tiny_rows_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_sort_out o,
                        const __grid_constant__ mr_tiny_k tk, int32_t* topk_ids, float* topk_weights) {
  static_assert(R >= 2 && R <= 4, "the rows form: T = 2 .. 4 (block counts in two bit planes)");
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, 1u)) return; /* clear-only CTAs */
  const uint32_t tid = threadIdx.x, lane = tid & 31u, U = tk.U, k = tk.k, n = tk.n;
  if (tid >= 32u) { /* tk.rows 2: the padding known before the picks */
    if (tk.rows == 2u) mr_tiny_head_pad(o, tk, 32u, (uint32_t)R);
    return;
  }
  constexpr int W = MR_ESZ(DT);
  const uint32_t ninf = mr_raw_neg_inf<DT>(g.f16 != 0);
  uint32_t raw[R][EPL];
#pragma unroll
  for (int q = 0; q < R; ++q) mr_load_lane<W, EPL>(g.logits + (int64_t)q * g.row_bytes, lane, tk.E, ninf, true, raw[q]);
  int32_t id[R];
  float w[R];
  if (tk.probe == 8u) { /* lab probe (WRONG outputs): no gating, row q's picks (l + q) % E, weight 1: the layout alone */
#pragma unroll
    for (int q = 0; q < R; ++q) {
      id[q] = (int32_t)((lane + (uint32_t)q + (raw[q][0] & 1u)) % tk.E);
      w[q] = 1.0f;
    }
  } else if (tk.probe == 9u) { /* lab probe (right outputs): the rows one after the other by mr_gate_packed */
#pragma unroll
    for (int q = 0; q < R; ++q) mr_gate_packed<DT, EPL>(g, lane, raw[q], &id[q], &w[q]);
  } else {
    mr_gate_packed_rows<DT, EPL, R>(g, lane, raw, id, w);
  }
  if (lane < k)
#pragma unroll
    for (int q = 0; q < R; ++q) {
      if (topk_ids) topk_ids[q * k + lane] = id[q];
      if (topk_weights) topk_weights[q * k + lane] = w[q];
    }
  if (tk.probe == 1u) return; /* lab probe (WRONG outputs): gating alone */
  /* entry l = t*k + s: row t's pick s, from lane s */
  const bool valid = lane < n;
  const uint32_t t = (lane * tk.kmagic) >> 20, s = lane - t * k;
  uint32_t e = 0xffffffffu, wb = 0u; /* no entry: above every expert */
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const uint32_t eq = (uint32_t)__shfl_sync(MR_FULL_MASK, id[q], (int)(s & 31u));
    const uint32_t wq = __shfl_sync(MR_FULL_MASK, __float_as_uint(w[q]), (int)(s & 31u));
    if (valid && t == (uint32_t)q) {
      e = eq;
      wb = wq;
    }
  }
  const uint32_t peers = __match_any_sync(MR_FULL_MASK, e);
  const uint32_t rank = (uint32_t)__popc(peers & mr_lanemask_lt()), cnt = (uint32_t)__popc(peers);
  const bool leader = valid && rank == 0u;
  /* block = the distinct experts below e: the leaders with a smaller expert */
  const uint32_t start = mr_tiny_count_below(leader ? e : 0xffffffffu, e, n);
  const uint32_t D = (uint32_t)__popc(__ballot_sync(MR_FULL_MASK, leader));
  if (valid) mr_tiny_put_entry(o, tk, start * U + rank, lane, wb);
  if (leader) mr_emit_block_id(&o, start, (int32_t)e); /* local id = expert id: no mask */
  /* block b holds 1 + c1_b + 2 c2_b entries (D <= n <= 32 blocks, counts 1 .. R <= 4) */
  const uint32_t c1 = __reduce_or_sync(MR_FULL_MASK, leader ? ((cnt - 1u) & 1u) << start : 0u);
  const uint32_t c2 = __reduce_or_sync(MR_FULL_MASK, leader ? ((cnt - 1u) >> 1) << start : 0u);
  const bool early = tk.rows == 2u;
#pragma unroll 4
  for (uint32_t j = lane; j < D * U; j += 32u) {
    const uint32_t b = tk.umagic ? __umulhi(j, tk.umagic) : j, r = j - b * U;
    const uint32_t cb = 1u + ((c1 >> b) & 1u) + 2u * ((c2 >> b) & 1u);
    if (r >= cb && !(early && b < k && r >= (uint32_t)R)) mr_emit_pad_slot(&o, j);
  }
  if (lane == 0u) mr_emit_totals(&o, D * U);
}

template <int DT, int EPL, int R>
static cudaError_t mr_launch_tiny_rows_t(const mr_gate_p* g, const mr_sort_out* o, const mr_tiny_k* K,
                                         int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  const int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, (int)MR_TINY_THREADS);
  cudaLaunchConfig_t lc = mr_launch_config(1u + (unsigned)clear, MR_TINY_THREADS, 0, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_tiny_rows_kernel<DT, EPL, R>, *g, *o, *K, topk_ids, topk_weights));
  return cudaSuccess;
}

/* What a launch of the route kernel needs besides its template arguments. */
typedef struct mr_tiny_launch_args {
  const mr_gate_p* g;
  const mr_sort_out* o;
  const mr_tiny_k* K;
  size_t smem;
  int wide; /* the rows take the wide gate rows (mr_tiny_wide_kind) */
  int32_t* topk_ids;
  float* topk_weights;
  cudaStream_t stream;
} mr_tiny_launch_args;

/* Calls f.template run<DT, EPL, KIND>() for cfg's dtype, E bucket and row kind (the specialisation
 * list of common.cuh times the kinds of gate.cuh). */
template <class F>
static cudaError_t mr_tiny_dispatch(const mr_config* cfg, const mr_gate_args* a, const F& f) {
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int kind = mr_gate_kind(a, cfg->dtype);
#define MR_TINY_CASE(DT, EPL)                                                       \
  if (cfg->dtype == DT && epl == EPL) {                                             \
    if (kind == MR_KIND_PACKED) return f.template run<DT, EPL, MR_KIND_PACKED>();   \
    if (kind == MR_KIND_GROUPED) return f.template run<DT, EPL, MR_KIND_GROUPED>(); \
    return f.template run<DT, EPL, MR_KIND_FULL>();                                 \
  }
  MR_FOR_EACH_GATE_SPEC(MR_TINY_CASE)
#undef MR_TINY_CASE
  return cudaErrorInvalidConfiguration;
}

/* The lab knobs' instantiations, in translation units of their own (compiled in parallel):
 * tiny_lab.cu the cluster form of 16-bit softmax and wide rows, the warm pass, word ownership and the unrolled
 * group ranks; tiny_lab_rows.cu the cluster form of the fp32-key rows a warp per row;
 * tiny_lab_filt.cu the filter rows (v40). */
extern "C" cudaError_t mr_cuda_launch_tiny_lab(const mr_config* cfg, const mr_gate_args* a,
                                              const mr_tiny_launch_args* x);
extern "C" cudaError_t mr_cuda_launch_tiny_lab_rows(const mr_config* cfg, const mr_gate_args* a,
                                                   const mr_tiny_launch_args* x);
extern "C" cudaError_t mr_cuda_launch_tiny_lab_filt(const mr_config* cfg, const mr_gate_args* a,
                                                   const mr_tiny_launch_args* x);

#endif /* MOEROUTE_CUDA_TINY_CUH */
