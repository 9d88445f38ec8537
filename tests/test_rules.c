/*
 * test_rules.c - hand-computed cases for every option and every rule of
 * docs/routing-contract.md and docs/design.md. Each expected value is written
 * here with the arithmetic that gives it (e = 2.718281828..., sig(x) =
 * 1 / (1 + e^-x)); the values were derived by hand, not by running an
 * implementation. Every case runs through the CPU backend (gate, route, sort as
 * relevant) and through the test oracle, which must both agree with the hand
 * values: ids and layouts exactly, weights to 1e-5 relative (0 exactly).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "moeroute.h"
#include "oracle.h"
#include "testutil.h"

static long cases_passed = 0, cases_failed = 0;
static long case_start_failures = 0;
static const char* case_name = "";

static void begin(const char* name) {
  case_name = name;
  case_start_failures = tu_failures;
}
static void end(void) {
  int ok = tu_failures == case_start_failures;
  printf("%-44s %s\n", case_name, ok ? "ok" : "FAILED");
  if (ok)
    cases_passed++;
  else
    cases_failed++;
}

static moeroute_params make(int64_t T, int32_t E, int32_t k, moeroute_score score, int32_t renormalize) {
  moeroute_params p;
  moeroute_params_init(&p);
  p.num_tokens = T;
  p.num_experts = E;
  p.top_k = k;
  p.score = score;
  p.renormalize = renormalize;
  p.logits_dtype = MOEROUTE_DTYPE_FP32;
  p.unit_size = 4;
  p.layouts = MOEROUTE_LAYOUT_BOTH;
  return p;
}

/* Gating: the oracle, moeroute_cpu_gate and moeroute_cpu_route (with top-k
 * outputs, both layouts, moe_buf) must all give want_ids / want_w. */
static void expect_gate(const moeroute_params* p, const void* logits, const float* bias, const int32_t* mask,
                        const int32_t* want_ids, const float* want_w) {
  char ctx[256];
  const int64_t T = p->num_tokens;
  const int32_t k = p->top_k;

  snprintf(ctx, sizeof ctx, "%s [oracle]", case_name);
  int32_t* ids = (int32_t*)calloc((size_t)(T * k) + 1, sizeof(int32_t));
  float* w = (float*)calloc((size_t)(T * k) + 1, sizeof(float));
  oracle_gate(p, logits, bias, ids, w, NULL);
  hx_compare_topk(T, k, ids, w, want_ids, want_w, NULL, 1e-5f, NULL, ctx);
  free(ids);
  free(w);

  snprintf(ctx, sizeof ctx, "%s [cpu_gate]", case_name);
  hx_outputs o;
  moeroute_params q = *p;
  q.moe_buf_bytes = 48;
  if (hx_alloc(&o, &q, MOEROUTE_OP_GATE, ctx) == MOEROUTE_OK) {
    moeroute_buffers b;
    hx_buffers(&o, HX_TOPK | HX_MOE_BUF, &b);
    b.logits = logits;
    b.bias = bias;
    b.expert_mask = mask;
    moeroute_status st = moeroute_cpu_gate(&q, &b);
    if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
      hx_compare_topk(T, k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, want_ids, want_w, NULL,
                      1e-5f, NULL, ctx);
      CHECK(tu_gbody_is(&o.moe_buf, 0, HX_MOE_FILL), "%s: gate touched moe_buf (design 8)", ctx);
      CHECK(tu_gbody_is(&o.sorted_ids, 0, HX_FILL) && tu_gbody_is(&o.sorted_token_ids, 0, HX_FILL),
            "%s: gate wrote a sorted layout", ctx);
    }
    hx_canaries_ok(&o, ctx);
    hx_free(&o);
  }

  snprintf(ctx, sizeof ctx, "%s [cpu_route]", case_name);
  if (hx_alloc(&o, &q, MOEROUTE_OP_ROUTE, ctx) == MOEROUTE_OK) {
    moeroute_buffers b;
    hx_buffers(&o, HX_TOPK | HX_SORTED_WEIGHTS | HX_MOE_BUF, &b);
    b.logits = logits;
    b.bias = bias;
    b.expert_mask = mask;
    moeroute_status st = moeroute_cpu_route(&q, &b);
    if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
      hx_compare_topk(T, k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, want_ids, want_w, NULL,
                      1e-5f, NULL, ctx);
      hx_check_invariants(&o, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, mask, 1, ctx);
      oracle_sorted s;
      oracle_sort(&q, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, mask, &s);
      hx_compare_sorted(&o, &s, 1, 1, ctx);
      oracle_sorted_free(&s);
      CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "%s: moe_buf not cleared", ctx);
    }
    hx_canaries_ok(&o, ctx);
    hx_free(&o);
  }
}

/* The expected sort of a case, written by hand. */
typedef struct hand_sort {
  int64_t total;
  const int32_t* ck;      /* [total] */
  const float* ck_w;      /* [total] or NULL */
  const int32_t* blocks;  /* [total / U] */
  const int32_t* vllm;    /* [total] */
} hand_sort;

static void to_oracle_sorted(const moeroute_params* p, const hand_sort* h, oracle_sorted* s) {
  memset(s, 0, sizeof *s);
  s->total = h->total;
  s->blocks = h->total / p->unit_size;
  s->sorted_ids = (int32_t*)h->ck;
  s->sorted_weights = (float*)h->ck_w;
  s->sorted_expert_ids = (int32_t*)h->blocks;
  s->expert_ids = (int32_t*)h->blocks;
  s->sorted_token_ids = (int32_t*)h->vllm;
  s->num_valid_ids[0] = (int32_t)h->total;
  s->num_valid_ids[1] = (int32_t)p->num_tokens;
  s->num_tokens_post_pad = (int32_t)h->total;
}

static int same_i32(const int32_t* a, const int32_t* b, int64_t n) {
  return n == 0 || memcmp(a, b, sizeof(int32_t) * (size_t)n) == 0;
}

/* Sorting: the oracle and moeroute_cpu_sort (each layout alone and both) must
 * give h for these top-k ids / weights / mask. */
