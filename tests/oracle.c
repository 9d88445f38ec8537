/*
 * oracle.c - see oracle.h. Written from docs/routing-contract.md and
 * docs/design.md only. Each step below quotes the rule it implements.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "oracle.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* A key difference below this (relative to the magnitude of the terms that
 * made the keys) may be rounding noise of a correct fp32 implementation; only
 * then may two implementations disagree on ids (contract 4 says 1e-6; we flag
 * more generously so that a flagged row is never a missed bug, only a skipped
 * comparison). */
#define ORACLE_NEAR_REL 1e-5

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "oracle: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

void oracle_get_sizes(int64_t T, int32_t E, int32_t k, int32_t U, oracle_sizes* s) {
  s->topk_len = T * k;
  s->ck_sorted_len = T * k + (int64_t)E * U - k;
  s->ck_blocks_len = (s->ck_sorted_len + U - 1) / U;
  s->vllm_sorted_len = T * k + (int64_t)E * (U - 1);
  s->vllm_blocks_len = (s->vllm_sorted_len + U - 1) / U;
}

float oracle_load_logit(moeroute_dtype dtype, const void* logits, int64_t index) {
  switch (dtype) {
    case MOEROUTE_DTYPE_FP32:
      return ((const float*)logits)[index];
    case MOEROUTE_DTYPE_BF16:
      return tu_bf16_to_float(((const uint16_t*)logits)[index]);
    case MOEROUTE_DTYPE_FP16:
      return tu_fp16_to_float(((const uint16_t*)logits)[index]);
  }
  return NAN;
}

/* ---- gating ----------------------------------------------------------------- */

typedef struct ranked {
  float key;
  int32_t index;
} ranked;

/* Descending key, ties to the lower index (contract 2.5, design 4). Keys are
 * never NaN here, so this is a total order. */
static int cmp_ranked(const void* pa, const void* pb) {
  const ranked* a = (const ranked*)pa;
  const ranked* b = (const ranked*)pb;
  if (a->key > b->key) return -1;
  if (a->key < b->key) return 1;
  return (a->index > b->index) - (a->index < b->index);
}

typedef struct row_scratch {
  float* x;        /* [E] widened, +inf clamped */
  unsigned char* finite; /* [E] 1 unless NaN or -inf */
  float* s;        /* [E] scores */
  float* b;        /* [E] bias (0 without) */
  float* key;      /* [E] selection keys */
  float* mag;      /* [E] magnitude of the terms of a key (for the near-tie test) */
  float* gval;     /* [E] group value s + b, -inf for non-finite */
  ranked* order;   /* [E] */
  ranked* gorder;  /* [G] */
  ranked* inner;   /* [E / G] */
  int32_t* gtop;   /* [G * 2] indices of a group's two largest values */
  unsigned char* gkeep; /* [G] */
  float* gmag;     /* [G] magnitude of the terms of a group score */
  float* mag_of_gval; /* [E] |s| + |b| (magnitude of a group value) */
} row_scratch;

/* Two experts give keys from identical inputs: a correct implementation must
 * compute identical keys for them, so their order is the tie rule, never noise. */
static int same_inputs(const row_scratch* r, int32_t i, int32_t j) {
  return r->finite[i] == r->finite[j] && r->x[i] == r->x[j] && r->b[i] == r->b[j];
}

static int near(float a, float b, float mag) {
  return fabs((double)a - (double)b) <= ORACLE_NEAR_REL * (double)mag;
}

