/*
 * large.cu - route and sort for large T (T*k above the one-launch bound):
 * three launches chained by programmatic dependent launch (PDL), the moe_buf
 * clear spread over them so that the routing runs underneath it.
 * dev/large-notes.md: design, thresholds, predictions, knobs.
 *
 *   L1  route: gate + rank (mr_large_gate_kernel<DT, EPL, KIND>, one warp per
 *       token row, the row math of gate.cuh; or, for the rows the gate kernel
 *       segments, mr_large_seg_gate_kernel: a segment of lanes per row, v13);
 *       sort: rank (mr_large_count_kernel).
 *       Tokens are cut into S = 8G slices (16G for the wide L1 by segments;
 *       balanced split, in whole steps of row_unit tokens for the segmented L1:
 *       mr_l_slice_t); warp w of CTA c
 *       takes slice c*8 + w in token order and keeps a per-warp counter per
 *       expert in shared memory: an entry's rank = entries of its expert
 *       earlier in the slice (warp-wide: mr_warp_peers, ties by lane, i.e.
 *       by slot). It writes code[i] = rank << 11 | e (0xffffffff: dropped id),
 *       and at the end, per expert, the slice bases inside the chunk
 *       wbase[c*8+w][e] and the chunk count counts[e][c].
 *       It also clears the first share of moe_buf (a few KB per warp).
 *   L2  (PDL) exclusive scan of counts[e][*] over the chunks in place, tot[e].
 *   L3  (PDL) CTAs [0, C) clear the rest of moe_buf (bulk copies from zeroed
 *       shared memory, or 16-byte stores) WITHOUT waiting for L1/L2; CTAs
 *       [C, C+G) wait, recompute the padded expert scan from tot[] (start,
 *       count, local id), and place chunk c's entries at
 *         start[e] + counts[e][c] + wbase[slice][e] + rank,
 *       then write padding and block ids of a share of the experts, and the
 *       totals. A masked expert counts 0: its entries are dropped here.
 *
 * With a moe_buf (v11, design.md 29) the same three phases run as ONE cooperative
 * launch, P (mr_large_persist_kernel): grid barriers instead of launch boundaries,
 * and four more warps per CTA that clear moe_buf from the launch's start (pieces
 * from a counter), after a one-thread launch that zeroes the barrier word and the
 * counter. Route then gates with the gate kernel of gate.cu first.
 *
 * Every L1/L2 thread executes griddepcontrol.launch_dependents first, so L2
 * and then L3 are launched while L1 still runs: L3's clear CTAs start clearing
 * right away, and L2/L3's routing CTAs wait in griddepcontrol.wait (which
 * returns when the previous launch has completed and its writes are visible;
 * L2 completes only after L1 has, since every L2 thread waits on L1). In the
 * three launches nothing reads what another CTA of the same launch writes (P does,
 * after its grid barriers, through L2), and no output depends on an atomic (P's
 * atomics count barrier arrivals and clear pieces): the same bits whatever the timing.
 * Everything read from the workspace was written earlier in the same call, so
 * it may start uninitialised. Without PDL (knob, or before sm_90) the same
 * launches simply run one after the other.
 *
 * Thresholds (host side below; dev/large-notes.md has the table):
 *   chunks G = min(SMs * per_sm, T), >= mr_l_min_chunks (rank < 2^21), <= 512;
 *   route per_sm = 1 while moe_buf >= 1 KB per token (L2's and L3's CTAs then
 *   fit beside L1 from the start) or by segments (MR_L_SEG_PER_SM), else
 *   mr_l_gate_blocks; sort per_sm = 1 up to T*k = MR_L_SORT_1SM_MAX_N, else 2;
 *   the clear: L1 min(body/4, 4 KB per warp), L3 the rest on min(SMs,
 *   rest/64 KB) CTAs; route falls back to gate kernel + general sort when L1's
 *   shared memory would pass 48 KB (grouped selection with E > 768).
 * Limits: rank < 2^21, E <= 1024 < 2^11, G <= MR_L_GCAP chunks.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/large.cuh"
#include "cuda/sort.cuh" /* mr_emit_padding */

#define MR_LW 8             /* warps per CTA of L1 and L3 (slices per chunk) */
#define MR_LT (MR_LW * 32)  /* threads per CTA of L1 and L3 */
#define MR_L_GCAP 512       /* most chunks; the workspace is sized for this bound */
#define MR_L_RANK_SHIFT 11  /* code = rank << 11 | expert */
#define MR_L_RANK_MAX (1u << 21)
#define MR_L_EXPERT_BITS 0x7ffu
#define MR_L_NONE 0xffffffffu /* no entry / dropped (its expert field 0x7ff >= E) */
#define MR_L_SCAN_WARPS 4   /* L2: one warp per expert row, 4 per CTA */
#define MR_L_ZB 16384       /* zeroed shared memory a bulk-copy clear CTA copies from */
#define MR_L_SMEM_MAX (48 * 1024) /* no opt-in attribute (cudaFuncSetAttribute is avoided) */
/* Route's L1 by segments (v13): up to this T*k, one CTA per SM. Lab call 39 (kernel metric,
 * route without moe_buf, L1 by segments at 1 / 2 / 3 CTAs per SM against the chain):
 * DeepSeek-R1 softmax T = 4096 11.03 / 12.79 / 15.90 against 13.73, 8192 14.38 / 14.38 /
 * 16.70 against 15.98, 16384 20.78 / 21.32 / 23.83 against 21.02, 65536 65.39 / 61.23 /
 * 57.27 against 53.82; GPT-OSS-120B T = 16384 (T*k = 65536) 12.50 / 12.57 / 14.49 against
 * 14.23. More chunks cost L2 and L3 more than the gating gains from more warps; at large T
 * the gate kernel's 32 warps per SM and grid stride win. */
#define MR_L_SEG_MAX_N 65536
#define MR_L_SEG_PER_SM 1
/* The sort's rank launch: one CTA per SM up to this T*k, else two. Lab call 39 (sort alone,
 * kernel metric, 1 / 2 per SM): T*k = 32768 8.97 / 10.39 (DeepSeek-R1 softmax), 9.38 / 11.08
 * (Kimi-K2); 65536 10.30 / 11.18, 9.39 / 10.04 (GPT-OSS-120B); 131072 13.05 / 13.60, 13.62 /
 * 14.23; 163840 15.73 / 17.09 (Qwen3-Next); 262144 19.00 / 18.43; 524288 30.98 / 27.51. */
#define MR_L_SORT_1SM_MAX_N 163840

/* What every large-path kernel gets (by value, __grid_constant__). */
typedef struct mr_large_args {
  int64_t num_tokens;
  int32_t num_experts;
  int32_t top_k;
  uint32_t chunks;   /* G: L1 CTAs = L3 routing CTAs */
  uint32_t slices;   /* G * MR_LW (G * 2 MR_LW after the wide L1 by segments) */
  uint32_t row_unit; /* slice bounds are multiples of this many tokens (1; the segmented L1: the rows
                        a warp gates at once), so that every step of a slice's warp is whole */
  uint32_t* counts;  /* [E][G]: chunk counts (L1), exclusive prefix over chunks (L2) */
  uint32_t* tot;     /* [E] entries per expert (L2) */
  uint32_t* wbase;   /* [S][E] entries of e in the earlier slices of the same chunk (L1) */
  uint32_t* codes;   /* [T*k] rank << 11 | e, or MR_L_NONE (L1) */
  /* moe_buf = lead bytes | body (16-byte aligned, body_units x 16 bytes) | trail bytes */
  unsigned char* lead;
  unsigned char* trail;
  uint4* body;
  size_t body_units;
  size_t first_units; /* body units [0, first_units) are cleared by L1 (per slice, at its start) */
  uint32_t lead_bytes, trail_bytes; /* < 16 each, written by L1's slice 0 */
  uint32_t clear_ctas; /* L3 CTAs [0, clear_ctas) clear units [first_units, body_units) */
  uint32_t clear_bulk; /* 1: bulk copies (TMA) from zeroed shared memory; 0: 16-byte stores */
  uint32_t* bar;       /* P: the grid-barrier word, and the clear's piece counter at bar[MR_LP_NEXT]
                          (both zeroed by mr_large_zero_kernel) */
  uint32_t scan_carry; /* L2's scan form: 1 = carry, 0 = lane blocks (mr_large_scan_row) */
  uint32_t clear_wait; /* P: 1 when the zeroing launch is P's direct predecessor: the clearing warps
                          wait for it (griddepcontrol.wait) before they take a piece */
} mr_large_args;

/* ---- device helpers ----------------------------------------------------------- */


/* Start of part i of n split into `parts` balanced parts. */
__device__ __forceinline__ int64_t mr_l_split(int64_t n, uint32_t parts, uint32_t i) {
  return (int64_t)(((uint64_t)n * (uint64_t)i) / (uint64_t)parts);
}
/* First token of slice s: the tokens cut into L.slices balanced parts in units of
 * L.row_unit tokens (the last part ends at T). Every launch of a call uses the same
 * L, so L1 and L3 agree on the slices. */
__device__ __forceinline__ int64_t mr_l_slice_t(const mr_large_args& L, uint32_t s) {
  const int64_t u = (int64_t)L.row_unit, n = (L.num_tokens + u - 1) / u;
  const int64_t t = mr_l_split(n, L.slices, s) * u;
  return t < L.num_tokens ? t : L.num_tokens;
}
__device__ __forceinline__ size_t mr_l_split_sz(size_t n, uint32_t parts, uint32_t i) {
  return (size_t)(((unsigned long long)n * (unsigned long long)i) / (unsigned long long)parts);
}

/* The barrier of the routing warps (threads [0, 256)) of an L1 / L3 / P CTA. In
 * the 256-thread CTAs of the three launches it is the CTA barrier; P's CTAs have
 * clearing warps beside them (threads >= 256) that never wait on it. */
__device__ __forceinline__ void mr_l_sync(void) { asm volatile("bar.sync 1, %0;" ::"n"(MR_LT) : "memory"); }

/* Rank of this lane's entry (expert e, or MR_L_NONE) among the entries of the
 * same expert that this warp has seen: earlier calls, then lower lanes. Advances
 * the warp's counters wc[E]. All 32 lanes call, converged. Duplicates in one
 * call (possible in sort's input) are ranked by lane. */
