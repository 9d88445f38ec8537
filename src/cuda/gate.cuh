/*
 * gate.cuh - gating of one token row by one warp (contract section 2,
 * design.md 1-6): logits -> k expert ids and weights, held by lanes 0..k-1.
 *
 * Used by the gate kernel (gate.cu) and the fused route kernel (fused.cu).
 *
 * Layout of a row in the warp: lane l holds EPL logits. With VW elements per
 * vector load (8 bf16/fp16 or 4 fp32 = 16 bytes; fewer when EPL is smaller),
 * register r = c * VW + v of lane l holds expert
 *
 *     e = (c * 32 + l) * VW + v        (c = 0 .. EPL/VW - 1, v = 0 .. VW - 1)
 *
 * so every load instruction of the warp reads 32 consecutive vectors (512
 * contiguous bytes: fully coalesced), and within a lane the expert index grows
 * with the register index r (which the tie rule relies on: the first maximum in
 * register order is the lowest index).
 *
 * Selection works on order-preserving uint32 keys (common.cuh). Two forms:
 *
 *  - packed (16-bit logits, softmax, no bias: the key is the logit itself):
 *    key = ord16(logit) << 16 | (0xffff - e). The index is inside the key, and
 *    inverted so that of two equal logits the lower index has the larger key:
 *    one __reduce_max_sync per pick finds the winner with the tie rule built in.
 *  - full (fp32 keys: s + bias, or an fp32 logit): 32 key bits leave no room
 *    for the index, so a pick is two reductions: max of the keys, then min of
 *    the indices of the lanes that hold that max (the tie rule).
 *
 * Weights: the score of each pick is recomputed by lane j from the picked
 * logit (decoded from the packed key, or read again from the row, an L1 hit)
 * with the same fp32 expression the keys used, so no per-element scores have
 * to travel through the pick loop. Renormalisation sums the k weights in pick
 * order (design.md 5), exactly like the CPU backend.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_GATE_CUH
#define MOEROUTE_CUDA_GATE_CUH

#include "cuda/common.cuh"

/* ---- element access --------------------------------------------------------- */

/* bytes per logit, and elements per vector load (16 bytes, or all EPL when
 * that is less: E <= 128 in 16-bit takes 8-byte loads) */
#define MR_ESZ(DT) ((DT) == MOEROUTE_DTYPE_FP32 ? 4 : 2)
#define MR_VW(DT, EPL) ((EPL) < 16 / MR_ESZ(DT) ? (EPL) : 16 / MR_ESZ(DT))

/* raw bits (low 16 bits for bf16/fp16) -> fp32, exact */
template <int DT>
__device__ __forceinline__ float mr_raw_to_float(uint32_t raw) {
  if (DT == MOEROUTE_DTYPE_FP32) return __uint_as_float(raw);
  if (DT == MOEROUTE_DTYPE_BF16) return __uint_as_float(raw << 16);
  float f;
  const unsigned short h = (unsigned short)raw;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

/* design.md 1-2: NaN -> -inf (an expert switched off), +inf -> FLT_MAX. */
__device__ __forceinline__ float mr_clamp_logit(float v) {
  v = v != v ? -INFINITY : v;
  return v == INFINITY ? FLT_MAX : v;
}

/* The 16-bit pattern of -inf, and NaN detection, for bf16 / fp16. */
template <int DT>
__device__ __forceinline__ uint32_t mr_neg_inf16(void) {
  return DT == MOEROUTE_DTYPE_BF16 ? 0xff80u : 0xfc00u;
}
template <int DT>
__device__ __forceinline__ bool mr_is_nan16(uint32_t h) {
  return DT == MOEROUTE_DTYPE_BF16 ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
}

/* fp32 scores (design.md 3, 6), the same expressions as the CPU backend. */
__device__ __forceinline__ float mr_score(int score, float x, float max, float sum) {
  if (score == MOEROUTE_SCORE_SOFTMAX) return max == -INFINITY ? 0.0f : expf(x - max) / sum;
  if (score == MOEROUTE_SCORE_SIGMOID) return 1.0f / (1.0f + expf(-x));
  return sqrtf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))));
}

/* ---- load ------------------------------------------------------------------- */

/* Load row t into raw[EPL] (raw bits). Split from the compute so a kernel can
 * issue the first row's loads before other setup work. Vector loads need the
 * row start aligned to the vector: checked per row (the row stride may be
 * odd); unaligned rows and the tail past E take scalar loads. Experts >= E get
 * garbage that the compute ignores. */
