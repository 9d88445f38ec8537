/*
 * test_random.c - the oracle against the CPU backend on random configurations
 * spanning every option: score, bias, groups and group score, renormalize,
 * scale, dtype, row stride, expert mask (ratios 0 / 0.3 / 0.5 / 0.7 / 1), U from 1
 * to 1024, E from 1 to 1024 (non-powers of two too; a few up to 4096, the CPU
 * accepts more), k from 1 to min(E, 32),
 * T from 0 to ~300, layouts CK / vLLM / both, moe_buf, and four ways to call:
 *   route with top-k outputs, route without (must equal the former bit for
 *   bit), gate + sort (must equal route bit for bit), sort-only on random ids
 *   (out-of-range ids included).
 * Logits are mostly tie-free (ids must then match exactly); some runs draw from
 * a handful of values (exact ties: the tie rule is the same everywhere, so ids
 * must still match exactly), some sprinkle NaN / +inf / -inf, some use extreme
 * magnitudes, some make the same few experts lead every row (worst-case skew).
 * Rows where two keys from different inputs are closer than fp32 rounding can
 * be trusted with are flagged by the oracle; an id difference
 * there is counted as "tolerated", not as a failure (contract 4).
 *
 * usage: test_random [SEED [COUNT]]   (defaults: 20260501, 2400)
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

enum { MODE_ROUTE, MODE_ROUTE_NO_TOPK, MODE_CHAIN, MODE_SORT, MODE_COUNT };
static const char* mode_name[] = {"route", "route-no-topk", "gate+sort", "sort-only"};

enum { LOGITS_TIE_FREE, LOGITS_TIES, LOGITS_NONFINITE, LOGITS_EXTREME, LOGITS_HOT, LOGITS_KINDS };
static const char* logits_name[] = {"tie-free", "ties", "non-finite", "extreme", "hot-experts"};

typedef struct config {
  moeroute_params p;
  int mode;
  int logits_kind;
  int has_bias;
  double mask_ratio; /* < 0: no mask */
  int give_sorted_weights;
  int give_all_pointers; /* also the other layout's pointers (must stay untouched) */
  int give_moe_buf;
  int sort_weights_null; /* sort-only: topk_weights NULL */
  int repeat;            /* call twice: bit-identical (determinism) */
} config;

static long tolerated_rows = 0;
static long flagged_rows = 0;
static long compared_rows = 0;

/* ---- random configurations ------------------------------------------------- */

static int32_t pick(tu_rng* r, const int32_t* list, int n) { return list[tu_below(r, (uint32_t)n)]; }