__device__ __forceinline__ uint32_t mr_large_rank(uint32_t* wc, uint32_t e, uint32_t lt, uint32_t E, uint32_t nb) {
  const uint32_t peers = mr_warp_peers(e < E ? e : E, nb);
  const uint32_t below = (uint32_t)__popc(peers & lt);
  uint32_t r = 0u;
  if (e != MR_L_NONE) r = wc[e] + below;
  __syncwarp(); /* every peer has read the counter before the lowest lane bumps it */
  if (e != MR_L_NONE && below == 0u) wc[e] = r + (uint32_t)__popc(peers);
  __syncwarp(); /* the bump is visible to the next call */
  return r;
}

/* Route's L1, one gated pick per lane (all 32 lanes call, converged): rank it among its
 * expert's entries (mr_large_rank; an id outside [0, E) or a lane without a pick ranks as
 * no entry) and, for a lane with a pick (mine), write slot i's top-k and code. */
__device__ __forceinline__ void mr_large_rank_emit(const mr_large_args& L, uint32_t* wc, bool mine, int32_t id,
                                                   float w, int64_t i, uint32_t lt, uint32_t nb, int32_t* topk_ids,
                                                   float* topk_weights) {
  const uint32_t E = (uint32_t)L.num_experts;
  const uint32_t e = (mine && (uint32_t)id < E) ? (uint32_t)id : MR_L_NONE;
  const uint32_t r = mr_large_rank(wc, e, lt, E, nb);
  if (mine) {
    if (topk_ids) topk_ids[i] = id;
    if (topk_weights) topk_weights[i] = w;
    L.codes[i] = e == MR_L_NONE ? MR_L_NONE : (r << MR_L_RANK_SHIFT) | e;
  }
}

/* L1's share of moe_buf: slice s clears units [first*s/S, first*(s+1)/S) of the
 * body (a few KB: issued at the start, the stores drain while the warp gates),
 * and slice 0 writes the unaligned lead and trail bytes. */
__device__ __forceinline__ void mr_large_first_clear(const mr_large_args* L, uint32_t s, uint32_t lane) {
  if (L->first_units != 0) {
    const size_t u0 = mr_l_split_sz(L->first_units, L->slices, s);
    const size_t u1 = mr_l_split_sz(L->first_units, L->slices, s + 1u);
    const uint4 z = make_uint4(0u, 0u, 0u, 0u);
    for (size_t u = u0 + lane; u < u1; u += 32) __stcs(L->body + u, z);
  }
  if (s == 0u) {
    if (lane < L->lead_bytes) L->lead[lane] = 0;
    if (lane < L->trail_bytes) L->trail[lane] = 0;
  }
}

/* End of L1 (after __syncthreads): per expert, the bases of the chunk's SPC (8, or 16
 * for the wide L1 by segments) slices (exclusive prefix over the warps' counters) and the chunk count. A
 * slice base is written only where the slice has entries of e: L3 reads
 * wbase[s][e] only for an entry of e in slice s (so L1's writes scale with the
 * entries, not with 8*E per chunk). */
template <int SPC, int NT> /* slices (= warps) per chunk, threads per CTA */
__device__ __forceinline__ void mr_large_publish_t(const mr_large_args* L, const uint32_t* wc_all, uint32_t c) {
  const uint32_t E = (uint32_t)L->num_experts;
  uint32_t* wb = L->wbase + (size_t)c * SPC * E;
  for (uint32_t e = threadIdx.x; e < E; e += NT) {
    uint32_t run = 0u;
#pragma unroll
    for (int w = 0; w < SPC; ++w) {
      const uint32_t v = wc_all[w * E + e];
      if (v != 0u) wb[(size_t)w * E + e] = run;
      run += v;
    }
    L->counts[(size_t)e * L->chunks + c] = run;
  }
}
__device__ __forceinline__ void mr_large_publish(const mr_large_args* L, const uint32_t* wc_all, uint32_t c) {
  mr_large_publish_t<MR_LW, MR_LT>(L, wc_all, c);
}

/* ---- L3's clear CTAs -------------------------------------------------------------- */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* One bulk copy (TMA) of `bytes` (multiple of 16) zero bytes from shared memory
 * (address ssrc) to global gdst (16-byte aligned); at most 8 copies whose source
 * reads are outstanding (the source never changes: this only bounds the queue). */
__device__ __forceinline__ void mr_bulk_zero(void* gdst, uint32_t ssrc, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n\t"
      "cp.async.bulk.commit_group;\n\t"
      "cp.async.bulk.wait_group.read 8;" ::"l"((unsigned long long)__cvta_generic_to_global(gdst)),
      "r"(ssrc), "r"(bytes)
      : "memory");
}
/* All of this thread's bulk copies complete (the writes performed), before the
 * CTA exits and its shared memory goes to another CTA. */
__device__ __forceinline__ void mr_bulk_wait_all(void) {
  asm volatile(
      "cp.async.bulk.wait_group 0;\n\t"
      "fence.proxy.async.global;" ::
          : "memory");
}
#endif

__device__ __forceinline__ void mr_large_last_clear(const mr_large_args* L, uint4* smem) {
  const uint32_t b = blockIdx.x, C = L->clear_ctas;
  const size_t span = L->body_units - L->first_units;
  const size_t u0 = L->first_units + mr_l_split_sz(span, C, b);
  const size_t u1 = L->first_units + mr_l_split_sz(span, C, b + 1u);
  if (u0 >= u1) return; /* CTA-uniform */
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (L->clear_bulk) {
    /* zero MR_L_ZB bytes of shared memory, hand them to the async proxy, then one
     * thread streams them out in copies of up to MR_L_ZB bytes */
#pragma unroll
    for (int j = 0; j < MR_L_ZB / 16 / MR_LT; ++j) smem[threadIdx.x + j * MR_LT] = z;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint32_t src = (uint32_t)__cvta_generic_to_shared(smem);
      for (size_t u = u0; u < u1;) {
        const size_t n = (u1 - u) < (size_t)(MR_L_ZB / 16) ? (u1 - u) : (size_t)(MR_L_ZB / 16);
        mr_bulk_zero(L->body + u, src, (uint32_t)(n * 16u));
        u += n;
      }
      mr_bulk_wait_all();
    }
    return;
  }
#endif
  /* 16-byte streaming stores, 4 per thread per pass, each warp store 512 contiguous bytes */
  for (size_t u = u0 + threadIdx.x; u < u1; u += 4 * MR_LT) {
    __stcs(L->body + u, z);
    if (u + MR_LT < u1) __stcs(L->body + u + MR_LT, z);
    if (u + 2 * MR_LT < u1) __stcs(L->body + u + 2 * MR_LT, z);
    if (u + 3 * MR_LT < u1) __stcs(L->body + u + 3 * MR_LT, z);
  }
}

/* ---- L1: gate + rank (route) --------------------------------------------------------- */

/*
 * Adapter to gate.cuh. Two interfaces are supported, told apart by MR_KIND_PACKED:
 *  - v3 (kinds): host mr_gate_kind / mr_gate_p_init; device mr_load_lane (row,
 *    -inf past E), the lane's bias words, mr_gate_row<DT, EPL, KIND>;
 *    instantiations (DT, EPL, KIND) with MR_KIND_FIX / MR_KIND_DT folding.
 *  - v2: mr_gate_load / mr_gate_compute on mr_gate_args, instantiations (DT, EPL).
 * Only this block knows which one it is; the kernel below is the same.
 */
#if defined(MR_KIND_PACKED)
#define MR_L_GATE_V3 1
typedef mr_gate_p mr_l_gate_t;
#else
#define MR_L_GATE_V3 0
typedef mr_gate_args mr_l_gate_t;
#endif

template <int DT, int EPL, int KIND>
__device__ __forceinline__ void mr_l_load_row(const mr_l_gate_t& g, int64_t t, uint32_t lane, uint32_t* raw) {
#if MR_L_GATE_V3
  mr_load_lane<MR_ESZ(DT), EPL>(g.logits + t * g.row_bytes, lane, g.num_experts, mr_raw_neg_inf<DT>(g.f16 != 0), true,
                                raw);
#else
  mr_gate_load<DT, EPL>(&g, t, lane, raw);
#endif
}
/* this lane's bias words (v3 FULL / GROUPED only; zeros without bias) */
template <int DT, int EPL, int KIND>
__device__ __forceinline__ void mr_l_load_bias(const mr_l_gate_t& g, uint32_t lane, uint32_t* braw) {
#if MR_L_GATE_V3
  if (KIND != MR_KIND_PACKED)
    mr_load_lane<4, EPL>((const unsigned char*)g.bias, lane, g.num_experts, 0u, g.bias != NULL, braw);
#endif
}
template <int DT, int EPL, int KIND>
__device__ __forceinline__ void mr_l_gate_row(const mr_l_gate_t& g, int64_t t, uint32_t lane, const uint32_t* raw,
                                              const uint32_t* braw, float* gbuf, unsigned char* gsel, int32_t* id,
                                              float* w) {
#if MR_L_GATE_V3
  mr_gate_row<DT, EPL, KIND>(g, lane, raw, braw, g.logits + t * g.row_bytes, true, gbuf, gsel, id, w);
#else
  (void)braw;
  mr_gate_compute<DT, EPL>(&g, t, lane, raw, gbuf, gsel, id, w);
#endif
}

/* Shared-memory words per warp for grouped selection: E floats plus G flag
 * bytes when G > 32 (gate.cu's rule), rounded up to 4 words (16-byte aligned
 * buffers). 0 without grouped selection. */
static uint32_t mr_l_gate_scratch_words(const mr_gate_args* a) {
  if (!a->grouped) return 0;
  uint32_t w = (uint32_t)a->num_experts;
  if (a->num_groups > 32) w += ((uint32_t)a->num_groups + 3u) / 4u;
  return (w + 3u) & ~3u;
}

/* L1 CTAs (of 256 threads) per SM without an overlapping clear, per
 * instantiation; also the register cap (__launch_bounds__ min blocks: 3 -> 80,
 * 2 -> 128, 1 -> 255 registers). From -Xptxas -v of both gate interfaces (v3
 * PACKED E <= 256: 40-56 registers; FULL E <= 128: 44-54; the rest 64-128; the
 * FULL/GROUPED rows with E > 512 240-250 and spill under 128; v2: 85-121, E >
 * 512: 158-199). Re-check for spills when gate.cuh changes. */
__host__ __device__ constexpr int mr_l_gate_blocks(int v3, int epl, int kind) {
  return epl >= 32 ? (v3 && kind == 0 ? 2 : 1) : (v3 && ((kind == 0 && epl <= 8) || (kind == 1 && epl <= 4))) ? 3 : 2;
}

/* Shared memory: wc [8][E] counters | per-warp grouped-selection scratch
 * (16-byte aligned: 32E bytes, then scratch_words (a multiple of 4) per warp). */
