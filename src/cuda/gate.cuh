/*
 * gate.cuh - gating of one token row by one warp (contract section 2,
 * design.md 1-6): logits -> k expert ids and weights, held by lanes 0..k-1.
 *
 * Used by the gate kernel (gate.cu) and the fused route kernel (fused.cu).
 *
 * Why the code looks like this (dev/cuda-notes.md, v3): at decode a launch runs
 * each instruction of its path about once, on an SM whose instruction cache
 * does not hold the kernel, so the time goes into fetching code, not into
 * arithmetic. Every instantiation therefore holds only the code of its own
 * configuration ("kind", below), loops whose trip count is not tiny stay
 * rolled, and rare paths (unaligned rows, a lane straddling E) sit behind one
 * branch that the common path jumps over.
 *
 * Kinds (compile-time), chosen on the host by mr_gate_kind():
 *
 *   PACKED   16-bit logits, SOFTMAX, no bias, no grouping (DeepSeek softmax,
 *            GPT-OSS, Qwen, Mixtral ...): the key is the logit itself, and the
 *            16-bit value and the inverted index share one 32-bit key, so one
 *            __reduce_max_sync per pick finds the winner with the tie rule
 *            built in. The row maximum is the first pick; the softmax
 *            denominator is summed after it and its butterfly is spread over
 *            the next picks.
 *   FULL     everything else without grouping (sigmoid, sqrt_softplus, any
 *            bias, fp32 logits): fp32 keys (s + bias, or the logit) as
 *            order-preserving uint32; a pick is a max reduction plus a ballot
 *            (the lowest lane holding the max holds the lowest index, see the
 *            layout).
 *   GROUPED  FULL plus grouped selection (contract 2.4) through a per-warp
 *            shared-memory buffer.
 *
 * The dtype is the other template constant: BF16 and FP16 for PACKED; for FULL
 * and GROUPED, FP32 or "16-bit" (instantiated as BF16; fp16 is a run-time
 * flag, the conversion is the only difference).
 *
 * Layout of a row in the warp: lane l holds experts e = l*EPL + r in registers
 * r = 0..EPL-1 (contiguous per lane), loaded with 16-byte vector loads (8 bytes
 * for 16-bit EPL 4). Lower lane => lower indices, and within a lane the index
 * grows with r: the tie rule (lower index wins) is "lowest lane, then lowest
 * register". Experts e >= E hold -inf: with k <= E they can never be picked
 * ahead of a valid expert (a -inf tie goes to the lower index).
 *
 * Weights: lane j recomputes the score of pick j from the picked logit
 * (decoded from the packed key, or read again from the row) with the same fp32
 * expression as the keys. Renormalisation sums the k weights in pick order
 * (design.md 5), like the CPU backend. The softmax denominator uses the fast
 * exp2 (its terms are positive: each term's relative error is below 1e-6 times
 * its share of the sum, far inside the contract's 1e-5); the k weights and all
 * selection keys use expf.
 *
 * Warming ("dry" runs): a warp that has no row can run the same code on a
 * zero row with loads and stores switched off (live = false): it fetches the
 * instructions while the real warp waits for its row (see fused.cu).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_GATE_CUH
#define MOEROUTE_CUDA_GATE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#include <type_traits>

#include "cuda/common.cuh"

#define MR_KIND_PACKED 0
#define MR_KIND_FULL 1
#define MR_KIND_GROUPED 2

/* bytes per logit */
#define MR_ESZ(DT) ((DT) == MOEROUTE_DTYPE_FP32 ? 4 : 2)
/* the dtype an instantiation is compiled for: FULL/GROUPED fold fp16 into bf16 */
#define MR_KIND_DT(DT, KIND) \
  ((KIND) != MR_KIND_PACKED && (DT) == MOEROUTE_DTYPE_FP16 ? MOEROUTE_DTYPE_BF16 : (DT))
/* the kind an instantiation is compiled for: fp32 has no packed form */
#define MR_KIND_FIX(DT, KIND) ((KIND) == MR_KIND_PACKED && (DT) == MOEROUTE_DTYPE_FP32 ? MR_KIND_FULL : (KIND))

/* v44 (session 38; the only form since session 39, after results run 67 ran the suite with it). The 16-bit softmax
 * rows' denominator (rows without renormalize; with it the denominator cancels, design.md 14) is summed in ONE order by
 * every row form: each run of EPL consecutive elements (the warp form's lane, EPL the E bucket's) in index order, then
 * a balanced tree over those 32 runs with neighbours first. The warp form does that with its butterfly at offsets 1,
 * 2, ..., 16; a segment form of LPR lanes holds 32 / LPR runs per lane, adds them as the tree's first stages, then its
 * butterfly at 1 .. LPR / 2 (IEEE addition commutes exactly, so both lanes of a pair hold the same word). So a row's
 * weights are the same words whatever form gates it (the warp form, the segment forms of 16 or 8 lanes, gx's,
 * tiny.cu's), and route by gx keeps the gate kernel's words at every T. (Before v44 the warp form's butterfly ran
 * 16 .. 1 and a segment lane summed its EPS elements in one run: the words followed the lanes per row, and results run
 * 66 failed route-vs-gate bits where gx's 16 lanes met the gate kernel's 32.) */
/* the warp form's butterfly offset at stage j = 1 .. 5 */
#define MR_SUM_OFF(j) (1 << ((j) - 1))

/* Host: the kind of a configuration. */
static inline int mr_gate_kind(const mr_gate_args* a, moeroute_dtype dt) {
  if (a->grouped) return MR_KIND_GROUPED;
  if (dt != MOEROUTE_DTYPE_FP32 && a->score == MOEROUTE_SCORE_SOFTMAX && a->bias == NULL) return MR_KIND_PACKED;
  return MR_KIND_FULL;
}

/* ---- element access --------------------------------------------------------- */

/* 16-bit logits are kept high-aligned: raw = bits << 16 (for bf16 that is the
 * fp32 value itself). */
__device__ __forceinline__ float mr_f16hi_to_float(uint32_t hi) {
  float f;
  const unsigned short h = (unsigned short)(hi >> 16);
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
/* fp32 (an fp16 value) -> fp16 bits, high-aligned; exact for fp16 values */
__device__ __forceinline__ uint32_t mr_float_to_f16hi(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return (uint32_t)h << 16;
}
/* raw -> fp32, exact. W = bytes per element; f16 selects fp16 over bf16. */
template <int W>
__device__ __forceinline__ float mr_raw_float(uint32_t raw, bool f16) {
  if (W == 4) return __uint_as_float(raw);
  return f16 ? mr_f16hi_to_float(raw) : __uint_as_float(raw);
}

/* design.md 1-2: NaN -> -inf (an expert switched off), +inf -> FLT_MAX.
 * fmaxf returns the other operand for a NaN. */
__device__ __forceinline__ float mr_clamp_logit(float v) { return fminf(fmaxf(v, -INFINITY), FLT_MAX); }

/* exp(d) for the softmax denominator only (see the header comment). */
__device__ __forceinline__ float mr_exp_sum_term(float d) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d * 1.4426950408889634f));
  return r;
}

/* fp32 scores (design.md 3, 6), the same expressions as the CPU backend. */
__device__ __forceinline__ float mr_score(int score, float x, float max, float sum) {
  if (score == MOEROUTE_SCORE_SOFTMAX) return max == -INFINITY ? 0.0f : expf(x - max) / sum;
  /* -inf: 0, as 1 / (1 + exp(inf)) is, without the IEEE divide's slow path (a call that a warp runs where any
   * lane takes it: the wide rows' padding warps, v31) */
  if (score == MOEROUTE_SCORE_SIGMOID) {
    const bool off = x == -INFINITY;
    const float sg = 1.0f / (1.0f + expf(-(off ? 0.0f : x)));
    return off ? 0.0f : sg;
  }
  return sqrtf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))));
}

/* ---- arguments as the kernels read them ------------------------------------------
 * Derived on the host from mr_gate_args (common.cuh), dense so that the few
 * constant-cache lines a launch touches first are few. */
typedef struct mr_gate_p {
  const unsigned char* logits;
  const float* bias; /* NULL = none */
  int64_t row_bytes; /* row stride in bytes */
  int64_t num_tokens;
  int32_t num_experts;
  int32_t top_k;
  int32_t score;
  int32_t renormalize;
  float scale;
  int32_t f16; /* 16-bit logits are fp16 (else bf16) */
  /* grouped selection (GROUPED only) */
  int32_t num_groups;
  int32_t topk_groups;
  int32_t group_score;
  int32_t group_size;
  uint32_t group_magic;      /* ceil(2^22 / group_size): g = (e * magic) >> 22 for e < 1024 */
  int32_t group_lanes;       /* lanes per group when G <= 16 (power of two), else 1 */
  int32_t group_lanes_shift; /* log2(group_lanes) */
  int32_t group_reg_lanes;   /* > 0: every group is exactly this many lanes' registers (a power of two):
                                group scores by a butterfly, no shared memory */
} mr_gate_p; /* the segment kernels' filter flag (v20) is an argument of theirs, not a field here: a
                field would move the decode kernels' parameters (results runs 31 - 32: +0.05 us) */

/* Where the segment rows take the filter (mr_seg_filter_top, v20) by default: results run 31
 * (bench/results/run31/large_lab_filt.log, H100, kernel metric, filter / network, bits equal).
 *  - the gate kernel: DeepSeek-R1 softmax T = 2048 / 4096 / 8192 / 16384 / 32768 / 65536
 *    3.44 / 3.71 / 5.66 / 7.61 / 12.07 / 22.49 us against 2.52 / 2.99 / 5.87 / 7.38 / 13.31 /
 *    25.87; GPT-OSS-120B from T = 1024 to 65536 +0.66 ... +0.05 up to 16384, then 5.49 / 8.73
 *    against 5.88 / 10.09. Its registers go 64 -> 80 (fewer warps per SM) and each candidate
 *    adds a dependent L1 load: a row's chain is longer, the ALU work shorter, so it pays only
 *    once the rows fill the GPU many times over: from T = 32768.
 *  - route's L1 by segments (large.cu, capped at 80 registers either way): DeepSeek-R1 softmax
 *    (k = 8) route without moe_buf T = 16384 / 32768 20.74 / 34.30 against 21.54 / 35.71, but
 *    GPT-OSS-120B (k = 4, 4 lanes per row) T = 16384 13.76 / 13.49 and 32768 19.84 / 20.28 (run 32:
 *    16384 13.74 / 13.39): from T*k = 131072.
 *  - with a moe_buf (the gate launch capped beside P, or clearing a share): route + buf
 *    T = 16384 / 65536 87.81 / 353.92 against 84.24 / 350.69: never (mr_cuda_launch_gate_clear). */
#define MR_SEG_FILTER_T_GATE 32768
#define MR_SEG_FILTER_N_L1 131072 /* T*k */
/* knob gate_seg_filter: 0 = the rule above (n: T for the gate kernel, T*k for the L1, at least
 * from), 1 = wherever E = LPR * EPS, -1 = never */
static inline int32_t mr_seg_filter_on(int64_t n, int64_t from) {
  const int knob = mr_cuda_tune.gate_seg_filter;
  return knob > 0 || (knob == 0 && n >= from);
}
/* The segment kernels' form (v21, knob gate_seg_form): the launch's pk (the packed load,
 * mr_load_pairs) and its filt argument (mr_gate_packed_seg) for a filter decision `on`.
 * Knob: 0 automatic (below), -1 v20's form everywhere (mr_load_lane, the filter by the least of
 * the lanes' maxima), 1 - 3 that form wherever a packed instantiation exists.
 * Route's L1 by segments (large.cu) keeps v20's form unless the knob forces one: lab call 55
 * (H100, d00fee4, dev/runs/run55) measured its packed instantiations 1.57 - 1.63x slower for
 * DeepSeek-R1 softmax route at T = 16384 / 32768 (32.47 / 56.01 against 20.73 / 34.49 us), though
 * alone the packed wide L1 is faster (ncu, lab call 58: 12.00 against 12.90 us): the loss is in how
 * route's launches overlap, not understood (perf-log v22). */
static inline bool mr_seg_form_pk(void) { return mr_cuda_tune.gate_seg_form > 0; }
static inline int32_t mr_seg_form_filt(int32_t on) {
  const int f = mr_cuda_tune.gate_seg_form;
  return on ? (f == 2 || f == 3 ? f : 1) : 0;
}
/* The gate kernel's automatic form (knob 0; v21, lab call 55, H100, gate kernel alone, kernel
 * metric): where a packed instantiation exists (EPS <= 32, LPR <= 8: DeepSeek-R1 softmax, GPT-OSS-120B
 * and the other 16-bit softmax rows of E <= 256), the row in packed pairs at every T (DeepSeek-R1
 * T = 8192 4.39 against 5.85 us, never slower by more than 0.4%), the filter from T*k = 65536
 * (MR_SEG_FILTER_N_PK; DeepSeek-R1 T = 4096 / 8192 3.20 / 3.89 against 2.95 / 4.39 unfiltered,
 * GPT-OSS-120B T = 8192 / 16384 2.72 / 3.27 against 2.53 / 3.52), with the tight bound's
 * candidates ranked in shared memory at 8 lanes per row (form 3: DeepSeek-R1 T = 65536 16.66
 * against form 2's 17.78 and v20's 22.50) and sorted lists at 4 (form 2: GPT-OSS-120B 6.92 against
 * form 3's 7.70 and v20's 8.71). Elsewhere v20's rule (mr_seg_filter_on from T = 32768). */
#define MR_SEG_FILTER_N_PK 65536 /* T*k */
/* the packed instantiations (mr_gate_seg_run's PK = true) exist for these EPS, LPR */
static constexpr bool mr_seg_pk_fits(int eps, int lpr) { return eps <= 32 && lpr <= 8; }
static inline bool mr_seg_pk_exists(int epl, int lpr) { return mr_seg_pk_fits(32 * epl / lpr, lpr); }
static inline void mr_seg_gate_form(int64_t T, int k, int epl, int lpr, int beside, bool* pk, int32_t* filt) {
  const int f = mr_cuda_tune.gate_seg_form;
  if (f == 0 && mr_seg_pk_exists(epl, lpr)) {
    *pk = true;
    *filt = !beside && mr_seg_filter_on(T * k, MR_SEG_FILTER_N_PK) ? (lpr == 8 ? 3 : 2) : 0;
    return;
  }
  *pk = mr_seg_form_pk();
  *filt = mr_seg_form_filt(!beside && mr_seg_filter_on(T, MR_SEG_FILTER_T_GATE));
}

static inline void mr_gate_p_init(const mr_gate_args* a, moeroute_dtype dt, mr_gate_p* p) {
  memset(p, 0, sizeof *p);
  p->logits = (const unsigned char*)a->logits;
  p->bias = a->bias;
  p->row_bytes = a->row_stride * (dt == MOEROUTE_DTYPE_FP32 ? 4 : 2);
  p->num_tokens = a->num_tokens;
  p->num_experts = a->num_experts;
  p->top_k = a->top_k;
  p->score = a->score;
  p->renormalize = a->renormalize;
  p->scale = a->scale;
  p->f16 = dt == MOEROUTE_DTYPE_FP16;
  p->num_groups = a->num_groups;
  p->topk_groups = a->topk_groups;
  p->group_score = a->group_score;
  p->group_size = a->group_size;
  p->group_magic = a->group_magic;
  p->group_lanes = a->group_lanes;
  p->group_lanes_shift = a->group_lanes_shift;
  p->group_reg_lanes = 0;
  const int epl = mr_cuda_epl_bucket(a->num_experts);
  if (a->grouped && epl > 0 && a->group_size % epl == 0) {
    const int lpg = a->group_size / epl;
    if (lpg <= 32 && (lpg & (lpg - 1)) == 0) p->group_reg_lanes = lpg;
  }
}

