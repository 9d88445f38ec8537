/*
 * cpu_gate.c - gating on the CPU: logits [T, E] -> top-k ids and weights.
 *
 * Contract section 2 and design.md 1-6, one row at a time, all arithmetic in
 * fp32. The shape of one row:
 *
 *   1. load and clamp the row (+inf -> FLT_MAX; NaN and -inf -> -inf, "invalid");
 *   2. scores s_i (softmax needs the row max and the sum first);
 *   3. selection keys: the clamped logit (softmax without bias) or s_i + bias_i,
 *      -inf for invalid logits;
 *   4. grouped selection: keys outside the kept groups become -inf;
 *   5. top-k by insertion into a sorted array of k (ties: lower index);
 *   6. weights from the unbiased scores, renormalised in pick order, scaled.
 *
 * Softmax without bias and without group masking (GPT-OSS, Mixtral, Qwen...)
 * takes a shorter road: its keys are the logits, so only
 * the k picked experts need their score divided out; the exps and their sum
 * over the row are still needed. The picked scores are computed by the same
 * expressions as on the long road, so both roads give the same bits.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "cpu/cpu_internal.h"

/* design.md 1-2: +inf counts as the largest finite float (so +inf and FLT_MAX tie
 * and the lower index wins); NaN and -inf switch the expert off. Marking an
 * invalid logit as -inf makes every later step fall out right by itself: it is
 * never larger than the max, exp(-inf - max) = 0 gives it softmax score 0,
 * sigmoid(-inf) = 0 and sqrt_softplus(-inf) = 0, and as a key it loses to every
 * valid one. Written as selects so that the compiler can keep the loop
 * branch-free. */
static inline float clamp_logit(float v) {
  v = v != v ? -INFINITY : v;
  return v == INFINITY ? FLT_MAX : v;
}

/* Load row (E values of dtype) into x as clamped fp32; return the max over the
 * valid values (-inf when the row has none). */
static float load_row(moeroute_dtype dtype, const void* row, int32_t num_experts, float* x) {
  float m = -INFINITY;
  int32_t i;
  switch (dtype) {
    case MOEROUTE_DTYPE_BF16: {
      const uint16_t* r = (const uint16_t*)row;
      for (i = 0; i < num_experts; ++i) {
        x[i] = clamp_logit(mr_bf16_to_float(r[i]));
        m = x[i] > m ? x[i] : m;
      }
      break;
    }
    case MOEROUTE_DTYPE_FP16: {
      const uint16_t* r = (const uint16_t*)row;
      for (i = 0; i < num_experts; ++i) {
        x[i] = clamp_logit(mr_fp16_to_float(r[i]));
        m = x[i] > m ? x[i] : m;
      }
      break;
    }
    case MOEROUTE_DTYPE_FP32:
    default: {
      const float* r = (const float*)row;
      for (i = 0; i < num_experts; ++i) {
        x[i] = clamp_logit(r[i]);
        m = x[i] > m ? x[i] : m;
      }
      break;
    }
  }
  return m;
}

static size_t dtype_bytes(moeroute_dtype dtype) { return dtype == MOEROUTE_DTYPE_FP32 ? 4u : 2u; }

/* Lanes of the softmax sum (see softmax_exp_sum). */
#define MR_LANES 8
_Static_assert(MR_LANES == 8, "softmax_exp_sum adds the lanes as a tree of 8");

/*
 * Softmax, first half: e[i] = exp(x_i - max) for the whole row, and their sum
 * (design.md 3: an invalid logit is -inf here and adds exp(-inf) = 0). max is the
 * max of the valid logits, so the largest term is exp(0) = 1 and the sum is >= 1:
 * nothing overflows and the division never sees 0.
 *
 * Summation order: MR_LANES running sums, lane l adding e[l], e[l + 8], ... in
 * index order, the tail (E % 8 values) into lane 0, then the lanes added as a
 * tree ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). The contract leaves the
 * order open; this one is fixed (so the result is deterministic), is more
 * accurate than one running sum, and does not stall on the latency of a single
 * chain of adds. The exps are stored first: summing inside the loop that calls
 * expf would spill the sum around every call.
 */