template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(MR_LT, mr_l_gate_blocks(MR_L_GATE_V3, EPL, KIND))
    mr_large_gate_kernel(const __grid_constant__ mr_l_gate_t g, const __grid_constant__ mr_large_args L,
                         int32_t* topk_ids, float* topk_weights, uint32_t scratch_words) {
  mr_pdl_launch_dependents();
  extern __shared__ __align__(16) uint32_t mr_l1_smem[];
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t E = (uint32_t)L.num_experts, k = (uint32_t)L.top_k;
  uint32_t* wc = mr_l1_smem + warp * E;
  float* gbuf = (float*)(mr_l1_smem + MR_LW * E + warp * scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + E);
  const uint32_t s = blockIdx.x * MR_LW + warp;
  const int64_t t0 = mr_l_slice_t(L, s);
  const int64_t t1 = mr_l_slice_t(L, s + 1u);
  /* the next row's loads are issued before this row's compute when the extra
   * EPL registers fit under the cap (checked with -Xptxas -v: no spills) */
  constexpr bool PREFETCH = EPL <= 8 || (MR_L_GATE_V3 && KIND == 0 && EPL <= 16); /* KIND 0: PACKED */

  uint32_t raw[EPL], braw[EPL];
  if (t0 < t1) mr_l_load_row<DT, EPL, KIND>(g, t0, lane, raw); /* first row in flight */
  mr_l_load_bias<DT, EPL, KIND>(g, lane, braw);
  mr_large_first_clear(&L, s, lane);
  for (uint32_t e = lane; e < E; e += 32) wc[e] = 0u;
  __syncwarp();
  const uint32_t lt = mr_lanemask_lt(), nb = mr_key_bits(E);

  for (int64_t t = t0; t < t1; ++t) { /* warp-uniform */
    uint32_t nxt[EPL];
    if (PREFETCH && t + 1 < t1) mr_l_load_row<DT, EPL, KIND>(g, t + 1, lane, nxt);
    int32_t id;
    float w;
    mr_l_gate_row<DT, EPL, KIND>(g, t, lane, raw, braw, gbuf, gsel, &id, &w);
    mr_large_rank_emit(L, wc, lane < k, id, w, t * (int64_t)k + lane, lt, nb, topk_ids, topk_weights);
    if (t + 1 < t1) {
      if (PREFETCH) {
#pragma unroll
        for (int q = 0; q < EPL; ++q) raw[q] = nxt[q];
      } else {
        mr_l_load_row<DT, EPL, KIND>(g, t + 1, lane, raw);
      }
    }
  }
  __syncthreads(); /* every warp's counters final */
  mr_large_publish(&L, mr_l1_smem, blockIdx.x);
}

/* ---- L1: gate by segments + rank (route, v13) ---------------------------------------------
 *
 * For the rows the gate kernel gates by segments (16-bit softmax without bias or groups,
 * E <= 256, k <= 8, large T: gate.cu mr_gate_seg_lpr), the same row math
 * (mr_gate_packed_seg: the same picks, order and weight expressions as the gate kernel's
 * segment form) inside L1, so that route no longer writes the top-k and reads them back
 * in a second launch (the chain). A warp gates RPW = 32 / LPR rows of its slice at a
 * time; lane seg * LPR + sl holds pick sl of row t0 + seg, i.e. the step's entries in
 * slot order, which is the order mr_large_rank ranks them in (k <= LPR: lanes sl >= k
 * hold no entry). Slice bounds are multiples of RPW rows (L.row_unit), so only a
 * slice's last step can be partial. Loading the next step's rows before gating the
 * current ones measured no faster at 1 CTA per SM and slower at 2 (lab call 40: its 128
 * registers left no room beside it for L2's and L3's early CTAs), so the cap is 80. */
template <int DT, int EPS, int LPR, int L, int NW, bool PK>
__device__ __forceinline__ void mr_large_seg_gate_body(const mr_gate_p& g, const mr_large_args& La,
                                                       int32_t* topk_ids, float* topk_weights, int filt) {
  mr_pdl_launch_dependents();
  extern __shared__ __align__(16) uint32_t mr_l1s_smem[];
  constexpr int RPW = 32 / LPR;
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t sl = lane & (LPR - 1u), seg = lane / LPR;
  const uint32_t E = (uint32_t)La.num_experts, k = (uint32_t)La.top_k;
  uint32_t* wc = mr_l1s_smem + warp * E;
  const uint32_t s = blockIdx.x * NW + warp; /* NW slices per chunk */
  const int64_t t0 = mr_l_slice_t(La, s), t1 = mr_l_slice_t(La, s + 1u);
  const uint32_t ninf = mr_raw_neg_inf<DT>(g.f16 != 0);
  mr_large_first_clear(&La, s, lane);
  for (uint32_t e = lane; e < E; e += 32) wc[e] = 0u;
  __syncwarp();
  const uint32_t lt = mr_lanemask_lt(), nb = mr_key_bits(E);
  uint32_t* sk = nullptr; /* gate.cuh's rank form (v21, filt 3) */
  if constexpr (PK) sk = mr_seg_rank_smem<NW>(warp);
#pragma unroll 1
  for (int64_t tb = t0; tb < t1; tb += RPW) { /* warp-uniform */
    const int64_t t = tb + seg;
    const bool live = t < t1;
    uint32_t raw[PK ? EPS / 2 : EPS];
    const unsigned char* row = g.logits + (live ? t : t0) * g.row_bytes;
    if constexpr (PK)
      mr_load_pairs<EPS>(row, sl, g.num_experts, ninf, live, raw);
    else
      mr_load_lane<2, EPS>(row, sl, g.num_experts, ninf, live, raw);
    int32_t id;
    float w;
    mr_gate_packed_seg<DT, EPS, LPR, L, PK>(g, sl, raw, row, filt, &id, &w, sk);
    mr_large_rank_emit(La, wc, live && sl < k, id, w, t * (int64_t)k + sl, lt, nb, topk_ids, topk_weights);
  }
  __syncthreads(); /* every warp's counters final */
  mr_large_publish_t<NW, NW * 32>(&La, mr_l1s_smem, blockIdx.x);
}
/* 8 warps per CTA at up to 3 CTAs per SM (80 registers), and the wide form (mr_l_seg_wide,
 * design.md 32): 16 warps per CTA, one CTA per SM, capped at the same 80 registers so that L2's and
 * L3's early CTAs still fit beside it (lab call 40: at 128 registers they did not) */
template <int DT, int EPS, int LPR, int L, bool PK = false>
__global__ void __launch_bounds__(MR_LT, 3)
    mr_large_seg_gate_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_large_args La,
                             int32_t* topk_ids, float* topk_weights, int filt) {
  mr_large_seg_gate_body<DT, EPS, LPR, L, MR_LW, PK>(g, La, topk_ids, topk_weights, filt);
}
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define MR_L_WIDE_BOUNDS __maxnreg__(80)
#else /* no __maxnreg__ before CUDA 12.4: the launch bound's cap (128) */
#define MR_L_WIDE_BOUNDS __launch_bounds__(2 * MR_LT, 1)
#endif
template <int DT, int EPS, int LPR, int L, bool PK = false>
__global__ void MR_L_WIDE_BOUNDS
    mr_large_seg_gate_wide_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_large_args La,
                                  int32_t* topk_ids, float* topk_weights, int filt) {
  mr_large_seg_gate_body<DT, EPS, LPR, L, 2 * MR_LW, PK>(g, La, topk_ids, topk_weights, filt);
}

/* ---- L1: rank (sort) ------------------------------------------------------------------ */

/* Shared memory: wc [8][E]. Entries of slice s: [t0*k, t1*k), 256 per pass
 * (8 loads per lane in flight, then 8 rank steps). */
__device__ __forceinline__ void mr_large_count_body(const int32_t* ids, const mr_large_args& L, uint32_t c,
                                                    uint32_t* smem) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t E = (uint32_t)L.num_experts;
  const int64_t k = L.top_k;
  uint32_t* wc = smem + warp * E;
  const uint32_t s = c * MR_LW + warp;
  const int64_t i0 = mr_l_slice_t(L, s) * k;
  const int64_t i1 = mr_l_slice_t(L, s + 1u) * k;
  mr_large_first_clear(&L, s, lane);
  for (uint32_t e = lane; e < E; e += 32) wc[e] = 0u;
  __syncwarp();
  const uint32_t lt = mr_lanemask_lt(), nb = mr_key_bits(E);

  for (int64_t base = i0; base < i1; base += 8 * 32) { /* warp-uniform */
    uint32_t ev[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t i = base + j * 32 + lane;
      const uint32_t v = i < i1 ? (uint32_t)__ldg(ids + i) : MR_L_NONE;
      ev[j] = v < E ? v : MR_L_NONE; /* ids outside [0, E): dropped */
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (base + j * 32 >= i1) break; /* warp-uniform */
      const uint32_t r = mr_large_rank(wc, ev[j], lt, E, nb);
      const int64_t i = base + j * 32 + lane;
      if (i < i1) L.codes[i] = ev[j] == MR_L_NONE ? MR_L_NONE : (r << MR_L_RANK_SHIFT) | ev[j];
    }
  }
  mr_l_sync();
  mr_large_publish(&L, smem, c);
}

__global__ void __launch_bounds__(MR_LT)
    mr_large_count_kernel(const int32_t* ids, const __grid_constant__ mr_large_args L) {
  mr_pdl_launch_dependents();
  extern __shared__ uint32_t mr_l1c_smem[];
  mr_large_count_body(ids, L, blockIdx.x, mr_l1c_smem);
}

/* ---- L2: scan over the chunks ------------------------------------------------------------ */

/* One warp per expert row counts[e][0..G), exclusive prefix over the chunks in order.
 * Two forms, the same values (v13; lab call 41 timed both; knob large_scan_carry):
 *  - lane blocks (the default): lane l owns the contiguous chunks [l*per, (l+1)*per),
 *    per = ceil(G/32) <= 16: all loads first, the lane's sum, ONE warp scan of the
 *    sums, then the lane's exclusive prefixes by serial adds;
 *  - carry (before v13; route after large.cu's warp-per-row L1, where it measured
 *    faster): all loads first (coalesced), then ceil(G/32) dependent 32-wide scans with a
 *    carry (~150 cycles each). */