static unsigned gate_row(const moeroute_params* p, const void* logits, int64_t row, const float* bias,
                         row_scratch* r, int32_t* ids, float* weights) {
  const int32_t E = p->num_experts, k = p->top_k;
  const int64_t stride = p->logits_row_stride ? p->logits_row_stride : E;
  const int use_bias = bias != NULL;
  unsigned flags = 0;

  /* 1. Load, widen; +inf is the largest finite float (design 2); NaN and -inf
   *    are "not finite": score 0, key -inf. */
  int any_finite = 0;
  for (int32_t i = 0; i < E; i++) {
    float v = oracle_load_logit(p->logits_dtype, logits, row * stride + i);
    r->finite[i] = !(isnan(v) || (isinf(v) && v < 0));
    if (isinf(v) && v > 0) v = FLT_MAX;
    if (!r->finite[i]) v = 0.0f; /* never used as a value; keeps same_inputs simple */
    r->x[i] = v;
    r->b[i] = use_bias ? bias[i] : 0.0f;
    any_finite |= r->finite[i];
  }

  /* 2. Scores, fp32. */
  if (p->score == MOEROUTE_SCORE_SOFTMAX) {
    /* design 3: max and sum over the finite logits only */
    float m = -INFINITY;
    for (int32_t i = 0; i < E; i++)
      if (r->finite[i] && r->x[i] > m) m = r->x[i];
    float sum = 0.0f;
    for (int32_t i = 0; i < E; i++)
      if (r->finite[i]) sum += expf(r->x[i] - m);
    for (int32_t i = 0; i < E; i++) r->s[i] = r->finite[i] ? expf(r->x[i] - m) / sum : 0.0f;
  } else if (p->score == MOEROUTE_SCORE_SIGMOID) {
    for (int32_t i = 0; i < E; i++) r->s[i] = r->finite[i] ? 1.0f / (1.0f + expf(-r->x[i])) : 0.0f;
  } else {
    /* design 6: sqrt(max(x, 0) + log1p(exp(-|x|))), which never overflows */
    for (int32_t i = 0; i < E; i++)
      r->s[i] = r->finite[i] ? sqrtf(fmaxf(r->x[i], 0.0f) + log1pf(expf(-fabsf(r->x[i])))) : 0.0f;
  }

  /* 3. Keys: SOFTMAX without bias selects on the (clamped) logit, everything
   *    else on s + bias. Non-finite logits: -inf whatever the bias. */
  const int logit_keys = p->score == MOEROUTE_SCORE_SOFTMAX && !use_bias;
  for (int32_t i = 0; i < E; i++) {
    if (!r->finite[i]) {
      r->key[i] = -INFINITY;
      r->mag[i] = 0.0f;
    } else if (logit_keys) {
      r->key[i] = r->x[i];
      r->mag[i] = 0.0f; /* exact: the input itself, no rounding to fear */
    } else {
      r->key[i] = r->s[i] + r->b[i];
      r->mag[i] = fabsf(r->s[i]) + fabsf(r->b[i]);
    }
    r->gval[i] = r->finite[i] ? r->s[i] + r->b[i] : -INFINITY;
    r->mag_of_gval[i] = r->finite[i] ? fabsf(r->s[i]) + fabsf(r->b[i]) : 0.0f;
  }

  /* 4. Grouped selection: group score on s + bias (never the logit), the sum of
   *    the two largest (TOP2_SUM; -inf with fewer than two finite values) or the
   *    largest (MAX); keep the topk_groups best groups (ties: lower group);
   *    everything else gets key -inf. */
  const int32_t G = p->num_groups;
  if (G > 1) {
    const int32_t per = E / G;
    for (int32_t g = 0; g < G; g++) {
      for (int32_t j = 0; j < per; j++) {
        r->inner[j].key = r->gval[g * per + j];
        r->inner[j].index = g * per + j;
      }
      qsort(r->inner, (size_t)per, sizeof(ranked), cmp_ranked);
      float gs;
      if (p->group_score == MOEROUTE_GROUP_SCORE_TOP2_SUM)
        gs = (per >= 2 && r->inner[1].key != -INFINITY) ? r->inner[0].key + r->inner[1].key : -INFINITY;
      else
        gs = r->inner[0].key;
      r->gorder[g].key = gs;
      r->gorder[g].index = g;
      r->gtop[2 * g] = r->inner[0].index;
      r->gtop[2 * g + 1] = per >= 2 ? r->inner[1].index : r->inner[0].index;
    }
    qsort(r->gorder, (size_t)G, sizeof(ranked), cmp_ranked);
    memset(r->gkeep, 0, (size_t)G);
    for (int32_t j = 0; j < p->topk_groups; j++) r->gkeep[r->gorder[j].index] = 1;

    /* Near tie between a kept and a dropped group: the kept set could differ in
     * another correct implementation. gorder is sorted, so for each kept group
     * scan the dropped ones until they are surely too far below. */
    if (p->topk_groups < G) {
      const int terms = p->group_score == MOEROUTE_GROUP_SCORE_TOP2_SUM ? 2 : 1;
      float maxmag = 0.0f;
      for (int32_t g = 0; g < G; g++) {
        float m = 0.0f;
        for (int t = 0; t < terms; t++) m += r->mag_of_gval[r->gtop[2 * g + t]];
        r->gmag[g] = m;
        maxmag = fmaxf(maxmag, m);
      }
      for (int32_t a = 0; a < p->topk_groups && !(flags & ORACLE_ROW_NEAR_TIE); a++) {
        const ranked* ka = &r->gorder[a];
        if (ka->key == -INFINITY) break;
        for (int32_t c = p->topk_groups; c < G; c++) {
          const ranked* kc = &r->gorder[c];
          if (kc->key == -INFINITY || (double)ka->key - (double)kc->key > ORACLE_NEAR_REL * (double)maxmag) break;
          /* identical groups (every member's inputs equal, position by position) tie exactly in any correct
           * implementation. Comparing only the two groups' top members is not enough: which members are a
           * group's top two is itself decided by rounded keys, and a member that ties them here may lead its
           * group in another implementation (fuzz regression group_top2_member_near_tie). */
          int identical = 1;
          for (int32_t j = 0; j < per && identical; j++)
            if (!same_inputs(r, ka->index * per + j, kc->index * per + j)) identical = 0;
          if (!identical && near(ka->key, kc->key, fmaxf(r->gmag[ka->index], r->gmag[kc->index]))) {
            flags |= ORACLE_ROW_NEAR_TIE;
            break;
          }
        }
      }
    }
    for (int32_t i = 0; i < E; i++)
      if (!r->gkeep[i / per]) r->key[i] = -INFINITY;
  }

  /* 5. Top-k: full sort of the keys, descending, ties to the lower index. */
  for (int32_t i = 0; i < E; i++) {
    r->order[i].key = r->key[i];
    r->order[i].index = i;
  }
  qsort(r->order, (size_t)E, sizeof(ranked), cmp_ranked);
  /* Near ties: a pick whose key is within rounding of another expert's key (from
   * different inputs) further down: their order, or which of them is picked, could
   * differ in another correct fp32 implementation. Keys are sorted, so scan down
   * from each pick until the keys are surely too far apart. Runs of identical
   * inputs tie exactly everywhere and are skipped over, not stopped at. */
  {
    float maxmag = 0.0f;
    for (int32_t i = 0; i < E; i++)
      if (r->key[i] != -INFINITY) maxmag = fmaxf(maxmag, r->mag[i]);
    for (int32_t j = 0; j < k && !(flags & ORACLE_ROW_NEAR_TIE); j++) {
      const ranked* a = &r->order[j];
      if (a->key == -INFINITY) break; /* -inf ties are exact */
      for (int32_t i = j + 1; i < E; i++) {
        const ranked* c = &r->order[i];
        if (c->key == -INFINITY || (double)a->key - (double)c->key > ORACLE_NEAR_REL * (double)maxmag) break;
        if (!same_inputs(r, a->index, c->index) &&
            near(a->key, c->key, fmaxf(r->mag[a->index], r->mag[c->index]))) {
          flags |= ORACLE_ROW_NEAR_TIE;
          break;
        }
      }
    }
  }

  /* 6. Weights: the unbiased score; 0 for a pick with key -inf; renormalise by
   *    the fp32 sum in pick order (floored at 1e-20), then scale. */
  for (int32_t j = 0; j < k; j++) {
    ids[j] = r->order[j].index;
    weights[j] = r->order[j].key == -INFINITY ? 0.0f : r->s[ids[j]];
  }
  if (p->renormalize) {
    float sum = 0.0f;
    for (int32_t j = 0; j < k; j++) sum += weights[j];
    float d = fmaxf(sum, 1e-20f);
    for (int32_t j = 0; j < k; j++) weights[j] = weights[j] / d;
  }
  for (int32_t j = 0; j < k; j++) weights[j] = weights[j] * p->scale;

  for (int32_t j = 0; j < k; j++) {
    const int32_t i = ids[j];
    if (r->order[j].key == -INFINITY) continue;
    if ((r->s[i] != 0.0f && r->s[i] < 1e-30f) || (p->score != MOEROUTE_SCORE_SOFTMAX && r->x[i] < -80.0f))
      flags |= ORACLE_ROW_TINY;
  }
  if (!any_finite) flags |= ORACLE_ROW_NO_FINITE;
  return flags;
}