/* ---- load --------------------------------------------------------------------- */

/*
 * This lane's EPL elements of ESZ bytes from base (experts lane*EPL ..), as raw
 * bits (16-bit: high-aligned). Elements >= E get `fill`. live = false: no
 * memory access, every element 0 (a dry run). Vector loads need the base
 * aligned to the vector; a lane whose range straddles E, or an unaligned base,
 * takes scalar loads behind one branch.
 */
/* Four 32-bit words from p (16-byte aligned) into w[0..3], or `fill` in each where !in (no access) */
__device__ __forceinline__ void mr_ldg_words4(const unsigned char* p, bool in, uint32_t fill, uint32_t* w) {
  uint4 q = make_uint4(fill, fill, fill, fill);
  if (in) q = __ldg((const uint4*)p);
  w[0] = q.x;
  w[1] = q.y;
  w[2] = q.z;
  w[3] = q.w;
}

template <int ESZ, int EPL>
__device__ __forceinline__ void mr_load_lane(const unsigned char* base, uint32_t lane, int E, uint32_t fill, bool live,
                                             uint32_t* out) {
  constexpr int BYTES = EPL * ESZ;          /* per lane: 8 .. 128 */
  constexpr int VB = BYTES % 16 == 0 ? 16 : BYTES < 16 ? BYTES : 8; /* vector bytes (8 for 24: v33b's EPS = 12) */
  static_assert(BYTES % VB == 0, "a lane's bytes in whole vectors");
  constexpr int NV = BYTES / VB;
  constexpr int PER = VB / 4;                /* 32-bit words per vector */
  const int e0 = (int)lane * EPL;
  const unsigned char* p = base + (size_t)e0 * ESZ;
  const bool in = live && e0 < E;
  const uint32_t fv = live ? fill : 0u;
  const bool aligned = ((uintptr_t)base & (uintptr_t)(VB - 1)) == 0;
  if (aligned && (e0 + EPL <= E || e0 >= E)) {
    uint32_t w[NV * PER];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      if (PER == 4) {
        mr_ldg_words4(p + v * 16, in, 0u, w + v * 4);
      } else {
        uint2 q = make_uint2(0u, 0u);
        if (in) q = __ldg((const uint2*)(p + v * 8));
        w[v * 2] = q.x;
        w[v * 2 + 1] = q.y;
      }
    }
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      uint32_t x;
      if (ESZ == 4)
        x = w[r];
      else
        x = (r & 1) ? (w[r / 2] & 0xffff0000u) : (w[r / 2] << 16);
      out[r] = in ? x : fv;
    }
  } else {
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      uint32_t x = fv;
      if (live && e0 + r < E) {
        if (ESZ == 4)
          x = __ldg((const unsigned int*)p + r);
        else
          x = (uint32_t)__ldg((const unsigned short*)p + r) << 16;
      }
      out[r] = x;
    }
  }
}

/*
 * The segment rows' load in packed form (v21, knob gate_seg_form): this lane's EPS 16-bit
 * elements (experts lane*EPS ..) as EPS/2 words, word i = element 2i in the low half and
 * element 2i + 1 in the high half: the row's own bits. mr_load_lane<2, EPS> returns the same
 * elements one per word, high-aligned; that costs a shift or a mask per element and a select
 * per element for the fill, and the filter below packs them again (perf-log v21: ~80 of the
 * ~700 instructions of a warp's step of rows). Elements >= E get fill's 16 bits (fill
 * high-aligned, as mr_load_lane's); live = false: every word 0, no memory access. Vector loads
 * need the base aligned to 16 bytes; a lane straddling E or an unaligned base takes scalar loads.
 */
template <int EPS>
__device__ __forceinline__ void mr_load_pairs(const unsigned char* base, uint32_t lane, int E, uint32_t fill,
                                              bool live, uint32_t* w) {
  static_assert(EPS % 8 == 0 && EPS <= 64, "16-byte vectors of pairs");
  constexpr int NV = EPS / 8; /* 16-byte vectors */
  const int e0 = (int)lane * EPS;
  const unsigned char* p = base + (size_t)e0 * 2u;
  const uint32_t fv = live ? fill >> 16 : 0u;
  const bool aligned = ((uintptr_t)base & 15u) == 0;
  if (aligned && (e0 + EPS <= E || e0 >= E)) {
    const uint32_t fw = fv | (fv << 16);
    const bool in = live && e0 < E;
#pragma unroll
    for (int v = 0; v < NV; ++v) mr_ldg_words4(p + v * 16, in, fw, w + v * 4);
  } else {
#pragma unroll
    for (int i = 0; i < EPS / 2; ++i) {
      uint32_t lo = fv, hi = fv;
      if (live && e0 + 2 * i < E) lo = __ldg((const unsigned short*)p + 2 * i);
      if (live && e0 + 2 * i + 1 < E) hi = __ldg((const unsigned short*)p + 2 * i + 1);
      w[i] = lo | (hi << 16);
    }
  }
}

/* Element i of a segment lane's row in mr_load_lane's form (high-aligned bits), from the
 * unpacked words (PK false) or the packed pairs (PK true) */
template <bool PK>
__device__ __forceinline__ uint32_t mr_seg_raw(const uint32_t* src, int i) {
  return !PK ? src[i] : (i & 1) ? (src[i >> 1] & 0xffff0000u) : (src[i >> 1] << 16);
}

/* ---- small reductions inside a lane (balanced trees: the pick loop is latency-bound) */

template <int EPL>
__device__ __forceinline__ uint32_t mr_tree_max(const uint32_t* key) {
  uint32_t m[EPL];
#pragma unroll
  for (int r = 0; r < EPL; ++r) m[r] = key[r];
#pragma unroll
  for (int s = 1; s < EPL; s *= 2)
#pragma unroll
    for (int r = 0; r + s < EPL; r += 2 * s) m[r] = m[r + s] > m[r] ? m[r + s] : m[r];
  return m[0];
}

/* Max and its register index, ties to the lower register (= lower expert index).
 * The tree pairs ADJACENT blocks [r, r+s) and [r+s, r+2s), so the left operand
 * always holds the lower indices and wins ties. */
template <int EPL>
__device__ __forceinline__ uint32_t mr_tree_argmax(const uint32_t* key, int* idx) {
  uint32_t m[EPL];
  int ix[EPL];
#pragma unroll
  for (int r = 0; r < EPL; ++r) {
    m[r] = key[r];
    ix[r] = r;
  }
#pragma unroll
  for (int s = 1; s < EPL; s *= 2)
#pragma unroll
    for (int r = 0; r + s < EPL; r += 2 * s) {
      const bool take = m[r + s] > m[r];
      m[r] = take ? m[r + s] : m[r];
      ix[r] = take ? ix[r + s] : ix[r];
    }
  *idx = ix[0];
  return m[0];
}

template <int EPL>
__device__ __forceinline__ float mr_tree_fmax(const float* x) {
  float m[EPL];
#pragma unroll
  for (int r = 0; r < EPL; ++r) m[r] = x[r];
#pragma unroll
  for (int s = 1; s < EPL; s *= 2)
#pragma unroll
    for (int r = 0; r + s < EPL; r += 2 * s) m[r] = fmaxf(m[r], m[r + s]);
  return m[0];
}

/* ---- top-k by bitonic merges (v4, dev/cuda-notes.md) ------------------------------
 *
 * The selection keys are unique (the expert index is part of the key), so the
 * top k of a row are the k largest keys, in descending order, with the tie
 * rule built in. Each lane sorts its EPL keys into a descending list of L
 * (L = 4, 8 or 16 >= k; a lane with more than L keys merges sorted chunks),
 * then five butterfly stages exchange whole lists (shfl_xor) and keep the top
 * L of the two: c_i = max(a_i, b_{L-1-i}) is bitonic and holds the top L of
 * a and b; log2(L) compare-exchange stages sort it. After the five stages
 * every lane holds the row's top L. The dependent chain is five shuffle
 * rounds plus ~25 min/max levels, instead of k rounds of a warp reduction
 * (v3: about 300 cycles per pick; stamp_lab "thrice", run 4).
 *
 * K is uint32_t: the PACKED key (16-bit value and inverted index). */
__device__ __forceinline__ void mr_cx(uint32_t& a, uint32_t& b) {
  const uint32_t h = a > b ? a : b, l = a > b ? b : a;
  a = h;
  b = l;
}
__device__ __forceinline__ uint32_t mr_kmax(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* x[0..N) sorted descending in place (bitonic sorting network, N a power of two) */
template <typename K, int N>
__device__ __forceinline__ void mr_sort_desc(K* x) {
#pragma unroll
  for (int size = 2; size <= N; size *= 2)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride /= 2)
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int j = i ^ stride;
        if (j > i) {
          if ((i & size) == 0 || size == N)
            mr_cx(x[i], x[j]);
          else
            mr_cx(x[j], x[i]);
        }
      }
}

/* a = the top L of a and b, both descending; a stays descending */
template <typename K, int L>
__device__ __forceinline__ void mr_merge_top(K* a, const K* b) {
#pragma unroll
  for (int i = 0; i < L; ++i) a[i] = mr_kmax(a[i], b[L - 1 - i]);
#pragma unroll
  for (int s = L / 2; s > 0; s /= 2)
#pragma unroll
    for (int i = 0; i < L; ++i)
      if ((i & s) == 0) mr_cx(a[i], a[i + s]);
}

/* top[r][0..L): row r's L largest keys, descending, in every lane, for R rows of one warp at once (v49: each
 * stage's work for the R rows side by side, so that their independent chains interleave) */