__device__ __forceinline__ void mr_large_scan_row(const mr_large_args& L, uint32_t e, uint32_t lane) {
  const uint32_t G = L.chunks;
  uint32_t* row = L.counts + (size_t)e * G;
  uint32_t v[MR_L_GCAP / 32];
  if (L.scan_carry) {
#pragma unroll
    for (int j = 0; j < MR_L_GCAP / 32; ++j) {
      const uint32_t c = (uint32_t)j * 32u + lane;
      v[j] = c < G ? __ldcg(row + c) : 0u;
    }
    uint32_t carry = 0u;
#pragma unroll
    for (int j = 0; j < MR_L_GCAP / 32; ++j) {
      if ((uint32_t)j * 32u >= G) break; /* warp-uniform */
      const uint32_t incl = mr_warp_incl_scan(v[j], lane);
      const uint32_t c = (uint32_t)j * 32u + lane;
      if (c < G) row[c] = carry + incl - v[j];
      carry += __shfl_sync(MR_FULL_MASK, incl, 31);
    }
    if (lane == 0) L.tot[e] = carry;
    return;
  }
  const uint32_t per = (G + 31u) >> 5, c0 = lane * per;
  uint32_t sum = 0u;
#pragma unroll
  for (uint32_t j = 0; j < MR_L_GCAP / 32; ++j) {
    v[j] = (j < per && c0 + j < G) ? __ldcg(row + c0 + j) : 0u;
    sum += v[j];
  }
  const uint32_t incl = mr_warp_incl_scan(sum, lane);
  uint32_t run = incl - sum;
#pragma unroll
  for (uint32_t j = 0; j < MR_L_GCAP / 32; ++j) {
    if (j < per && c0 + j < G) row[c0 + j] = run;
    run += v[j];
  }
  if (lane == 31) L.tot[e] = incl;
}

__global__ void __launch_bounds__(MR_L_SCAN_WARPS * 32) mr_large_scan_kernel(const __grid_constant__ mr_large_args L) {
  mr_pdl_launch_dependents();
  mr_pdl_wait(); /* every thread: L2 completes only after L1 has */
  const uint32_t e = blockIdx.x * MR_L_SCAN_WARPS + (threadIdx.x >> 5);
  if (e < (uint32_t)L.num_experts) mr_large_scan_row(L, e, threadIdx.x & 31u); /* whole warp */
}

/* ---- L3: clear + place --------------------------------------------------------------------- */

/* Shared memory (routing CTAs): warp totals [8] (64-bit) | start [E] | count [E]
 * | local id [E] | pos [E] (start + entries of e in earlier chunks). Clear CTAs
 * with bulk copies use the first MR_L_ZB bytes as their zero source. */
/* This thread's experts tid*ept + q (ept = ceil(E/256) <= 4): bit q set when
 * enabled. The expert mask is an input, read before the wait (design.md 7:
 * non-zero = enabled). */
__device__ __forceinline__ uint32_t mr_large_enabled_bits(const mr_sort_out& o, uint32_t E, uint32_t tid) {
  const uint32_t ept = (E + MR_LT - 1u) / MR_LT;
  uint32_t en_bits = 0xfu;
  if (o.expert_mask != NULL) {
    en_bits = 0u;
#pragma unroll
    for (uint32_t q = 0; q < 4u; ++q) {
      const uint32_t e = tid * ept + q;
      if (q < ept && e < E && __ldg(o.expert_mask + e) != 0) en_bits |= 1u << q;
    }
  }
  return en_bits;
}

/* Routing CTA c's placing (after the scan): the padded expert scan, chunk c's
 * entries, a share of the padding and block ids, the totals (c = 0). */
template <int SPC> /* slices per chunk: MR_LW, or 2 MR_LW after the wide L1 by segments */
__device__ __forceinline__ void mr_large_place_body(const mr_sort_out& o, const mr_large_args& L,
                                                    const float* weights, uint32_t c, uint32_t en_bits,
                                                    uint4* smem) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t E = (uint32_t)L.num_experts, k = (uint32_t)L.top_k, U = (uint32_t)o.unit_size, G = L.chunks;
  unsigned long long* s_w64 = (unsigned long long*)smem;
  uint32_t* s_start = (uint32_t*)(s_w64 + MR_LW);
  uint32_t* s_cnt = s_start + E;
  uint32_t* s_loc = s_cnt + E;
  uint32_t* s_pos = s_loc + E;
  const uint32_t ept = (E + MR_LT - 1u) / MR_LT; /* <= 4 */

  /* 1. padded scan over experts, 64-bit: pad sum low, enabled count high */
  unsigned long long v[4], sum = 0ull;
  uint32_t cnt[4], pre[4];
#pragma unroll
  for (uint32_t q = 0; q < 4u; ++q) {
    const uint32_t e = tid * ept + q;
    v[q] = 0ull;
    cnt[q] = 0u;
    pre[q] = 0u;
    if (q < ept && e < E) {
      const uint32_t en = (en_bits >> q) & 1u;
      const uint32_t n = en ? __ldcg(L.tot + e) : 0u; /* a masked expert's entries are dropped */
      pre[q] = __ldcg(L.counts + (size_t)e * G + c);
      cnt[q] = n;
      v[q] = (unsigned long long)(mr_udiv(n + U - 1u, U, o.u_magic) * U) | ((unsigned long long)en << 32);
    }
    sum += v[q];
  }
  unsigned long long total;
  unsigned long long run = mr_cta_excl_scan64<MR_LW>(sum, s_w64, &total); /* sort.cuh */
#pragma unroll
  for (uint32_t q = 0; q < 4u; ++q) {
    const uint32_t e = tid * ept + q;
    if (q < ept && e < E) {
      s_start[e] = (uint32_t)run;
      s_loc[e] = (uint32_t)(run >> 32);
      s_cnt[e] = cnt[q];
      s_pos[e] = (uint32_t)run + pre[q];
    }
    run += v[q];
  }
  mr_l_sync();

  /* 2. this warp's slices (SPC / 8 of them): entries [t0*k, t1*k), 128 per pass (4 code
   * loads in flight) */
  const uint32_t* wbits = (const uint32_t*)weights;
  for (uint32_t sj = 0; sj < (uint32_t)(SPC / MR_LW); ++sj) { /* a constant trip count: 1 or 2 */
    const uint32_t s = c * SPC + sj * MR_LW + warp;
    const int64_t i0 = mr_l_slice_t(L, s) * (int64_t)k;
    const int64_t i1 = mr_l_slice_t(L, s + 1u) * (int64_t)k;
    const uint32_t* wb = L.wbase + (size_t)s * E;
    for (int64_t base = i0; base < i1; base += 4 * 32) {
      uint32_t code[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t i = base + j * 32 + lane;
        code[j] = i < i1 ? __ldcg(L.codes + i) : MR_L_NONE;
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t e = code[j] & MR_L_EXPERT_BITS;
        if (e < E && s_cnt[e] != 0u) { /* in range and enabled (MR_L_NONE: e = 0x7ff >= E) */
          const uint32_t i = (uint32_t)(base + j * 32 + lane); /* < T*k < 2^31 */
          const uint32_t pos = s_pos[e] + __ldcg(wb + e) + (code[j] >> MR_L_RANK_SHIFT);
          if (o.sorted_ids) {
            const uint32_t t = mr_udiv(i, k, o.k_magic), slot = i - t * k;
            o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
            if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = __ldcg(wbits + i); /* bit-exact */
          }
          if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)i;
        }
      }
    }
  }

  /* 3. padding and block ids: experts c*8 + warp, + 8G, ... */
  for (uint32_t e = c * MR_LW + warp; e < E; e += G * MR_LW) {
    const uint32_t n = s_cnt[e];
    if (n != 0u) mr_emit_padding(&o, s_start[e], n, mr_udiv(n + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  if (c == 0 && tid == 0) mr_emit_totals(&o, (uint32_t)total);
}

template <int SPC>
__global__ void __launch_bounds__(MR_LT)
    mr_large_scatter_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_large_args L,
                            const float* weights) {
  extern __shared__ uint4 mr_l3_smem[];
  if (blockIdx.x < L.clear_ctas) { /* no wait: runs under L1 and L2 */
    mr_large_last_clear(&L, mr_l3_smem);
    return;
  }
  const uint32_t en_bits = mr_large_enabled_bits(o, (uint32_t)L.num_experts, threadIdx.x);
  mr_pdl_wait();
  mr_large_place_body<SPC>(o, L, weights, blockIdx.x - L.clear_ctas, en_bits, mr_l3_smem);
}

/* ---- P: the persistent launch (v11: perf-log, dev/large-notes.md) --------------------------
 *
 * One cooperative launch does L1 (rank), L2 (scan) and L3 (place) with grid
 * barriers between them instead of launch boundaries, and clearing warps in every
 * CTA clear moe_buf from the start to the end, under the routing: the clear no
 * longer waits for a launch boundary, nor makes one wait. The routing warps run
 * the same bodies as the three launches (an entry's position is its expert's
 * start plus its rank in token order, whatever the chunking), so the outputs are
 * the same bits. */

/* Grid barrier among the G CTAs. `bar` was zeroed by mr_large_zero_kernel and
 * every barrier adds G, so barrier j is complete at (j + 1) * G. The
 * cooperative launch keeps every CTA resident, so the spin never waits on a CTA
 * that has no SM. Release / acquire at GPU scope around the arrival; what other
 * CTAs wrote is read with __ldcg (L1 is not coherent). */
__device__ __forceinline__ void mr_large_grid_barrier(uint32_t* bar, uint32_t* target, uint32_t G) {
  mr_l_sync();
  if (threadIdx.x == 0) {
    *target += G;
    __threadfence();
    uint32_t v;
    asm volatile("atom.add.release.gpu.u32 %0, [%1], 1;" : "=r"(v) : "l"(bar) : "memory");
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
    } while ((int32_t)(v - *target) < 0);
    __threadfence();
  }
  mr_l_sync();
}

/* P's clearing warps (MR_LP_CW per CTA, threads >= 256): 16 KB pieces of the
 * moe_buf body taken in order from a counter (zeroed with the barrier word), 16-byte
 * streaming stores. Every CTA has them, so the clear spreads over the SMs whatever
 * order the CTAs are placed in (lab call 29: 132 clear CTAs, the first 132 of a
 * cooperative launch of 396, landed on 116 SMs, up to 3 on one, and took 93 us for
 * 224 MB; one per SM, 53 us, the memset's rate), and the pieces balance the SMs
 * that hold more CTAs. */