void oracle_gate(const moeroute_params* p, const void* logits, const float* bias, int32_t* topk_ids,
                 float* topk_weights, unsigned char* row_flags) {
  const int32_t E = p->num_experts, k = p->top_k;
  const int32_t G = p->num_groups > 1 ? p->num_groups : 1;
  row_scratch r;
  r.x = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.finite = (unsigned char*)xmalloc((size_t)E);
  r.s = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.b = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.key = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.mag = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.gval = (float*)xmalloc(sizeof(float) * (size_t)E);
  r.order = (ranked*)xmalloc(sizeof(ranked) * (size_t)E);
  r.gorder = (ranked*)xmalloc(sizeof(ranked) * (size_t)G);
  r.inner = (ranked*)xmalloc(sizeof(ranked) * (size_t)(E / G));
  r.gtop = (int32_t*)xmalloc(sizeof(int32_t) * 2 * (size_t)G);
  r.gkeep = (unsigned char*)xmalloc((size_t)G);
  r.gmag = (float*)xmalloc(sizeof(float) * (size_t)G);
  r.mag_of_gval = (float*)xmalloc(sizeof(float) * (size_t)E);
  for (int64_t t = 0; t < p->num_tokens; t++) {
    unsigned f = gate_row(p, logits, t, bias, &r, topk_ids + t * k, topk_weights + t * k);
    if (row_flags) row_flags[t] = (unsigned char)f;
  }
  free(r.x);
  free(r.finite);
  free(r.s);
  free(r.b);
  free(r.key);
  free(r.mag);
  free(r.gval);
  free(r.order);
  free(r.gorder);
  free(r.inner);
  free(r.gtop);
  free(r.gkeep);
  free(r.gmag);
  free(r.mag_of_gval);
}