static float softmax_exp_sum(const float* x, int32_t num_experts, float max, float* e) {
  float lane[MR_LANES];
  int32_t i, l;
  for (i = 0; i < num_experts; ++i) e[i] = expf(x[i] - max);
  for (l = 0; l < MR_LANES; ++l) lane[l] = 0.0f;
  for (i = 0; i + MR_LANES <= num_experts; i += MR_LANES) {
    for (l = 0; l < MR_LANES; ++l) lane[l] += e[i + l];
  }
  for (; i < num_experts; ++i) lane[0] += e[i];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static inline float sigmoid_score(float x) { return 1.0f / (1.0f + expf(-x)); }

/* design.md 6: softplus(x) = max(x, 0) + log1p(exp(-|x|)) never overflows (exp's
 * argument is <= 0) and keeps full precision for large negative x, where
 * log(1 + exp(x)) would round 1 + tiny to 1. */
static inline float sqrt_softplus_score(float x) { return sqrtf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)))); }

/* Every score of a row into s (the long road). */
static void all_scores(moeroute_score score, const float* x, int32_t num_experts, float max, float* s) {
  int32_t i;
  switch (score) {
    case MOEROUTE_SCORE_SOFTMAX: {
      /* the one expression of a softmax score, s_i = exp(x_i - max) / sum; the
       * short road divides only its picks, with the same bits */
      float sum = softmax_exp_sum(x, num_experts, max, s);
      for (i = 0; i < num_experts; ++i) s[i] = s[i] / sum;
      break;
    }
    case MOEROUTE_SCORE_SIGMOID:
      for (i = 0; i < num_experts; ++i) s[i] = sigmoid_score(x[i]);
      break;
    case MOEROUTE_SCORE_SQRT_SOFTPLUS:
    default:
      for (i = 0; i < num_experts; ++i) s[i] = sqrt_softplus_score(x[i]);
      break;
  }
}

/*
 * The k largest of key[0..n), in descending order, into top_key / top_idx, by
 * insertion into a sorted array of k.
 *
 * Tie rule (contract 2.5, design.md 4): equal keys go to the lower index, also
 * among -inf keys. Keys are visited in increasing index, and a new key moves in
 * front of a held one only when strictly larger, so among equal keys the one
 * seen first (the lower index) stays in front, and once k are held an equal key
 * never displaces anything. The first k keys are taken unconditionally: a row of
 * -inf keys yields 0..k-1. Keys are never NaN (invalid logits are -inf), so every
 * comparison is a total order.
 *
 * Cost: one compare per key once k are held, plus about k * ln(n / k) insertions
 * for a random row (35 for n = 256, k = 8), each about one branch miss. A filter
 * on chunk maxima (offer only keys >= the k-th largest chunk max, which provably
 * holds the whole answer) cut the insertions to ~10 but measured slower: it
 * scans twice and its chunk tests miss as often as the insertions it saves.
 */
static void select_topk(const float* key, int32_t n, int32_t k, float* top_key, int32_t* top_idx) {
  int32_t i, p;
  float kth;
  for (i = 0; i < k; ++i) {
    float v = key[i];
    for (p = i; p > 0 && top_key[p - 1] < v; --p) {
      top_key[p] = top_key[p - 1];
      top_idx[p] = top_idx[p - 1];
    }
    top_key[p] = v;
    top_idx[p] = i;
  }
  kth = top_key[k - 1];
  for (; i < n; ++i) {
    float v = key[i];
    if (!(v > kth)) continue;
    for (p = k - 1; p > 0 && top_key[p - 1] < v; --p) {
      top_key[p] = top_key[p - 1];
      top_idx[p] = top_idx[p - 1];
    }
    top_key[p] = v;
    top_idx[p] = i;
    kth = top_key[k - 1];
  }
}

/* Group g is worse than group h: smaller value, or the same value and a higher
 * index (contract 2.4: group ties go to the lower group index, also among -inf). */