template <int DT, int EPL>
__device__ __forceinline__ void mr_gate_load(const mr_gate_args* a, int64_t t, uint32_t lane, uint32_t* raw) {
  constexpr int ESZ = MR_ESZ(DT);
  constexpr int VW = MR_VW(DT, EPL);
  constexpr int NCH = EPL / VW;
  const int E = a->num_experts;
  const unsigned char* row = (const unsigned char*)a->logits + (size_t)t * (size_t)a->row_stride * ESZ;
  const bool vec = ((uintptr_t)row & (uintptr_t)(VW * ESZ - 1)) == 0;
#pragma unroll
  for (int c = 0; c < NCH; ++c) {
    const int e0 = (c * 32 + (int)lane) * VW;
    if (vec && e0 + VW <= E) {
      if (VW * ESZ == 16) {
        const uint4 q = __ldg((const uint4*)(row + (size_t)e0 * ESZ));
        const uint32_t w[4] = {q.x, q.y, q.z, q.w};
        if (ESZ == 4) {
#pragma unroll
          for (int v = 0; v < 4; ++v) raw[c * VW + v] = w[v];
        } else {
#pragma unroll
          for (int v = 0; v < VW; ++v) raw[c * VW + v] = (w[v / 2] >> (16 * (v & 1))) & 0xffffu;
        }
      } else { /* 8 bytes: 4 x 16-bit (EPL == 4) */
        const uint2 q = __ldg((const uint2*)(row + (size_t)e0 * ESZ));
        const uint32_t w[2] = {q.x, q.y};
#pragma unroll
        for (int v = 0; v < VW; ++v) raw[c * VW + v] = (w[v / 2] >> (16 * (v & 1))) & 0xffffu;
      }
    } else {
#pragma unroll
      for (int v = 0; v < VW; ++v) {
        const int e = e0 + v;
        uint32_t r = 0u;
        if (e < E) {
          if (ESZ == 4)
            r = __ldg((const unsigned int*)row + e);
          else
            r = __ldg((const unsigned short*)row + e);
        }
        raw[c * VW + v] = r;
      }
    }
  }
}

/* ---- compute ------------------------------------------------------------------ */

/* Max of key[0..EPL) as a balanced tree: depth log2(EPL) instead of a chain of
 * EPL - 1 dependent max operations (the pick loop is latency-bound). */
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
 * always holds the lower indices and wins ties; a strided pairing would not. */
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

/* expert index of register r of this lane */
template <int VW>
__device__ __forceinline__ int mr_eidx(int r, uint32_t lane) {
  return ((r / VW) * 32 + (int)lane) * VW + (r % VW);
}

/*
 * Gate row t from raw[] (mr_gate_load). On return lanes j < k hold the j-th
 * pick: *out_id and *out_w (other lanes: unspecified). gbuf (E floats) and
 * gsel (G bytes) are this warp's shared-memory scratch for grouped selection
 * (unused otherwise). All 32 lanes must call, converged.
 */