static void random_config(tu_rng* r, config* c) {
  memset(c, 0, sizeof *c);
  moeroute_params* p = &c->p;
  moeroute_params_init(p);

  static const int32_t common_e[] = {8, 16, 32, 60, 64, 128, 160, 256, 384, 512, 1000, 1024};
  uint32_t u = tu_below(r, 100);
  int32_t E = u < 15 ? tu_range(r, 1, 16) : u < 75 ? tu_log_range(r, 1, 1024) : u < 98 ? pick(r, common_e, 12)
                                                                              : tu_range(r, 1025, 4096);
  p->num_experts = E;

  const int32_t kmax = E < 32 ? E : 32;
  u = tu_below(r, 100);
  p->top_k = u < 60 ? tu_log_range(r, 1, kmax) : u < 80 ? (kmax < 8 ? kmax : 8) : u < 90 ? kmax : 1;

  p->score = (moeroute_score)tu_below(r, 3);
  c->has_bias = tu_chance(r, 0.5);
  p->renormalize = tu_chance(r, 0.6);
  u = tu_below(r, 100);
  p->scale = u < 50 ? 1.0f : u < 60 ? 2.5f : u < 70 ? 2.827f : u < 80 ? 16.0f : u < 97 ? (float)(0.1 + 9.9 * tu_uniform(r)) : -1.5f;
  p->logits_dtype = (moeroute_dtype)tu_below(r, 3);
  u = tu_below(r, 100);
  p->logits_row_stride = u < 70 ? 0 : u < 90 ? E + tu_range(r, 1, 17) : E;

  /* groups: a divisor G > 1 of E, topk_groups with topk_groups * E / G >= k */
  if (tu_chance(r, 0.3)) {
    int32_t divs[64], nd = 0;
    for (int32_t g = 2; g <= E && nd < 64; g++)
      if (E % g == 0) divs[nd++] = g;
    if (nd > 0) {
      const int32_t G = divs[tu_below(r, (uint32_t)nd)];
      const int32_t per = E / G;
      p->num_groups = G;
      p->group_score = per >= 2 && tu_chance(r, 0.6) ? MOEROUTE_GROUP_SCORE_TOP2_SUM : MOEROUTE_GROUP_SCORE_MAX;
      const int32_t lo = (p->top_k + per - 1) / per;
      p->topk_groups = tu_range(r, lo, G);
    }
  }

  static const double ratios[] = {0.0, 0.3, 0.5, 0.7, 1.0};
  c->mask_ratio = tu_chance(r, 0.35) ? ratios[tu_below(r, 5)] : -1.0;

  static const int32_t common_u[] = {1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  u = tu_below(r, 100);
  int32_t U = u < 60 ? pick(r, common_u, 12) : u < 85 ? tu_range(r, 1, 1024) : tu_log_range(r, 1, 1024);
  if ((int64_t)E * U > (1 << 20)) U = (1 << 20) / E > 0 ? (1 << 20) / E : 1;
  p->unit_size = U;

  u = tu_below(r, 100);
  int64_t T = u < 5 ? 0 : u < 30 ? tu_range(r, 1, 8) : tu_log_range(r, 1, 300);
  /* keep the brute-force oracle (E * T * k for the sort) and the run time modest */
  const int64_t budget = 3000000;
  if (T * p->top_k * E > budget) T = budget / ((int64_t)p->top_k * E);
  p->num_tokens = T;

  p->layouts = 1u + tu_below(r, 3);
  c->give_sorted_weights = tu_chance(r, 0.8);
  c->give_all_pointers = tu_chance(r, 0.25);
  c->give_moe_buf = tu_chance(r, 0.3);
  p->moe_buf_bytes = c->give_moe_buf ? (size_t)tu_range(r, 1, 4096) : 0;

  u = tu_below(r, 100);
  c->mode = u < 45 ? MODE_ROUTE : u < 58 ? MODE_ROUTE_NO_TOPK : u < 80 ? MODE_CHAIN : MODE_SORT;
  c->sort_weights_null = c->mode == MODE_SORT && tu_chance(r, 0.2);
  if (c->sort_weights_null) c->give_sorted_weights = 0;

  u = tu_below(r, 100);
  c->logits_kind = u < 65   ? LOGITS_TIE_FREE
                   : u < 77 ? LOGITS_TIES
                   : u < 87 ? LOGITS_NONFINITE
                   : u < 94 ? LOGITS_EXTREME
                            : LOGITS_HOT;
  c->repeat = tu_chance(r, 0.1);
}

static void describe(const config* c, char* out, size_t n) {
  const moeroute_params* p = &c->p;
  snprintf(out, n,
           "T=%lld E=%d k=%d U=%d stride=%lld dtype=%d score=%d renorm=%d scale=%g G=%d/%d gscore=%d layouts=%u "
           "bias=%d mask=%g moe=%zu mode=%s logits=%s sw=%d",
           (long long)p->num_tokens, p->num_experts, p->top_k, p->unit_size, (long long)p->logits_row_stride,
           (int)p->logits_dtype, (int)p->score, p->renormalize, (double)p->scale, p->num_groups, p->topk_groups,
           (int)p->group_score, p->layouts, c->has_bias, c->mask_ratio, p->moe_buf_bytes, mode_name[c->mode],
           logits_name[c->logits_kind], c->give_sorted_weights);
}

/* ---- inputs -------------------------------------------------------------------- */

/* Round v to the dtype (the value the backend will read). */
static float quantize(moeroute_dtype dt, float v) {
  if (dt == MOEROUTE_DTYPE_BF16) return tu_bf16_to_float(tu_float_to_bf16(v));
  if (dt == MOEROUTE_DTYPE_FP16) return tu_fp16_to_float(tu_float_to_fp16(v));
  return v;
}

static void store(moeroute_dtype dt, void* logits, int64_t i, float v) {
  if (dt == MOEROUTE_DTYPE_FP32)
    ((float*)logits)[i] = v;
  else if (dt == MOEROUTE_DTYPE_BF16)
    ((uint16_t*)logits)[i] = tu_float_to_bf16(v);
  else
    ((uint16_t*)logits)[i] = tu_float_to_fp16(v);
}

/* A small open-addressing set of float bit patterns, for distinct values in a row. */
typedef struct fset {
  uint32_t* slot;
  uint32_t mask;
} fset;
static void fset_clear(fset* s) { memset(s->slot, 0xff, sizeof(uint32_t) * (s->mask + 1)); }
static int fset_add(fset* s, float v) { /* 1 when new */
  uint32_t b;
  if (v == 0.0f) v = 0.0f; /* -0 and +0 are the same value */
  memcpy(&b, &v, 4);
  uint32_t h = (b * 2654435761u) & s->mask;
  while (s->slot[h] != 0xffffffffu) {
    if (s->slot[h] == b) return 0;
    h = (h + 1) & s->mask;
  }
  s->slot[h] = b;
  return 1;
}

/* One candidate logit before quantisation. */
static float draw_value(tu_rng* r, int kind, moeroute_dtype dt, double spread) {
  if (kind == LOGITS_EXTREME) {
    const double maxmag = dt == MOEROUTE_DTYPE_FP16 ? 60000.0 : 3e38;
    uint32_t u = tu_below(r, 10);
    if (u == 0) return tu_chance(r, 0.5) ? FLT_MAX : -FLT_MAX;
    double mag = exp(log(1e-3) + (log(maxmag) - log(1e-3)) * tu_uniform(r));
    return (float)(tu_chance(r, 0.5) ? mag : -mag);
  }
  if (tu_chance(r, 0.5)) return (float)((2.0 * tu_uniform(r) - 1.0) * 4.0 * spread);
  /* log-magnitude: many binades, so bf16 still has plenty of distinct values */
  double mag = exp(log(1e-3) + (log(8.0) - log(1e-3)) * tu_uniform(r)) * spread;
  return (float)(tu_chance(r, 0.5) ? mag : -mag);
}

static void make_logits(tu_rng* r, const config* c, void* logits, fset* set) {
  const moeroute_params* p = &c->p;
  const int32_t E = p->num_experts;
  const int64_t stride = p->logits_row_stride ? p->logits_row_stride : E;
  const moeroute_dtype dt = p->logits_dtype;
  static const float tie_values[] = {-1.0f, 0.0f, 0.5f, 1.0f, 2.0f};
  static const double spreads[] = {1.0, 1.0, 4.0, 0.1};
  const double spread = spreads[tu_below(r, 4)];
  const float pad_value = dt == MOEROUTE_DTYPE_FP16 ? 60000.0f : 1e30f; /* would win if read */
  /* hot experts (worst-case skew): the same few experts lead every row */
  int32_t hot[3];
  for (int i = 0; i < 3; i++) hot[i] = (int32_t)tu_below(r, (uint32_t)E);
  for (int64_t t = 0; t < p->num_tokens; t++) {
    fset_clear(set);
    const int row_dead = c->logits_kind == LOGITS_NONFINITE && tu_chance(r, 0.1);
    for (int32_t i = 0; i < E; i++) {
      float v;
      if (c->logits_kind == LOGITS_TIES) {
        v = tie_values[tu_below(r, 5)];
      } else {
        int tries = 0;
        do {
          v = quantize(dt, draw_value(r, c->logits_kind, dt, spread));
        } while (!fset_add(set, v) && ++tries < 1000);
      }
      if (c->logits_kind == LOGITS_HOT && (i == hot[0] || i == hot[1] || i == hot[2]))
        v = quantize(dt, v + (i == hot[0] ? 40.0f : i == hot[1] ? 30.0f : 20.0f));
      if (c->logits_kind == LOGITS_NONFINITE && (row_dead || tu_chance(r, 0.1))) {
        uint32_t u = tu_below(r, row_dead ? 2 : 3);
        v = u == 0 ? NAN : u == 1 ? -INFINITY : INFINITY;
      }
      store(dt, logits, t * stride + i, v);
    }
    for (int64_t i = E; i < stride; i++) store(dt, logits, t * stride + i, pad_value);
  }
}

static void make_bias(tu_rng* r, const config* c, float* bias) {
  const int32_t E = c->p.num_experts;
  static const float tie_bias[] = {0.0f, 0.25f, 0.5f};
  static const double mags[] = {0.01, 0.1, 1.0};
  const double m = mags[tu_below(r, 3)];
  for (int32_t i = 0; i < E; i++)
    bias[i] = c->logits_kind == LOGITS_TIES ? tie_bias[tu_below(r, 3)] : (float)((2.0 * tu_uniform(r) - 1.0) * m);
}

static void make_sort_input(tu_rng* r, const config* c, int32_t* ids, float* w) {
  const int64_t n = c->p.num_tokens * c->p.top_k;
  const int32_t E = c->p.num_experts;
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = tu_below(r, 100);
    ids[i] = u < 85   ? (int32_t)tu_below(r, (uint32_t)E)
             : u < 90 ? -(int32_t)tu_range(r, 1, 5)
             : u < 95 ? E + tu_range(r, 0, 5)
             : u < 97 ? INT32_MIN
                      : INT32_MAX;
    if (w) w[i] = (float)tu_uniform(r);
  }
}