#define MR_LP_CW 4              /* clearing warps per P CTA */
#define MR_LP_PIECE 1024u       /* units (16 B) per piece: 16 KB */
#define MR_LP_NEXT 32           /* word of the piece counter after the barrier word (its own line) */
/* The throttled form (TH, lab knob persist_clear_ns, v21): st is the CTA's routing state, written by
 * its routing thread 0: MR_LP_ST_TAG | 0 routing, | 1 at a grid barrier, | 2 done (a word without
 * the tag: not written yet, counted as routing). ns > 0: sleep ns after each piece until done;
 * ns < 0: before each piece, wait (polling every -ns ns) while the routing is at a barrier. Only
 * the timing changes: the pieces and their stores are the same. The state word is read and written
 * by shared-memory atomics (run 55's racecheck flagged the plain volatile accesses as hazards). */
#define MR_LP_ST_TAG 0x5e000000u
__device__ __forceinline__ uint32_t mr_lp_get(uint32_t* st) { return atomicAdd(st, 0u); }
template <bool TH>
__device__ __forceinline__ void mr_lp_set(uint32_t* st, uint32_t s) { /* by the routing's thread 0 */
  if constexpr (TH)
    if (threadIdx.x == 0) atomicExch(st, MR_LP_ST_TAG | s);
}
template <bool TH = false>
__device__ __forceinline__ void mr_large_piece_clear(const mr_large_args* L, uint32_t* st = nullptr,
                                                     int ns = 0) {
  const uint32_t lane = threadIdx.x & 31u;
  const size_t units = L->body_units;
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
  for (;;) {
    if constexpr (TH) {
      if (ns < 0)
        while (mr_lp_get(st) == (MR_LP_ST_TAG | 1u)) __nanosleep((unsigned)-ns);
    }
    uint32_t j = 0u;
    if (lane == 0) j = atomicAdd(L->bar + MR_LP_NEXT, 1u);
    j = __shfl_sync(MR_FULL_MASK, j, 0);
    const size_t u0 = (size_t)j * MR_LP_PIECE;
    if (u0 >= units) return; /* warp-uniform */
    if (u0 + MR_LP_PIECE <= units) {
#pragma unroll 8
      for (uint32_t q = 0; q < MR_LP_PIECE / 32u; ++q) __stcs(L->body + u0 + q * 32u + lane, z);
    } else {
      for (size_t u = u0 + lane; u < units; u += 32u) __stcs(L->body + u, z);
    }
    if constexpr (TH) {
      if (ns > 0 && mr_lp_get(st) != (MR_LP_ST_TAG | 2u)) __nanosleep((unsigned)ns);
    }
  }
}

/* Threads [0, 256) route (L1, barrier, L2, barrier, L3), threads [256, 256 +
 * 32 * MR_LP_CW) clear from the start: every launch before P in the call waited
 * for the caller's work before it let its successor start, and the zeroing launch
 * has completed before they take a piece (clear_wait, or a gate launch between).
 * Shared memory: L1's counters, then L3's tables. One CTA per SM by default; two
 * fit under the register cap. */
/* TH: the clearing warps throttled by the knob persist_clear_ns (clear_ns; v21 lab form, its own
 * instantiation so that the default P is the code results runs 26 - 32 measured) */
template <bool TH>
__device__ __forceinline__ uint32_t* mr_lp_state(void) {
  if constexpr (TH) {
    __shared__ uint32_t st;
    return &st;
  } else {
    return nullptr;
  }
}
template <bool TH = false>
__global__ void __launch_bounds__(MR_LT + 32 * MR_LP_CW, 2)
    mr_large_persist_kernel(const int32_t* ids, const __grid_constant__ mr_sort_out o,
                            const __grid_constant__ mr_large_args L, const float* weights, int clear_ns) {
  extern __shared__ uint4 mr_lp_smem[];
  uint32_t* st = mr_lp_state<TH>();
  if (threadIdx.x >= MR_LT) {
    /* PDL's trigger does not promise that the zeroing launch's write is visible
     * here; its completion (the wait) does. Where a gate launch sits between them,
     * every gate CTA waited for the zeroing launch before it let P start. */
    if (L.clear_wait) mr_pdl_wait();
    mr_large_piece_clear<TH>(&L, st, clear_ns);
    return;
  }
  mr_lp_set<TH>(st, 0u);
  const uint32_t c = blockIdx.x, E = (uint32_t)L.num_experts;
  const uint32_t en_bits = mr_large_enabled_bits(o, E, threadIdx.x);
  mr_pdl_wait();
  mr_pdl_launch_dependents();
  uint32_t target = 0u;
  mr_large_count_body(ids, L, c, (uint32_t*)mr_lp_smem);
  mr_lp_set<TH>(st, 1u);
  mr_large_grid_barrier(L.bar, &target, L.chunks);
  mr_lp_set<TH>(st, 0u);
  for (uint32_t e = c * MR_LW + (threadIdx.x >> 5); e < E; e += L.chunks * MR_LW)
    mr_large_scan_row(L, e, threadIdx.x & 31u);
  mr_lp_set<TH>(st, 1u);
  mr_large_grid_barrier(L.bar, &target, L.chunks);
  mr_lp_set<TH>(st, 0u);
  mr_large_place_body<MR_LW>(o, L, weights, c, en_bits, mr_lp_smem);
  if constexpr (TH) {
    mr_l_sync(); /* every routing warp has placed */
    mr_lp_set<TH>(st, 2u);
  }
}

/* Zeroes P's barrier word and piece counter once the previous work in the stream
 * (which may be an earlier call using the same workspace) is done. Whoever reads
 * them waits for this launch's completion first (P's wait, or a gate launch's). */
__global__ void mr_large_zero_kernel(uint32_t* bar) {
  mr_pdl_wait();
  if (threadIdx.x == 0) {
    bar[0] = 0u;
    bar[MR_LP_NEXT] = 0u;
  }
  mr_pdl_launch_dependents();
}

/* ======================================================================== */
/* host side                                                                 */
/* ======================================================================== */

#define MR_L_ALIGN(x) (((x) + 255u) & ~(size_t)255u)


/* Fewest chunks that keep every slice below 2^21 entries (the rank field):
 * (ceil(T / S) + 32) * k <= 2^21 with S = 8G. At most 129 for T*k < 2^31. */
static int64_t mr_l_min_chunks(const mr_config* cfg) {
  /* less 32 tokens: a segmented L1's slices round to whole steps of up to 8 rows */
  const int64_t T = cfg->num_tokens, m = (int64_t)(MR_L_RANK_MAX / (uint32_t)cfg->top_k) - 32;
  const int64_t slices = (T + m - 1) / m;
  const int64_t g = (slices + MR_LW - 1) / MR_LW;
  return g < 1 ? 1 : g;
}
/* The workspace bound: a function of (T, k) only. */
static int64_t mr_l_max_chunks(const mr_config* cfg) {
  int64_t g = cfg->num_tokens; /* >= 1 token per chunk */
  if (g > MR_L_GCAP) g = MR_L_GCAP;
  const int64_t lo = mr_l_min_chunks(cfg);
  return g > lo ? g : lo;
}
/* Chunks of a launch: one CTA per chunk, per_sm per SM, >= 1 token per chunk
 * (below ~1000 tokens the rows spread over as many SMs as there are rows: a
 * few gating warps per SM finish a row sooner than eight). */
static uint32_t mr_l_chunks(const mr_config* cfg, int per_sm) {
  int64_t g = (int64_t)mr_cuda_sm_count() * per_sm;
  if (g > cfg->num_tokens) g = cfg->num_tokens;
  const int64_t lo = mr_l_min_chunks(cfg), hi = mr_l_max_chunks(cfg);
  if (g < lo) g = lo;
  if (g > hi) g = hi;
  return (uint32_t)(g < 1 ? 1 : g);
}

extern "C" size_t mr_cuda_large_sort_workspace(const mr_config* cfg) {
  const size_t E = (size_t)cfg->num_experts, G = (size_t)mr_l_max_chunks(cfg);
  const size_t n = (size_t)cfg->num_tokens * (size_t)cfg->top_k;
  return MR_L_ALIGN(E * G * 4u) + MR_L_ALIGN(E * 4u) + MR_L_ALIGN(G * MR_LW * E * 4u) + MR_L_ALIGN(n * 4u) +
         MR_L_ALIGN(4u * (MR_LP_NEXT + 1)); /* P's barrier word and piece counter */
}

/* The moe_buf clear is "large" when it takes longer than routing could hide
 * cheaply: >= 1 KB per token (every preset's [T, hidden] bf16 buffer is 4-14 KB
 * per token). Then route's L1 runs one CTA per SM (8 gating warps) so that L2's
 * and L3's CTAs (clear CTAs first) are resident from the start. */
static int mr_l_overlap(const mr_config* cfg) {
  return cfg->moe_buf_bytes >= (size_t)cfg->num_tokens * 1024u;
}

/* Fill L for cfg: workspace carve-up, chunks, and the clear split. */
static void mr_l_args_init(const mr_config* cfg, const mr_sort_out* o, void* workspace, uint32_t chunks,
                           mr_large_args* L) {
  memset(L, 0, sizeof *L);
  const size_t E = (size_t)cfg->num_experts, Gmax = (size_t)mr_l_max_chunks(cfg);
  unsigned char* w = (unsigned char*)workspace;
  L->num_tokens = cfg->num_tokens;
  L->num_experts = cfg->num_experts;
  L->top_k = cfg->top_k;
  L->chunks = chunks;
  L->slices = chunks * MR_LW;
  L->row_unit = 1u;
  L->scan_carry = mr_cuda_tune.large_scan_carry > 0 ? 1u : 0u; /* route's warp-per-row L1: see there */
  L->counts = (uint32_t*)w;
  w += MR_L_ALIGN(E * Gmax * 4u);
  L->tot = (uint32_t*)w;
  w += MR_L_ALIGN(E * 4u);
  L->wbase = (uint32_t*)w;
  w += MR_L_ALIGN(Gmax * MR_LW * E * 4u);
  L->codes = (uint32_t*)w;
  w += MR_L_ALIGN((size_t)cfg->num_tokens * (size_t)cfg->top_k * 4u);
  L->bar = (uint32_t*)w;

  /* moe_buf: lead | 16-byte aligned body | trail */
  const size_t bytes = o->moe_buf ? o->moe_buf_bytes : 0u;
  if (bytes == 0) return;
  unsigned char* p = o->moe_buf;
  size_t lead = (size_t)((16u - ((uintptr_t)p & 15u)) & 15u);
  if (lead > bytes) lead = bytes;
  const size_t units = (bytes - lead) / 16u;
  L->lead = p;
  L->lead_bytes = (uint32_t)lead;
  L->body = (uint4*)(p + lead);
  L->body_units = units;
  L->trail = p + lead + units * 16u;
  L->trail_bytes = (uint32_t)(bytes - lead - units * 16u);

  /* L1's share: auto = a quarter of the body, at most 4 KB per slice (256
   * units: 8 stores per lane, issued at the warp's start) */
  size_t first;
  if (mr_cuda_tune.first_clear_kb < 0) {
    first = 0;
  } else if (mr_cuda_tune.first_clear_kb > 0) {
    first = (size_t)mr_cuda_tune.first_clear_kb * 64u;
  } else {
    first = units / 4u;
    const size_t cap = (size_t)L->slices * 256u;
    if (first > cap) first = cap;
  }
  if (first > units) first = units;
  /* L3's clear CTAs: auto 1 per SM, at least 64 KB each */
  const size_t rest = units - first;
  int per_sm = mr_cuda_tune.clear_ctas_per_sm > 0 ? mr_cuda_tune.clear_ctas_per_sm : 1;
  size_t ctas = (size_t)mr_cuda_sm_count() * (size_t)per_sm;
  const size_t by_size = (rest * 16u + 65535u) / 65536u;
  if (ctas > by_size) ctas = by_size;
  if (ctas == 0) first = units; /* nothing left for L3 */
  L->first_units = first;
  L->clear_ctas = (uint32_t)ctas;
  L->clear_bulk = (mr_cuda_tune.clear_engine != 2 && mr_cuda_cc_major() >= 9) ? 1u : 0u;
}