static inline int group_worse(const float* value, int32_t g, int32_t h) {
  return value[g] < value[h] || (value[g] == value[h] && g > h);
}

static void heap_sift_down(int32_t* heap, int32_t size, int32_t at, const float* value) {
  for (;;) {
    int32_t worst = at, l = 2 * at + 1, r = l + 1;
    if (l < size && group_worse(value, heap[l], heap[worst])) worst = l;
    if (r < size && group_worse(value, heap[r], heap[worst])) worst = r;
    if (worst == at) return;
    int32_t tmp = heap[at];
    heap[at] = heap[worst];
    heap[worst] = tmp;
    at = worst;
  }
}

/*
 * Grouped selection (contract 2.4, design.md 1): set key[i] = -inf for every
 * expert outside the topk_groups best groups.
 *
 * A group's value is computed on s_i + bias_i (the score, never the raw logit,
 * also for softmax), with -inf for an invalid logit so that a switched-off
 * expert cannot lift its group. TOP2_SUM is m1 + m2 of the two largest: with
 * fewer than two valid values m2 is -inf and so is the sum (m1 is never +inf:
 * s_i + bias_i of a valid logit is finite, a score is far below half an ulp of
 * FLT_MAX); MAX is m1, -inf for a group without a valid value.
 *
 * The kept groups are found with a min-heap of topk_groups entries whose root is
 * the worst group kept so far: O(G log topk_groups), so even the CPU backend's
 * largest E stays cheap. Groups arrive in increasing index, so a newcomer
 * replaces the root only when its value is strictly larger (an equal value has
 * the higher index and loses the tie).
 */
static void mask_groups(const mr_config* cfg, const float* x, const float* s, const float* bias, float* key,
                        const mr_cpu_workspace* ws) {
  const int32_t num_groups = cfg->num_groups, keep = cfg->topk_groups;
  const int32_t group_size = cfg->num_experts / num_groups;
  float* value = ws->group_value;
  int32_t* heap = ws->group_heap;
  unsigned char* kept = ws->group_kept;
  int32_t g, i, size = 0;

  for (g = 0; g < num_groups; ++g) {
    float m1 = -INFINITY, m2 = -INFINITY;
    for (i = g * group_size; i < (g + 1) * group_size; ++i) {
      float v = x[i] == -INFINITY ? -INFINITY : s[i] + (bias ? bias[i] : 0.0f);
      /* the two largest, without branches: v lifts m2 up to at most m1 */
      float low = v < m1 ? v : m1;
      m2 = low > m2 ? low : m2;
      m1 = v > m1 ? v : m1;
    }
    value[g] = cfg->group_score == MOEROUTE_GROUP_SCORE_MAX ? m1 : m1 + m2;
  }

  for (g = 0; g < num_groups; ++g) {
    kept[g] = 0;
    if (size < keep) {
      /* sift up */
      int32_t at = size++;
      heap[at] = g;
      while (at > 0) {
        int32_t parent = (at - 1) / 2;
        if (!group_worse(value, heap[at], heap[parent])) break;
        int32_t tmp = heap[at];
        heap[at] = heap[parent];
        heap[parent] = tmp;
        at = parent;
      }
    } else if (value[g] > value[heap[0]]) {
      heap[0] = g;
      heap_sift_down(heap, size, 0, value);
    }
  }
  for (i = 0; i < size; ++i) kept[heap[i]] = 1;

  for (g = 0; g < num_groups; ++g) {
    if (kept[g]) continue;
    for (i = g * group_size; i < (g + 1) * group_size; ++i) key[i] = -INFINITY;
  }
}

/*
 * Weights of one row (contract 2.6, design.md 4-5): the unbiased score of each
 * pick; 0 for a pick whose key is -inf (an invalid logit, or an expert outside
 * the kept groups, taken only because the row had fewer than k valid keys);
 * renormalised by max(sum, 1e-20f) with the sum taken in pick order; then scaled.
 * The 1e-20 floor keeps an all-zero row at 0 instead of 0/0 = NaN: weights are
 * never NaN.
 */