/* ---- one configuration --------------------------------------------------------- */

static moeroute_status call(moeroute_op op, const moeroute_params* p, const moeroute_buffers* b) {
  return op == MOEROUTE_OP_ROUTE ? moeroute_cpu_route(p, b)
         : op == MOEROUTE_OP_GATE ? moeroute_cpu_gate(p, b)
                                  : moeroute_cpu_sort(p, b);
}

static int outputs_identical(const hx_outputs* a, const hx_outputs* b) {
  const tu_guard* ga[] = {&a->topk_ids, &a->topk_weights, &a->sorted_ids, &a->sorted_weights, &a->sorted_expert_ids,
                          &a->num_valid_ids, &a->sorted_token_ids, &a->expert_ids, &a->num_tokens_post_pad,
                          &a->moe_buf};
  const tu_guard* gb[] = {&b->topk_ids, &b->topk_weights, &b->sorted_ids, &b->sorted_weights, &b->sorted_expert_ids,
                          &b->num_valid_ids, &b->sorted_token_ids, &b->expert_ids, &b->num_tokens_post_pad,
                          &b->moe_buf};
  for (size_t i = 0; i < sizeof ga / sizeof ga[0]; i++)
    if (ga[i]->bytes != gb[i]->bytes || memcmp(ga[i]->ptr, gb[i]->ptr, ga[i]->bytes) != 0) return 0;
  return 1;
}