template <int DT, int EPL>
__device__ __forceinline__ void mr_gate_compute(const mr_gate_args* a, int64_t t, uint32_t lane, const uint32_t* raw,
                                                float* gbuf, unsigned char* gsel, int32_t* out_id, float* out_w) {
  constexpr int ESZ = MR_ESZ(DT);
  constexpr int VW = MR_VW(DT, EPL);
  const int E = a->num_experts, k = a->top_k;
  const int score = a->score;
  const float* bias = a->bias;
  const bool softmax = score == MOEROUTE_SCORE_SOFTMAX;
  const bool key_is_logit = softmax && bias == NULL; /* contract 2.3 */
  const bool packed = ESZ == 2 && a->packed;         /* implies key_is_logit */
  const bool grouped = a->grouped != 0;

  float x[EPL];
  uint32_t key[EPL];

  /* 1. widen and clamp; packed keys straight from the raw bits */
#pragma unroll
  for (int r = 0; r < EPL; ++r) {
    const int e = mr_eidx<VW>(r, lane);
    const float v = mr_clamp_logit(mr_raw_to_float<DT>(raw[r]));
    x[r] = e < E ? v : -INFINITY;
    if (ESZ == 2) {
      uint32_t h = raw[r];
      h = mr_is_nan16<DT>(h) ? mr_neg_inf16<DT>() : h;
      h = h == 0x8000u ? 0u : h; /* -0 ties with +0 */
      key[r] = e < E ? (mr_ord16(h) << 16) | (0xffffu - (uint32_t)e) : 0u;
    }
  }

  /* 2. softmax: max and sum over the valid logits (design.md 3). The max is
   * exact (a REDUX on ordered keys); the sum's order is fixed (per lane in
   * register order, then a butterfly, which gives every lane the same bits),
   * but differs from the CPU's: a few ulp, within the contract's 1e-5. */
  float max = -INFINITY, sum = 0.0f;
  /* When the keys do not need the sum (they are the logits), its five butterfly
   * steps are interleaved with the picks below, hiding their shuffle latency. */
  const bool defer_sum = key_is_logit && !grouped;
  int sum_steps = softmax ? 0 : 5;
  if (softmax) {
    float m = -INFINITY;
#pragma unroll
    for (int r = 0; r < EPL; ++r) m = fmaxf(m, x[r]);
    max = mr_unord32(__reduce_max_sync(MR_FULL_MASK, mr_ord32(m)));
    if (max != -INFINITY) {
#pragma unroll
      for (int r = 0; r < EPL; ++r) sum += expf(x[r] - max);
    }
    /* (a row without a valid logit adds zeros: every lane agrees on max) */
    if (!defer_sum) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(MR_FULL_MASK, sum, off);
      sum_steps = 5;
    }
  }

  /* 3. keys (full form), and the group values s + bias */
  if (grouped) __syncwarp(); /* the previous row's readers of gbuf are done */
  if (!packed || grouped) {
    const bool need_s = !key_is_logit || grouped;
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      const int e = mr_eidx<VW>(r, lane);
      const bool valid = e < E;
      float kv = x[r];
      if (need_s) {
        const float s = mr_score(score, x[r], max, sum);
        const float b = (bias != NULL && valid) ? __ldg(bias + e) : 0.0f;
        kv = x[r] == -INFINITY ? -INFINITY : s + b;
        if (grouped && valid) gbuf[e] = kv;
      }
      if (!packed) key[r] = valid ? mr_ord32(key_is_logit ? x[r] : kv) : 0u;
    }
  }

  /* 4. grouped selection (contract 2.4, design.md 1) */
  if (grouped) {
    __syncwarp();
    const int G = a->num_groups, GS = a->group_size, LP = a->group_lanes;
    const bool small = G <= 16;
    uint32_t gkey[EPL];
    if (small) {
      /* LP lanes per group, each scanning every LP-th member, then merged by a
       * butterfly inside the group's lanes */
      const int g = (int)lane >> a->group_lanes_shift, p = (int)lane & (LP - 1);
      float m1 = -INFINITY, m2 = -INFINITY;
      if (g < G) {
        for (int m = p; m < GS; m += LP) {
          const float v = gbuf[g * GS + m];
          const float low = v < m1 ? v : m1;
          m2 = low > m2 ? low : m2;
          m1 = v > m1 ? v : m1;
        }
      }
      for (int off = 1; off < LP; off <<= 1) {
        const float o1 = __shfl_xor_sync(MR_FULL_MASK, m1, off);
        const float o2 = __shfl_xor_sync(MR_FULL_MASK, m2, off);
        /* the two largest of {m1, m2, o1, o2} (a multiset: equal values count twice) */
        const float lo = m1 < o1 ? m1 : o1;
        const float hi2 = m2 > o2 ? m2 : o2;
        m1 = m1 > o1 ? m1 : o1;
        m2 = lo > hi2 ? lo : hi2;
      }
      const float gv = a->group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
#pragma unroll
      for (int i = 0; i < EPL; ++i) gkey[i] = (i == 0 && p == 0 && g < G) ? mr_ord32(gv) : 0u;
    } else {
      /* lane l owns groups l, l + 32, ... (G <= E <= 32 * EPL) */
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        const int g = (int)lane + 32 * i;
        uint32_t kk = 0u;
        if (g < G) {
          float m1 = -INFINITY, m2 = -INFINITY;
          for (int m = 0; m < GS; ++m) {
            const float v = gbuf[g * GS + m];
            const float low = v < m1 ? v : m1;
            m2 = low > m2 ? low : m2;
            m1 = v > m1 ? v : m1;
          }
          kk = mr_ord32(a->group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2);
        }
        gkey[i] = kk;
      }
    }
    /* keep the topk_groups best groups; ties to the lower group index */
    uint32_t kept_bits = 0u; /* bit i: my candidate i is kept */
    for (int j = 0; j < a->topk_groups; ++j) {
      uint32_t best = 0u;
      int bi = 0;
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        if (gkey[i] > best) {
          best = gkey[i];
          bi = i;
        }
      }
      const uint32_t m = __reduce_max_sync(MR_FULL_MASK, best);
      const uint32_t my_g = small ? lane >> a->group_lanes_shift : lane + 32u * (uint32_t)bi;
      const uint32_t win = __reduce_min_sync(MR_FULL_MASK, best == m ? my_g : 0xffffffffu);
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        const uint32_t gi = small ? lane >> a->group_lanes_shift : lane + 32u * (uint32_t)i;
        if (gkey[i] != 0u && gi == win) {
          gkey[i] = 0u;
          kept_bits |= 1u << i;
        }
      }
    }
    /* publish: G <= 32 fits one ballot (bit g * LP), else flags in shared */
    uint32_t kept_mask = 0u;
    if (G <= 32) {
      kept_mask = __ballot_sync(MR_FULL_MASK, kept_bits & 1u);
    } else {
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        const int g = (int)lane + 32 * i;
        if (g < G) gsel[g] = (unsigned char)((kept_bits >> i) & 1u);
      }
      __syncwarp();
    }
    /* keys outside the kept groups become -inf (keeping the index in packed keys) */
    const uint32_t neg_key16 = ESZ == 2 ? mr_ord16(mr_neg_inf16<DT>()) << 16 : 0u;