template <typename K, int EPL, int L, int R>
__device__ __forceinline__ void mr_warp_top_rows(const K (&key)[R][EPL], K (&top)[R][L]) {
#pragma unroll
  for (int q = 0; q < R; ++q) {
    if (EPL <= L) {
      K t[EPL];
#pragma unroll
      for (int r = 0; r < EPL; ++r) t[r] = key[q][r];
      mr_sort_desc<K, EPL>(t);
#pragma unroll
      for (int i = 0; i < L; ++i) top[q][i] = i < EPL ? t[i < EPL ? i : 0] : (K)0;
    } else {
#pragma unroll
      for (int i = 0; i < L; ++i) top[q][i] = key[q][i];
      mr_sort_desc<K, L>(top[q]);
#pragma unroll
      for (int c = 1; c < EPL / L; ++c) {
        K t[L];
#pragma unroll
        for (int i = 0; i < L; ++i) t[i] = key[q][(c * L + i) % EPL];
        mr_sort_desc<K, L>(t);
        mr_merge_top<K, L>(top[q], t);
      }
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    K b[R][L];
#pragma unroll
    for (int q = 0; q < R; ++q)
#pragma unroll
      for (int i = 0; i < L; ++i) b[q][i] = __shfl_xor_sync(MR_FULL_MASK, top[q][i], off);
#pragma unroll
    for (int q = 0; q < R; ++q) mr_merge_top<K, L>(top[q], b[q]);
  }
}

/* top[0..L): the row's L largest keys, descending, in every lane */
template <typename K, int EPL, int L>
__device__ __forceinline__ void mr_warp_top(const K* key, K* top) {
  K k1[1][EPL], t1[1][L];
#pragma unroll
  for (int r = 0; r < EPL; ++r) k1[0][r] = key[r];
  mr_warp_top_rows<K, EPL, L, 1>(k1, t1);
#pragma unroll
  for (int i = 0; i < L; ++i) top[i] = t1[0][i];
}

/* top[lane] for lane < L, else 0 */
template <typename K, int L>
__device__ __forceinline__ K mr_top_of_lane(const K* top, uint32_t lane) {
  K m = 0;
#pragma unroll
  for (int i = 0; i < L; ++i) m = lane == (uint32_t)i ? top[i] : m;
  return m;
}

/*
 * Top k (k <= L) of fp32 keys (FULL and GROUPED, v5): the packed merge above on
 * 32-bit truncated keys t = (key & ~M) | (M - e), M = 32 * EPL - 1 (the key's
 * top 32 - IB bits, then the inverted index). Truncation keeps order (key a >
 * key b => hi(a) >= hi(b)), so every element in a bucket above the k-th pick's
 * bucket H is a pick, every element below H is not, and only H can hold an
 * element that the index placed wrongly. Then:
 *   - picks sharing a bucket (about 5% of random rows) are re-ranked by their
 *     exact keys: k independent shuffles, k ballots;
 *   - exact iff the elements of bucket H that are >= the last pick in exact
 *     order (key, then lower index) are exactly the picks in H (one count and
 *     one warp sum). Exact ties pass; only an element of H that beats a pick
 *     on the bits cut away fails (~0.5% of random rows): the caller then runs
 *     the exact pick loop.
 * key[]: this lane's exact keys (elements e0 .. e0 + EPL - 1). Returns true
 * (warp-uniform) when exact, with lanes < k holding pick `lane` (*id, *ek).
 */
/* Index bits of the truncated keys for a row of 32 * EPL slots (M = 32 * EPL - 1). */
template <int EPL>
struct mr_trunc_bits {
  static constexpr uint32_t M = 32u * (uint32_t)EPL - 1u;
  static constexpr int IB = EPL == 4 ? 7 : EPL == 8 ? 8 : EPL == 16 ? 9 : 10;
};

/* After the merge (top[]: the row's top L truncated keys, in every lane of the
 * warp): lane j < k takes pick j (*my_id), *H = the k-th pick's bucket, *need =
 * the picks in H, *pair = two picks share a bucket (their order needs the
 * exact keys). */
template <int L, int IB>
__device__ __forceinline__ void mr_trunc_picks(const uint32_t* top, uint32_t M, int k, uint32_t lane, uint32_t* my_id,
                                               uint32_t* H, uint32_t* need, bool* pair) {
  const uint32_t mine = mr_top_of_lane<uint32_t, L>(top, lane);
  /* H by a shuffle from lane k - 1 (a select over top[] with the run-time k put
   * top[] in local memory) */
  const uint32_t h = __shfl_sync(MR_FULL_MASK, mine, k - 1) >> IB;
  bool pr = false;
  uint32_t nd = 0u;
#pragma unroll
  for (int i = 0; i < L; ++i) {
    if (i + 1 < L && i + 1 < k && (top[i] >> IB) == (top[i + 1] >> IB)) pr = true;
    nd += (i < k && (top[i] >> IB) == h) ? 1u : 0u;
  }
  *my_id = M - (mine & M);
  *H = h;
  *need = nd;
  *pair = pr;
}

/* Picks that share a bucket (pair, warp-uniform): rank lanes < k by (exact key
 * desc, index asc) and move each pick to its lane. Then *kmin / *idk: the last
 * pick's exact key and index, in every lane. */
__device__ __forceinline__ void mr_trunc_order(bool pair, int k, uint32_t lane, uint32_t* my_ek, uint32_t* my_id,
                                               uint32_t* kmin, uint32_t* idk) {
  if (pair) {
    uint32_t rank = 0u;
#pragma unroll 1
    for (int i = 0; i < k; ++i) {
      const uint32_t oi = __shfl_sync(MR_FULL_MASK, *my_ek, i), ii = __shfl_sync(MR_FULL_MASK, *my_id, i);
      rank += (oi > *my_ek || (oi == *my_ek && ii < *my_id)) ? 1u : 0u;
    }
    uint32_t src = lane;
#pragma unroll 1
    for (int j = 0; j < k; ++j) {
      const uint32_t b = __ballot_sync(MR_FULL_MASK, (int)lane < k && rank == (uint32_t)j);
      src = (int)lane == j ? (uint32_t)__ffs(b) - 1u : src;
    }
    *my_ek = __shfl_sync(MR_FULL_MASK, *my_ek, src);
    *my_id = __shfl_sync(MR_FULL_MASK, *my_id, src);
  }
  *kmin = __shfl_sync(MR_FULL_MASK, *my_ek, k - 1);
  *idk = __shfl_sync(MR_FULL_MASK, *my_id, k - 1);
}

/* Element e with exact key x counts for the exactness test: it is in bucket H
 * and not below the last pick in exact order. */
template <int IB>
__device__ __forceinline__ uint32_t mr_trunc_counts(uint32_t x, uint32_t e, uint32_t H, uint32_t kmin, uint32_t idk) {
  return ((x >> IB) == H && (x > kmin || (x == kmin && e <= idk))) ? 1u : 0u;
}

template <int EPL, int L>
__device__ __forceinline__ bool mr_top_trunc(const uint32_t* key, int k, uint32_t lane, int32_t* id, uint32_t* ek) {
  constexpr uint32_t M = mr_trunc_bits<EPL>::M; /* index bits: 5 + log2(EPL) */
  constexpr int IB = mr_trunc_bits<EPL>::IB;
  const uint32_t e0 = lane * (uint32_t)EPL;
  uint32_t t[EPL];
#pragma unroll
  for (int r = 0; r < EPL; ++r) t[r] = (key[r] & ~M) | (M - (e0 + (uint32_t)r));
  uint32_t top[L];
  mr_warp_top<uint32_t, EPL, L>(t, top);
  uint32_t my_id, H, need;
  bool pair;
  mr_trunc_picks<L, IB>(top, M, k, lane, &my_id, &H, &need, &pair);
  /* the exact key of my pick, from its lane */
  const uint32_t owner = my_id / (uint32_t)EPL, rr = my_id % (uint32_t)EPL;
  uint32_t my_ek = 0u;
#pragma unroll
  for (int r = 0; r < EPL; ++r) {
    const uint32_t v = __shfl_sync(MR_FULL_MASK, key[r], owner & 31u);
    my_ek = rr == (uint32_t)r ? v : my_ek;
  }
  uint32_t kmin, idk;
  mr_trunc_order(pair, k, lane, &my_ek, &my_id, &kmin, &idk);
  /* bucket H: the elements >= the last pick (exact order) must be the picks in H */
  uint32_t c = 0u;
#pragma unroll
  for (int r = 0; r < EPL; ++r) c += mr_trunc_counts<IB>(key[r], e0 + (uint32_t)r, H, kmin, idk);
  *id = (int32_t)my_id;
  *ek = my_ek;
  return __reduce_add_sync(MR_FULL_MASK, c) == need;
}

/* ---- exact top-k by a filter (v31, large T: targets.md L6) ------------------------------
 *
 * The gate kernel's rows of the fp32-key kinds at large T are bound by issue and latency, not memory (lab call
 * 87, ncu, Kimi-K2 T = 32768: 2085 instructions per row, 128 registers, 57% of the issue slots used); the merge of
 * mr_top_trunc is ~700 of those instructions. Here: B, the k-th largest of the 32 lane maxima (a multiset), bounds
 * the row's k-th key from below (k lanes hold an element >= B), so the row's top k are among the C elements >= B
 * (C >= k; about k + 2 on random rows). Those go to shared memory as (key << 32 | ~index), one 64-bit word each,
 * whose unsigned order is the selection order (key descending, then the lower index); each candidate's rank is
 * the count of candidates above it, and pick j lands in lane j. The same picks as the merge, exactly: no
 * truncated keys, no fallback for exactness. C > 32 (ties at the bound: rows of -inf, all-equal rows) returns
 * false, warp-uniform, with nothing written: the caller takes the merge then.
 * key[]: this lane's exact keys (elements lane * EPL + r); sm: the warp's MR_FILT_WORDS 8-byte words. */
#define MR_FILT_WORDS 48 /* 32 candidates, then 16 pick slots (k <= 16) */
/* (mr_sig_filter_row below repeats this function's bound, prefix and rank steps on its own keys. Folding them into
 * shared helpers was tried in session 30 after the last device call: the same logic, but register allocation and
 * scheduling moved in all 32 filter instantiations, so the measured SASS (017a678's, results run 51) was kept until a
 * device run can time and test the folded form.) */
template <int EPL>
__device__ __forceinline__ bool mr_top_filter(const uint32_t* key, int k, uint32_t lane, unsigned long long* sm,
                                              int32_t* id, uint32_t* ek) {
  const uint32_t e0 = lane * (uint32_t)EPL;
  /* B: k - 1 rounds each drop one lane holding the largest remaining maximum (keys are > 0) */
  uint32_t v = mr_tree_max<EPL>(key);
#pragma unroll 1
  for (int j = 1; j < k; ++j) {
    const uint32_t m = __reduce_max_sync(MR_FULL_MASK, v);
    const uint32_t b = __ballot_sync(MR_FULL_MASK, v == m);
    v = lane == (uint32_t)__ffs(b) - 1u ? 0u : v;
  }
  const uint32_t B = __reduce_max_sync(MR_FULL_MASK, v);
  uint32_t c = 0u;
#pragma unroll
  for (int r = 0; r < EPL; ++r) c += key[r] >= B ? 1u : 0u;
  uint32_t inc = c; /* inclusive prefix of the counts over the lanes */
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t t = __shfl_up_sync(MR_FULL_MASK, inc, off);
    inc += lane >= (uint32_t)off ? t : 0u;
  }
  const uint32_t C = __shfl_sync(MR_FULL_MASK, inc, 31);
  if (C > 32u) return false;
  uint32_t pos = inc - c;
#pragma unroll
  for (int r = 0; r < EPL; ++r)
    if (key[r] >= B) sm[pos++] = ((unsigned long long)key[r] << 32) | (uint32_t)~(e0 + (uint32_t)r);
  __syncwarp();
  const unsigned long long mine = lane < C ? sm[lane] : 0ull;
  uint32_t rank = 0u;
#pragma unroll 4
  for (uint32_t j = 0; j < C; ++j) rank += sm[j] > mine ? 1u : 0u;
  __syncwarp(); /* every read of the candidates is done before the next row writes them */
  if (lane < C && rank < (uint32_t)k) sm[32u + rank] = mine;
  __syncwarp();
  const unsigned long long pk = sm[32u + (lane < (uint32_t)k ? lane : 0u)];
  *ek = (uint32_t)(pk >> 32);
  *id = (int32_t)~(uint32_t)pk;
  return true;
}

/* v31b: a sigmoid row filtered on approximate keys (Kimi-K2, GLM-4.5, MiniMax-M2, Llama-4; grouped DeepSeek-R1
 * since v31c). a = __fdividef(1, 1 + __expf(-x)) + bias (mr_sig_approx_keys: an exp by ex2.approx, a reciprocal by
 * rcp.approx, ~6 instructions instead of ~30 for the exact score) is within eps of the exact key s + bias, where
 * s = 1 / (1 + expf(-x)) as every other form computes it: __expf's error is at most 2 + 1.173 |x| ulp (2^-16.3
 * relative at |x| = 88, past which both sides are 0 or 1), which moves the sigmoid by at most a quarter of that,
 * 2^-18.3; expf's 2 ulp, the approximate reciprocal's 2 ulp and the additions' roundings add less than
 * 2^-20 + (|b| + 1) 2^-22; the kernel passes eps = 2^-17 + (max |b| + 1) 2^-21, twice that. With B the k-th largest
 * lane maximum of a, k elements have a >= B, so the row's k-th exact key is >= B - eps and each of the top k has
 * a >= B - 2 eps: the candidates are the elements with a >= B - 3 eps (the extra eps covers the subtraction's
 * rounding). Each candidate lane then computes the exact score and key of its element (the same expressions as
 * mr_gate_full; -inf outside the kept groups: kept_mask has bit l set for the first lane l of each kept group of LPG
 * lanes, all ones without groups) and ranks it by (key, index) as mr_top_filter does: the same picks and weights,
 * bit for bit. Returns false (warp-uniform) when more than 32 candidates pass (ties at the bound, rows of -inf);
 * the caller takes the exact keys then. x: the clamped logits (-inf past E); sm: the warp's MR_FILT_WORDS words.
 * *w: the pick's unbiased score, 0 for a pick whose key is -inf (lane < k). */
/* The approximate key of one element (v31b, v33): sigmoid(x) by __expf and __fdividef, plus the bias b; -inf for x =
 * -inf (past E). The score is computed for every element and -inf selected after it (v33b): written as
 * x == -inf ? -inf : score, nvcc put each element's MUFU pair in a branch of its own (BSSY / BRA / BSYNC per element),
 * so a lane's elements ran one after the other. */
__device__ __forceinline__ float mr_sig_approx(float x, float b) {
  float e, r; /* __expf(-x) and __fdividef(1, 1 + e) without their steps for subnormal values (ftz: e or r below
                 2^-126 becomes 0, which moves the key by less than 2^-126; eps covers far more) */
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * -1.4426950408889634f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  const float s = r + b;
  return x == -INFINITY ? -INFINITY : s;
}
template <int EPL>
__device__ __forceinline__ void mr_sig_approx_keys(const float* x, const uint32_t* braw, float* a) {
#pragma unroll
  for (int r = 0; r < EPL; ++r)
    a[r] = mr_sig_approx(x[r], __uint_as_float(braw[r]));
}
template <int EPL>
__device__ __forceinline__ bool mr_sig_filter_row(const mr_gate_p& p, const float* x, const float* a, uint32_t lane,
                                                  unsigned long long* sm, float eps, uint32_t kept_mask, int LPG,
                                                  int32_t* id, float* w) {
  const int k = p.top_k;
  const uint32_t e0 = lane * (uint32_t)EPL;
  float m = a[0];
#pragma unroll
  for (int r = 1; r < EPL; ++r) m = fmaxf(m, a[r]);
  uint32_t v = mr_ord32(m); /* >= MR_ORD_NEG_INF > 0 */
#pragma unroll 1
  for (int j = 1; j < k; ++j) {
    const uint32_t mx = __reduce_max_sync(MR_FULL_MASK, v);
    const uint32_t b = __ballot_sync(MR_FULL_MASK, v == mx);
    v = lane == (uint32_t)__ffs(b) - 1u ? 0u : v;
  }
  const float thr = mr_unord32(__reduce_max_sync(MR_FULL_MASK, v)) - 3.0f * eps; /* -inf stays -inf */
  static_assert(EPL <= 32, "a lane's candidates as the bits of one word");
  uint32_t cb = 0u; /* bit r: element r is a candidate (v33b, as in mr_top_filter) */
#pragma unroll
  for (int r = 0; r < EPL; ++r) cb |= (a[r] >= thr ? 1u : 0u) << r;
  const uint32_t c = (uint32_t)__popc(cb);
  uint32_t inc = c;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t t = __shfl_up_sync(MR_FULL_MASK, inc, off);
    inc += lane >= (uint32_t)off ? t : 0u;
  }
  const uint32_t C = __shfl_sync(MR_FULL_MASK, inc, 31);
  /* C < k only where thr is NaN: a bias with NaN (eps NaN) or +inf (eps and B +inf) entries (design.md 7: the CPU
   * backend refuses it; here it must still give valid ids). Then no element passed, the pick words below would be
   * read unwritten, and the exact keys decide instead (session 35's review) */
  if (C > 32u || C < (uint32_t)k) return false;
  uint32_t pos = inc - c;
#pragma unroll 1
  for (uint32_t m = cb; m != 0u; m &= m - 1u) {
    const int r = __ffs(m) - 1;
    float xr = x[0]; /* x[r] by selects: r is not a constant here */
#pragma unroll
    for (int q = 1; q < EPL; ++q) xr = r == q ? x[q] : xr;
    sm[pos++] = ((unsigned long long)__float_as_uint(xr) << 32) | (e0 + (uint32_t)r);
  }
  __syncwarp();
  /* candidate `lane`: its exact score and key */
  unsigned long long mine = 0ull;
  float sc = 0.0f;
  uint32_t ci = 0u;
  if (lane < C) {
    const unsigned long long cw = sm[lane];
    const float xc = __uint_as_float((uint32_t)(cw >> 32));
    ci = (uint32_t)cw;
    const bool kept = ((kept_mask >> ((ci / (uint32_t)EPL) & ~(uint32_t)(LPG - 1))) & 1u) != 0u;
    sc = mr_score(MOEROUTE_SCORE_SIGMOID, xc, 0.0f, 1.0f);
    const float bc = p.bias != NULL ? __ldg(p.bias + ci) : 0.0f;
    const uint32_t key = xc == -INFINITY || !kept ? MR_ORD_NEG_INF : mr_ord32(sc + bc);
    sc = key == MR_ORD_NEG_INF ? 0.0f : sc; /* design.md 4: a -inf pick weighs 0 */
    mine = ((unsigned long long)key << 32) | (uint32_t)~ci;
  }
  __syncwarp(); /* every candidate read before the keys overwrite them */
  if (lane < C) sm[lane] = mine;
  __syncwarp();
  uint32_t rank = 0u;
#pragma unroll 4
  for (uint32_t j = 0; j < C; ++j) rank += sm[j] > mine ? 1u : 0u;
  __syncwarp();
  if (lane < C && rank < (uint32_t)k) sm[32u + rank] = ((unsigned long long)__float_as_uint(sc) << 32) | ci;
  __syncwarp();
  const unsigned long long pk = sm[32u + (lane < (uint32_t)k ? lane : 0u)];
  *id = (int32_t)(uint32_t)pk;
  *w = lane < (uint32_t)k ? __uint_as_float((uint32_t)(pk >> 32)) : 0.0f;
  return true;
}

/* Group scores (contract 2.4): the two largest values seen, as a multiset
 * (equal values count twice). */
__device__ __forceinline__ void mr_top2_push(float v, float* m1, float* m2) {
  const float low = v < *m1 ? v : *m1;
  *m2 = low > *m2 ? low : *m2;
  *m1 = v > *m1 ? v : *m1;
}
/* The same over `lanes` consecutive lanes (a power of two): the two largest of
 * {m1, m2, o1, o2} at each butterfly step; every lane ends with the group's pair. */