static void expect_sort(const moeroute_params* p, const int32_t* ids, const float* w, const int32_t* mask,
                        const hand_sort* h) {
  char ctx[256];
  oracle_sorted want;
  to_oracle_sorted(p, h, &want);

  snprintf(ctx, sizeof ctx, "%s [oracle]", case_name);
  oracle_sorted got;
  oracle_sort(p, ids, w, mask, &got);
  if (CHECK(got.total == h->total, "%s: total %lld want %lld", ctx, (long long)got.total, (long long)h->total)) {
    CHECK(same_i32(got.sorted_ids, h->ck, h->total), "%s: sorted_ids", ctx);
    CHECK(same_i32(got.sorted_token_ids, h->vllm, h->total), "%s: sorted_token_ids", ctx);
    CHECK(same_i32(got.sorted_expert_ids, h->blocks, want.blocks), "%s: sorted_expert_ids", ctx);
    CHECK(same_i32(got.expert_ids, h->blocks, want.blocks), "%s: expert_ids", ctx);
    if (h->ck_w && w)
      CHECK(h->total == 0 || !memcmp(got.sorted_weights, h->ck_w, sizeof(float) * (size_t)h->total),
            "%s: sorted_weights", ctx);
  }
  oracle_sorted_free(&got);

  static const uint32_t layouts[] = {MOEROUTE_LAYOUT_BOTH, MOEROUTE_LAYOUT_CK, MOEROUTE_LAYOUT_VLLM};
  for (int l = 0; l < 3; l++) {
    snprintf(ctx, sizeof ctx, "%s [cpu_sort layouts=%u]", case_name, layouts[l]);
    moeroute_params q = *p;
    q.layouts = layouts[l];
    q.moe_buf_bytes = 100;
    hx_outputs o;
    if (hx_alloc(&o, &q, MOEROUTE_OP_SORT, ctx) != MOEROUTE_OK) continue;
    const int give_w = w != NULL && h->ck_w != NULL;
    moeroute_buffers b;
    hx_buffers(&o, HX_MOE_BUF | (give_w ? HX_SORTED_WEIGHTS : 0), &b);
    b.topk_ids = (int32_t*)ids;
    b.topk_weights = (float*)w;
    b.expert_mask = mask;
    moeroute_status st = moeroute_cpu_sort(&q, &b);
    if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
      hx_compare_sorted(&o, &want, give_w, 1, ctx);
      hx_check_invariants(&o, ids, w, mask, give_w, ctx);
      CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "%s: moe_buf not cleared", ctx);
    }
    hx_free(&o);
  }
}

/* route (both layouts) must give want ids/weights and the hand sort h. */
static void expect_route_sorted(const moeroute_params* p, const void* logits, const int32_t* mask, const hand_sort* h,
                                const int32_t* want_ids, const float* want_w) {
  char ctx[256];
  snprintf(ctx, sizeof ctx, "%s [cpu_route sorted]", case_name);
  oracle_sorted want;
  to_oracle_sorted(p, h, &want);
  hx_outputs o;
  if (hx_alloc(&o, p, MOEROUTE_OP_ROUTE, ctx) != MOEROUTE_OK) return;
  moeroute_buffers b;
  hx_buffers(&o, HX_TOPK | HX_SORTED_WEIGHTS, &b);
  b.logits = logits;
  b.expert_mask = mask;
  moeroute_status st = moeroute_cpu_route(p, &b);
  if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
    hx_compare_topk(p->num_tokens, p->top_k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr,
                    want_ids, want_w, NULL, 1e-5f, NULL, ctx);
    hx_compare_sorted(&o, &want, h->ck_w != NULL, 0, ctx);
  }
  hx_free(&o);
}

#define S_CK(k, T) ((int32_t)(((uint32_t)(k) << 24) | (uint32_t)(T))) /* CK sentinel */
#define CK(slot, t) ((int32_t)(((uint32_t)(slot) << 24) | (uint32_t)(t)))

/* ========================================================================== */