/* Launch configuration, with the PDL attribute when asked for. */
static cudaLaunchConfig_t mr_l_config(unsigned grid, unsigned threads, size_t smem, cudaStream_t stream, int pdl,
                                      cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t lc = mr_launch_config(grid, threads, smem, stream);
  if (pdl) {
    memset(attr, 0, sizeof *attr);
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = attr;
    lc.numAttrs = 1;
  }
  return lc;
}

static int mr_l_pdl(void) { return !mr_cuda_tune.large_no_pdl && mr_cuda_pdl_allowed(); }

/* L2 and L3 (shared by route and sort). weights: the fp32 top-k weights that
 * sorted_weights copies (NULL when the layout has none). */
static cudaError_t mr_l_launch_scan_scatter(const mr_config* cfg, const mr_sort_out* o, const mr_large_args* L,
                                            const float* weights, cudaStream_t stream) {
  const int pdl = mr_l_pdl();
  cudaLaunchAttribute attr;
  const unsigned E = (unsigned)cfg->num_experts;
  cudaLaunchConfig_t b = mr_l_config((E + MR_L_SCAN_WARPS - 1) / MR_L_SCAN_WARPS, MR_L_SCAN_WARPS * 32, 0, stream,
                                     pdl, &attr);
  MR_TRY(cudaLaunchKernelEx(&b, mr_large_scan_kernel, *L));

  size_t smem = (size_t)MR_LW * 8u + (size_t)E * 16u;
  if (L->clear_ctas && L->clear_bulk && smem < MR_L_ZB) smem = MR_L_ZB;
  const float* w = o->sorted_weights ? weights : NULL;
  cudaLaunchConfig_t c = mr_l_config(L->clear_ctas + L->chunks, MR_LT, smem, stream, pdl, &attr);
  if (L->slices == L->chunks * MR_LW)
    MR_TRY(cudaLaunchKernelEx(&c, mr_large_scatter_kernel<MR_LW>, *o, *L, w));
  else /* after the wide L1 by segments (2 MR_LW slices per chunk) */
    MR_TRY(cudaLaunchKernelEx(&c, mr_large_scatter_kernel<2 * MR_LW>, *o, *L, w));
  return cudaSuccess;
}

extern "C" cudaError_t mr_cuda_launch_large_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                                 const float* topk_weights, void* workspace, cudaStream_t stream) {
  /* ranking is light: one or two CTAs per SM (the L2/L3 CTAs fit beside them) */
  const int per_sm = mr_cuda_tune.large_ctas_per_sm > 0                                     ? mr_cuda_tune.large_ctas_per_sm
                     : cfg->num_tokens * (int64_t)cfg->top_k <= MR_L_SORT_1SM_MAX_N ? 1
                                                                                    : 2;
  mr_large_args L;
  mr_l_args_init(cfg, o, workspace, mr_l_chunks(cfg, per_sm), &L);
  const size_t smem = (size_t)MR_LW * (size_t)cfg->num_experts * 4u; /* <= 32 KB */
  /* no PDL: waits for the caller's work. With PDL (lab call 41) the rank CTAs came up beside
   * the predecessor's last wave and took its slots: after route's gate kernel the chain went
   * from 20.32 to 24.12 us (DeepSeek-R1 softmax T = 16384), 43.93 to 60.91 (Qwen3-Next), for
   * 0.15 - 0.27 us gained by the sort alone */
  cudaLaunchConfig_t a = mr_launch_config(L.chunks, MR_LT, smem, stream);
  MR_TRY(cudaLaunchKernelEx(&a, mr_large_count_kernel, topk_ids, L));
  return mr_l_launch_scan_scatter(cfg, o, &L, topk_weights, stream);
}

/* L1's shared memory for route, bytes. */
static size_t mr_l_route_smem(const mr_config* cfg, const mr_gate_args* a) {
  return ((size_t)MR_LW * (size_t)cfg->num_experts + (size_t)MR_LW * mr_l_gate_scratch_words(a)) * 4u;
}

template <int DT, int EPL, int KIND>
static cudaError_t mr_l_launch_gate_t(const mr_l_gate_t* g, const mr_large_args* L, int32_t* topk_ids,
                                      float* topk_weights, uint32_t scratch_words, size_t smem, cudaStream_t stream) {
  cudaLaunchConfig_t lc = mr_launch_config(L->chunks, MR_LT, smem, stream); /* no PDL: the logits' producer */
  MR_TRY(cudaLaunchKernelEx(&lc, mr_large_gate_kernel<DT, EPL, KIND>, *g, *L, topk_ids, topk_weights, scratch_words));
  return cudaSuccess;
}

/* The kind (v3) of the instantiation route's L1 uses for cfg; 0 with v2. */
static int mr_l_gate_kind(const mr_config* cfg, const mr_gate_args* a) {
#if MR_L_GATE_V3
  return MR_KIND_FIX(cfg->dtype, mr_gate_kind(a, cfg->dtype));
#else
  (void)cfg;
  (void)a;
  return 0;
#endif
}

/* L1 of route: the instantiation for (dtype, EPL bucket, kind). */
static cudaError_t mr_l_launch_gate(const mr_config* cfg, const mr_gate_args* a, const mr_large_args* L,
                                    int32_t* topk_ids, float* topk_weights, size_t smem, cudaStream_t stream) {
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const uint32_t sw = mr_l_gate_scratch_words(a);
#if MR_L_GATE_V3
  mr_gate_p g;
  mr_gate_p_init(a, cfg->dtype, &g);
  const int kind = mr_gate_kind(a, cfg->dtype);
#define MR_L_KIND(DT, EPL, K)                                                                                \
  if (kind == K)                                                                                             \
    return mr_l_launch_gate_t<MR_KIND_DT(DT, MR_KIND_FIX(DT, K)), EPL, MR_KIND_FIX(DT, K)>(&g, L, topk_ids, \
                                                                                         topk_weights, sw,   \
                                                                                         smem, stream);
#define MR_L_CASE(DT, EPL)                \
  if (cfg->dtype == DT && epl == EPL) {   \
    MR_L_KIND(DT, EPL, MR_KIND_PACKED)    \
    MR_L_KIND(DT, EPL, MR_KIND_FULL)      \
    MR_L_KIND(DT, EPL, MR_KIND_GROUPED)   \
  }
#else
  const mr_gate_args g = *a;
#define MR_L_CASE(DT, EPL) \
  if (cfg->dtype == DT && epl == EPL) return mr_l_launch_gate_t<DT, EPL, 0>(&g, L, topk_ids, topk_weights, sw, smem, stream);
#endif
  MR_FOR_EACH_GATE_SPEC(MR_L_CASE)
#undef MR_L_CASE
#undef MR_L_KIND
  return cudaErrorInvalidConfiguration; /* unreachable: the dispatch checked the list */
}

/* L1 of route by segments (v13, mr_large_seg_gate_kernel), in the instantiation
 * gate.cuh's mr_gate_seg_dispatch picks for the gate kernel too (the same bits) */
struct mr_l_seg_launcher {
  const mr_gate_p* g;
  const mr_large_args* La;
  int32_t* topk_ids;
  float* topk_weights;
  size_t smem;
  int filt; /* gate.cuh mr_gate_packed_seg's filter (v20; 2: v21's tight bound) */
  cudaStream_t stream;
  template <int DT, int EPS, int LPR, int L, bool PK>
  cudaError_t run() const {
    const bool wide = La->slices != La->chunks * MR_LW; /* 2 MR_LW warps (and slices) per CTA */
    cudaLaunchConfig_t lc = mr_launch_config(La->chunks, wide ? 2 * MR_LT : MR_LT, smem, stream); /* no PDL: the
                                                                                           logits' producer */
    if (wide)
      MR_TRY(cudaLaunchKernelEx(&lc, mr_large_seg_gate_wide_kernel<DT, EPS, LPR, L, PK>, *g, *La, topk_ids, topk_weights,
                                filt));
    else
      MR_TRY(cudaLaunchKernelEx(&lc, mr_large_seg_gate_kernel<DT, EPS, LPR, L, PK>, *g, *La, topk_ids, topk_weights,
                                filt));
    return cudaSuccess;
  }
};

/* The wide L1 by segments (16 gating warps and 16 slices per chunk, v14) where the 8-warp
 * form stops: 128 < E <= 256, k = 8, MR_L_SEG_MAX_N < T*k <= MR_L_SEG_WIDE_MAX_N. Lab calls 42
 * and 43 (dev/runs/run42, run43 large_time.log; kernel metric, route without moe_buf, the
 * chain (auto then) / the wide L1 forced): DeepSeek-R1 softmax T = 16384 20.33 / 18.96 and 20.57 /
 * 18.92 us, 32768 31.31 / 29.78 and 31.24 / 29.73, but 65536 53.62 / 54.84 and 53.60 / 54.90;
 * GPT-OSS-120B (E = 128, k = 4) loses at every T (T = 32768 18.12 / 24.38), as does the wide
 * form below the 8-warp form's bound (DeepSeek-R1 softmax T = 4096 10.70 / 12.57). */
/* v22: up to T*k = 131072 (was 262144). Since v21 made the gate kernel's packed rows the default (the
 * gate alone 12.02 -> 8.95 us at T = 32768, lab call 55), the chain beats the wide L1 (which keeps
 * v20's rows) at T = 32768: results run 34 (H100, 49a8bf1, bench/results/run34, kernel metric, no
 * moe_buf, route / chain) 30.19 / 29.08 us at 32768, 18.97 / 19.37 at 16384. */