__device__ __forceinline__ void mr_top2_butterfly(int lanes, float* m1, float* m2) {
#pragma unroll 1
  for (int off = 1; off < lanes; off <<= 1) {
    const float o1 = __shfl_xor_sync(MR_FULL_MASK, *m1, off);
    const float o2 = __shfl_xor_sync(MR_FULL_MASK, *m2, off);
    const float lo = *m1 < o1 ? *m1 : o1;
    const float hi2 = *m2 > o2 ? *m2 : o2;
    *m1 = *m1 > o1 ? *m1 : o1;
    *m2 = lo > hi2 ? lo : hi2;
  }
}

/* ---- v33: sigmoid rows without groups by segments of 16 lanes (large T: targets.md L6, knob gate_sig_seg) ----------
 * v31b's row (mr_sig_filter_row) with the row over the 16 lanes of a half warp instead of 32: a warp gates two rows at
 * once, so every step that does not scale with the elements (the bound's k - 1 rounds, the counts' scan, the exact
 * keys of the candidates, their ranks, the weights' sum) serves two rows per instruction. Lane sl of segment seg
 * holds elements sl * EPS .. + EPS - 1 (-inf past E) and their biases (braw). The same proof as mr_sig_filter_row:
 * B, the k-th largest of the segment's 16 lane maxima of the approximate keys (k <= 16), has k elements at or above
 * it, so the row's top k have approximate keys >= B - 2 eps, and the candidates are the elements >= B - 3 eps, ranked
 * by exact key and index: the same picks and weights, bit for bit. Segments are tiles of 16 lanes; both segments run
 * every step together (the maxima by two reductions over the whole warp, each with the other half's lanes at 0, v33b;
 * the ballots over the whole warp, masked to the segment afterwards).
 * Returns false for the segment whose candidates exceed 16 (one per lane; ties at the bound, rows of -inf): nothing
 * of it is valid then, and the caller gates that row again by the warp-per-row form. sm: the warp's
 * MR_SIGSEG_WORDS 8-byte words (per segment 16 candidates, then 16 picks). *w: the pick's unbiased score (lanes
 * sl < k), to be finished by mr_finish_weight over the segment's 16 lanes. */
#define MR_SIGSEG_WORDS 64
/* GR (lab form, session 32; knob gate_sig_seg = 1 only): grouped rows whose groups are whole segment lanes (LPG =
 * group_size / EPS, a power of two: the host asks group_reg_lanes >= 2 and EPS = 2 EPL). The groups as
 * mr_gate_full's v31c form ranks them, within the segment: group scores on the approximate values (the top two of
 * the group's lanes), ranks by shuffles over the segment's lead lanes, the kept groups only where the least kept beats
 * the best dropped by more than 7 eps (else the row falls back, as there), the dropped groups' elements -inf. The
 * bound is then the k-th largest of the segment's 32 lane top-two values, not of the 16 lane maxima: with half the
 * lanes dropped the maxima's bound leaves ~18 candidates on random rows (host estimate: 52 % of DeepSeek-R1's rows
 * above 16), the top-two bound ~8.4 (none above 16); k elements are at or above it all the same, so the proof holds. */
template <int DT, int EPS, bool GR = false>
__device__ __forceinline__ bool mr_sig_seg_row(const mr_gate_p& p, uint32_t lane, const unsigned char* row,
                                               const uint32_t* raw, const uint32_t* braw, float eps,
                                               unsigned long long* sm, int32_t* id, float* w) {
  constexpr int W = MR_ESZ(DT);
  const int k = p.top_k;
  const bool f16 = p.f16 != 0;
  const uint32_t sl = lane & 15u, seg = lane >> 4;
  const uint32_t smask = 0xffffu << (16u * seg);
  const uint32_t e0 = sl * (uint32_t)EPS;
  const bool hi = seg != 0u;
  float a[EPS];
  float m = -INFINITY;
#pragma unroll
  for (int r = 0; r < EPS; ++r) {
    const float x = mr_clamp_logit(mr_raw_float<W>(raw[r], f16));
    a[r] = mr_sig_approx(x, __uint_as_float(braw[r]));
    m = fmaxf(m, a[r]);
  }
  uint32_t v = mr_ord32(m); /* >= MR_ORD_NEG_INF > 0 */
  uint32_t v2 = 0u;         /* GR: the lane's second value, the next to come up when the lane's first is dropped */
  uint32_t kept_seg = 0xffffu; /* GR: bit l set for the lead lane l of each kept group of the segment */
  int LPG = 1;
  bool clear = true;
  if constexpr (GR) {
    LPG = p.group_size / EPS;
    float l1 = -INFINITY, l2 = -INFINITY;
#pragma unroll
    for (int r = 0; r < EPS; ++r) mr_top2_push(a[r], &l1, &l2);
    float m1 = l1, m2 = l2;
    mr_top2_butterfly(LPG, &m1, &m2); /* offsets below LPG <= 16: within the segment */
    const float gv = p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
    const bool lead = (sl & (uint32_t)(LPG - 1)) == 0u && (int)e0 < p.num_experts;
    const uint32_t gk = lead ? mr_ord32(gv) : 0u;
    uint32_t rank = 0u;
#pragma unroll 1
    for (int j = 0; j < 16; j += LPG) {
      const uint32_t o = __shfl_sync(MR_FULL_MASK, gk, (int)((lane & 16u) | (uint32_t)j));
      rank += (o > gk || (o == gk && (uint32_t)j < sl)) ? 1u : 0u;
    }
    kept_seg = (__ballot_sync(MR_FULL_MASK, gk != 0u && rank < (uint32_t)p.topk_groups) >> (16u * seg)) & 0xffffu;
    const bool kept = ((kept_seg >> (sl & ~(uint32_t)(LPG - 1))) & 1u) != 0u;
    const uint32_t lo0 = __reduce_min_sync(MR_FULL_MASK, !hi && lead && kept ? gk : 0xffffffffu);
    const uint32_t lo1 = __reduce_min_sync(MR_FULL_MASK, hi && lead && kept ? gk : 0xffffffffu);
    const uint32_t hi0 = __reduce_max_sync(MR_FULL_MASK, !hi && lead && !kept ? gk : 0u);
    const uint32_t hi1 = __reduce_max_sync(MR_FULL_MASK, hi && lead && !kept ? gk : 0u);
    clear = mr_unord32(hi ? lo1 : lo0) - mr_unord32(hi ? hi1 : hi0) > 7.0f * eps; /* as mr_gate_full's v31c */
    if (!kept) {
#pragma unroll
      for (int r = 0; r < EPS; ++r) a[r] = -INFINITY;
      l1 = -INFINITY;
      l2 = -INFINITY;
    }
    v = mr_ord32(l1);
    v2 = mr_ord32(l2);
  }
  /* the segments' maxima by two reductions over the whole warp, each with the other segment's lanes at 0 (v33b: a
   * reduction over the segment's mask, which differs between the two halves, took nvcc's divergent path, one
   * WARPSYNC.COLLECTIVE per half and round) */
#pragma unroll 1
  for (int j = 1; j < k; ++j) {
    const uint32_t m0 = __reduce_max_sync(MR_FULL_MASK, hi ? 0u : v);
    const uint32_t m1 = __reduce_max_sync(MR_FULL_MASK, hi ? v : 0u);
    const uint32_t b = __ballot_sync(MR_FULL_MASK, v == (hi ? m1 : m0)) & smask;
    if constexpr (GR) {
      if (lane == (uint32_t)__ffs(b) - 1u) {
        v = v2;
        v2 = 0u;
      }
    } else {
      v = lane == (uint32_t)__ffs(b) - 1u ? 0u : v;
    }
  }
  const uint32_t m0 = __reduce_max_sync(MR_FULL_MASK, hi ? 0u : v);
  const uint32_t m1 = __reduce_max_sync(MR_FULL_MASK, hi ? v : 0u);
  const float thr = mr_unord32(hi ? m1 : m0) - 3.0f * eps; /* -inf stays -inf */
  static_assert(EPS <= 32, "a lane's candidates as the bits of one word");
  uint32_t cb = 0u; /* bit r: element r is a candidate */
#pragma unroll
  for (int r = 0; r < EPS; ++r) cb |= (a[r] >= thr ? 1u : 0u) << r;
  const uint32_t c = (uint32_t)__popc(cb);
  uint32_t inc = c; /* inclusive prefix over the segment's lanes */
#pragma unroll
  for (uint32_t off = 1; off < 16u; off <<= 1) {
    const uint32_t t = __shfl_up_sync(MR_FULL_MASK, inc, off, 16);
    inc += sl >= off ? t : 0u;
  }
  const uint32_t C = __shfl_sync(MR_FULL_MASK, inc, 15, 16);
  const bool ok = C <= 16u && C >= (uint32_t)k && clear; /* C < k: thr NaN (a non-finite bias), as mr_sig_filter_row */
  unsigned long long* cand = sm + 32u * seg; /* 16 candidates, then 16 picks */
  if (ok) { /* the candidates' indices (the logits are read again below: raw need not live past the keys) */
    uint32_t pos = inc - c;
#pragma unroll 1
    for (uint32_t m = cb; m != 0u; m &= m - 1u) cand[pos++] = e0 + (uint32_t)(__ffs(m) - 1); /* ~0.7 per lane */
  }
  __syncwarp();
  const bool mine_c = ok && sl < C;
  unsigned long long mine = 0ull;
  float sc = 0.0f;
  uint32_t ci = 0u;
  if (mine_c) { /* candidate sl: its exact score and key (mr_sig_filter_row's expressions) */
    ci = (uint32_t)cand[sl];
    const uint32_t rc =
        W == 4 ? __ldg((const unsigned int*)row + ci) : (uint32_t)__ldg((const unsigned short*)row + ci) << 16;
    const float xc = mr_clamp_logit(mr_raw_float<W>(rc, f16));
    sc = mr_score(MOEROUTE_SCORE_SIGMOID, xc, 0.0f, 1.0f);
    const float bc = p.bias != NULL ? __ldg(p.bias + ci) : 0.0f;
    bool kept = true; /* GR: the candidate's group (its segment lane's lead bit) */
    if constexpr (GR) kept = ((kept_seg >> ((ci / (uint32_t)EPS) & ~(uint32_t)(LPG - 1))) & 1u) != 0u;
    const uint32_t key = xc == -INFINITY || !kept ? MR_ORD_NEG_INF : mr_ord32(sc + bc);
    sc = key == MR_ORD_NEG_INF ? 0.0f : sc; /* design.md 4: a -inf pick weighs 0 */
    mine = ((unsigned long long)key << 32) | (uint32_t)~ci;
  }
  __syncwarp(); /* every candidate read before the keys overwrite them */
  if (mine_c) cand[sl] = mine;
  __syncwarp();
  uint32_t rank = 0u;
  if (mine_c) {
#pragma unroll 4
    for (uint32_t j = 0; j < C; ++j) rank += cand[j] > mine ? 1u : 0u;
  }
  __syncwarp();
  if (mine_c && rank < (uint32_t)k) cand[16u + rank] = ((unsigned long long)__float_as_uint(sc) << 32) | ci;
  __syncwarp();
  const unsigned long long pk = cand[16u + (sl < (uint32_t)k ? sl : 0u)];
  *id = (int32_t)(uint32_t)pk;
  *w = sl < (uint32_t)k ? __uint_as_float((uint32_t)(pk >> 32)) : 0.0f;
  __syncwarp(); /* every pick read before the next row's candidates overwrite them */
  return ok;
}

/* Grouped selection, G <= 32 groups held by the lanes j = 0, step, 2*step ...
 * (gk: the group's ord32 score in its lane, 0 in every other lane): is my
 * group among the topk_groups best (ties to the lower group = lower lane)?
 * Its rank is counted against every group at once (independent shuffles)
 * instead of topk_groups rounds of a warp reduction (v4). */
__device__ __forceinline__ bool mr_group_kept(uint32_t gk, uint32_t lane, int step, int topk_groups) {
  uint32_t rank = 0;
#pragma unroll 1
  for (int j = 0; j < 32; j += step) {
    const uint32_t o = __shfl_sync(MR_FULL_MASK, gk, j);
    rank += (o > gk || (o == gk && (uint32_t)j < lane)) ? 1u : 0u;
  }
  return gk != 0u && rank < (uint32_t)topk_groups;
}

/* ---- weights ---------------------------------------------------------------------- */

/* w (lanes < k: the unbiased score of pick `lane`, 0 for a -inf pick) -> final
 * weight: renormalised in pick order (design.md 5), then scaled. width: the lanes of a row (16: v33's segments, whose
 * picks are in each segment's lanes 0 .. k-1). mr_finish_weights: the same for R rows of one warp side by side (v49). */
template <int R>
__device__ __forceinline__ void mr_finish_weights(const mr_gate_p& p, float (&w)[R], int width = 32) {
  if (p.renormalize) {
    float tot[R];
#pragma unroll
    for (int q = 0; q < R; ++q) tot[q] = 0.0f;
    const int k = p.top_k;
#pragma unroll 4
    for (int j = 0; j < k; ++j)
#pragma unroll
      for (int q = 0; q < R; ++q) tot[q] += __shfl_sync(MR_FULL_MASK, w[q], j, width);
#pragma unroll
    for (int q = 0; q < R; ++q) w[q] = (w[q] / fmaxf(tot[q], 1e-20f)) * p.scale;
    return;
  }
#pragma unroll
  for (int q = 0; q < R; ++q) w[q] = w[q] * p.scale;
}
__device__ __forceinline__ float mr_finish_weight(const mr_gate_p& p, float w, int width = 32) {
  float w1[1] = {w};
  mr_finish_weights<1>(p, w1, width);
  return w1[0];
}

/* ---- PACKED ------------------------------------------------------------------------- */

/* A lane's EPL packed keys and clamped logits. key = ord16(logit) << 16 | (0xffff - e). fmaxf(v, -inf) turns NaN into
 * -inf (fmaxf returns the other operand), + 0.0f turns -0 into +0 (the value is exact: a 16-bit float is an fp32
 * value); +inf stays +inf in the key, above every finite 16-bit value, as FLT_MAX would be. x: the clamped logit
 * (design.md 1-2) for the softmax denominator. */
template <int DT, int EPL>
__device__ __forceinline__ void mr_packed_keys(const uint32_t* raw, uint32_t lane, uint32_t* key, float* x) {
  const uint32_t ibase = 0xffffu - lane * (uint32_t)EPL;
#pragma unroll
  for (int r = 0; r < EPL; ++r) {
    const float f = fmaxf(DT == MOEROUTE_DTYPE_BF16 ? __uint_as_float(raw[r]) : mr_f16hi_to_float(raw[r]), -INFINITY) +
                    0.0f;
    x[r] = fminf(f, FLT_MAX);
    const uint32_t b = DT == MOEROUTE_DTYPE_BF16 ? __float_as_uint(f) : mr_float_to_f16hi(f);
    const uint32_t o = b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u); /* low half: 0 or 0xffff */
    key[r] = (o & 0xffff0000u) | (ibase - (uint32_t)r);
  }
}

/* The clamped logit of a packed key (its high half) */
template <int DT>
__device__ __forceinline__ float mr_packed_logit(uint32_t key) {
  uint32_t o = key >> 16;
  o = (o & 0x8000u) ? (o & 0x7fffu) : (~o & 0xffffu); /* unord16 */
  return mr_clamp_logit(DT == MOEROUTE_DTYPE_BF16 ? __uint_as_float(o << 16) : mr_f16hi_to_float(o << 16));
}