/* ---- sorting ------------------------------------------------------------------ */

int64_t oracle_sort(const moeroute_params* p, const int32_t* topk_ids, const float* topk_weights,
                    const int32_t* expert_mask, oracle_sorted* out) {
  const int64_t T = p->num_tokens;
  const int32_t E = p->num_experts, k = p->top_k, U = p->unit_size;
  memset(out, 0, sizeof *out);

  /* cnt_e: entries of e, by brute force; masked experts have none (their
   * entries are dropped), and ids outside [0, E) match no e at all. */
  out->expert_count = (int64_t*)xmalloc(sizeof(int64_t) * (size_t)E);
  int64_t total = 0;
  for (int32_t e = 0; e < E; e++) {
    int64_t cnt = 0;
    if (!expert_mask || expert_mask[e] != 0)
      for (int64_t i = 0; i < T * k; i++)
        if (topk_ids[i] == e) cnt++;
    out->expert_count[e] = cnt;
    total += (cnt + U - 1) / U * U; /* pad_e: 0 when cnt_e = 0 */
  }
  out->total = total;
  out->blocks = total / U;
  out->sorted_ids = (int32_t*)xmalloc(sizeof(int32_t) * (size_t)total);
  out->sorted_weights = topk_weights ? (float*)xmalloc(sizeof(float) * (size_t)total) : NULL;
  out->sorted_token_ids = (int32_t*)xmalloc(sizeof(int32_t) * (size_t)total);
  out->sorted_expert_ids = (int32_t*)xmalloc(sizeof(int32_t) * (size_t)out->blocks);
  out->expert_ids = (int32_t*)xmalloc(sizeof(int32_t) * (size_t)out->blocks);

  /* Experts one after another in increasing global id; inside an expert the
   * entries in ascending token order, then ascending slot; then padding. */
  int64_t pos = 0;
  int32_t local = 0;
  for (int32_t e = 0; e < E; e++) {
    const int enabled = !expert_mask || expert_mask[e] != 0;
    if (!enabled) continue;
    const int64_t start = pos;
    for (int64_t t = 0; t < T; t++)
      for (int32_t slot = 0; slot < k; slot++)
        if (topk_ids[t * k + slot] == e) {
          out->sorted_ids[pos] = (int32_t)(((uint32_t)slot << 24) | (uint32_t)t);
          out->sorted_token_ids[pos] = (int32_t)(t * k + slot);
          if (out->sorted_weights) out->sorted_weights[pos] = topk_weights[t * k + slot];
          pos++;
        }
    const int64_t pad_end = start + (pos - start + U - 1) / U * U;
    for (; pos < pad_end; pos++) {
      out->sorted_ids[pos] = (int32_t)(((uint32_t)k << 24) | (uint32_t)T);
      out->sorted_token_ids[pos] = (int32_t)(T * k);
      if (out->sorted_weights) out->sorted_weights[pos] = 0.0f;
    }
    for (int64_t b = start / U; b < pad_end / U; b++) {
      out->sorted_expert_ids[b] = local; /* local id: enabled experts below e */
      out->expert_ids[b] = local;
    }
    local++;
  }
  out->num_valid_ids[0] = (int32_t)total;
  out->num_valid_ids[1] = (int32_t)T;
  out->num_tokens_post_pad = (int32_t)total;
  return total;
}

void oracle_sorted_free(oracle_sorted* s) {
  free(s->sorted_ids);
  free(s->sorted_weights);
  free(s->sorted_expert_ids);
  free(s->sorted_token_ids);
  free(s->expert_ids);
  free(s->expert_count);
  memset(s, 0, sizeof *s);
}