#pragma unroll
    for (int r = 0; r < EPL; ++r) {
      const int e = mr_eidx<VW>(r, lane);
      if (e < E) {
        const uint32_t g = ((uint32_t)e * a->group_magic) >> 22;
        const bool kept = G <= 32 ? ((kept_mask >> (g * (uint32_t)LP)) & 1u) != 0u : gsel[g] != 0;
        if (!kept) key[r] = packed ? (neg_key16 | (0xffffu - (uint32_t)e)) : MR_ORD_NEG_INF;
      }
    }
  }

  /* 5. top-k: k picks, each the warp-wide max key (ties: lower index) */
  uint32_t my_key = 0u;
  int32_t my_id = 0;
  if (packed) {
    for (int j = 0; j < k; ++j) {
      const uint32_t m = __reduce_max_sync(MR_FULL_MASK, mr_tree_max<EPL>(key));
#pragma unroll
      for (int r = 0; r < EPL; ++r) key[r] = key[r] == m ? 0u : key[r];
      if ((int)lane == j) my_key = m;
      if (sum_steps < 5) { /* warp-uniform */
        sum += __shfl_xor_sync(MR_FULL_MASK, sum, 16 >> sum_steps);
        ++sum_steps;
      }
    }
    my_id = (int32_t)(0xffffu - (my_key & 0xffffu));
  } else {
    for (int j = 0; j < k; ++j) {
      int bi;
      const uint32_t best = mr_tree_argmax<EPL>(key, &bi);
      const uint32_t m = __reduce_max_sync(MR_FULL_MASK, best);
      const uint32_t cand = best == m ? (uint32_t)(((bi / VW) * 32 + (int)lane) * VW + (bi % VW)) : 0xffffffffu;
      const uint32_t id = __reduce_min_sync(MR_FULL_MASK, cand);
#pragma unroll
      for (int r = 0; r < EPL; ++r) key[r] = (uint32_t)mr_eidx<VW>(r, lane) == id ? 0u : key[r];
      if ((int)lane == j) {
        my_key = m;
        my_id = (int32_t)id;
      }
      if (sum_steps < 5) {
        sum += __shfl_xor_sync(MR_FULL_MASK, sum, 16 >> sum_steps);
        ++sum_steps;
      }
    }
  }
  for (; sum_steps < 5; ++sum_steps) sum += __shfl_xor_sync(MR_FULL_MASK, sum, 16 >> sum_steps);

  /* 6. weights: the unbiased score of each pick, 0 for a -inf key (design.md 4) */
  float w = 0.0f;
  if ((int)lane < k) {
    const bool neg = packed ? (my_key >> 16) == mr_ord16(mr_neg_inf16<DT>()) : my_key == MR_ORD_NEG_INF;
    if (!neg) {
      float xv;
      if (packed) {
        xv = mr_clamp_logit(mr_raw_to_float<DT>(mr_unord16(my_key >> 16)));
      } else if (key_is_logit) {
        xv = mr_unord32(my_key);
      } else {
        const unsigned char* row = (const unsigned char*)a->logits + (size_t)t * (size_t)a->row_stride * ESZ;
        const uint32_t r = ESZ == 4 ? __ldg((const unsigned int*)row + my_id)
                                    : (uint32_t)__ldg((const unsigned short*)row + my_id);
        xv = mr_clamp_logit(mr_raw_to_float<DT>(r));
      }
      w = mr_score(score, xv, max, sum);
    }
  }
  /* design.md 5: the sum in pick order j = 0..k-1, like the CPU backend */
  if (a->renormalize) {
    float tot = 0.0f;
#pragma unroll 8
    for (int j = 0; j < k; ++j) tot += __shfl_sync(MR_FULL_MASK, w, j);
    w = (w / fmaxf(tot, 1e-20f)) * a->scale;
  } else {
    w = w * a->scale;
  }
  *out_id = my_id;
  *out_w = w;
}

#endif /* MOEROUTE_CUDA_GATE_CUH */