/* This lane's part of the softmax denominator (the row maximum max) */
template <int EPL>
__device__ __forceinline__ float mr_packed_lane_sum(const float* x, float max) {
  float sum = 0.0f;
  if (max != -INFINITY) {
#pragma unroll
    for (int r = 0; r < EPL; ++r) sum += mr_exp_sum_term(x[r] - max);
  }
  return sum;
}

/* The unbiased score of the pick whose key this lane holds (lanes < k; design.md 4: a -inf pick weighs 0) */
template <int DT>
__device__ __forceinline__ float mr_packed_score(uint32_t my_key, uint32_t lane, int k, float max, float sum) {
  constexpr uint32_t INF16 = DT == MOEROUTE_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
  constexpr uint32_t ONINF = (~(INF16 | 0x8000u)) & 0xffffu; /* ord16(-inf) */
  float w = 0.0f;
  if ((int)lane < k && (my_key >> 16) != ONINF)
    w = expf(mr_packed_logit<DT>(my_key) - max) / sum; /* not -inf, so max > -inf and sum >= 1 */
  return w;
}

/* The top L of R rows (mr_warp_top_rows): m[q] = row q's largest key, my_key[q] = its key of rank lane (lanes < L) */
template <int EPL, int L, int R>
__device__ __forceinline__ void mr_rows_top(const uint32_t (&key)[R][EPL], uint32_t lane, uint32_t (&m)[R],
                                            uint32_t (&my_key)[R]) {
  uint32_t top[R][L];
  mr_warp_top_rows<uint32_t, EPL, L, R>(key, top);
#pragma unroll
  for (int q = 0; q < R; ++q) {
    m[q] = top[q][0];
    my_key[q] = mr_top_of_lane<uint32_t, L>(top[q], lane);
  }
}
/* The same with L the merge width for k <= 16: 4, 8 or 16 */
template <int EPL, int R>
__device__ __forceinline__ void mr_rows_top_k(const uint32_t (&key)[R][EPL], int k, uint32_t lane, uint32_t (&m)[R],
                                              uint32_t (&my_key)[R]) {
  if (k <= 4)
    mr_rows_top<EPL, 4, R>(key, lane, m, my_key);
  else if (k <= 8)
    mr_rows_top<EPL, 8, R>(key, lane, m, my_key);
  else
    mr_rows_top<EPL, 16, R>(key, lane, m, my_key);
}

template <int DT, int EPL, int FILT = 0> /* FILT: the picks by mr_top_filter first (v34, 256 < E <= 512 at large T) */
__device__ __forceinline__ void mr_gate_packed(const mr_gate_p& p, uint32_t lane, const uint32_t* raw, int32_t* out_id,
                                               float* out_w, unsigned long long* fsm = nullptr) {
  uint32_t key1[1][EPL]; /* (one row of mr_rows_top's form) */
  uint32_t* key = key1[0];
  float x[EPL];
  mr_packed_keys<DT, EPL>(raw, lane, key, x);

  const int k = p.top_k;
  float max = 0.0f, sum = 0.0f;
  uint32_t my_key = 0u;
  bool filtered = false;
  if (FILT != 0 && k <= 16) { /* v34: the keys are unique (the index in the low half), so the filter's picks are the
                                 merge's, in the same order; false (warp-uniform) for more than 32 candidates */
    int32_t fid;
    filtered = mr_top_filter<EPL>(key, k, lane, fsm, &fid, &my_key);
  }
  if (k <= 16) { /* v4: bitonic merges */
    uint32_t m;
    if (filtered) {
      m = __shfl_sync(MR_FULL_MASK, my_key, 0); /* pick 0: the row maximum */
    } else {
      uint32_t m1[1], mk1[1];
      mr_rows_top_k<EPL, 1>(key1, k, lane, m1, mk1);
      m = m1[0];
      my_key = mk1[0];
    }
    max = mr_packed_logit<DT>(m);
    if (p.renormalize) {
      /* the denominator cancels in the renormalisation: w_j = exp(x_j - max),
       * then / sum of the k (design.md 14) */
      sum = 1.0f;
    } else {
      sum = mr_packed_lane_sum<EPL>(x, max);
#pragma unroll
      for (int j = 1; j <= 5; ++j) sum += __shfl_xor_sync(MR_FULL_MASK, sum, MR_SUM_OFF(j));
    }
  } else {
#pragma unroll 1
  for (int j = 0; j < k; ++j) {
    const uint32_t m = __reduce_max_sync(MR_FULL_MASK, mr_tree_max<EPL>(key));
    if (j == 0) { /* warp-uniform: pick 0 is the row maximum; the denominator */
      max = mr_packed_logit<DT>(m);
      sum = mr_packed_lane_sum<EPL>(x, max);
    }
#pragma unroll
    for (int r = 0; r < EPL; ++r) key[r] = key[r] == m ? 0u : key[r];
    my_key = (int)lane == j ? m : my_key;
    if (j >= 1 && j <= 5) sum += __shfl_xor_sync(MR_FULL_MASK, sum, MR_SUM_OFF(j));
  }
#pragma unroll 1
  for (int j = k < 1 ? 1 : k; j <= 5; ++j) sum += __shfl_xor_sync(MR_FULL_MASK, sum, MR_SUM_OFF(j));
  }

  /* weights: lane j < k holds pick j */
  *out_w = mr_finish_weight(p, mr_packed_score<DT>(my_key, lane, k, max, sum));
  *out_id = (int32_t)(0xffffu - (my_key & 0xffffu));
}

/* R rows of 16-bit softmax in ONE warp (v49, tiny.cu's rows form at T = 2 .. 4; k <= 16, the caller's plan): the same
 * keys, merges and expressions as mr_gate_packed (so the same ids and weight bits), each step's work for the R rows
 * side by side, so that their independent chains interleave instead of running one after the other. Lane l < k of
 * out_id[q] / out_w[q] holds row q's pick l. */
template <int DT, int EPL, int R>
__device__ __forceinline__ void mr_gate_packed_rows(const mr_gate_p& p, uint32_t lane, const uint32_t (&raw)[R][EPL],
                                                    int32_t (&out_id)[R], float (&out_w)[R]) {
  uint32_t key[R][EPL];
  float x[R][EPL];
#pragma unroll
  for (int q = 0; q < R; ++q) mr_packed_keys<DT, EPL>(raw[q], lane, key[q], x[q]);
  const int k = p.top_k;
  uint32_t my_key[R], m[R];
  mr_rows_top_k<EPL, R>(key, k, lane, m, my_key);
  float max[R], sum[R];
#pragma unroll
  for (int q = 0; q < R; ++q) max[q] = mr_packed_logit<DT>(m[q]);
  if (p.renormalize) { /* as mr_gate_packed (design.md 14) */
#pragma unroll
    for (int q = 0; q < R; ++q) sum[q] = 1.0f;
  } else {
#pragma unroll
    for (int q = 0; q < R; ++q) sum[q] = mr_packed_lane_sum<EPL>(x[q], max[q]);
#pragma unroll
    for (int j = 1; j <= 5; ++j)
#pragma unroll
      for (int q = 0; q < R; ++q) sum[q] += __shfl_xor_sync(MR_FULL_MASK, sum[q], MR_SUM_OFF(j));
  }
  float w[R];
#pragma unroll
  for (int q = 0; q < R; ++q) w[q] = mr_packed_score<DT>(my_key[q], lane, k, max[q], sum[q]);
  mr_finish_weights<R>(p, w);
#pragma unroll
  for (int q = 0; q < R; ++q) {
    out_w[q] = w[q];
    out_id[q] = (int32_t)(0xffffu - (my_key[q] & 0xffffu));
  }
}

/* ---- PACKED, a segment of LPR lanes per row (large T, v6) -------------------------
 *
 * The same selection as mr_gate_packed (the same keys, hence the same picks and
 * order, ties included) with a row spread over LPR lanes instead of 32: EPS =
 * 32*EPL/LPR elements per lane, kept in chunks of L (the top-L merge of design.md
 * 15 inside the lane), then log2(LPR) butterfly stages instead of five. For rows
 * of E <= 256 this issues about half the instructions of a warp per row, which is
 * what bounds the gate kernel's rate at large T (docs/perf-log.md v6); at decode
 * the warp per row keeps the shortest dependent chain. Keys carry an in-lane
 * index during the lane's own merge (its low half 0xffff - r), corrected once to
 * 0xffff - e before the butterfly. The weights follow mr_gate_packed's
 * expressions; only the softmax denominator's summation order differs (within
 * the contract's tolerance, design.md 11-12). k <= L <= LPR (the dispatch).
 * sl: the lane within the segment; the segment's lanes are converged (every lane
 * of the warp runs this together).
 */
/* The selection key's high half of a 16-bit logit (raw: its bits << 16), as mr_gate_packed:
 * NaN -> -inf, -0 -> +0, then the order-preserving 16 bits. The low half (0xffff - index)
 * is the caller's. */
template <int DT>
__device__ __forceinline__ uint32_t mr_seg_key_hi(uint32_t raw) {
  const float f =
      fmaxf(DT == MOEROUTE_DTYPE_BF16 ? __uint_as_float(raw) : mr_f16hi_to_float(raw), -INFINITY) + 0.0f;
  const uint32_t b = DT == MOEROUTE_DTYPE_BF16 ? __float_as_uint(f) : mr_float_to_f16hi(f);
  const uint32_t o = b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
  return o & 0xffff0000u;
}

/* Two 16-bit logits in one word (bf16x2 or f16x2): the lane max, the segment min and the
 * >= mask of the filter below, in the format's own compares. NaN: max / min return the other
 * input, >= is false (cuda_bf16.h, cuda_fp16.h). */
template <int DT>
struct mr_x2 {
  typedef typename std::conditional<DT == MOEROUTE_DTYPE_BF16, __nv_bfloat162, __half2>::type T;
  static __device__ __forceinline__ T v(uint32_t u) {
    T x;
    memcpy(&x, &u, 4);
    return x;
  }
  static __device__ __forceinline__ uint32_t u(T x) {
    uint32_t r;
    memcpy(&r, &x, 4);
    return r;
  }
  static __device__ __forceinline__ uint32_t max(uint32_t a, uint32_t b) { return u(__hmax2(v(a), v(b))); }
  static __device__ __forceinline__ uint32_t min(uint32_t a, uint32_t b) { return u(__hmin2(v(a), v(b))); }
  static __device__ __forceinline__ uint32_t ge(uint32_t a, uint32_t b) { return __hge2_mask(v(a), v(b)); }
  static __device__ __forceinline__ uint32_t gt(uint32_t a, uint32_t b) { return __hgt2_mask(v(a), v(b)); }
};

/* The most candidates a lane may hold for the filter below to run (else the warp takes the
 * sorting network): past ~16 the insertion loop costs what the network does. */
#define MR_SEG_FILTER_MAX 16u

/* Shared words per warp of the rank form (below): each of the warp's 32 / LPR segments holds at
 * most MR_SEG_RANK_CMAX(LPR) = 4 LPR candidates in a list of its own, 5 LPR words apart (16-byte
 * aligned, and the lists' starts on banks 0, 8, 16, 24 (LPR 8) or 0, 20, 8, 28, ... (LPR 4): the
 * segments' 16-byte reads of their lists do not share banks; 4 LPR apart they would, 4-way) */
#define MR_SEG_RANK_CMAX(LPR) (4 * (LPR))
#define MR_SEG_RANK_STRIDE(LPR) (5 * (LPR))
#define MR_SEG_RANK_WORDS 160
/* The calling warp's MR_SEG_RANK_WORDS words of a CTA of NWARPS warps (the PK kernels alone call it:
 * the other kernels keep no shared memory for it) */
template <int NWARPS>
__device__ __forceinline__ uint32_t* mr_seg_rank_smem(uint32_t warp) {
  __shared__ __align__(16) uint32_t s[NWARPS * MR_SEG_RANK_WORDS];
  return s + warp * MR_SEG_RANK_WORDS;
}

/* The segment rows' top k by ranks instead of lists and a butterfly (v21, knob gate_seg_form 3, PK
 * only; mr_seg_filter_top's RANK, after its tight bound: acc, this lane's candidates, ok per lane).
 * The candidates go to a list per segment in shared memory (sk: this warp's MR_SEG_RANK_WORDS words),
 * each at its lane's exclusive prefix of the segment's counts; then each lane takes the list's
 * slots sl, sl + LPR, ... and counts the keys of the list greater than each (the keys are distinct:
 * they carry the expert index), and the key of rank r < k goes to word r. *my_key = the key of rank
 * sl (lanes sl < k), top[0] = the row's largest key (top[1 ..] unset: the caller reads top[0]
 * alone): the same keys as the butterfly's top[sl] and top[0], so the same bits after. A lane
 * stores a candidate with ~22 instructions (SASS) where the list insertion takes ~40, and the ranks take ~2 C_w ceil(C_w / LPR) compares (C_w: the warp's
 * largest segment list) where the butterfly takes ~140 instructions per warp step (perf-log v21).
 * Returns false (warp-uniform; nothing written) where a lane's bound does not hold or it has more
 * than MR_SEG_FILTER_MAX candidates, or a segment has more than 4 LPR: the caller takes the network. */
template <int DT, int EPS, int LPR, int L>
__device__ __forceinline__ bool mr_seg_rank_place(uint32_t sl, uint32_t acc, bool ok, const unsigned char* row,
                                                  int k, uint32_t* sk, uint32_t* top, uint32_t* my_key) {
  constexpr uint32_t CMAX = MR_SEG_RANK_CMAX(LPR);
  static_assert((32 / LPR) * MR_SEG_RANK_STRIDE(LPR) == MR_SEG_RANK_WORDS, "one list per segment, 5 LPR apart");
  const uint32_t c = (uint32_t)__popc(acc);
  uint32_t incl = c; /* the segment's inclusive prefix of the counts */
#pragma unroll
  for (int off = 1; off < LPR; off <<= 1) {
    const uint32_t v = __shfl_up_sync(MR_FULL_MASK, incl, off, LPR);
    if (sl >= (uint32_t)off) incl += v;
  }
  const uint32_t C = __shfl_sync(MR_FULL_MASK, incl, LPR - 1, LPR);
  if (!__all_sync(MR_FULL_MASK, ok && C <= CMAX)) return false;
  uint32_t* s = sk + ((threadIdx.x & 31u) / LPR) * (uint32_t)MR_SEG_RANK_STRIDE(LPR);
  *reinterpret_cast<uint4*>(s + 4u * sl) = make_uint4(0u, 0u, 0u, 0u); /* zero keys: below every key */
  __syncwarp();
  const unsigned short* rp = reinterpret_cast<const unsigned short*>(row) + sl * (uint32_t)EPS;
  const uint32_t inv0 = 0xffffu - sl * (uint32_t)EPS;
  uint32_t pos = incl - c;
#pragma unroll 1
  while (acc != 0u) {
    const uint32_t j = (uint32_t)__ffs(acc) - 1u;
    acc &= acc - 1u;
    const uint32_t r = ((j & 15u) << 1) | (j >> 4);
    s[pos++] = mr_seg_key_hi<DT>((uint32_t)__ldg(rp + r) << 16) + (inv0 - r);
  }
  __syncwarp();
  const uint32_t Cw = __reduce_max_sync(MR_FULL_MASK, C); /* >= k */
  constexpr int NM = (int)(CMAX / LPR);                    /* 4 slots per lane */
  uint32_t x[NM], rk[NM];
#pragma unroll
  for (int m = 0; m < NM; ++m) {
    x[m] = s[sl + (uint32_t)(m * LPR)];
    rk[m] = 0u;
  }
#pragma unroll 1
  for (uint32_t j0 = 0; j0 < Cw; j0 += 4u) { /* warp-uniform; the slots past C hold 0 */
    const uint4 q = *reinterpret_cast<const uint4*>(s + j0);
#pragma unroll
    for (int m = 0; m < NM; ++m)
      if ((uint32_t)(m * LPR) < Cw) /* warp-uniform */
        rk[m] += (uint32_t)(q.x > x[m]) + (uint32_t)(q.y > x[m]) + (uint32_t)(q.z > x[m]) + (uint32_t)(q.w > x[m]);
  }
  __syncwarp();
#pragma unroll
  for (int m = 0; m < NM; ++m) /* ranks are distinct; x = 0: no key (a slot past C, or m past the loop) */
    if (x[m] != 0u && rk[m] < (uint32_t)k) s[rk[m]] = x[m];
  __syncwarp();
  *my_key = s[sl < (uint32_t)k ? sl : 0u];
  top[0] = s[0];
  __syncwarp(); /* the next row's zeroing after every read */
  return true;
}