#define MR_L_SEG_WIDE_MAX_N 131072
static int mr_l_seg_wide_auto(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * (int64_t)cfg->top_k;
  return cfg->num_experts > 128 && cfg->top_k == 8 && n > MR_L_SEG_MAX_N && n <= MR_L_SEG_WIDE_MAX_N;
}
/* knob large_seg_warps: 0 auto (mr_l_seg_wide_auto), 16 = the wide form wherever the L1
 * by segments runs, else the 8-warp form */
static int mr_l_seg_wide(const mr_config* cfg) {
  const int knob = mr_cuda_tune.large_seg_warps;
  return knob == 0 ? mr_l_seg_wide_auto(cfg) : knob == 2 * MR_LW;
}

/* Lanes per row when route's L1 gates by segments (v13), else 0: the rows the gate
 * kernel segments (16-bit softmax, E <= 256, k <= 8, large T), without a moe_buf for
 * the run-1 chain to clear, up to T*k = MR_L_SEG_MAX_N, or in the wide form's auto
 * range; knob large_seg: -1 never, 1 at any T*k. */
static int mr_l_seg_lanes(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o) {
  const int knob = mr_cuda_tune.large_seg;
  if (knob < 0 || mr_cuda_large_v1(o->moe_buf_bytes)) return 0;
  const int sw = mr_cuda_tune.large_seg_warps; /* auto and 16 take the wide form's range too (the review of session 15) */
  if (knob == 0 && cfg->num_tokens * (int64_t)cfg->top_k > MR_L_SEG_MAX_N &&
      !((sw == 0 || sw == 2 * MR_LW) && mr_l_seg_wide_auto(cfg)))
    return 0;
  return mr_cuda_gate_segmented(cfg, a);
}

/* ---- P (the persistent launch) ------------------------------------------------------------ */

static size_t mr_l_persist_smem(const mr_config* cfg) {
  const size_t E = (size_t)cfg->num_experts, l1 = (size_t)MR_LW * E * 4u, l3 = (size_t)MR_LW * 8u + E * 16u;
  return l1 > l3 ? l1 : l3; /* <= 32 KB */
}

/* 1 when P takes the sort / route calls that reach the large path: with a moe_buf
 * to clear (lab call 29: without one, two grid barriers cost more than the two PDL
 * launch boundaries they replace, sort alone 16.0 against 13.4 us at T = 16384), or
 * the knob; and a device that launches cooperative kernels. */
extern "C" int mr_cuda_persist_wanted(const mr_config* cfg) {
  if (mr_cuda_tune.persist < 0 || (mr_cuda_tune.persist == 0 && cfg->moe_buf_bytes == 0)) return 0;
  return mr_cuda_coop_launch();
}

/* L for P: G = CTAs (1 per SM, or the knob), moe_buf cleared entirely by P's
 * clearing warps. *grid = 0 when the launch would not fit resident (then the
 * caller takes the three launches). */
#define MR_LP_THREADS (MR_LT + 32 * MR_LP_CW)
static void mr_l_persist_args(const mr_config* cfg, const mr_sort_out* o, void* workspace, mr_large_args* L,
                              unsigned* grid) {
  /* 1 per SM (lab call 31, DeepSeek-R1 softmax T = 16384, 1 / 2 per SM: sort + buf
   * 61.3 / 65.5 us, route + buf 66.0 / 73.0; Kimi-K2 sort + buf 61.3 / 66.4) */
  const int per_sm = mr_cuda_tune.persist_ctas_per_sm > 0 ? mr_cuda_tune.persist_ctas_per_sm : 1;
  mr_l_args_init(cfg, o, workspace, mr_l_chunks(cfg, per_sm), L);
  L->first_units = 0; /* slice 0 still writes the unaligned lead and trail bytes */
  L->clear_ctas = 0;
  L->clear_bulk = 0;
  *grid = L->chunks;
  int per = 0;
  const cudaError_t oe = mr_cuda_tune.persist_clear_ns != 0
                             ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, mr_large_persist_kernel<true>,
                                                                             MR_LP_THREADS, mr_l_persist_smem(cfg))
                             : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, mr_large_persist_kernel<false>,
                                                                             MR_LP_THREADS, mr_l_persist_smem(cfg));
  if (oe != cudaSuccess) {
    (void)cudaGetLastError();
    per = 0;
  }
  if ((int64_t)*grid > (int64_t)per * mr_cuda_sm_count()) *grid = 0;
}

static cudaError_t mr_l_launch_persist(const mr_config* cfg, const mr_sort_out* o, const mr_large_args* L,
                                       unsigned grid, const int32_t* ids, const float* weights, int pdl,
                                       cudaStream_t stream) {
  cudaLaunchConfig_t lc = mr_launch_config(grid, MR_LP_THREADS, mr_l_persist_smem(cfg), stream);
  cudaLaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  lc.attrs = attr;
  lc.numAttrs = pdl ? 2 : 1;
  const float* w = o->sorted_weights ? weights : NULL;
  const int ns = mr_cuda_tune.persist_clear_ns; /* the throttled clear (lab, v21): its own instantiation */
  const cudaError_t err = ns != 0 ? cudaLaunchKernelEx(&lc, mr_large_persist_kernel<true>, ids, *o, *L, w, ns)
                                  : cudaLaunchKernelEx(&lc, mr_large_persist_kernel<false>, ids, *o, *L, w, 0);
  if (err == cudaErrorCooperativeLaunchTooLarge) {
    /* the device has fewer SMs for us than it reports (MPS, green contexts): the
     * caller falls back to the three launches; the zeroing launch did no harm */
    (void)cudaGetLastError();
    return err;
  }
  MR_TRY(err);
  return cudaSuccess;
}

/* The zeroing launch before P (directly before it, with clear_wait set, or before
 * the gate launch, whose CTAs wait for it before they let P start). */
static cudaError_t mr_l_launch_zero(const mr_large_args* L, cudaStream_t stream) {
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t z = mr_l_config(1, 32, 0, stream, mr_l_pdl(), &attr);
  MR_TRY(cudaLaunchKernelEx(&z, mr_large_zero_kernel, L->bar));
  return cudaSuccess;
}

/* Sort by P: the zeroing launch, then P (PDL between them). Falls back to the
 * three launches when P would not fit or the device refuses it. */
extern "C" cudaError_t mr_cuda_launch_persist_sort(const mr_config* cfg, const mr_sort_out* o,
                                                   const int32_t* topk_ids, const float* topk_weights,
                                                   void* workspace, cudaStream_t stream) {
  mr_large_args L;
  unsigned grid = 0;
  mr_l_persist_args(cfg, o, workspace, &L, &grid);
  if (grid == 0) return mr_cuda_launch_large_sort(cfg, o, topk_ids, topk_weights, workspace, stream);
  MR_TRY(mr_l_launch_zero(&L, stream));
  L.clear_wait = 1u;
  const cudaError_t err = mr_l_launch_persist(cfg, o, &L, grid, topk_ids, topk_weights, mr_l_pdl(), stream);
  if (err == cudaErrorCooperativeLaunchTooLarge)
    return mr_cuda_launch_large_sort(cfg, o, topk_ids, topk_weights, workspace, stream);
  return err;
}

/* Route with a moe_buf by P, rows the gate kernel segments: the chain's order (the gate kernel uncapped with its
 * filter, then the zeroing launch and P) from T*k = 65536 where E > 128 and from 131072 for E <= 128; below, the
 * capped gate beside P's clear (v27, perf-log). Kernel metric, H100, route + buf by the capped form / by the chain's
 * order: results runs 41 / 42 against the chain gate + sort (whose order this is) DeepSeek-R1 softmax T = 16384
 * (T*k = 131072) 82.10 / 80.98 and 81.81 / 81.07, GPT-OSS-120B 32768 (131072) 67.27 / 67.06 and 67.50 / 66.73;
 * gxs_lab --head (lab calls 77 - 78, both forms in one process) DeepSeek-R1 softmax 8192 (65536) 46.17 / 45.93 and
 * 46.19 / 45.78, 16384 83.06 / 82.93 and 84.44 / 82.89, 4096 (32768) 27.75 / 28.18 and 27.67 / 28.11; GPT-OSS-120B
 * 16384 (65536) 38.63 / 39.07 and 38.61 / 39.00, 8192 23.55 / 24.33 and 23.47 / 24.21, 32768 (131072) 69.44 /
 * 68.62. Results run 43 had DeepSeek-R1 softmax 8192 by the capped form 45.80 against the chain's 45.15. */
#define MR_P_SEG_CHAIN_MIN_N 131072
#define MR_P_SEG_CHAIN_MIN_N_E256 65536 /* E > 128 */
static int mr_l_p_seg_chain(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * (int64_t)cfg->top_k;
  return mr_knob_on(mr_cuda_tune.p_seg_chain,
                    n >= (cfg->num_experts > 128 ? MR_P_SEG_CHAIN_MIN_N_E256 : MR_P_SEG_CHAIN_MIN_N));
}

/* Route above the one-launch bounds: the chain (gate kernel, then the general
 * sort) instead of large.cu's gate+rank launch when mr_cuda_large_v1 says so
 * (a moe_buf to clear) and, without a moe_buf, from T = MR_L_CHAIN_MIN_T on:
 * there the gate kernel's occupancy (up to 64 CTAs per SM) beats the combined
 * gate+rank launch. Measured (bench/results/run6, kernel metric, no moe_buf,
 * route / chain): DeepSeek-R1 softmax 29.6 / 27.8 us at T = 16384, 91.4 / 82.2
 * at 65536; GPT-OSS 19.3 / 18.6, 51.2 / 46.5; Qwen3-Next 46.8 / 45.0, 164 / 143;
 * Kimi-K2 72.3 / 74.0, 274 / 258. Below it large.cu is faster for most presets
 * (Kimi-K2 18.1 / 20.2 at 2048) though not all (DeepSeek-R1 softmax 12.1 / 11.4
 * at 1024). */
#define MR_L_CHAIN_MIN_T 16384
/* ... and from T*k = MR_L_CHAIN_MIN_N on for 16-bit softmax rows (results run 15, kernel
 * metric, no moe_buf, route / chain): Qwen3-Next (E = 512, k = 10, bf16) T = 8192 (81920
 * entries) 30.15 / 29.35, T = 4096 19.65 / 20.92. Not for the fp32-key kinds: Kimi-K2
 * (E = 384, k = 8) measured large.cu faster on both sides of that size, T = 8192 (65536)
 * 41.40 / 43.15 and T = 16384 72.3 / 74.0 (run 6). */