/* Same sorted outputs (not the top-k arrays). */
static int sorted_identical(const hx_outputs* a, const hx_outputs* b) {
  const tu_guard* ga[] = {&a->sorted_ids, &a->sorted_weights, &a->sorted_expert_ids, &a->num_valid_ids,
                          &a->sorted_token_ids, &a->expert_ids, &a->num_tokens_post_pad, &a->moe_buf};
  const tu_guard* gb[] = {&b->sorted_ids, &b->sorted_weights, &b->sorted_expert_ids, &b->num_valid_ids,
                          &b->sorted_token_ids, &b->expert_ids, &b->num_tokens_post_pad, &b->moe_buf};
  for (size_t i = 0; i < sizeof ga / sizeof ga[0]; i++)
    if (memcmp(ga[i]->ptr, gb[i]->ptr, ga[i]->bytes) != 0) return 0;
  return 1;
}

static int run_config(tu_rng* r, const config* c, int index) {
  const long before = tu_failures;
  char ctx[700];
  char desc[600];
  describe(c, desc, sizeof desc);
  snprintf(ctx, sizeof ctx, "config %d (%s)", index, desc);
  const moeroute_params* p = &c->p;
  const int64_t T = p->num_tokens;
  const int32_t E = p->num_experts, k = p->top_k;
  const int64_t stride = p->logits_row_stride ? p->logits_row_stride : E;
  const size_t esize = p->logits_dtype == MOEROUTE_DTYPE_FP32 ? 4 : 2;

  /* inputs (kept pristine copies to prove the call does not write them) */
  void* logits = malloc((size_t)(T * stride) * esize + 4);
  float* bias = c->has_bias ? (float*)malloc(sizeof(float) * (size_t)E) : NULL;
  int32_t* mask = c->mask_ratio >= 0 ? (int32_t*)malloc(sizeof(int32_t) * (size_t)E) : NULL;
  int32_t* in_ids = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T * k) + 4);
  float* in_w = (float*)malloc(sizeof(float) * (size_t)(T * k) + 4);
  fset set;
  set.mask = 4095;
  set.slot = (uint32_t*)malloc(sizeof(uint32_t) * 4096);
  make_logits(r, c, logits, &set);
  if (bias) make_bias(r, c, bias);
  if (mask)
    for (int32_t i = 0; i < E; i++) mask[i] = tu_chance(r, c->mask_ratio);
  if (c->mode == MODE_SORT) make_sort_input(r, c, in_ids, in_w);

  void* logits_copy = malloc((size_t)(T * stride) * esize + 4);
  memcpy(logits_copy, logits, (size_t)(T * stride) * esize);

  /* the oracle's gating */
  int32_t* o_ids = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T * k) + 4);
  float* o_w = (float*)malloc(sizeof(float) * (size_t)(T * k) + 4);
  unsigned char* flags = (unsigned char*)calloc((size_t)T + 1, 1);
  if (c->mode != MODE_SORT) {
    oracle_gate(p, logits, bias, o_ids, o_w, flags);
    for (int64_t t = 0; t < T; t++) flagged_rows += (flags[t] & ORACLE_ROW_NEAR_TIE) != 0;
  }

  const uint32_t give = (c->give_sorted_weights ? HX_SORTED_WEIGHTS : 0) | (c->give_moe_buf ? HX_MOE_BUF : 0) |
                        (c->give_all_pointers ? HX_ALL_LAYOUTS : 0);
  hx_outputs o, o2;
  memset(&o2, 0, sizeof o2);
  int have_o2 = 0;
  const moeroute_op first_op = c->mode == MODE_CHAIN ? MOEROUTE_OP_GATE
                               : c->mode == MODE_SORT ? MOEROUTE_OP_SORT
                                                      : MOEROUTE_OP_ROUTE;
  if (hx_alloc(&o, p, first_op, ctx) != MOEROUTE_OK) goto done_inputs;

  moeroute_buffers b;
  const int32_t* used_ids = NULL; /* ids the sorted layout was built from */
  const float* used_w = NULL;

  if (c->mode == MODE_ROUTE || c->mode == MODE_ROUTE_NO_TOPK || c->mode == MODE_CHAIN) {
    /* route with top-k (the gate in chain mode) */
    hx_buffers(&o, give | HX_TOPK, &b);
    if (c->mode == MODE_CHAIN) { /* gate: no sorted outputs, moe_buf must stay */
      moeroute_buffers_init(&b);
      b.topk_ids = (int32_t*)o.topk_ids.ptr;
      b.topk_weights = (float*)o.topk_weights.ptr;
      b.moe_buf = o.moe_buf.ptr;
      b.workspace = o.workspace.ptr;
      b.workspace_bytes = o.ws_bytes;
    }
    b.logits = logits;
    b.bias = bias;
    b.expert_mask = mask;
    moeroute_status st = call(first_op, p, &b);
    if (!CHECK(st == MOEROUTE_OK, "%s: %s -> %s: %s", ctx, first_op == MOEROUTE_OP_GATE ? "gate" : "route",
               moeroute_status_string(st), moeroute_last_error()))
      goto done;
    hx_compare_topk(T, k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, o_ids, o_w, flags, 1e-5f,
                    &tolerated_rows, ctx);
    compared_rows += T;
    /* ids always valid and distinct within a row */
    for (int64_t t = 0; t < T; t++) {
      const int32_t* row = (const int32_t*)o.topk_ids.ptr + t * k;
      int good = 1;
      for (int32_t j = 0; j < k && good; j++) {
        if (row[j] < 0 || row[j] >= E) good = 0;
        for (int32_t jj = 0; jj < j && good; jj++)
          if (row[jj] == row[j]) good = 0;
      }
      const float* wr = (const float*)o.topk_weights.ptr + t * k;
      for (int32_t j = 0; j < k && good; j++)
        if (isnan(wr[j])) good = 0;
      if (!CHECK(good, "%s: row %lld: ids not distinct in [0, E) or a NaN weight", ctx, (long long)t)) break;
    }
    used_ids = (const int32_t*)o.topk_ids.ptr;
    used_w = (const float*)o.topk_weights.ptr;

    if (c->mode == MODE_CHAIN) {
      CHECK(tu_gbody_is(&o.moe_buf, 0, HX_MOE_FILL), "%s: gate touched moe_buf", ctx);
      CHECK(tu_gbody_is(&o.sorted_ids, 0, HX_FILL) && tu_gbody_is(&o.sorted_token_ids, 0, HX_FILL) &&
                tu_gbody_is(&o.num_valid_ids, 0, HX_FILL),
            "%s: gate wrote a sorted output", ctx);
      /* now sort the gate's outputs into the same hx_outputs */
      size_t ws = 0;
      moeroute_status s2 = moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, p, &ws);
      CHECK(s2 == MOEROUTE_OK, "%s: sort workspace size: %s", ctx, moeroute_last_error());
      tu_guard wsg;
      tu_galloc(&wsg, ws, 0xEE);
      hx_buffers(&o, give, &b);
      b.topk_ids = (int32_t*)o.topk_ids.ptr;
      b.topk_weights = (float*)o.topk_weights.ptr;
      b.expert_mask = mask;
      b.workspace = wsg.ptr;
      b.workspace_bytes = ws;
      st = moeroute_cpu_sort(p, &b);
      CHECK(tu_gcanary_ok(&wsg), "%s: sort workspace overrun", ctx);
      tu_gfree(&wsg);
      if (!CHECK(st == MOEROUTE_OK, "%s: sort -> %s: %s", ctx, moeroute_status_string(st), moeroute_last_error()))
        goto done;
    }
  } else { /* MODE_SORT */
    hx_buffers(&o, give, &b);
    b.topk_ids = in_ids;
    b.topk_weights = c->sort_weights_null ? NULL : in_w;
    b.expert_mask = mask;
    b.logits = NULL;
    moeroute_status st = moeroute_cpu_sort(p, &b);
    if (!CHECK(st == MOEROUTE_OK, "%s: sort -> %s: %s", ctx, moeroute_status_string(st), moeroute_last_error()))
      goto done;
    used_ids = in_ids;
    used_w = c->sort_weights_null ? NULL : in_w;
    CHECK(tu_gbody_is(&o.topk_ids, 0, HX_FILL) && tu_gbody_is(&o.topk_weights, 0, HX_FILL),
          "%s: sort wrote top-k outputs", ctx);
  }

  /* the sorted layouts: exactly the oracle's sort of the ids actually used */
  {
    oracle_sorted want;
    oracle_sort(p, used_ids, used_w, mask, &want);
    hx_compare_sorted(&o, &want, c->give_sorted_weights, 1, ctx);
    hx_check_invariants(&o, used_ids, used_w, mask, c->give_sorted_weights, ctx);
    oracle_sorted_free(&want);
    if (c->give_moe_buf) CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "%s: moe_buf not cleared", ctx);
  }
  hx_canaries_ok(&o, ctx);
  CHECK(memcmp(logits, logits_copy, (size_t)(T * stride) * esize) == 0, "%s: logits modified", ctx);

  /* second call: route without top-k (must equal), route after gate+sort (must equal),
   * or the same call again (determinism) */
  if (c->mode == MODE_ROUTE_NO_TOPK || c->mode == MODE_CHAIN || c->repeat) {
    if (hx_alloc(&o2, p, c->mode == MODE_SORT ? MOEROUTE_OP_SORT : MOEROUTE_OP_ROUTE, ctx) != MOEROUTE_OK) goto done;
    have_o2 = 1;
    const int with_topk = c->mode != MODE_ROUTE_NO_TOPK && c->mode != MODE_SORT;
    hx_buffers(&o2, give | (with_topk ? HX_TOPK : 0), &b);
    b.logits = logits;
    b.bias = bias;
    b.expert_mask = mask;
    if (c->mode == MODE_SORT) {
      b.topk_ids = in_ids;
      b.topk_weights = c->sort_weights_null ? NULL : in_w;
    }
    moeroute_status st = c->mode == MODE_SORT ? moeroute_cpu_sort(p, &b) : moeroute_cpu_route(p, &b);
    if (CHECK(st == MOEROUTE_OK, "%s: second call -> %s: %s", ctx, moeroute_status_string(st),
              moeroute_last_error())) {
      if (with_topk || c->mode == MODE_SORT)
        CHECK(outputs_identical(&o, &o2), "%s: second call (%s) not bit-identical to the first", ctx,
              c->mode == MODE_CHAIN ? "route vs gate+sort" : "repeat");
      else
        CHECK(sorted_identical(&o, &o2) && tu_gbody_is(&o2.topk_ids, 0, HX_FILL),
              "%s: route without top-k outputs differs from route with them", ctx);
      hx_canaries_ok(&o2, ctx);
    }
  }