/* The segment rows' top L by a filter (v20, knob gate_seg_filter): at large T the gate kernel
 * is bound by the ALU pipe, half of it the sorting network's min / max (docs/perf-log.md v20).
 * Each of the segment's LPR >= k lanes holds its own maximum, so at least k elements are >= th,
 * the least of the lanes' maxima, and no element below th can be among the top k. A lane
 * marks its elements >= th (a 16-bit x2 compare per two elements), reads each marked element
 * again (from L1: the row was just loaded) and inserts its key into top[] (descending, zeros
 * below every key: a key's high half is >= ord16(-inf) > 0). Keys carry the element's own
 * index (0xffff - e), the same keys as the network's path, so the butterfly that follows
 * returns the row's same top k in the same order. Positions k .. L-1 may differ (a lane with
 * fewer than L candidates leaves zeros there, and with the tight bound a segment may hold only k
 * candidates: lanes k .. L-1 then carry key 0, id 0xffff); no caller reads them (the gate kernel
 * writes lanes sl < k, route's L1 ranks only those).
 *
 * Returns false (warp-uniform; top[] undefined) where the bound does not hold or would not
 * pay: a lane whose maximum is -inf or NaN (all its elements -inf / NaN: th says nothing about
 * the NaN elements, whose key is -inf's), a lane with more than MR_SEG_FILTER_MAX candidates.
 * The caller then takes the network. Needs every element of every lane in the row (E =
 * LPR * EPS: no -inf fill) and EPS <= 32 (bit j of the mask: element 2j for j < 16, element
 * 2(j-16) + 1 above).
 *
 * pr[]: the lane's elements in pairs, word i = elements 2i (low half) and 2i + 1 (high half).
 * TB (v21, knob gate_seg_form 2) compiles a tighter bound, taken where `tight`: th = the k-th
 * largest of the segment's 2 LPR half-maxima (a lane's maximum over its even elements and over
 * its odd ones: 2 LPR distinct elements), at least k elements are >= it by its own count, so
 * the same argument holds. It counts NaN as nothing (a >= with NaN is false), so no lane needs
 * its own check, only th > -inf. With random rows (a model of 20000 warps, perf-log v21) the
 * busiest lane of a warp holds 4.0 candidates instead of 6.9 (k = 8 over 8 lanes) and 3.8
 * instead of 6.1 (k = 4 over 4 lanes); the count costs LPR shuffles and 4 LPR compares. */
template <int DT, int EPS, int LPR, int L, bool TB = false, bool RANK = false>
__device__ __forceinline__ bool mr_seg_filter_top(uint32_t sl, const uint32_t* pr, const unsigned char* row,
                                                  int k, bool tight, uint32_t* top, uint32_t* sk = nullptr,
                                                  uint32_t* my_key = nullptr) {
  static_assert(!RANK || TB, "the rank form takes the tight bound");
  static_assert(EPS % 2 == 0 && EPS <= 32, "filter: pairs of elements, 32 bits of mask");
  static_assert(LPR <= 16, "the tight bound's count: 16 bits per half");
  typedef mr_x2<DT> X;
  constexpr int NP = EPS / 2;
  uint32_t mx[NP];
#pragma unroll
  for (int i = 0; i < NP; ++i) mx[i] = pr[i];
#pragma unroll
  for (int w = 1; w < NP; w *= 2) /* a balanced tree */
#pragma unroll
    for (int i = 0; i + w < NP; i += 2 * w) mx[i] = X::max(mx[i], mx[i + w]);
  const uint32_t ninf2 = DT == MOEROUTE_DTYPE_BF16 ? 0xff80ff80u : 0xfc00fc00u;
  uint32_t th;
  bool ok;
  if (TB && tight) {
    const uint32_t a = __byte_perm(mx[0], 0u, 0x1010), b = __byte_perm(mx[0], 0u, 0x3232); /* each in both halves */
    uint32_t ca = 0u, cb = 0u; /* bit j (and j + 16): lane j's half-maxima >= a (b) */
#pragma unroll
    for (int j = 0; j < LPR; ++j) {
      const uint32_t g = __shfl_sync(MR_FULL_MASK, mx[0], j, LPR);
      ca |= X::ge(g, a) & (0x00010001u << j);
      cb |= X::ge(g, b) & (0x00010001u << j);
    }
    th = __popc(ca) >= k ? a : ninf2;
    if (__popc(cb) >= k) th = X::max(th, b);
#pragma unroll
    for (int off = LPR / 2; off > 0; off >>= 1) th = X::max(th, __shfl_xor_sync(MR_FULL_MASK, th, off));
    ok = X::gt(th, ninf2) == 0xffffffffu;
  } else {
    th = X::max(mx[0], __byte_perm(mx[0], 0u, 0x1032)); /* the lane max, in both halves */
    ok = X::gt(th, ninf2) == 0xffffffffu;
#pragma unroll
    for (int off = LPR / 2; off > 0; off >>= 1) th = X::min(th, __shfl_xor_sync(MR_FULL_MASK, th, off));
  }
  uint32_t acc = 0u;
#pragma unroll
  for (int i = 0; i < NP; ++i) acc |= X::ge(pr[i], th) & (0x00010001u << i);
  ok = ok && (uint32_t)__popc(acc) <= MR_SEG_FILTER_MAX;
  if constexpr (RANK) return mr_seg_rank_place<DT, EPS, LPR, L>(sl, acc, ok, row, k, sk, top, my_key);
  if (!__all_sync(MR_FULL_MASK, ok)) return false;
#pragma unroll
  for (int i = 0; i < L; ++i) top[i] = 0u;
  const unsigned short* rp = reinterpret_cast<const unsigned short*>(row) + sl * (uint32_t)EPS;
  const uint32_t inv0 = 0xffffu - sl * (uint32_t)EPS;
#pragma unroll 1
  while (acc != 0u) {
    const uint32_t j = (uint32_t)__ffs(acc) - 1u;
    acc &= acc - 1u;
    const uint32_t r = ((j & 15u) << 1) | (j >> 4);
    uint32_t key = mr_seg_key_hi<DT>((uint32_t)__ldg(rp + r) << 16) + (inv0 - r);
#pragma unroll
    for (int i = 0; i < L; ++i) {
      const uint32_t h = mr_kmax(top[i], key);
      key = top[i] ^ key ^ h; /* the smaller */
      top[i] = h;
    }
  }
  __syncwarp();
  return true;
}

/* The segment's lists merged across its LPR lanes (log2 LPR butterfly stages): every lane ends with
 * the segment's top L, descending */
template <int LPR, int L>
__device__ __forceinline__ void mr_seg_butterfly(uint32_t* top) {
#pragma unroll
  for (int off = LPR / 2; off > 0; off >>= 1) {
    uint32_t b[L];
#pragma unroll
    for (int i = 0; i < L; ++i) b[i] = __shfl_xor_sync(MR_FULL_MASK, top[i], off);
    mr_merge_top<uint32_t, L>(top, b);
  }
}

/* PK (v21, knob gate_seg_form 1 - 3): src holds the lane's elements in pairs (mr_load_pairs), else
 * one per word (mr_load_lane<2, EPS>). filt (the launch's, uniform): 0 = the network, 1 = the filter
 * by the least of the lanes' maxima, 2 = by the tight bound where PK (mr_seg_filter_top's TB), 3 = the
 * tight bound's candidates ranked in shared memory where PK (mr_seg_rank_place; sk: this warp's
 * MR_SEG_RANK_WORDS words). PK false: 2 and 3 are 1. (The PK false path is kept apart by `if
 * constexpr`: the default kernels' code stays as it was, results run 30 - 32.) */
template <int DT, int EPS, int LPR, int L, bool PK = false>
__device__ __forceinline__ void mr_gate_packed_seg(const mr_gate_p& p, uint32_t sl, const uint32_t* src,
                                                   const unsigned char* row, int filt, int32_t* out_id,
                                                   float* out_w, uint32_t* sk = nullptr) {
  static_assert(EPS % L == 0 && L <= LPR && (LPR & (LPR - 1)) == 0 && LPR <= 32, "segment shape");
  constexpr uint32_t INF16 = DT == MOEROUTE_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
  constexpr uint32_t ONINF = (~(INF16 | 0x8000u)) & 0xffffu; /* ord16(-inf) */
  uint32_t top[L];
  bool filtered = false;
  [[maybe_unused]] bool ranked = false; /* PK: the rank form took the row (rk_key; top[0]) */
  [[maybe_unused]] uint32_t rk_key = 0u;
  if constexpr (EPS <= 32)
    if (filt != 0 && p.num_experts == LPR * EPS) { /* uniform (filt: the launch's, mr_seg_filter_on) */
      uint32_t pr[EPS / 2];
#pragma unroll
      for (int i = 0; i < EPS / 2; ++i) pr[i] = PK ? src[i] : __byte_perm(src[2 * i], src[2 * i + 1], 0x7632);
      if constexpr (PK) {
        if (filt == 3)
          ranked = filtered =
              mr_seg_filter_top<DT, EPS, LPR, L, true, true>(sl, pr, row, p.top_k, true, top, sk, &rk_key);
        else
          filtered = mr_seg_filter_top<DT, EPS, LPR, L, true>(sl, pr, row, p.top_k, filt == 2, top);
      } else {
        filtered = mr_seg_filter_top<DT, EPS, LPR, L, PK>(sl, pr, row, p.top_k, filt == 2, top);
      }
    }
  if (!filtered) {
#pragma unroll
    for (int c = 0; c < EPS / L; ++c) {
      uint32_t t[L];
#pragma unroll
      for (int i = 0; i < L; ++i)
        t[i] = mr_seg_key_hi<DT>(mr_seg_raw<PK>(src, c * L + i)) + (0xffffu - (uint32_t)(c * L + i));
      mr_sort_desc<uint32_t, L>(t);
      if (c == 0) {
#pragma unroll
        for (int i = 0; i < L; ++i) top[i] = t[i];
      } else {
        mr_merge_top<uint32_t, L>(top, t);
      }
    }
    const uint32_t shift = sl * (uint32_t)EPS; /* e = sl*EPS + r: the low half becomes 0xffff - e */
#pragma unroll
    for (int i = 0; i < L; ++i) top[i] -= shift;
  }
  uint32_t my_key;
  if constexpr (PK) {
    if (!ranked) mr_seg_butterfly<LPR, L>(top); /* warp-uniform */
    my_key = ranked ? rk_key : mr_top_of_lane<uint32_t, L>(top, sl);
  } else {
    mr_seg_butterfly<LPR, L>(top);
    my_key = mr_top_of_lane<uint32_t, L>(top, sl);
  }
  uint32_t om = top[0] >> 16;
  om = (om & 0x8000u) ? (om & 0x7fffu) : (~om & 0xffffu); /* unord16 */
  const float max = mr_clamp_logit(DT == MOEROUTE_DTYPE_BF16 ? __uint_as_float(om << 16) : mr_f16hi_to_float(om << 16));
  float sum = 1.0f; /* renormalize: the denominator cancels (design.md 14) */
  if (!p.renormalize) {
    sum = 0.0f;
    /* v44: the warp form's runs of EPS * LPR / 32 elements, then the tree's first stages inside the lane. This holds
     * only while every caller instantiates EPS = 32 * EPL / LPR with the warp form's EPL for the row's E
     * (mr_cuda_epl_bucket: gate.cuh MR_SEG_RUN, gx.cu's cases; a helper's review, session 38) */
    constexpr int NR = 32 / LPR, RL = EPS / NR;
    static_assert(NR * RL == EPS, "runs of the warp form's EPL");
    float q[NR];
#pragma unroll
    for (int c = 0; c < NR; ++c) q[c] = 0.0f;
    if (max != -INFINITY) {
#pragma unroll
      for (int r = 0; r < EPS; ++r)
        q[r / RL] += mr_exp_sum_term(
            mr_clamp_logit(mr_raw_float<2>(mr_seg_raw<PK>(src, r), DT != MOEROUTE_DTYPE_BF16)) - max);
    }
#pragma unroll
    for (int w = 1; w < NR; w <<= 1)
#pragma unroll
      for (int c = 0; c + w < NR; c += 2 * w) q[c] += q[c + w];
    sum = q[0];
#pragma unroll
    for (int off = 1; off < LPR; off <<= 1) sum += __shfl_xor_sync(MR_FULL_MASK, sum, off);
  }
  const int k = p.top_k;
  float w = 0.0f;
  const uint32_t o = my_key >> 16;
  if ((int)sl < k && o != ONINF) {
    const uint32_t u = (o & 0x8000u) ? (o & 0x7fffu) : (~o & 0xffffu);
    const float xv = mr_clamp_logit(DT == MOEROUTE_DTYPE_BF16 ? __uint_as_float(u << 16) : mr_f16hi_to_float(u << 16));
    w = expf(xv - max) / sum;
  }
  if (p.renormalize) {
    float tot = 0.0f;
#pragma unroll 4
    for (int j = 0; j < k; ++j) tot += __shfl_sync(MR_FULL_MASK, w, j, LPR);
    w = (w / fmaxf(tot, 1e-20f)) * p.scale;
  } else {
    w *= p.scale;
  }
  *out_w = w;
  *out_id = (int32_t)(0xffffu - (my_key & 0xffffu));
}

/* The instantiation of the segment rows for a config: EPS = 32*EPL/LPR elements per lane
 * (EPL 4 for E <= 128, 8 for E <= 256), LPR lanes per row (4, 8, 16: gate.cu
 * mr_gate_seg_lpr), the top L = 4 for k <= 4 else 8 (k <= L <= LPR). One list for the gate
 * kernel (gate.cu) and route's L1 by segments (large.cu): both must gate a config with the
 * same instantiation, so that route's top-k are the gate kernel's bits. Calls
 * f.template run<DT, EPS, LPR, L, PK>(), PK = pk where EPS <= 32 and LPR <= 8 (the packed
 * form, v21: the same bits as PK false). */