static void softmax_cases(void) {
  /* x = [1, 3, 2, 0], k = 2: the two largest logits are 3 (id 1) and 2 (id 2).
   * renormalize: w = e^3 / (e^3 + e^2) = 1 / (1 + e^-1) = 0.7310585786,
   *              e^2 / (e^3 + e^2) = 1 / (1 + e) = 0.2689414214. */
  static const float x[] = {1, 3, 2, 0};
  static const int32_t ids[] = {1, 2};
  begin("softmax renormalize");
  {
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    static const float w[] = {0.7310585786f, 0.2689414214f};
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();

  /* renormalize off: the full-row softmax, Z = 1 + e + e^2 + e^3 = 31.19287485:
   * e^3 / Z = 0.6439142599, e^2 / Z = 0.2368828181. */
  begin("softmax no renormalize");
  {
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 0);
    static const float w[] = {0.6439142599f, 0.2368828181f};
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();

  /* scale is applied last: 2.5 * 0.7310585786 = 1.8276464466, 2.5 * 0.2689414214 = 0.6723535534;
   * without renormalize, 16 * 0.6439142599 = 10.302628158, 16 * 0.2368828181 = 3.790125089. */
  begin("scale with and without renormalize");
  {
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.scale = 2.5f;
    static const float w[] = {1.8276464466f, 0.6723535534f};
    expect_gate(&p, x, NULL, NULL, ids, w);
    p.renormalize = 0;
    p.scale = 16.0f;
    static const float w2[] = {10.302628158f, 3.790125089f};
    expect_gate(&p, x, NULL, NULL, ids, w2);
  }
  end();
}

static void tie_cases(void) {
  /* [2, 5, 5, 2], k = 3: 5 and 5 tie -> lower index first (1, 2), then 2 vs 2 -> id 0.
   * w = e^5 / (2 e^5 + e^2) = 1 / (2 + e^-3) = 0.4878555512 (twice), e^-3 / (2 + e^-3) = 0.0242888977. */
  begin("ties go to the lower index");
  {
    static const float x[] = {2, 5, 5, 2};
    static const int32_t ids[] = {1, 2, 0};
    static const float w[] = {0.4878555512f, 0.4878555512f, 0.0242888977f};
    moeroute_params p = make(1, 4, 3, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
    /* the same in bf16 (2 and 5 are exact) */
    uint16_t xb[4];
    for (int i = 0; i < 4; i++) xb[i] = tu_float_to_bf16(x[i]);
    p.logits_dtype = MOEROUTE_DTYPE_BF16;
    expect_gate(&p, xb, NULL, NULL, ids, w);
  }
  end();

  /* all equal, k = E: ids in index order, weights 1/4 each. */
  begin("all keys tie, k = E");
  {
    static const float x[] = {3, 3, 3, 3};
    static const int32_t ids[] = {0, 1, 2, 3};
    static const float w[] = {0.25f, 0.25f, 0.25f, 0.25f};
    moeroute_params p = make(1, 4, 4, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();

  /* sigmoid, equal logits, bias [0, 0.5, 0.5, 0]: keys 0.5, 1.0, 1.0, 0.5 -> k = 1 picks id 1
   * (tie with 2); weight = unbiased sig(0) = 0.5 (renormalize off). */
  begin("tie on score + bias");
  {
    static const float x[] = {0, 0, 0, 0};
    static const float bias[] = {0, 0.5f, 0.5f, 0};
    static const int32_t ids[] = {1};
    static const float w[] = {0.5f};
    moeroute_params p = make(1, 4, 1, MOEROUTE_SCORE_SIGMOID, 0);
    expect_gate(&p, x, bias, NULL, ids, w);
  }
  end();
}

static void nonfinite_cases(void) {
  const float qnan = NAN;
  /* [NaN, 1, 2, NaN], k = 2, renormalize off: max and sum over the finite logits
   * only (design 3): w = e^2 / (e + e^2) = 0.7310585786, e / (e + e^2) = 0.2689414214.
   * (A NaN in the sum would make every weight NaN.) */
  begin("NaN logits are skipped by softmax");
  {
    const float x[] = {qnan, 1, 2, qnan};
    static const int32_t ids[] = {2, 1};
    static const float w[] = {0.7310585786f, 0.2689414214f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 0);
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();

  /* sigmoid with bias 10 on a NaN expert: NaN has key -inf whatever the bias.
   * keys: -inf, sig(0) = 0.5, sig(-1) = 0.2689, sig(1) = 0.7311 -> ids [3, 1];
   * renormalize: 0.7310585786 / 1.2310585786 = 0.5938454850, 0.5 / 1.2310585786 = 0.4061545150. */
  begin("NaN never beats a finite logit, whatever the bias");
  {
    const float x[] = {qnan, 0, -1, 1};
    static const float bias[] = {10, 0, 0, 0};
    static const int32_t ids[] = {3, 1};
    static const float w[] = {0.5938454850f, 0.4061545150f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SIGMOID, 1);
    expect_gate(&p, x, bias, NULL, ids, w);
    /* a finite logit with a terrible key still wins over NaN with a huge bias:
     * [-10, NaN], bias [0, 1e30], k = 1 -> id 0, w = sig(-10) = 4.5397868702e-05 */
    const float x2[] = {-10, qnan};
    static const float bias2[] = {0, 1e30f};
    static const int32_t ids2[] = {0};
    static const float w2[] = {4.5397868702e-05f};
    moeroute_params p2 = make(1, 2, 1, MOEROUTE_SCORE_SIGMOID, 0);
    expect_gate(&p2, x2, bias2, NULL, ids2, w2);
  }
  end();

  /* +inf is FLT_MAX (design 2). [1, +inf, 3, +inf], k = 3, softmax: the two +inf tie
   * (ids 1, 3, lower first), then 3 (id 2). max = FLT_MAX: exp(0) = 1 for both
   * infinities, exp(3 - FLT_MAX) = 0: w = [0.5, 0.5, 0] (renormalized: sum 1). */
  begin("+inf is the largest finite float");
  {
    const float x[] = {1, INFINITY, 3, INFINITY};
    static const int32_t ids[] = {1, 3, 2};
    static const float w[] = {0.5f, 0.5f, 0.0f};
    moeroute_params p = make(1, 4, 3, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
    /* FLT_MAX before +inf: they tie, the lower index wins: [0, FLT_MAX, +inf, 0], k = 1 -> 1 */
    const float x2[] = {0, FLT_MAX, INFINITY, 0};
    static const int32_t ids2[] = {1};
    static const float w2[] = {1.0f}; /* sigmoid(FLT_MAX) = 1, renormalize off */
    moeroute_params p2 = make(1, 4, 1, MOEROUTE_SCORE_SIGMOID, 0);
    expect_gate(&p2, x2, NULL, NULL, ids2, w2);
  }
  end();

  /* In bf16 and fp16, +inf becomes fp32's FLT_MAX, larger than the dtype's own
   * largest finite value: [max_finite, +inf, 0, 0], k = 2 -> ids [1, 0].
   * softmax without renormalize: max = FLT_MAX, w = [exp(0), exp(max_finite - FLT_MAX)] / sum
   * = [1, 0]. */
  begin("+inf beats the dtype's largest finite (bf16, fp16)");
  {
    static const int32_t ids[] = {1, 0};
    static const float w[] = {1.0f, 0.0f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 0);
    const uint16_t xb[] = {0x7f7f /* 3.3895e38 */, 0x7f80 /* +inf */, 0, 0};
    p.logits_dtype = MOEROUTE_DTYPE_BF16;
    expect_gate(&p, xb, NULL, NULL, ids, w);
    const uint16_t xh[] = {0x7bff /* 65504 */, 0x7c00 /* +inf */, 0, 0};
    p.logits_dtype = MOEROUTE_DTYPE_FP16;
    expect_gate(&p, xh, NULL, NULL, ids, w);
  }
  end();

  /* -inf (the usual "switched off"): [-inf, -inf, 0, -inf], k = 2 -> id 2, then the
   * -inf keys tie and the lowest index, 0, comes next with weight 0: w = [1, 0]. */
  begin("-inf logits: weight 0, lowest index");
  {
    const float x[] = {-INFINITY, -INFINITY, 0, -INFINITY};
    static const int32_t ids[] = {2, 0};
    static const float w[] = {1.0f, 0.0f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
    /* sigmoid with bias 5 on a -inf expert, renormalize off, scale 2:
     * ids [1, 0, 2], w = [2 * sig(0), 0, 0] = [1, 0, 0] */
    const float x2[] = {-INFINITY, 0, -INFINITY, -INFINITY};
    static const float bias2[] = {5, 0, 0, 0};
    static const int32_t ids2[] = {1, 0, 2};
    static const float w2[] = {1.0f, 0.0f, 0.0f};
    moeroute_params p2 = make(1, 4, 3, MOEROUTE_SCORE_SIGMOID, 0);
    p2.scale = 2.0f;
    expect_gate(&p2, x2, bias2, NULL, ids2, w2);
  }
  end();

  /* fewer finite logits than k: [NaN, 3, NaN, NaN, 1], k = 3 -> ids [1, 4, 0];
   * w = e^3 / (e^3 + e) = 0.8807970780, e / (e^3 + e) = 0.1192029220, 0. */
  begin("fewer than k finite logits");
  {
    const float x[] = {qnan, 3, qnan, qnan, 1};
    static const int32_t ids[] = {1, 4, 0};
    static const float w[] = {0.8807970780f, 0.1192029220f, 0.0f};
    moeroute_params p = make(1, 5, 3, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();

  /* no finite logit: ids 0..k-1, weights 0 (renormalize divides 0 by 1e-20),
   * for every score and dtype. */
  begin("row with no finite logit");
  {
    const float x[] = {qnan, -INFINITY, qnan, -INFINITY};
    static const float bias[] = {1, 2, 3, 4};
    static const int32_t ids[] = {0, 1};
    static const float w[] = {0, 0};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
    p.score = MOEROUTE_SCORE_SIGMOID;
    expect_gate(&p, x, bias, NULL, ids, w);
    p.score = MOEROUTE_SCORE_SQRT_SOFTPLUS;
    p.renormalize = 0;
    expect_gate(&p, x, bias, NULL, ids, w);

    const uint16_t xb[] = {0x7fc0, 0xffc0, 0x7fc0, 0xff80}; /* NaN, -NaN, NaN, -inf */
    static const int32_t ids3[] = {0, 1, 2};
    static const float w3[] = {0, 0, 0};
    moeroute_params p3 = make(1, 4, 3, MOEROUTE_SCORE_SOFTMAX, 1);
    p3.logits_dtype = MOEROUTE_DTYPE_BF16;
    expect_gate(&p3, xb, NULL, NULL, ids3, w3);

    const uint16_t xh[] = {0xfc00, 0xfc00, 0x7e00, 0xfc00}; /* -inf, -inf, NaN, -inf */
    static const int32_t ids4[] = {0, 1, 2, 3};
    static const float w4[] = {0, 0, 0, 0};
    moeroute_params p4 = make(1, 4, 4, MOEROUTE_SCORE_SIGMOID, 1);
    p4.logits_dtype = MOEROUTE_DTYPE_FP16;
    expect_gate(&p4, xh, NULL, NULL, ids4, w4);
  }
  end();

  /* renormalize floor: sigmoid(-69) = 1 / (1 + e^69) = 1.0806392777e-30 < 1e-20, so
   * k = 1 renormalized gives 1.0806e-30 / max(1.0806e-30, 1e-20) = 1.0806392777e-10, not 1. */
  begin("renormalize sum floored at 1e-20");
  {
    static const float x[] = {-69, -70};
    static const int32_t ids[] = {0};
    static const float w[] = {1.0806392777e-10f};
    moeroute_params p = make(1, 2, 1, MOEROUTE_SCORE_SIGMOID, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();
}

static void score_cases(void) {
  /* sigmoid: s = [sig(0), sig(1), sig(-1), sig(2)] = [0.5, 0.7310585786, 0.2689414214, 0.8807970780];
   * k = 2 -> [3, 1]; renormalize: 0.8807970780 / 1.6118556566 = 0.5464491032,
   * 0.7310585786 / 1.6118556566 = 0.4535508968. */
  begin("sigmoid");
  {
    static const float x[] = {0, 1, -1, 2};
    static const int32_t ids[] = {3, 1};
    static const float w[] = {0.5464491032f, 0.4535508968f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SIGMOID, 1);
    expect_gate(&p, x, NULL, NULL, ids, w);
    static const float w2[] = {0.8807970780f, 0.7310585786f};
    p.renormalize = 0;
    expect_gate(&p, x, NULL, NULL, ids, w2);
  }
  end();

  /* sqrt_softplus = sqrt(max(x,0) + log1p(exp(-|x|))) (design 6):
   *   x = 0:    sqrt(ln 2)                  = 0.8325546112
   *   x = 2:    sqrt(2 + ln(1 + e^-2))      = sqrt(2.1269280110) = 1.4583991261
   *   x = -2:   sqrt(ln(1 + e^-2))          = sqrt(0.1269280110) = 0.3562695764
   *   x = 100:  sqrt(100 + ~0)              = 10
   *   x = 1000: sqrt(1000)                  = 31.6227766017  (a naive log(1 + e^x) overflows)
   * k = E = 5, renormalize off: ids by score [4, 3, 1, 0, 2]. */
  begin("sqrt_softplus (overflow-free)");
  {
    static const float x[] = {0, 2, -2, 100, 1000};
    static const int32_t ids[] = {4, 3, 1, 0, 2};
    static const float w[] = {31.6227766017f, 10.0f, 1.4583991261f, 0.8325546112f, 0.3562695764f};
    moeroute_params p = make(1, 5, 5, MOEROUTE_SCORE_SQRT_SOFTPLUS, 0);
    expect_gate(&p, x, NULL, NULL, ids, w);
    /* renormalized, scale 1.5: sum = 44.2699999154; 1.5 * 31.6227766017 / 44.2699999154 = 1.0714743 */
    static const float wr[] = {1.5f * 31.6227766017f / 44.2699999154f, 1.5f * 10.0f / 44.2699999154f,
                               1.5f * 1.4583991261f / 44.2699999154f, 1.5f * 0.8325546112f / 44.2699999154f,
                               1.5f * 0.3562695764f / 44.2699999154f};
    p.renormalize = 1;
    p.scale = 1.5f;
    expect_gate(&p, x, NULL, NULL, ids, wr);
  }
  end();

  /* sigmoid + bias selects on s + b, weights are the unbiased s:
   * x = 0 everywhere (s = 0.5), bias [0, 0.1, -0.1, 0.2] -> keys [0.5, 0.6, 0.4, 0.7] -> [3, 1];
   * renormalize: [0.5, 0.5]; without, scale 2.5: [1.25, 1.25]. */
  begin("bias (sigmoid)");
  {
    static const float x[] = {0, 0, 0, 0};
    static const float bias[] = {0, 0.1f, -0.1f, 0.2f};
    static const int32_t ids[] = {3, 1};
    static const float w[] = {0.5f, 0.5f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SIGMOID, 1);
    expect_gate(&p, x, bias, NULL, ids, w);
    static const float w2[] = {1.25f, 1.25f};
    p.renormalize = 0;
    p.scale = 2.5f;
    expect_gate(&p, x, bias, NULL, ids, w2);
  }
  end();

  /* softmax + bias selects on s + b (not on logit + b):
   * x = [2, 1, 0, 0], Z = e^2 + e + 2 = 12.1073379273, s = [0.6102956854, 0.2245152357, 0.0825945394, 0.0825945394];
   * bias [0, 0, 0.5, 0] -> keys [0.6103, 0.2245, 0.5826, 0.0826] -> ids [0, 2]
   * (logit + bias would give [2, 1, 0.5, 0] -> [0, 1]); weights unbiased, renormalize off:
   * [0.6102956854, 0.0825945394]. */
  begin("bias (softmax selects on score + bias)");
  {
    static const float x[] = {2, 1, 0, 0};
    static const float bias[] = {0, 0, 0.5f, 0};
    static const int32_t ids[] = {0, 2};
    static const float w[] = {0.6102956854f, 0.0825945394f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 0);
    expect_gate(&p, x, bias, NULL, ids, w);
  }
  end();
}

static void group_cases(void) {
  /* E = 8, G = 4 (2 experts a group), topk_groups = 2, k = 2, sigmoid with x = 0
   * (s = 0.5) and bias = key - 0.5, keys:
   *   g0 [0.9, 0.1]  top2_sum 1.0   max 0.9
   *   g1 [0.6, 0.6]  top2_sum 1.2   max 0.6
   *   g2 [0.55,0.56] top2_sum 1.11  max 0.56
   *   g3 [0.2, 0.3]  top2_sum 0.5   max 0.3
   * TOP2_SUM keeps g1, g2: picks 0.6 (id 2), 0.6 (id 3; tie, lower first);
   * MAX keeps g0, g1: picks 0.9 (id 0), 0.6 (id 2).
   * Weights: s = 0.5 each, renormalized [0.5, 0.5], scale 2.5 -> [1.25, 1.25]. */
  static const float x[8] = {0};
  static const float bias[8] = {0.4f, -0.4f, 0.1f, 0.1f, 0.05f, 0.06f, -0.3f, -0.2f};
  static const float w[] = {1.25f, 1.25f};
  begin("groups top2_sum (DeepSeek-V3)");
  {
    moeroute_params p = make(1, 8, 2, MOEROUTE_SCORE_SIGMOID, 1);
    p.scale = 2.5f;
    p.num_groups = 4;
    p.topk_groups = 2;
    p.group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
    static const int32_t ids[] = {2, 3};
    expect_gate(&p, x, bias, NULL, ids, w);
  }
  end();
  begin("groups max (DeepSeek-V2)");
  {
    moeroute_params p = make(1, 8, 2, MOEROUTE_SCORE_SIGMOID, 1);
    p.scale = 2.5f;
    p.num_groups = 4;
    p.topk_groups = 2;
    p.group_score = MOEROUTE_GROUP_SCORE_MAX;
    static const int32_t ids[] = {0, 2};
    expect_gate(&p, x, bias, NULL, ids, w);
  }
  end();

  /* Group score on the softmax score, never the logit: E = 4, G = 2, topk_groups = 1,
   * k = 2, TOP2_SUM. x = [3, -3 | 2, 2]: by logits g0 sums 0 < g1's 4, but by score
   * e^3 + e^-3 = 20.14 > 2 e^2 = 14.78, so g0 is kept -> ids [0, 1] (keys inside are logits).
   * renormalize: e^3 / (e^3 + e^-3) = 0.9975273768, e^-3 / (e^3 + e^-3) = 0.0024726232. */
  begin("group score uses the score, not the logit");
  {
    static const float xs[] = {3, -3, 2, 2};
    static const int32_t ids[] = {0, 1};
    static const float ws[] = {0.9975273768f, 0.0024726232f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.num_groups = 2;
    p.topk_groups = 1;
    p.group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
    expect_gate(&p, xs, NULL, NULL, ids, ws);
  }
  end();

  /* Group ties go to the lower group: sigmoid [1, 0 | 0, 1], MAX, topk_groups = 1:
   * both groups score sig(1) -> g0 -> ids [0, 1]; renormalize:
   * sig(1) / (sig(1) + 0.5) = 0.5938454850, 0.5 / 1.2310585786 = 0.4061545150. */
  begin("group ties go to the lower group");
  {
    static const float xs[] = {1, 0, 0, 1};
    static const int32_t ids[] = {0, 1};
    static const float ws[] = {0.5938454850f, 0.4061545150f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SIGMOID, 1);
    p.num_groups = 2;
    p.topk_groups = 1;
    p.group_score = MOEROUTE_GROUP_SCORE_MAX;
    expect_gate(&p, xs, NULL, NULL, ids, ws);
  }
  end();

  /* Non-finite logits in groups (design 1). TOP2_SUM of a group with one finite
   * value is -inf: E = 6, G = 3, topk_groups = 1, k = 1, sigmoid, x = [5, NaN | 1, 1 | 0, 0]:
   * g0 = -inf (though expert 0 has the best key), g1 = 2 sig(1), g2 = 1 -> g1 -> id 2
   * (tie with 3); renormalize off: sig(1) = 0.7310585786. */
  begin("groups: non-finite logits never lift a group");
  {
    const float xs[] = {5, NAN, 1, 1, 0, 0};
    static const int32_t ids[] = {2};
    static const float ws[] = {0.7310585786f};
    moeroute_params p = make(1, 6, 1, MOEROUTE_SCORE_SIGMOID, 0);
    p.num_groups = 3;
    p.topk_groups = 1;
    p.group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
    expect_gate(&p, xs, NULL, NULL, ids, ws);

    /* MAX of a group with no finite value is -inf: [NaN, -inf | -5, -6], k = 2 -> g1 ->
     * ids [2, 3]; renormalize: sig(-5) / (sig(-5) + sig(-6)) = 0.7302241941, 0.2697758059. */
    const float x2[] = {NAN, -INFINITY, -5, -6};
    static const int32_t ids2[] = {2, 3};
    static const float w2[] = {0.7302241941f, 0.2697758059f};
    moeroute_params p2 = make(1, 4, 2, MOEROUTE_SCORE_SIGMOID, 1);
    p2.num_groups = 2;
    p2.topk_groups = 1;
    p2.group_score = MOEROUTE_GROUP_SCORE_MAX;
    expect_gate(&p2, x2, NULL, NULL, ids2, w2);

    /* the kept group has fewer finite logits than k: [5, NaN | 1, 1], MAX, k = 2:
     * g0 kept; keys [sig(5), -inf, -inf, -inf] -> ids [0, 1], w = [1, 0]. */
    const float x3[] = {5, NAN, 1, 1};
    static const int32_t ids3[] = {0, 1};
    static const float w3[] = {1.0f, 0.0f};
    expect_gate(&p2, x3, NULL, NULL, ids3, w3);

    /* every group -inf: lower groups first, then the -inf tie -> ids 0..k-1, weights 0 */
    const float x4[] = {NAN, NAN, NAN, NAN};
    static const int32_t ids4[] = {0, 1};
    static const float w4[] = {0, 0};
    expect_gate(&p2, x4, NULL, NULL, ids4, w4);
  }
  end();
}

static void dtype_stride_cases(void) {
  /* E = 4, row stride 7, T = 2, k = 2, softmax renormalized. Values exact in all
   * three dtypes; the 3 padding columns hold 100 (they would win if read).
   * row 0 [1, 3, 2, 0]    -> [1, 2], w = [1/(1+e^-1), 1/(1+e)] = [0.7310585786, 0.2689414214]
   * row 1 [0.5, -1, 2, 1] -> [2, 3], w = e^2/(e^2+e), e/(e^2+e) = the same two values. */
  begin("fp32 / bf16 / fp16 with row stride > E");
  {
    static const float rows[2][7] = {{1, 3, 2, 0, 100, 100, 100}, {0.5f, -1, 2, 1, 100, 100, 100}};
    static const int32_t ids[] = {1, 2, 2, 3};
    static const float w[] = {0.7310585786f, 0.2689414214f, 0.7310585786f, 0.2689414214f};
    moeroute_params p = make(2, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.logits_row_stride = 7;
    expect_gate(&p, rows, NULL, NULL, ids, w);
    uint16_t b[14], h[14];
    for (int i = 0; i < 14; i++) {
      b[i] = tu_float_to_bf16(rows[i / 7][i % 7]);
      h[i] = tu_float_to_fp16(rows[i / 7][i % 7]);
    }
    p.logits_dtype = MOEROUTE_DTYPE_BF16;
    expect_gate(&p, b, NULL, NULL, ids, w);
    p.logits_dtype = MOEROUTE_DTYPE_FP16;
    expect_gate(&p, h, NULL, NULL, ids, w);
    /* stride 0 means E: the same first row packed */
    p.logits_dtype = MOEROUTE_DTYPE_FP32;
    p.logits_row_stride = 0;
    p.num_tokens = 1;
    expect_gate(&p, rows[0], NULL, NULL, ids, w);
  }
  end();

  /* bf16 and fp16 subnormals and precision: fp16 0x0001 = 2^-24 > 0 = 0x0000 > 0x8001;
   * bf16 0x3f81 = 1.0078125 > 0x3f80 = 1. Softmax, k = 2, renormalize off, E = 3:
   * fp16 [0x0000, 0x0001, 0x8001] -> ids [1, 0] (keys are the logits themselves);
   * weights ~ 1/3 each (exp of ~0): 0.3333333, 0.3333333. */
  begin("fp16 subnormals and bf16 precision keep their order");
  {
    const uint16_t h[] = {0x0000, 0x0001, 0x8001};
    static const int32_t ids[] = {1, 0};
    static const float w[] = {0.33333334f, 0.33333334f};
    moeroute_params p = make(1, 3, 2, MOEROUTE_SCORE_SOFTMAX, 0);
    p.logits_dtype = MOEROUTE_DTYPE_FP16;
    expect_gate(&p, h, NULL, NULL, ids, w);
    /* bf16 [1, 1.0078125, 0.9960938]: ids [1, 0]; renormalized:
     * 1 / (1 + e^-0.0078125) = 0.5019531151, e^-0.0078125 / (...) = 0.4980468849 */
    const uint16_t b[] = {0x3f80, 0x3f81, 0x3f7f};
    static const float wb[] = {0.5019531151f, 0.4980468849f};
    p.logits_dtype = MOEROUTE_DTYPE_BF16;
    p.renormalize = 1;
    expect_gate(&p, b, NULL, NULL, ids, wb);
  }
  end();
}

static void shape_cases(void) {
  /* E = 1: k = 1, T = 3, sigmoid without renormalize, x = [0, 2, -inf]:
   * ids [0, 0, 0], w = [sig(0), sig(2), 0] = [0.5, 0.8807970780, 0]. Softmax of one
   * finite logit is 1 (and 0 for the -inf row). U = 2: e0 has 3 entries -> pad 4:
   * CK [t0, t1, t2, sentinel (1<<24)|3], vLLM [0, 1, 2, T*k = 3], two blocks of local id 0. */
  begin("E = 1");
  {
    const float x[] = {0, 2, -INFINITY};
    static const int32_t ids[] = {0, 0, 0};
    static const float w[] = {0.5f, 0.8807970780f, 0.0f};
    moeroute_params p = make(3, 1, 1, MOEROUTE_SCORE_SIGMOID, 0);
    p.unit_size = 2;
    expect_gate(&p, x, NULL, NULL, ids, w);
    static const float ws[] = {1.0f, 1.0f, 0.0f};
    p.score = MOEROUTE_SCORE_SOFTMAX;
    expect_gate(&p, x, NULL, NULL, ids, ws);
    static const int32_t ck[] = {CK(0, 0), CK(0, 1), CK(0, 2), S_CK(1, 3)};
    static const float ckw[] = {1.0f, 1.0f, 0.0f, 0.0f};
    static const int32_t blocks[] = {0, 0};
    static const int32_t vl[] = {0, 1, 2, 3};
    hand_sort h = {4, ck, ckw, blocks, vl};
    expect_route_sorted(&p, x, NULL, &h, ids, ws);
  }
  end();

  /* k = E = 4, T = 2, softmax renormalized (the weights are the full softmax):
   * row 0 [0.5, -1, 2, 1]: Z = e^2 + e + e^0.5 + e^-1 = 12.1232...;
   *   ids [2, 3, 0, 1], w = [0.6094600376, 0.2242078180, 0.1359889158, 0.0303432286]
   * row 1 [0, 0, 0, 0]: ids [0, 1, 2, 3], w = 0.25 each.
   * U = 2: every expert has exactly 2 entries, no padding, total 8:
   *   e0: (t0,slot2) (t1,slot0)   e1: (t0,3) (t1,1)   e2: (t0,0) (t1,2)   e3: (t0,1) (t1,3)
   *   vLLM flat t*4+slot: e0 [2, 4], e1 [3, 5], e2 [0, 6], e3 [1, 7]. */
  begin("k = E");
  {
    static const float x[] = {0.5f, -1, 2, 1, 0, 0, 0, 0};
    static const int32_t ids[] = {2, 3, 0, 1, 0, 1, 2, 3};
    static const float w[] = {0.6094600376f, 0.2242078180f, 0.1359889158f, 0.0303432286f,
                              0.25f,         0.25f,         0.25f,         0.25f};
    moeroute_params p = make(2, 4, 4, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 2;
    expect_gate(&p, x, NULL, NULL, ids, w);
    static const int32_t ck[] = {CK(2, 0), CK(0, 1), CK(3, 0), CK(1, 1), CK(0, 0), CK(2, 1), CK(1, 0), CK(3, 1)};
    static const float ckw[] = {0.1359889158f, 0.25f, 0.0303432286f, 0.25f, 0.6094600376f, 0.25f, 0.2242078180f, 0.25f};
    static const int32_t blocks[] = {0, 1, 2, 3};
    static const int32_t vl[] = {2, 4, 3, 5, 0, 6, 1, 7};
    hand_sort h = {8, ck, ckw, blocks, vl};
    expect_route_sorted(&p, x, NULL, &h, ids, w);
  }
  end();

  /* k = E = 32 (the largest k) with E = 32: ids in descending logit order. x_i = i
   * (distinct), so ids = [31, 30, ..., 0]; sigmoid without renormalize: w_j = sig(31 - j). */
  begin("k = 32 = E");
  {
    float x[32];
    int32_t ids[32];
    float w[32];
    for (int i = 0; i < 32; i++) {
      x[i] = (float)i / 4.0f;
      ids[i] = 31 - i;
      w[i] = (float)(1.0 / (1.0 + exp(-(double)(31 - i) / 4.0))); /* sig((31 - j) / 4) */
    }
    moeroute_params p = make(1, 32, 32, MOEROUTE_SCORE_SIGMOID, 0);
    expect_gate(&p, x, NULL, NULL, ids, w);
  }
  end();
}

/* The top-k of the sort cases: E = 4, k = 2, T = 3
 *   t0: [1, 2] w [0.6, 0.4]
 *   t1: [2, 0] w [0.7, 0.3]
 *   t2: [1, 3] w [0.9, 0.1]
 * entries per expert (ascending token): e0: (t1,s1)  e1: (t0,s0) (t2,s0)
 *   e2: (t0,s1) (t1,s0)  e3: (t2,s1)        flat t*2+slot: e0 [3], e1 [0, 4], e2 [1, 2], e3 [5] */
static const int32_t sort_ids[] = {1, 2, 2, 0, 1, 3};
static const float sort_w[] = {0.6f, 0.4f, 0.7f, 0.3f, 0.9f, 0.1f};

static void sort_cases(void) {
  /* U = 1: no padding, total 6, one block per entry. */
  begin("sort U = 1");
  {
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 1;
    static const int32_t ck[] = {CK(1, 1), CK(0, 0), CK(0, 2), CK(1, 0), CK(0, 1), CK(1, 2)};
    static const float ckw[] = {0.3f, 0.6f, 0.9f, 0.4f, 0.7f, 0.1f};
    static const int32_t blocks[] = {0, 1, 1, 2, 2, 3};
    static const int32_t vl[] = {3, 0, 4, 1, 2, 5};
    hand_sort h = {6, ck, ckw, blocks, vl};
    expect_sort(&p, sort_ids, sort_w, NULL, &h);
  }
  end();

  /* U = 4: every expert padded to 4 with the sentinel S = (k << 24) | T = (2 << 24) | 3
   * (weight 0) and vLLM padding T * k = 6; total 16, blocks [0, 1, 2, 3]. */
  begin("sort U = 4 (padding)");
  {
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 4;
    const int32_t S = S_CK(2, 3);
    const int32_t ck[] = {CK(1, 1), S, S, S, CK(0, 0), CK(0, 2), S, S, CK(1, 0), CK(0, 1), S, S, CK(1, 2), S, S, S};
    static const float ckw[] = {0.3f, 0, 0, 0, 0.6f, 0.9f, 0, 0, 0.4f, 0.7f, 0, 0, 0.1f, 0, 0, 0};
    static const int32_t blocks[] = {0, 1, 2, 3};
    static const int32_t vl[] = {3, 6, 6, 6, 0, 4, 6, 6, 1, 2, 6, 6, 5, 6, 6, 6};
    hand_sort h = {16, ck, ckw, blocks, vl};
    expect_sort(&p, sort_ids, sort_w, NULL, &h);
    /* without weights (sorted_weights not requested, topk_weights may be NULL) */
    hand_sort h2 = {16, ck, NULL, blocks, vl};
    expect_sort(&p, sort_ids, NULL, NULL, &h2);
  }
  end();

  /* U = 3 and an expert with no tokens gets no block: ids where e1 is unused:
   *   t0 [0, 2], t1 [2, 3], t2 [3, 0]  -> e0: (t0,s0) (t2,s1); e2: (t0,s1) (t1,s0); e3: (t1,s1) (t2,s0)
   * each padded to 3: total 9, blocks [0, 2, 3] (global = local without mask). */
  begin("sort: expert without tokens has no block");
  {
    static const int32_t ids[] = {0, 2, 2, 3, 3, 0};
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 3;
    const int32_t S = S_CK(2, 3);
    const int32_t ck[] = {CK(0, 0), CK(1, 2), S, CK(1, 0), CK(0, 1), S, CK(1, 1), CK(0, 2), S};
    static const int32_t blocks[] = {0, 2, 3};
    static const int32_t vl[] = {0, 5, 6, 1, 2, 6, 3, 4, 6};
    hand_sort h = {9, ck, NULL, blocks, vl};
    expect_sort(&p, ids, NULL, NULL, &h);
  }
  end();

  /* masked experts: mask [1, 0, 1, 1], U = 2: e1's entries are dropped; local ids
   * e0 -> 0, e2 -> 1, e3 -> 2. total 6, blocks [0, 1, 2].
   *   e0: (t1,s1) S    e2: (t0,s1) (t1,s0)    e3: (t2,s1) S */
  begin("expert mask: dropped entries, local ids");
  {
    static const int32_t mask[] = {1, 0, 1, 1};
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 2;
    const int32_t S = S_CK(2, 3);
    const int32_t ck[] = {CK(1, 1), S, CK(1, 0), CK(0, 1), CK(1, 2), S};
    static const float ckw[] = {0.3f, 0, 0.4f, 0.7f, 0.1f, 0};
    static const int32_t blocks[] = {0, 1, 2};
    static const int32_t vl[] = {3, 6, 1, 2, 5, 6};
    hand_sort h = {6, ck, ckw, blocks, vl};
    expect_sort(&p, sort_ids, sort_w, mask, &h);
  }
  end();

  /* the mask does not change gating: x = [1, 3, 2, 0], k = 2 -> ids [1, 2] even with
   * expert 1 masked; sorted (U = 1) holds only (t0, s1) of e2, whose local id is 1. */
  begin("expert mask does not change topk_ids");
  {
    static const float x[] = {1, 3, 2, 0};
    static const int32_t mask[] = {1, 0, 1, 1};
    static const int32_t ids[] = {1, 2};
    static const float w[] = {0.7310585786f, 0.2689414214f};
    moeroute_params p = make(1, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 1;
    expect_gate(&p, x, NULL, mask, ids, w);
    static const int32_t ck[] = {CK(1, 0)};
    static const float ckw[] = {0.2689414214f};
    static const int32_t blocks[] = {1};
    static const int32_t vl[] = {1};
    hand_sort h = {1, ck, ckw, blocks, vl};
    expect_route_sorted(&p, x, mask, &h, ids, w);
  }
  end();

  /* every expert masked: nothing sorted, total 0, num_valid_ids {0, T}. */
  begin("all experts masked");
  {
    static const int32_t mask[] = {0, 0, 0, 0};
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 2;
    hand_sort h = {0, NULL, NULL, NULL, NULL};
    static const int32_t none[1] = {0};
    static const float nonef[1] = {0};
    h.ck = none;
    h.ck_w = nonef;
    h.blocks = none;
    h.vllm = none;
    expect_sort(&p, sort_ids, sort_w, mask, &h);
  }
  end();

  /* sort-only with ids outside [0, E): dropped, still no crash. E = 4, k = 2, T = 3, U = 2:
   *   t0 [-1, 2]  t1 [4, 0]  t2 [2, 1000]   (and INT32_MIN / INT32_MAX below)
   * e0: (t1,s1) S;  e2: (t0,s1) (t2,s0). total 4, blocks [0, 2]; vLLM [3, 6, 1, 4]. */
  begin("sort-only: ids out of range are dropped");
  {
    static const int32_t ids[] = {-1, 2, 4, 0, 2, 1000};
    static const float w[] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    moeroute_params p = make(3, 4, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 2;
    const int32_t S = S_CK(2, 3);
    const int32_t ck[] = {CK(1, 1), S, CK(1, 0), CK(0, 2)};
    static const float ckw[] = {0.4f, 0, 0.2f, 0.5f};
    static const int32_t blocks[] = {0, 2};
    static const int32_t vl[] = {3, 6, 1, 4};
    hand_sort h = {4, ck, ckw, blocks, vl};
    expect_sort(&p, ids, w, NULL, &h);

    static const int32_t ids2[] = {INT32_MIN, 2, INT32_MAX, 0, 2, -2147483647};
    expect_sort(&p, ids2, w, NULL, &h);
  }
  end();

  /* duplicate ids in a row are placed each on its own (design 9): T = 1, k = 2, E = 2,
   * ids [1, 1], U = 4 -> e1: (t0,s0) (t0,s1) S S with S = (2 << 24) | 1; vLLM [0, 1, 2, 2]. */
  begin("sort-only: duplicate ids in a row");
  {
    static const int32_t ids[] = {1, 1};
    static const float w[] = {0.25f, 0.75f};
    moeroute_params p = make(1, 2, 2, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 4;
    const int32_t S = S_CK(2, 1);
    const int32_t ck[] = {CK(0, 0), CK(1, 0), S, S};
    static const float ckw[] = {0.25f, 0.75f, 0, 0};
    static const int32_t blocks[] = {1};
    static const int32_t vl[] = {0, 1, 2, 2};
    hand_sort h = {4, ck, ckw, blocks, vl};
    expect_sort(&p, ids, w, NULL, &h);
  }
  end();
}

/* T = 0: valid; counts zero, nothing sorted, moe_buf still cleared (contract 1, design 8). */
static void zero_token_cases(void) {
  begin("T = 0 (route, gate, sort)");
  {
    static const moeroute_op ops[] = {MOEROUTE_OP_ROUTE, MOEROUTE_OP_GATE, MOEROUTE_OP_SORT};
    for (int i = 0; i < 3; i++) {
      char ctx[128];
      snprintf(ctx, sizeof ctx, "%s [op %d]", case_name, (int)ops[i]);
      moeroute_params p = make(0, 8, 3, MOEROUTE_SCORE_SOFTMAX, 1);
      p.unit_size = 16;
      p.moe_buf_bytes = 333;
      hx_outputs o;
      if (hx_alloc(&o, &p, ops[i], ctx) != MOEROUTE_OK) continue;
      CHECK(o.sz.topk_len == 0 && o.sz.ck_sorted_len == 8 * 16 - 3, "%s: sizes", ctx);
      moeroute_buffers b;
      hx_buffers(&o, HX_TOPK | HX_SORTED_WEIGHTS | HX_MOE_BUF, &b);
      b.logits = NULL; /* logits are required only when T > 0 */
      moeroute_status st = ops[i] == MOEROUTE_OP_ROUTE  ? moeroute_cpu_route(&p, &b)
                           : ops[i] == MOEROUTE_OP_GATE ? moeroute_cpu_gate(&p, &b)
                                                        : moeroute_cpu_sort(&p, &b);
      if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
        if (ops[i] != MOEROUTE_OP_GATE) {
          const int32_t* nv = (const int32_t*)o.num_valid_ids.ptr;
          CHECK(nv[0] == 0 && nv[1] == 0, "%s: num_valid_ids {%d, %d}", ctx, nv[0], nv[1]);
          CHECK(*(const int32_t*)o.num_tokens_post_pad.ptr == 0, "%s: num_tokens_post_pad", ctx);
          CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "%s: moe_buf not cleared with T = 0", ctx);
          CHECK(tu_gbody_is(&o.sorted_ids, 0, HX_FILL) && tu_gbody_is(&o.sorted_expert_ids, 0, HX_FILL) &&
                    tu_gbody_is(&o.sorted_token_ids, 0, HX_FILL) && tu_gbody_is(&o.expert_ids, 0, HX_FILL) &&
                    tu_gbody_is(&o.sorted_weights, 0, HX_FILL),
                "%s: sorted arrays written past total = 0", ctx);
        } else {
          CHECK(tu_gbody_is(&o.moe_buf, 0, HX_MOE_FILL), "%s: gate cleared moe_buf", ctx);
        }
      }
      hx_canaries_ok(&o, ctx);
      hx_free(&o);
    }
  }
  end();
}

/* The CK token field is 24 bits: T = 2^24 - 1 is the largest CK batch. E = 1, k = 1,
 * U = 2, every id 0: position i holds token i ((0 << 24) | i = i), and T is odd, so
 * one sentinel (k << 24) | T = (1 << 24) | 0xFFFFFF = 0x1FFFFFF closes the run;
 * total = 2^24, 2^23 blocks of local id 0; vLLM: i, then the padding T * k = 2^24 - 1.
 * And with the vLLM layout alone, T = 2^24 is allowed: total 2^24, no padding. */
static void ck_limit_cases(void) {
  begin("T = 2^24 - 1 (CK limit) and T = 2^24 (vLLM only)");
  for (int variant = 0; variant < 2; variant++) {
    char ctx[128];
    moeroute_params p = make(variant == 0 ? (1 << 24) - 1 : (1 << 24), 1, 1, MOEROUTE_SCORE_SOFTMAX, 1);
    p.unit_size = 2;
    p.layouts = variant == 0 ? MOEROUTE_LAYOUT_BOTH : MOEROUTE_LAYOUT_VLLM;
    snprintf(ctx, sizeof ctx, "%s [T=%lld]", case_name, (long long)p.num_tokens);
    const int64_t T = p.num_tokens;
    int32_t* ids = (int32_t*)calloc((size_t)T, sizeof(int32_t));
    hx_outputs o;
    if (ids && hx_alloc(&o, &p, MOEROUTE_OP_SORT, ctx) == MOEROUTE_OK) {
      moeroute_buffers b;
      hx_buffers(&o, 0, &b);
      b.topk_ids = ids;
      moeroute_status st = moeroute_cpu_sort(&p, &b);
      if (CHECK(st == MOEROUTE_OK, "%s: %s: %s", ctx, moeroute_status_string(st), moeroute_last_error())) {
        const int64_t total = (T + 1) / 2 * 2;
        const int32_t* vl = (const int32_t*)o.sorted_token_ids.ptr;
        const int32_t* eb = (const int32_t*)o.expert_ids.ptr;
        int64_t bad = -1;
        for (int64_t i = 0; i < total && bad < 0; i++)
          if (vl[i] != (i < T ? (int32_t)i : (int32_t)T)) bad = i;
        CHECK(bad < 0, "%s: sorted_token_ids[%lld] = %d", ctx, (long long)bad, bad < 0 ? 0 : vl[bad]);
        bad = -1;
        for (int64_t i = 0; i < total / 2 && bad < 0; i++)
          if (eb[i] != 0) bad = i;
        CHECK(bad < 0, "%s: expert_ids[%lld] != 0", ctx, (long long)bad);
        CHECK(*(const int32_t*)o.num_tokens_post_pad.ptr == (int32_t)total, "%s: num_tokens_post_pad %d", ctx,
              *(const int32_t*)o.num_tokens_post_pad.ptr);
        if (variant == 0) {
          const int32_t* ck = (const int32_t*)o.sorted_ids.ptr;
          const int32_t* cb = (const int32_t*)o.sorted_expert_ids.ptr;
          const int32_t* nv = (const int32_t*)o.num_valid_ids.ptr;
          bad = -1;
          for (int64_t i = 0; i < T && bad < 0; i++)
            if (ck[i] != (int32_t)i) bad = i;
          CHECK(bad < 0, "%s: sorted_ids[%lld] = %d", ctx, (long long)bad, bad < 0 ? 0 : ck[bad]);
          CHECK(ck[T] == 0x1FFFFFF, "%s: sentinel 0x%x, want 0x1FFFFFF", ctx, (unsigned)ck[T]);
          bad = -1;
          for (int64_t i = 0; i < total / 2 && bad < 0; i++)
            if (cb[i] != 0) bad = i;
          CHECK(bad < 0, "%s: sorted_expert_ids[%lld] != 0", ctx, (long long)bad);
          CHECK(nv[0] == (1 << 24) && nv[1] == (1 << 24) - 1, "%s: num_valid_ids {%d, %d}", ctx, nv[0], nv[1]);
        }
      }
      hx_canaries_ok(&o, ctx);
      hx_free(&o);
    }
    free(ids);
  }
  end();
}

int main(void) {
  softmax_cases();
  tie_cases();
  nonfinite_cases();
  score_cases();
  group_cases();
  dtype_stride_cases();
  shape_cases();
  sort_cases();
  zero_token_cases();
  ck_limit_cases();
  printf("rules: %ld checks, %ld failed\n", tu_checks, tu_failures);
  return tu_summary(cases_passed, cases_failed);
}