done:
  hx_free(&o);
  if (have_o2) hx_free(&o2);
done_inputs:
  free(logits);
  free(logits_copy);
  free(bias);
  free(mask);
  free(in_ids);
  free(in_w);
  free(o_ids);
  free(o_w);
  free(flags);
  free(set.slot);
  if (tu_failures != before) fprintf(stderr, "  ^ in %s\n", ctx);
  return tu_failures == before;
}

int main(int argc, char** argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20260501ull;
  long count = argc > 2 ? strtol(argv[2], NULL, 0) : 2400;
  tu_rng r;
  tu_seed(&r, seed);
  tu_max_reports = 40;
  long passed = 0, failed = 0;
  long by_mode[MODE_COUNT] = {0}, by_kind[LOGITS_KINDS] = {0}, by_dtype[3] = {0}, by_score[3] = {0};
  long with_groups = 0, with_mask = 0, with_bias = 0, with_stride = 0, t_zero = 0, e_max = 0, u_max = 0, k32 = 0;
  long e_big = 0;
  for (long i = 0; i < count; i++) {
    config c;
    random_config(&r, &c);
    /* each configuration draws its inputs from its own stream: a failure replays
     * alone with the same seed and the index */
    tu_rng inputs;
    tu_seed(&inputs, seed * 1000003ull + (uint64_t)i);
    if (run_config(&inputs, &c, (int)i))
      passed++;
    else
      failed++;
    by_mode[c.mode]++;
    by_kind[c.logits_kind]++;
    by_dtype[c.p.logits_dtype]++;
    by_score[c.p.score]++;
    with_groups += c.p.num_groups > 1;
    with_mask += c.mask_ratio >= 0;
    with_bias += c.has_bias;
    with_stride += c.p.logits_row_stride > c.p.num_experts;
    t_zero += c.p.num_tokens == 0;
    e_max += c.p.num_experts == 1024;
    e_big += c.p.num_experts > 1024;
    u_max += c.p.unit_size == 1024;
    k32 += c.p.top_k == 32;
  }
  printf("random: seed %llu, %ld configurations\n", (unsigned long long)seed, count);
  printf("  modes: route %ld, route-no-topk %ld, gate+sort %ld, sort-only %ld\n", by_mode[0], by_mode[1], by_mode[2],
         by_mode[3]);
  printf("  logits: tie-free %ld, ties %ld, non-finite %ld, extreme %ld, hot experts %ld; dtype fp32/bf16/fp16 "
         "%ld/%ld/%ld\n",
         by_kind[0], by_kind[1], by_kind[2], by_kind[3], by_kind[4], by_dtype[0], by_dtype[1], by_dtype[2]);
  printf("  score softmax/sigmoid/sqrt_softplus %ld/%ld/%ld; groups %ld, mask %ld, bias %ld, stride>E %ld\n",
         by_score[0], by_score[1], by_score[2], with_groups, with_mask, with_bias, with_stride);
  printf("  T=0 %ld, E=1024 %ld, E>1024 (CPU only) %ld, U=1024 %ld, k=32 %ld\n", t_zero, e_max, e_big, u_max, k32);
  printf("  rows compared %ld, flagged near-tie by the oracle %ld, of which differed (tolerated) %ld; checks %ld, "
         "failed %ld\n",
         compared_rows, flagged_rows, tolerated_rows, tu_checks, tu_failures);
  return tu_summary(passed, failed);
}