template <int DT, int EPS, int LPR, int L, class F>
static cudaError_t mr_gate_seg_run(bool pk, const F& f) {
  if constexpr (mr_seg_pk_fits(EPS, LPR)) /* the packed form where the filter runs at large T */
    if (pk) return f.template run<DT, EPS, LPR, L, true>();
  return f.template run<DT, EPS, LPR, L, false>();
}
template <int DT, class F>
static cudaError_t mr_gate_seg_dispatch(int epl, int lpr, int k, bool pk, const F& f) {
#define MR_SEG_RUN(EPL, LPR, L) return mr_gate_seg_run<DT, 32 * EPL / LPR, LPR, L>(pk, f)
#define MR_SEG_CASE(EPL, LPR)            \
  if (epl == EPL && lpr == LPR) {        \
    if (k <= 4) MR_SEG_RUN(EPL, LPR, 4); \
    MR_SEG_RUN(EPL, LPR, 8);             \
  }
  if (lpr == 4 && epl == 4) MR_SEG_RUN(4, 4, 4); /* k <= 4 (mr_gate_seg_lpr) */
  if (lpr == 4 && epl == 8) MR_SEG_RUN(8, 4, 4);
  MR_SEG_CASE(4, 8)
  MR_SEG_CASE(4, 16)
  MR_SEG_CASE(8, 8)
  MR_SEG_CASE(8, 16)
#undef MR_SEG_RUN
#undef MR_SEG_CASE
  return cudaErrorInvalidConfiguration; /* unreachable: mr_gate_seg_lpr */
}

/* ---- FULL and GROUPED ----------------------------------------------------------------- */

/* Selection for the fp32-key kinds: a 64-bit form of the merge (key << 32 |
 * inverted index) measured no faster than the pick loop (run 5: chain for
 * grouped DeepSeek-R1 6.66 us against 6.55, Kimi-K2 9.03 against 8.81; the
 * 64-bit compares and paired shuffles cost ~3x the packed merge). v5 merges
 * 32-bit truncated keys instead (mr_top_trunc) and keeps the pick loop as the
 * exact fallback. MR_FULL_TRUNC 0: the pick loop only (lab comparison). */
#ifndef MR_FULL_TRUNC
#define MR_FULL_TRUNC 1
#endif
/* Top-k, exact, pick by pick (k rounds): the max key, then the lowest lane
 * holding it (= lowest index: lane l holds experts l*EPL + r). Lanes j < k get
 * pick j (*my_key, *my_id). key[] is consumed. */
template <int EPL>
__device__ __forceinline__ void mr_pick_exact(uint32_t* key, int k, uint32_t lane, uint32_t* my_key, int32_t* my_id) {
  int32_t pend_id = 0;
#pragma unroll 1
  for (int j = 0; j < k; ++j) {
    int bi;
    const uint32_t best = mr_tree_argmax<EPL>(key, &bi);
    if ((int)lane == j - 1) *my_id = pend_id; /* the previous pick's id (its shuffle has landed) */
    const uint32_t m = __reduce_max_sync(MR_FULL_MASK, best);
    const uint32_t bal = __ballot_sync(MR_FULL_MASK, best == m);
    const uint32_t wl = (uint32_t)__ffs(bal) - 1u;
    const bool mine = lane == wl;
#pragma unroll
    for (int r = 0; r < EPL; ++r) key[r] = (mine && bi == r) ? 0u : key[r];
    pend_id = (int32_t)(wl * (uint32_t)EPL) + __shfl_sync(MR_FULL_MASK, bi, wl);
    *my_key = (int)lane == j ? m : *my_key;
  }
  if ((int)lane == k - 1) *my_id = pend_id;
}

/*
 * braw: this lane's bias (fp32 bits, 0 past E; all 0 without bias). gbuf (E
 * floats, 16-byte aligned) and gsel (G bytes) are this warp's shared-memory
 * scratch for grouped selection. row: the row (weights re-read the picked
 * logit); live = false: a dry run, no memory read.
 */
template <int DT, int EPL, bool GROUPED, int FILT = 0>
__device__ __forceinline__ void mr_gate_full(const mr_gate_p& p, uint32_t lane, const uint32_t* raw,
                                             const uint32_t* braw, const unsigned char* row, bool live, float* gbuf,
                                             unsigned char* gsel, int32_t* out_id, float* out_w,
                                             unsigned long long* fsm = nullptr, float eps = 0.0f) {
  constexpr int W = MR_ESZ(DT);
  const int E = p.num_experts, k = p.top_k;
  const int score = p.score;
  const bool f16 = p.f16 != 0;
  const bool softmax = score == MOEROUTE_SCORE_SOFTMAX;
  const bool has_bias = p.bias != NULL;
  const bool key_is_logit = softmax && !has_bias; /* contract 2.3 */
  const int e0 = (int)lane * EPL;

  float x[EPL];
#pragma unroll
  for (int r = 0; r < EPL; ++r) x[r] = mr_clamp_logit(mr_raw_float<W>(raw[r], f16));

  /* softmax max (exact: a REDUX on ordered keys) and denominator */
  float max = -INFINITY, sum = 0.0f;
  if (softmax) {
    max = mr_unord32(__reduce_max_sync(MR_FULL_MASK, mr_ord32(mr_tree_fmax<EPL>(x))));
    if (max != -INFINITY) {
#pragma unroll
      for (int r = 0; r < EPL; ++r) sum += mr_exp_sum_term(x[r] - max);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(MR_FULL_MASK, sum, off);
  }

  /* selection values s + bias (the keys unless the key is the logit; the group
   * values always). Four elements per trip of a rolled loop that rotates the
   * arrays by four: each score's code exists once, not EPL times (a score is
   * 20-40 instructions; at decode every instruction is fetched cold). After
   * EPL/4 trips x and braw are back in place and kv[r] belongs to x[r]. */
  /* v31b / v31c: sigmoid rows by approximate keys first (FILT 2): without groups, or with groups in whole lanes
   * where the kept groups are clear by more than the keys' error (else the exact keys below) */
  if (FILT == 2 && score == MOEROUTE_SCORE_SIGMOID && k <= 16 && (!GROUPED || p.group_reg_lanes > 0)) {
    float a[EPL];
    mr_sig_approx_keys<EPL>(x, braw, a);
    uint32_t kept_mask = 0xffffffffu;
    int LPG = 1;
    bool clear = true;
    if (GROUPED) {
      /* the groups as the exact path ranks them (contract 2.4), on approximate values: each group score is within
       * 3 eps of the exact one (the top two of values within eps, and the sum's rounding), so where the least kept
       * group beats the best dropped one by more than 7 eps (6, and the subtraction's rounding), the exact scores
       * keep the same groups, with no tie across the cut */
      LPG = p.group_reg_lanes;
      float m1 = -INFINITY, m2 = -INFINITY;
#pragma unroll
      for (int r = 0; r < EPL; ++r) mr_top2_push(a[r], &m1, &m2);
      mr_top2_butterfly(LPG, &m1, &m2);
      const float gv = p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
      const bool lead = (lane & (uint32_t)(LPG - 1)) == 0u && e0 < E;
      const uint32_t gk = lead ? mr_ord32(gv) : 0u;
      kept_mask = __ballot_sync(MR_FULL_MASK, mr_group_kept(gk, lane, LPG, p.topk_groups));
      const bool kept = ((kept_mask >> (lane & ~(uint32_t)(LPG - 1))) & 1u) != 0u;
      const uint32_t lo = __reduce_min_sync(MR_FULL_MASK, lead && kept ? gk : 0xffffffffu);
      const uint32_t hi = __reduce_max_sync(MR_FULL_MASK, lead && !kept ? gk : 0u);
      clear = mr_unord32(lo) - mr_unord32(hi) > 7.0f * eps; /* false for -inf group scores (NaN or -inf) */
      if (!kept) {
#pragma unroll
        for (int r = 0; r < EPL; ++r) a[r] = -INFINITY;
      }
    }
    int32_t aid;
    float aw;
    if (clear && mr_sig_filter_row<EPL>(p, x, a, lane, fsm, eps, kept_mask, LPG, &aid, &aw)) {
      *out_id = aid;
      *out_w = mr_finish_weight(p, aw);
      return;
    }
  }
  uint32_t key[EPL];
  float kv[EPL];
  if (FILT != 0) {
    /* large T (v31): every element's score in line, no rolled loop (at large T the code is warm and the rotation's
     * moves were ~190 instructions per row). The sigmoid of an element that is -inf (past E, or switched off) is
     * taken of 0 instead and dropped: 1 / (1 + exp(inf)) sends the IEEE divide down its slow path, a call the whole
     * warp takes where any lane does (16 calls per Kimi-K2 row, lanes 24 - 31 hold only padding). mr_score's own
     * expressions, written out: calling it here keeps its select of 0 for -inf, which the key's select below makes
     * dead but ptxas does not drop (8 - 112 more SASS instructions per filter instantiation, checked in session 30) */
    if (!key_is_logit || GROUPED) {
#pragma unroll
      for (int r = 0; r < EPL; ++r) {
        float sc;
        if (softmax) {
          sc = max == -INFINITY ? 0.0f : expf(x[r] - max) / sum;
        } else if (score == MOEROUTE_SCORE_SIGMOID) {
          const float xs = x[r] == -INFINITY ? 0.0f : x[r];
          sc = 1.0f / (1.0f + expf(-xs));
        } else {
          sc = sqrtf(fmaxf(x[r], 0.0f) + log1pf(expf(-fabsf(x[r]))));
        }
        kv[r] = x[r] == -INFINITY ? -INFINITY : sc + __uint_as_float(braw[r]);
      }
    }
  } else if (!key_is_logit || GROUPED) {
    uint32_t bb[EPL];
#pragma unroll
    for (int r = 0; r < EPL; ++r) bb[r] = braw[r];
#pragma unroll 1
    for (int g = 0; g < EPL / 4; ++g) {
      float s4[4];
      if (softmax) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s4[i] = max == -INFINITY ? 0.0f : expf(x[i] - max) / sum;
      } else if (score == MOEROUTE_SCORE_SIGMOID) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s4[i] = 1.0f / (1.0f + expf(-(x[i] == -INFINITY ? 0.0f : x[i]))); /* v31 */
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) s4[i] = sqrtf(fmaxf(x[i], 0.0f) + log1pf(expf(-fabsf(x[i]))));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) s4[i] = x[i] == -INFINITY ? -INFINITY : s4[i] + __uint_as_float(bb[i]);
      float x4[4];
      uint32_t b4[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        x4[i] = x[i];
        b4[i] = bb[i];
      }
#pragma unroll
      for (int r = 0; r + 4 < EPL; ++r) {
        x[r] = x[r + 4];
        bb[r] = bb[r + 4];
        kv[r] = kv[r + 4];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        x[EPL - 4 + i] = x4[i];
        bb[EPL - 4 + i] = b4[i];
        kv[EPL - 4 + i] = s4[i];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < EPL; ++r) key[r] = mr_ord32(key_is_logit ? x[r] : kv[r]);

  if (GROUPED && p.group_reg_lanes > 0) {
    /* contract 2.4, design.md 1, every group in LPG whole lanes (DeepSeek-V3:
     * E = 256, G = 8: 4 lanes of 8): the two largest s + bias of each lane
     * (a multiset: equal values count twice), merged over the group's lanes by
     * a butterfly; the group's first lane holds its score. */
    const int LPG = p.group_reg_lanes;
    float m1 = -INFINITY, m2 = -INFINITY;
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      const float v = kv[r];
      mr_top2_push(v, &m1, &m2);
    }
    mr_top2_butterfly(LPG, &m1, &m2);
    const float gv = p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
    /* groups in lane order: the lowest lane holding the max is the lowest group */
    const uint32_t gk = ((lane & (uint32_t)(LPG - 1)) == 0u && e0 < E) ? mr_ord32(gv) : 0u;
    const uint32_t kept_mask = __ballot_sync(MR_FULL_MASK, mr_group_kept(gk, lane, LPG, p.topk_groups));
    if (((kept_mask >> (lane & ~(uint32_t)(LPG - 1))) & 1u) == 0u) {
#pragma unroll
      for (int r = 0; r < EPL; ++r) key[r] = MR_ORD_NEG_INF;
    }
  } else if (GROUPED) { /* contract 2.4, design.md 1: through shared memory */
    __syncwarp(); /* the previous row's readers of gbuf are done */
    if (e0 + EPL <= E) {
#pragma unroll
      for (int r = 0; r < EPL; r += 4) *(float4*)(gbuf + e0 + r) = make_float4(kv[r], kv[r + 1], kv[r + 2], kv[r + 3]);
    } else {
#pragma unroll
      for (int r = 0; r < EPL; ++r)
        if (e0 + r < E) gbuf[e0 + r] = kv[r];
    }
    __syncwarp();
    const int G = p.num_groups, GS = p.group_size, LP = p.group_lanes;
    const bool small = G <= 16;
    constexpr int NG = EPL; /* candidate groups per lane (large G): G <= E <= 32 * EPL */
    uint32_t gkey[NG];
    if (small) {
      /* LP lanes per group, each scanning every LP-th member, then merged by a
       * butterfly inside the group's lanes */
      const int g = (int)lane >> p.group_lanes_shift, q = (int)lane & (LP - 1);
      float m1 = -INFINITY, m2 = -INFINITY;
      if (g < G) {
        for (int m = q; m < GS; m += LP) {
          const float v = gbuf[g * GS + m];
          mr_top2_push(v, &m1, &m2);
        }
      }
      mr_top2_butterfly(LP, &m1, &m2);
      const float gv = p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
#pragma unroll
      for (int i = 0; i < NG; ++i) gkey[i] = (i == 0 && q == 0 && g < G) ? mr_ord32(gv) : 0u;
    } else {
      /* lane l owns groups l, l + 32, ... */
#pragma unroll
      for (int i = 0; i < NG; ++i) {
        const int g = (int)lane + 32 * i;
        uint32_t kk = 0u;
        if (g < G) {
          float m1 = -INFINITY, m2 = -INFINITY;
          for (int m = 0; m < GS; ++m) {
            const float v = gbuf[g * GS + m];
            mr_top2_push(v, &m1, &m2);
          }
          kk = mr_ord32(p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2);
        }
        gkey[i] = kk;
      }
    }
    /* keep the topk_groups best groups; ties to the lower group index */
    uint32_t kept_bits = 0u; /* bit i: my candidate i is kept */
    if (small) {
      /* one candidate per lane, groups in lane order: the lowest lane holding
       * the max is the lowest group */
      kept_bits = mr_group_kept(gkey[0], lane, LP, p.topk_groups) ? 1u : 0u;
    } else {
#pragma unroll 1
      for (int j = 0; j < p.topk_groups; ++j) {
        uint32_t best = 0u;
        int bi = 0;
#pragma unroll
        for (int i = 0; i < NG; ++i) {
          if (gkey[i] > best) {
            best = gkey[i];
            bi = i;
          }
        }
        const uint32_t m = __reduce_max_sync(MR_FULL_MASK, best);
        const uint32_t my_g = lane + 32u * (uint32_t)bi;
        const uint32_t win = __reduce_min_sync(MR_FULL_MASK, best == m ? my_g : 0xffffffffu);
#pragma unroll
        for (int i = 0; i < NG; ++i) {
          const uint32_t gi = lane + 32u * (uint32_t)i;
          if (gkey[i] != 0u && gi == win) {
            gkey[i] = 0u;
            kept_bits |= 1u << i;
          }
        }
      }
    }
    /* publish: G <= 32 fits one ballot (bit g * LP), else flags in shared */
    uint32_t kept_mask = 0u;
    if (G <= 32) {
      kept_mask = __ballot_sync(MR_FULL_MASK, kept_bits & 1u);
    } else {
#pragma unroll
      for (int i = 0; i < NG; ++i) {
        const int g = (int)lane + 32 * i;
        if (g < G) gsel[g] = (unsigned char)((kept_bits >> i) & 1u);
      }
      __syncwarp();
    }
    /* keys outside the kept groups become -inf */
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      const int e = e0 + r;
      if (e < E) {
        const uint32_t g = ((uint32_t)e * p.group_magic) >> 22;
        const bool kept = G <= 32 ? ((kept_mask >> (g * (uint32_t)LP)) & 1u) != 0u : gsel[g] != 0;
        if (!kept) key[r] = MR_ORD_NEG_INF;
      }
    }
  }

  uint32_t my_key = 0u;
  int32_t my_id = 0;
  bool exact = false;
  if (FILT != 0 && k <= 16) exact = mr_top_filter<EPL>(key, k, lane, fsm, &my_id, &my_key); /* v31 */
  if (!exact && k <= 16 && MR_FULL_TRUNC) /* v5: the packed merge on truncated keys, exact unless it says not */
    exact = k <= 4   ? mr_top_trunc<EPL, 4>(key, k, lane, &my_id, &my_key)
            : k <= 8 ? mr_top_trunc<EPL, 8>(key, k, lane, &my_id, &my_key)
                     : mr_top_trunc<EPL, 16>(key, k, lane, &my_id, &my_key);
  if (!exact) mr_pick_exact<EPL>(key, k, lane, &my_key, &my_id);

  /* weights: the unbiased score of each pick, 0 for a -inf key (design.md 4) */
  float w = 0.0f;
  if ((int)lane < k && my_key != MR_ORD_NEG_INF) {
    float xv;
    if (key_is_logit) {
      xv = mr_unord32(my_key);
    } else {
      uint32_t r = 0u;
      if (live && W == 4) r = __ldg((const unsigned int*)row + my_id);
      if (live && W == 2) r = (uint32_t)__ldg((const unsigned short*)row + my_id) << 16;
      xv = mr_clamp_logit(mr_raw_float<W>(r, f16));
    }
    w = mr_score(score, xv, max, sum);
  }
  *out_w = mr_finish_weight(p, w);
  *out_id = my_id;
}