static void finish_weights(const mr_config* cfg, int32_t k, float* w) {
  int32_t j;
  if (cfg->renormalize) {
    float sum = 0.0f, denom;
    for (j = 0; j < k; ++j) sum += w[j];
    denom = fmaxf(sum, 1e-20f);
    for (j = 0; j < k; ++j) w[j] = (w[j] / denom) * cfg->scale;
  } else {
    for (j = 0; j < k; ++j) w[j] = w[j] * cfg->scale;
  }
}

void mr_cpu_gate_rows(const mr_config* cfg, const void* logits, const float* bias, const mr_cpu_workspace* ws,
                      int32_t* topk_ids, float* topk_weights, int32_t* expert_count) {
  const int32_t num_experts = cfg->num_experts, k = cfg->top_k;
  const int64_t num_tokens = cfg->num_tokens;
  const size_t row_bytes = (size_t)cfg->row_stride * dtype_bytes(cfg->dtype);
  /* Keeping every group is no grouped selection at all. */
  const int grouped = cfg->num_groups > 1 && cfg->topk_groups < cfg->num_groups;
  /* Contract 2.3: softmax without bias selects on the logit itself (softmax is
   * monotone, and rounding in exp could otherwise create or break ties). */
  const int key_is_logit = cfg->score == MOEROUTE_SCORE_SOFTMAX && bias == NULL;
  const int short_road = key_is_logit && !grouped;
  float* x = ws->logit;
  float* s = ws->score;
  float top_key[MOEROUTE_MAX_TOPK];
  int32_t top_idx[MOEROUTE_MAX_TOPK];
  float w[MOEROUTE_MAX_TOPK];
  int64_t t;
  int32_t i, j;

  for (t = 0; t < num_tokens; ++t) {
    const void* row = (const unsigned char*)logits + (size_t)t * row_bytes;
    int32_t* ids_out = topk_ids + t * k;
    float* w_out = topk_weights + t * k;
    float max = load_row(cfg->dtype, row, num_experts, x);

    if (max == -INFINITY) {
      /* No valid logit: every key is -inf, so the tie rule picks 0..k-1, all with
       * weight 0 (contract 2.6). Said here because softmax would divide 0 by 0. */
      for (j = 0; j < k; ++j) {
        top_idx[j] = j;
        w[j] = 0.0f;
      }
    } else if (short_road) {
      /* s holds exp(x_i - max) here, divided for the picks only */
      float sum = softmax_exp_sum(x, num_experts, max, s);
      select_topk(x, num_experts, k, top_key, top_idx);
      for (j = 0; j < k; ++j) w[j] = top_key[j] == -INFINITY ? 0.0f : s[top_idx[j]] / sum;
      finish_weights(cfg, k, w);
    } else {
      float* key;
      all_scores(cfg->score, x, num_experts, max, s);
      if (key_is_logit) {
        key = x; /* the clamped logits; x is not needed after selection */
      } else {
        float* kk = ws->key;
        if (bias) {
          for (i = 0; i < num_experts; ++i) kk[i] = x[i] == -INFINITY ? -INFINITY : s[i] + bias[i];
        } else {
          for (i = 0; i < num_experts; ++i) kk[i] = x[i] == -INFINITY ? -INFINITY : s[i];
        }
        key = kk;
      }
      /* the group values read x (validity) and s, so mask after computing them:
       * masking the keys in place is fine even when key aliases x */
      if (grouped) mask_groups(cfg, x, s, bias, key, ws);
      select_topk(key, num_experts, k, top_key, top_idx);
      for (j = 0; j < k; ++j) w[j] = top_key[j] == -INFINITY ? 0.0f : s[top_idx[j]];
      finish_weights(cfg, k, w);
    }

    for (j = 0; j < k; ++j) {
      ids_out[j] = top_idx[j];
      w_out[j] = w[j];
    }
    if (expert_count) {
      for (j = 0; j < k; ++j) expert_count[top_idx[j]]++;
    }
  }
}