/* v13: from 40960 (results run 24, the sort's rank launch then at 1 CTA per SM: Qwen3-Next
 * T = 4096 route by large.cu 20.09 against the chain 19.69; T = 2048 (20480) 15.31 / 15.52) */
#define MR_L_CHAIN_MIN_N 40960
static int mr_l_route_as_chain(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o) {
  if (mr_cuda_large_v1(o->moe_buf_bytes)) return 1;
  if (mr_cuda_tune.general_v1 != 0) return 0;
  /* v6: where the gate kernel gates a row with a segment of lanes (16-bit
   * softmax, E <= 256, k <= 8) it is 1.6-2.1x faster than L1's warp per row
   * (lab run 8e, DeepSeek-R1 sizes: gate kernel 2.92 us at T = 4096, 4.46 at
   * 8192, against large.cu's route 17.2 / 21.6 in all). Since v13 those rows
   * reach this only above the L1 by segments' bound (mr_l_seg_lanes) */
  return cfg->num_tokens >= MR_L_CHAIN_MIN_T ||
         (cfg->num_tokens * cfg->top_k >= MR_L_CHAIN_MIN_N && mr_gate_kind(a, cfg->dtype) == MR_KIND_PACKED) ||
         mr_cuda_gate_segmented(cfg, a);
}
/* The chain in route clears 5/8 of moe_buf in the gate launch (under the gating)
 * from this size on, else all of it in the sort's last launch, as the plain chain
 * does. Results run 15 (kernel metric, route with the split / chain without it):
 * Qwen3-Next 8 MB (T = 2048) 21.85 / 20.85 us, 16 MB 26.05 / 25.84, 32 MB 38.45 /
 * 38.18, 64 MB 62.39 / 62.35, 128 MB 109.8 / 111.1; from 47 MB on it wins for the
 * others (GPT-OSS-120B 47 MB 23.52 / 23.95, DeepSeek-R1 softmax and Kimi-K2 58 MB
 * 27.40 / 28.38 and 42.05 / 42.89). */
#define MR_L_SPLIT_CLEAR_MIN ((size_t)40 << 20)

extern "C" cudaError_t mr_cuda_launch_large_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                  int32_t* topk_ids, float* topk_weights, void* workspace,
                                                  cudaStream_t stream) {
  const size_t entries = (size_t)cfg->num_tokens * (size_t)cfg->top_k;
  unsigned char* w = (unsigned char*)workspace;
  const size_t sort_ws = mr_cuda_general_sort_workspace(cfg); /* >= mr_cuda_large_sort_workspace */
  const size_t smem = mr_l_route_smem(cfg, a);
  /* P for route with a moe_buf (lab call 31, route + buf against the previous
   * default, DeepSeek-R1 softmax 24.2 / 28.2 us at T = 4096, 66.0 / 76.4 at 16384,
   * 256.9 / 303.4 at 65536). */
  if (mr_cuda_persist_wanted(cfg)) {
    /* the zeroing launch and the gate kernel (into the caller's top-k or the
     * workspace), then P, which clears moe_buf (PDL between them). For segmented
     * rows the gate launch keeps to 512 threads per SM so that P's CTA (384 threads)
     * comes up beside it and clears under the gating (lab call 30: without the cap,
     * P started after the gate and route + buf cost the same with or without PDL;
     * lab call 31: with it, 1 P CTA per SM, 69.3 -> 66.0 us at T = 16384) */
    mr_large_args L;
    unsigned grid = 0;
    mr_l_persist_args(cfg, o, workspace, &L, &grid);
    if (grid != 0) {
      int32_t* ids = topk_ids ? topk_ids : (int32_t*)(w + sort_ws);
      float* wts = topk_weights ? topk_weights : (float*)(w + sort_ws + MR_L_ALIGN(entries * 4u));
      /* where the gate kernel gates by segments: zero, then the gate capped at 512
       * threads per SM, so that P's CTAs clear under the gating. Elsewhere the gating
       * is the long part and the clear beside it slows it more than it hides (results
       * run 20, Kimi-K2 T = 16384 route + buf 153.1 with the clear under an uncapped
       * gate, 150.1 capped (lab call 31), against 123.8 for the chain's order): the
       * gate first, then zero and P, the chain's launches in the chain's order. Segmented
       * rows take that order too from mr_l_p_seg_chain's bound (v27: the capped gate loses
       * its filter, which costs more there than the clear under it hides). */
      const int knob = mr_cuda_tune.persist_gate_tpsm;
      const unsigned cap = knob < 0 ? 0u : knob > 0 ? (unsigned)knob : 512u;
      cudaError_t err = cudaSuccess;
      if (mr_cuda_gate_segmented(cfg, a) && !mr_l_p_seg_chain(cfg)) {
        err = mr_l_launch_zero(&L, stream);
        if (err == cudaSuccess) err = mr_cuda_launch_gate_capped(cfg, a, ids, wts, cap, stream);
      } else { /* the chain's order (v27: also segmented rows from mr_l_p_seg_chain's bound) */
        err = mr_cuda_launch_gate(cfg, a, ids, wts, stream);
        if (err == cudaSuccess) err = mr_l_launch_zero(&L, stream);
        L.clear_wait = 1u;
      }
      if (err == cudaSuccess) err = mr_l_launch_persist(cfg, o, &L, grid, ids, wts, mr_l_pdl(), stream);
      if (err == cudaErrorCooperativeLaunchTooLarge) /* the top-k are gated: the three sort launches */
        err = mr_cuda_launch_large_sort(cfg, o, ids, wts, workspace, stream);
      return err;
    }
  }
  const int lpr = mr_l_seg_lanes(cfg, a, o);
  if (lpr == 0 && (mr_l_route_as_chain(cfg, a, o) || smem > MR_L_SMEM_MAX)) {
    /* the chain: gate into the caller's top-k outputs or the workspace, then sort */
    int32_t* ids = topk_ids ? topk_ids : (int32_t*)(w + sort_ws);
    float* wts = topk_weights ? topk_weights : (float*)(w + sort_ws + MR_L_ALIGN(entries * 4u));
    /* moe_buf: the gate launch's first CTAs clear 5/8 of it under the gating,
     * the sort's last launch the rest beside the placing (perf-log v4), from
     * MR_L_SPLIT_CLEAR_MIN bytes on */
    mr_sort_out o2 = *o;
    size_t first = o->moe_buf_bytes >= MR_L_SPLIT_CLEAR_MIN ? o->moe_buf_bytes / 8u * 5u : 0u;
    first &= ~(size_t)15u;
    o2.moe_buf = o->moe_buf ? o->moe_buf + first : NULL;
    o2.moe_buf_bytes = o->moe_buf_bytes - first;
    cudaError_t err = mr_cuda_launch_gate_clear(cfg, a, ids, wts, o->moe_buf, first, stream);
    if (err == cudaSuccess) err = mr_cuda_launch_general_sort(cfg, &o2, ids, wts, w, stream);
    return err;
  }
  /* one CTA per SM while a large clear overlaps (room for L2's and L3's CTAs
   * beside it), else as many as the instantiation's register cap allows */
  int per_sm = mr_cuda_tune.large_ctas_per_sm;
  if (per_sm <= 0)
    per_sm = mr_l_overlap(cfg) ? 1
             : lpr           ? MR_L_SEG_PER_SM
                             : mr_l_gate_blocks(MR_L_GATE_V3, mr_cuda_epl_bucket(cfg->num_experts),
                                                mr_l_gate_kind(cfg, a));
  mr_large_args L;
  mr_l_args_init(cfg, o, workspace, mr_l_chunks(cfg, per_sm), &L);
  /* the weights sorted_weights copies: the caller's top-k weights, or the workspace */
  float* wts = topk_weights ? topk_weights : (o->sorted_weights ? (float*)(w + sort_ws) : NULL);
  cudaError_t err;
  if (lpr) {
    L.row_unit = 32u / (uint32_t)lpr; /* the rows a warp gates at once */
    /* the wide form (mr_l_seg_wide): CTAs of 16 gating warps, 16 slices per chunk, at most
     * as many chunks as the workspace's slices allow (mr_l_max_chunks x 8 slices). Only
     * where that is at least one chunk (max chunks >= 2, i.e. T >= 2): at T = 1 one chunk
     * of 16 slices would pass the workspace's 8 (the review of session 14) */
    uint32_t spc = MR_LW;
    const int64_t gmax = mr_l_max_chunks(cfg);
    if (mr_l_seg_wide(cfg) && gmax >= 2) {
      spc = 2 * MR_LW;
      const uint32_t cap = (uint32_t)(gmax * MR_LW / spc); /* >= 1 */
      if (L.chunks > cap) L.chunks = cap;
      L.slices = L.chunks * spc; /* first_units stays as sized for 8 slices per chunk: only with
                                    a moe_buf under general_v1 = 2, a slice clears a little more */
    }
    mr_gate_p g;
    mr_gate_p_init(a, cfg->dtype, &g);
    const size_t ssm = (size_t)spc * (size_t)cfg->num_experts * 4u; /* <= 16 KB */
    const int epl = mr_cuda_epl_bucket(cfg->num_experts);
    const int filt = mr_seg_form_filt(mr_seg_filter_on(cfg->num_tokens * cfg->top_k, MR_SEG_FILTER_N_L1)); /* gate.cuh */
    const mr_l_seg_launcher launch = {&g, &L, topk_ids, wts, ssm, filt, stream};
    const bool pk = mr_seg_form_pk();
    err = cfg->dtype == MOEROUTE_DTYPE_BF16
              ? mr_gate_seg_dispatch<MOEROUTE_DTYPE_BF16>(epl, lpr, cfg->top_k, pk, launch)
              : mr_gate_seg_dispatch<MOEROUTE_DTYPE_FP16>(epl, lpr, cfg->top_k, pk, launch);
  } else {
    /* L2's carry form after the warp-per-row L1 (lab call 41, route without moe_buf at T =
     * 4096, carry / lane blocks: Kimi-K2 26.49 / 27.82 us, DeepSeek-R1 grouped 19.99 / 21.50;
     * not understood: the two forms differ in L2 alone, which the sort and the L1 by segments
     * run 0.3 - 0.45 us faster in the lane-block form) */
    if (mr_cuda_tune.large_scan_carry == 0) L.scan_carry = 1u;
    err = mr_l_launch_gate(cfg, a, &L, topk_ids, wts, smem, stream);
  }
  if (err != cudaSuccess) return err;
  return mr_l_launch_scan_scatter(cfg, o, &L, wts, stream);
}