/*
 * One row, any kind: raw from mr_load_lane (the logits, -inf past E), braw the
 * bias (FULL/GROUPED; ignored by PACKED).
 */
template <int DT, int EPL, int KIND, int FILT = 0>
__device__ __forceinline__ void mr_gate_row(const mr_gate_p& p, uint32_t lane, const uint32_t* raw,
                                            const uint32_t* braw, const unsigned char* row, bool live, float* gbuf,
                                            unsigned char* gsel, int32_t* id, float* w,
                                            unsigned long long* fsm = nullptr, float eps = 0.0f) {
  if (KIND == MR_KIND_PACKED)
    mr_gate_packed<DT, EPL, FILT>(p, lane, raw, id, w, fsm);
  else
    mr_gate_full<DT, EPL, KIND == MR_KIND_GROUPED, FILT>(p, lane, raw, braw, row, live, gbuf, gsel, id, w, fsm, eps);
}

/* Shared-memory words per warp for grouped selection: E floats of s + bias,
 * plus G flag bytes when G > 32 (G <= 32 publishes the kept groups with a
 * ballot instead), rounded up to 16 bytes. 0 without grouped selection. */
static inline uint32_t mr_gate_scratch_words(const mr_gate_args* a) {
  if (!a->grouped) return 0;
  uint32_t w = (uint32_t)a->num_experts;
  if (a->num_groups > 32) w += ((uint32_t)a->num_groups + 3u) / 4u;
  return (w + 3u) & ~3u;
}

/* -inf in the raw form of dtype DT (high-aligned for 16-bit) */
template <int DT>
__device__ __forceinline__ uint32_t mr_raw_neg_inf(bool f16) {
  if (DT == MOEROUTE_DTYPE_FP32) return 0xff800000u;
  if (DT == MOEROUTE_DTYPE_FP16) return 0xfc000000u;
  return f16 ? 0xfc000000u : 0xff800000u; /* BF16 class: bf16, or fp16 folded in */
}

/* ---- FULL and GROUPED, one row over MR_WIDE_WARPS warps (decode, v7) -------------
 *
 * At decode a row's gating is one warp's dependent chain, and for the fp32-key
 * kinds most of that chain is per-element work: EPL scores (expf and a divide
 * each), keys, the in-lane sort and the bucket test (perf-log v7). Here the
 * CTA's four warps share the row: warp w takes experts [w*32*EPW, (w+1)*32*EPW)
 * (EPW = EPL / 4 per lane), computes their scores and keys, and merges its own
 * top L (design.md 15-16: the same truncated keys, with the row's index bits);
 * warp 0 then merges the four lists (two more butterfly stages through shared
 * memory) and finishes as mr_top_trunc does, reading exact keys and scores
 * from shared memory instead of shuffling them. Same keys, same merges, same
 * exactness rule and the same exact fallback (mr_pick_exact on the whole row)
 * as mr_gate_full: identical ids and weights.
 *
 * Scope (host, mr_gate_wide_fits): SIGMOID or SQRT_SOFTPLUS, k <= 16, EPL >= 8
 * (softmax rows were tried with a per-warp maximum and denominator: slower for
 * 16-bit rows, and the weights' last bit then differs from the other paths';
 * perf-log v7, lab run 11 at de5a513); grouped selection only when every
 * group is whole lanes of one warp (G <= 32). Called by the 128 threads of one
 * group of four warps (barriers inside: mr_wide_bar); the row's smem must not be
 * in use.
 */
#define MR_WIDE_WARPS 4
#define MR_WIDE_THREADS (MR_WIDE_WARPS * 32)

template <int EPL>
struct mr_wide_smem {
  uint32_t key[32 * EPL];           /* exact selection keys by expert (after group masking; -inf past E) */
  float score[32 * EPL];            /* unbiased scores by expert */
  uint32_t top[MR_WIDE_WARPS][16];  /* each warp's top L truncated keys */
  uint32_t gkey[32];                /* group scores (ord32) by group */
};

/* The barrier of one row's four warps: barrier `id` over `threads` threads. The
 * gate kernel (128-thread CTA) and tiny.cu at T = 1 use the CTA barrier (id 0, the
 * whole CTA; in tiny.cu the idle warps take part); tiny.cu with two rows in flight
 * (lab knob only) named barriers 1 + group over 128 threads. The non-aligned form
 * (barrier.sync, not bar.sync = barrier.sync.aligned): tiny.cu's idle warps arrive
 * at another instruction than the gating ones, which .aligned does not allow
 * (synccheck, results run 13: "divergent thread(s) in block"). */
__device__ __forceinline__ void mr_wide_bar(uint32_t id, uint32_t threads) { mr_bar_sync_n(id, threads); }
/* Barriers inside one mr_gate_wide_row call (idle warps of tiny.cu match them: keep
 * this in step with every mr_wide_bar of mr_gate_wide_row). */
#define MR_WIDE_ROW_BARS(GROUPED) ((GROUPED) ? 2 : 1)

/* Returns true in warp 0 of the group, whose lanes l < k then hold pick l in
 * *id_out / *w_out; warps 1-3 return false early (after their last barrier).
 * RU (v17, lab knob wide_rank_unroll): the groups' ranks from G broadcast reads of s.gkey, eight
 * in flight, instead of G shuffles one after the other (the loop below issues each shuffle after
 * the previous one's compare: ~G x 30 cycles on the row's chain); the same ranks. */
template <int DT, int EPL, bool GROUPED, int L, bool RU = false>
__device__ __forceinline__ bool mr_gate_wide_row(const mr_gate_p& p, const unsigned char* row, mr_wide_smem<EPL>& s,
                                                 uint32_t bar_id, uint32_t bar_threads, int32_t* id_out,
                                                 float* w_out) {
  constexpr int W = MR_ESZ(DT);
  constexpr int EPW = EPL / MR_WIDE_WARPS;
  constexpr uint32_t M = mr_trunc_bits<EPL>::M;
  constexpr int IB = mr_trunc_bits<EPL>::IB;
  static_assert(EPW >= 1 && EPL % MR_WIDE_WARPS == 0, "wide row shape");
  const uint32_t lane = threadIdx.x & 31u, warp = (threadIdx.x >> 5) & (MR_WIDE_WARPS - 1u);
  const int E = p.num_experts, k = p.top_k;
  const bool f16 = p.f16 != 0;
  const uint32_t e0 = (warp * 32u + lane) * (uint32_t)EPW;

  /* 1. this lane's EPW elements: logit, bias, score, selection value (all
   * loads issued first) */
  uint32_t raw[EPW];
  float bv[EPW];
#pragma unroll
  for (int r = 0; r < EPW; ++r) {
    const uint32_t e = e0 + (uint32_t)r;
    raw[r] = mr_raw_neg_inf<DT>(f16);
    if ((int)e < E) raw[r] = W == 4 ? __ldg((const unsigned int*)row + e) : (uint32_t)__ldg((const unsigned short*)row + e) << 16;
    bv[r] = (p.bias != NULL && (int)e < E) ? __ldg(p.bias + e) : 0.0f;
  }
  float kv[EPW];
  uint32_t key[EPW];
#pragma unroll
  for (int r = 0; r < EPW; ++r) {
    const float x = mr_clamp_logit(mr_raw_float<W>(raw[r], f16));
    const float sc = mr_score(p.score, x, 0.0f, 1.0f); /* SIGMOID / SQRT_SOFTPLUS: max and sum unused */
    kv[r] = x == -INFINITY ? -INFINITY : sc + bv[r];
    key[r] = mr_ord32(kv[r]);
    s.score[e0 + (uint32_t)r] = sc;
  }

  /* 2. grouped selection (contract 2.4, design.md 1): group scores over the
   * group's LPG lanes, published by group; every warp ranks all G groups */
  if (GROUPED) {
    const int LPG = p.group_reg_lanes;
    float m1 = -INFINITY, m2 = -INFINITY;
#pragma unroll
    for (int r = 0; r < EPW; ++r) mr_top2_push(kv[r], &m1, &m2);
    mr_top2_butterfly(LPG, &m1, &m2);
    const float gv = p.group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
    const uint32_t g = (warp * 32u + lane) >> (__ffs(LPG) - 1); /* LPG: a power of two */
    if ((lane & (uint32_t)(LPG - 1)) == 0u && (int)e0 < E) s.gkey[g] = mr_ord32(gv);
    mr_wide_bar(bar_id, bar_threads);
    const int G = p.num_groups;
    const uint32_t gk = (int)lane < G ? s.gkey[lane] : 0u;
    uint32_t rank = 0u;
    if constexpr (RU) { /* j0 + c <= 31 < 32 words of gkey (G <= 32); words past G are masked out,
                           branch-free so that the eight loads issue back to back */
#pragma unroll 1
      for (int j0 = 0; j0 < G; j0 += 8) {
        uint32_t o[8];
#pragma unroll
        for (int c = 0; c < 8; ++c) o[c] = s.gkey[j0 + c];
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          const uint32_t j = (uint32_t)(j0 + c);
          rank += (uint32_t)(((int)j < G) & ((o[c] > gk) | ((o[c] == gk) & (j < lane))));
        }
      }
    } else {
#pragma unroll 1
      for (int j = 0; j < G; ++j) {
        const uint32_t o = __shfl_sync(MR_FULL_MASK, gk, j);
        rank += (o > gk || (o == gk && (uint32_t)j < lane)) ? 1u : 0u;
      }
    }
    const uint32_t kept = __ballot_sync(MR_FULL_MASK, gk != 0u && rank < (uint32_t)p.topk_groups);
    if ((int)e0 < E && ((kept >> g) & 1u) == 0u) {
#pragma unroll
      for (int r = 0; r < EPW; ++r) key[r] = MR_ORD_NEG_INF;
    }
  }

  /* 3. exact keys to shared memory; this warp's top L of the truncated keys */
  uint32_t t[EPW];
#pragma unroll
  for (int r = 0; r < EPW; ++r) {
    s.key[e0 + (uint32_t)r] = key[r];
    t[r] = (key[r] & ~M) | (M - (e0 + (uint32_t)r));
  }
  uint32_t top[L];
  mr_warp_top<uint32_t, EPW, L>(t, top);
  if (lane < (uint32_t)L) s.top[warp][lane] = mr_top_of_lane<uint32_t, L>(top, lane);
  mr_wide_bar(bar_id, bar_threads);
  /* from here warp 0 alone reads s; the caller's loop-top barrier keeps the next
   * row's writes behind these reads. Any new read of s by warps 1-3 after this
   * point needs a barrier of its own before the next row. */
  if (warp != 0) return false;

  /* 4. warp 0: lanes l take warp (l % 4)'s list, two butterfly stages merge the
   * four; then mr_top_trunc's finish with shared-memory reads */
#pragma unroll
  for (int i = 0; i < L; ++i) top[i] = s.top[lane & (MR_WIDE_WARPS - 1u)][i];
#pragma unroll
  for (int off = 1; off < MR_WIDE_WARPS; off <<= 1) {
    uint32_t b[L];
#pragma unroll
    for (int i = 0; i < L; ++i) b[i] = __shfl_xor_sync(MR_FULL_MASK, top[i], off);
    mr_merge_top<uint32_t, L>(top, b);
  }
  uint32_t my_id, H, need;
  bool pair;
  mr_trunc_picks<L, IB>(top, M, k, lane, &my_id, &H, &need, &pair);
  uint32_t my_ek = s.key[my_id], kmin, idk;
  mr_trunc_order(pair, k, lane, &my_ek, &my_id, &kmin, &idk);
  /* the exactness test over the row, lane l reading experts l*EPL .. (the
   * layout mr_pick_exact needs, should the test fail) */
  uint32_t rk[EPL];
#pragma unroll
  for (int r = 0; r < EPL; r += 4) {
    const uint4 q = *(const uint4*)&s.key[lane * EPL + r];
    rk[r] = q.x;
    rk[r + 1] = q.y;
    rk[r + 2] = q.z;
    rk[r + 3] = q.w;
  }
  uint32_t c = 0u;
#pragma unroll
  for (int r = 0; r < EPL; ++r) c += mr_trunc_counts<IB>(rk[r], lane * EPL + (uint32_t)r, H, kmin, idk);
  uint32_t my_key = my_ek;
  int32_t id = (int32_t)my_id;
  if (__reduce_add_sync(MR_FULL_MASK, c) != need) mr_pick_exact<EPL>(rk, k, lane, &my_key, &id);

  /* weights: the unbiased score of each pick, 0 for a -inf key (design.md 4) */
  float w = 0.0f;
  if ((int)lane < k && my_key != MR_ORD_NEG_INF) w = s.score[id];
  *w_out = mr_finish_weight(p, w);
  *id_out = id;
  return true;
}

#endif /* MOEROUTE_CUDA_GATE_CUH */
