/*
 * fuzz_route.c - libFuzzer harness for the CPU entry points.
 *
 * The input is decoded into a request: an op (route, gate, sort, or gate then
 * sort), parameters (mostly valid, sometimes out of range), logits of any bit
 * pattern (NaN, inf, subnormals), an optional bias and mask, or random top-k
 * ids for the sort. Every output is allocated at the contract's capacity,
 * guarded by canaries and prefilled. Then:
 *   - moeroute_get_sizes and the workspace query must agree with the header's
 *     limits (valid -> OK with the contract's sizes; invalid -> an error);
 *   - the call must give OK exactly when the request is valid; on an error it
 *     writes nothing and says why (moeroute_last_error);
 *   - on OK the outputs satisfy the layout invariants and match the oracle
 *     (tests/oracle.c): ids exactly (except oracle-flagged near ties), weights
 *     to 1e-5, sorted layouts exactly; moe_buf cleared.
 * Any violation aborts (a libFuzzer crash with the input saved).
 *
 * Build: cmake -DMOEROUTE_FUZZ=ON -DCMAKE_C_COMPILER=clang (see README.md).
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
#include "npy.h"
#include "oracle.h"
#include "testutil.h"

/* ---- a byte reader that never runs dry (zeros after the end) ---------------- */

typedef struct reader {
  const uint8_t* p;
  size_t n, i;
} reader;

static uint8_t rd_u8(reader* r) { return r->i < r->n ? r->p[r->i++] : 0; }
static uint16_t rd_u16(reader* r) {
  uint16_t lo = rd_u8(r);
  return (uint16_t)(lo | (uint16_t)rd_u8(r) << 8);
}
static uint32_t rd_u32(reader* r) {
  uint32_t lo = rd_u16(r);
  return lo | (uint32_t)rd_u16(r) << 16;
}
static float rd_f32(reader* r) {
  uint32_t u = rd_u32(r);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* small "mostly valid" numbers: v in [lo, hi] most of the time */
static int32_t rd_small(reader* r, int32_t lo, int32_t hi) {
  uint8_t b = rd_u8(r);
  return lo + (int32_t)(b % (uint32_t)(hi - lo + 1));
}

enum { OP_ROUTE, OP_GATE, OP_SORT, OP_CHAIN };

/* The header's rules for a CPU request (moeroute.h, moeroute_status comments). */
static int request_valid(moeroute_op op, const moeroute_params* p, const float* bias, const int32_t* mask) {
  const int gating = op != MOEROUTE_OP_SORT, sorting = op != MOEROUTE_OP_GATE;
  if (p->struct_size != sizeof *p) return 0;
  if (gating) {
    if ((unsigned)p->logits_dtype > 2u || (unsigned)p->score > 2u || (unsigned)p->group_score > 1u) return 0;
    if (p->renormalize != 0 && p->renormalize != 1) return 0;
    if (!isfinite(p->scale)) return 0;
  }
  if (sorting && (p->layouts < 1 || p->layouts > 3)) return 0;
  if (p->num_experts < 1 || p->num_experts > MOEROUTE_CPU_MAX_EXPERTS) return 0;
  const int32_t kmax = p->num_experts < 32 ? p->num_experts : 32;
  if (p->top_k < 1 || p->top_k > kmax) return 0;
  if (sorting && (p->unit_size < 1 || p->unit_size > 1024)) return 0;
  if (p->num_tokens < 0) return 0;
  if (sorting && (p->layouts & MOEROUTE_LAYOUT_CK) && p->num_tokens >= (1 << 24)) return 0;
  if (p->num_tokens * p->top_k >= ((int64_t)1 << 31)) return 0;
  if (gating) {
    if (p->logits_row_stride != 0 && p->logits_row_stride < p->num_experts) return 0;
    if (p->num_groups < 1) return 0;
    if (p->num_groups > 1) {
      const int32_t G = p->num_groups, E = p->num_experts;
      if (E % G != 0) return 0;
      if (p->topk_groups < 1 || p->topk_groups > G) return 0;
      if ((int64_t)p->topk_groups * (E / G) < p->top_k) return 0;
      if (p->group_score == MOEROUTE_GROUP_SCORE_TOP2_SUM && E / G < 2) return 0;
    }
    if (bias)
      for (int32_t i = 0; i < p->num_experts; i++)
        if (!isfinite(bias[i])) return 0;
  }
  if (sorting && mask)
    for (int32_t i = 0; i < p->num_experts; i++)
      if (mask[i] != 0 && mask[i] != 1) return 0;
  return 1;
}

/* On a failure with FUZZ_ROUTE_DUMP=DIR set: the request as .npy files and the
 * `moeroute route` options (args.txt), so it replays through the CLI too. */
static void dump_request(const moeroute_params* p, int mode, const void* logits, const float* bias,
                         const int32_t* mask, const int32_t* ids, const float* w) {
  const char* dir = getenv("FUZZ_ROUTE_DUMP");
  if (!dir || p->num_tokens < 0 || p->num_experts < 1 || p->top_k < 1) return;
  char path[1024], err[256];
  const int64_t stride = p->logits_row_stride > p->num_experts ? p->logits_row_stride : p->num_experts;
  const int64_t ls[2] = {p->num_tokens, stride};
  const char* dt = p->logits_dtype == MOEROUTE_DTYPE_FP32 ? "<f4" : p->logits_dtype == MOEROUTE_DTYPE_FP16 ? "<f2" : "<u2";
  snprintf(path, sizeof path, "%s/logits.npy", dir);
  mr_npy_save(path, dt, 2, ls, logits, err, sizeof err);
  const int64_t es[1] = {p->num_experts};
  if (bias) {
    snprintf(path, sizeof path, "%s/bias.npy", dir);
    mr_npy_save(path, "<f4", 1, es, bias, err, sizeof err);
  }
  if (mask) {
    snprintf(path, sizeof path, "%s/expert_mask.npy", dir);
    mr_npy_save(path, "<i4", 1, es, mask, err, sizeof err);
  }
  const int64_t ts[2] = {p->num_tokens, p->top_k};
  snprintf(path, sizeof path, "%s/sort_topk_ids.npy", dir);
  mr_npy_save(path, "<i4", 2, ts, ids, err, sizeof err);
  snprintf(path, sizeof path, "%s/sort_topk_weights.npy", dir);
  mr_npy_save(path, "<f4", 2, ts, w, err, sizeof err);
  snprintf(path, sizeof path, "%s/args.txt", dir);
  FILE* f = fopen(path, "w");
  if (!f) return;
  static const char* scores[] = {"softmax", "sigmoid", "sqrt_softplus"};
  static const char* dtypes[] = {"fp32", "bf16", "fp16"};
  fprintf(f, "--logits logits.npy --topk %d --score %s --renormalize %d --scale %.9g --unit-size %d --layout %s",
          p->top_k, (unsigned)p->score < 3 ? scores[p->score] : "?", p->renormalize, (double)p->scale, p->unit_size,
          p->layouts == 1 ? "ck" : p->layouts == 2 ? "vllm" : "both");
  fprintf(f, " --dtype %s", (unsigned)p->logits_dtype < 3 ? dtypes[p->logits_dtype] : "?");
  if (bias) fprintf(f, " --bias bias.npy");
  if (mask) fprintf(f, " --expert-mask expert_mask.npy");
  if (p->num_groups > 1)
    fprintf(f, " --groups %d:%d --group-score %s", p->num_groups, p->topk_groups,
            p->group_score == MOEROUTE_GROUP_SCORE_MAX ? "max" : "top2_sum");
  fprintf(f, "\n# op %d (0 route, 1 gate, 2 sort of sort_topk_*.npy, 3 gate then sort); logits row stride %lld\n",
          mode, (long long)stride);
  fclose(f);
}

static void fail_now(const char* what) {
  fprintf(stderr, "fuzz_route: check failed: %s\n", what);
  abort();
}

/* Outputs at the contract's capacity for p, computed defensively (p may be invalid). */
static void alloc_outputs(hx_outputs* o, const moeroute_params* p, size_t ws) {
  memset(o, 0, sizeof *o);
  o->p = *p;
  const int64_t T = p->num_tokens < 0 ? 0 : p->num_tokens;
  const int32_t E = p->num_experts < 1 ? 1 : p->num_experts;
  /* an invalid request must write nothing, so its buffers may be smaller than
   * its (nonsense) shape asks: clamp to the valid ranges (valid requests are unchanged) */
  const int32_t kmax = E < 32 ? E : 32;
  const int32_t k = p->top_k < 1 ? 1 : p->top_k > kmax ? kmax : p->top_k;
  const int32_t U = p->unit_size < 1 ? 1 : p->unit_size > 1024 ? 1024 : p->unit_size;
  oracle_get_sizes(T, E, k, U, &o->sz);
  o->ws_bytes = ws;
  const size_t i4 = 4;
  tu_galloc(&o->topk_ids, (size_t)o->sz.topk_len * i4, HX_FILL);
  tu_galloc(&o->topk_weights, (size_t)o->sz.topk_len * i4, HX_FILL);
  tu_galloc(&o->sorted_ids, (size_t)o->sz.ck_sorted_len * i4, HX_FILL);
  tu_galloc(&o->sorted_weights, (size_t)o->sz.ck_sorted_len * i4, HX_FILL);
  tu_galloc(&o->sorted_expert_ids, (size_t)o->sz.ck_blocks_len * i4, HX_FILL);
  tu_galloc(&o->num_valid_ids, 2 * i4, HX_FILL);
  tu_galloc(&o->sorted_token_ids, (size_t)o->sz.vllm_sorted_len * i4, HX_FILL);
  tu_galloc(&o->expert_ids, (size_t)o->sz.vllm_blocks_len * i4, HX_FILL);
  tu_galloc(&o->num_tokens_post_pad, i4, HX_FILL);
  tu_galloc(&o->moe_buf, p->moe_buf_bytes, HX_MOE_FILL);
  tu_galloc(&o->workspace, ws, 0xEE);
}

static moeroute_status call(moeroute_op op, const moeroute_params* p, const moeroute_buffers* b) {
  return op == MOEROUTE_OP_ROUTE  ? moeroute_cpu_route(p, b)
         : op == MOEROUTE_OP_GATE ? moeroute_cpu_gate(p, b)
                                  : moeroute_cpu_sort(p, b);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reader r = {data, size, 0};
  tu_max_reports = 20;
  const long failures_before = tu_failures;

  /* ---- the request ---- */
  const uint8_t mode_byte = rd_u8(&r);
  const int mode = mode_byte % 4;
  const int mess = (mode_byte >> 2) & 7; /* 0: a valid-ish request; else one field goes wild */
  moeroute_params p;
  moeroute_params_init(&p);
  p.num_experts = rd_small(&r, 1, 96);
  if (rd_u8(&r) == 0xff) p.num_experts = rd_small(&r, 97, 300);
  {
    const int32_t kmax = p.num_experts < 32 ? p.num_experts : 32;
    p.top_k = rd_small(&r, 1, kmax);
  }
  p.num_tokens = rd_small(&r, 0, 48);
  p.unit_size = rd_small(&r, 1, 70);
  if (rd_u8(&r) == 0xff) p.unit_size = rd_small(&r, 1, 255) * 4;
  const uint8_t opt = rd_u8(&r);
  p.logits_dtype = (moeroute_dtype)(opt % 3);
  p.score = (moeroute_score)((opt / 3) % 3);
  p.renormalize = (opt / 9) % 2;
  p.group_score = (moeroute_group_score)((opt / 18) % 2);
  p.layouts = 1u + rd_u8(&r) % 3u;
  p.logits_row_stride = rd_u8(&r) % 4 == 0 ? p.num_experts + rd_small(&r, 0, 5) : 0;
  {
    const uint8_t s = rd_u8(&r);
    p.scale = s < 200 ? 1.0f : s < 240 ? (float)(s - 199) / 8.0f : rd_f32(&r);
    if (!isfinite(p.scale) && mess == 0) p.scale = 1.0f;
  }
  /* groups: a divisor of E, and enough kept groups */
  {
    const uint8_t g = rd_u8(&r);
    if (g % 3 == 0 && p.num_experts > 1) {
      int32_t G = 1 + g % (uint32_t)p.num_experts;
      while (G > 1 && p.num_experts % G) G--;
      if (G > 1) {
        const int32_t per = p.num_experts / G;
        p.num_groups = G;
        const int32_t lo = (p.top_k + per - 1) / per;
        p.topk_groups = lo + (int32_t)(rd_u8(&r) % (uint32_t)(G - lo + 1));
        if (per < 2) p.group_score = MOEROUTE_GROUP_SCORE_MAX;
      }
    }
  }
  const uint8_t extras = rd_u8(&r);
  const int has_bias = extras & 1, has_mask = (extras >> 1) & 1, give_topk = !((extras >> 2) & 3);
  const int give_sw = (extras >> 4) & 1 ? 0 : 1;
  p.moe_buf_bytes = (extras >> 5) & 1 ? (size_t)rd_small(&r, 1, 200) : 0;

  /* one wild field */
  switch (mess) {
    case 1: p.top_k = (int32_t)(int8_t)rd_u8(&r); break;
    case 2: p.unit_size = (int32_t)(int16_t)rd_u16(&r); break;
    case 3: p.num_groups = (int32_t)(int8_t)rd_u8(&r), p.topk_groups = (int32_t)(int8_t)rd_u8(&r); break;
    case 4: p.logits_row_stride = (int64_t)(int8_t)rd_u8(&r); break;
    case 5: {
      const uint8_t w = rd_u8(&r);
      if (w % 4 == 0) p.logits_dtype = (moeroute_dtype)(w >> 2);
      else if (w % 4 == 1) p.score = (moeroute_score)(w >> 2);
      else if (w % 4 == 2) p.layouts = w >> 2;
      else p.renormalize = w >> 2;
      break;
    }
    case 6: p.num_tokens = -(int64_t)rd_u8(&r); break;
    default: break; /* 0, 7: as decoded */
  }
  if (p.num_groups <= 1) p.topk_groups = 1; /* topk_groups means nothing without groups */

  /* ---- inputs ---- */
  const int32_t E = p.num_experts < 1 ? 1 : p.num_experts;
  const int64_t T = p.num_tokens < 0 ? 0 : p.num_tokens;
  const int32_t k = p.top_k < 1 ? 1 : p.top_k;
  const int64_t stride = p.logits_row_stride > E ? p.logits_row_stride : E;
  const size_t esize = p.logits_dtype == MOEROUTE_DTYPE_FP32 ? 4 : 2;
  const size_t logits_bytes = (size_t)(T * stride) * esize;
  tu_guard lg, bg, mg, ig, wg;
  uint8_t* logits = (uint8_t*)tu_galloc(&lg, logits_bytes, 0);
  /* logits: the rest of the input, cycled (so short inputs still fill a batch) */
  const size_t body = r.i < r.n ? r.n - r.i : 0;
  for (size_t i = 0; i < logits_bytes; i++) logits[i] = body ? r.p[r.i + (i * 7919u) % body] : (uint8_t)i;
  float* bias = NULL;
  int32_t* mask = NULL;
  if (has_bias) {
    bias = (float*)tu_galloc(&bg, sizeof(float) * (size_t)E, 0);
    for (int32_t i = 0; i < E; i++) {
      const uint8_t b = rd_u8(&r);
      bias[i] = b == 0xff ? rd_f32(&r) : ((float)b - 128.0f) / 256.0f;
      if (mess == 0 && !isfinite(bias[i])) bias[i] = 0.0f;
    }
  } else {
    tu_galloc(&bg, 0, 0);
  }
  if (has_mask) {
    mask = (int32_t*)tu_galloc(&mg, sizeof(int32_t) * (size_t)E, 0);
    for (int32_t i = 0; i < E; i++) {
      const uint8_t b = rd_u8(&r);
      mask[i] = b == 0xff && mess != 0 ? (int32_t)rd_u8(&r) - 128 : b % 2;
    }
  } else {
    tu_galloc(&mg, 0, 0);
  }
  int32_t* in_ids = (int32_t*)tu_galloc(&ig, sizeof(int32_t) * (size_t)(T * k), 0);
  float* in_w = (float*)tu_galloc(&wg, sizeof(float) * (size_t)(T * k), 0);
  for (int64_t i = 0; i < T * k; i++) {
    const uint8_t b = rd_u8(&r);
    in_ids[i] = b < 0xf0 ? (int32_t)(b % (uint32_t)(E + 2)) - 1 : (int32_t)rd_u32(&r);
    in_w[i] = (float)b / 255.0f;
  }
  unsigned char* logits_copy = (unsigned char*)malloc(logits_bytes + 1);
  memcpy(logits_copy, logits, logits_bytes);

  const moeroute_op first = mode == OP_ROUTE ? MOEROUTE_OP_ROUTE : mode == OP_SORT ? MOEROUTE_OP_SORT : MOEROUTE_OP_GATE;
  const int valid = request_valid(first, &p, bias, mask);
  const int valid_params = request_valid(first, &p, NULL, NULL); /* what the queries see */

  /* ---- the queries ---- */
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  moeroute_params qp = p;
  if (first == MOEROUTE_OP_GATE) qp.layouts = MOEROUTE_LAYOUT_VLLM; /* sizes validate like a route */
  const moeroute_status sst = moeroute_get_sizes(&qp, &sz);
  if (request_valid(MOEROUTE_OP_ROUTE, &qp, NULL, NULL)) {
    oracle_sizes os;
    oracle_get_sizes(qp.num_tokens, qp.num_experts, qp.top_k, qp.unit_size, &os);
    CHECK(sst == MOEROUTE_OK && sz.topk_len == os.topk_len && sz.ck_sorted_len == os.ck_sorted_len &&
              sz.ck_blocks_len == os.ck_blocks_len && sz.vllm_sorted_len == os.vllm_sorted_len &&
              sz.vllm_blocks_len == os.vllm_blocks_len,
          "get_sizes of a valid request: %s (%s)", moeroute_status_string(sst), moeroute_last_error());
  }
  size_t ws = 0;
  const moeroute_status wst = moeroute_cpu_workspace_size(first, &p, &ws);
  CHECK((wst == MOEROUTE_OK) == (valid_params != 0), "workspace_size -> %s for a %s request (%s)",
        moeroute_status_string(wst), valid_params ? "valid" : "invalid", moeroute_last_error());
  if (wst != MOEROUTE_OK) ws = 64;
  CHECK(ws < ((size_t)1 << 30), "workspace of %zu bytes for a tiny request", ws);

  /* ---- the call ---- */
  hx_outputs o;
  alloc_outputs(&o, &p, ws);
  moeroute_buffers b;
  const uint32_t give = (give_topk || first != MOEROUTE_OP_ROUTE ? HX_TOPK : 0) | (give_sw ? HX_SORTED_WEIGHTS : 0) |
                        (p.moe_buf_bytes ? HX_MOE_BUF : 0);
  moeroute_params cp = p;
  if (first == MOEROUTE_OP_GATE) {
    hx_buffers(&o, HX_TOPK, &b);
  } else {
    hx_buffers(&o, give, &b);
  }
  b.logits = logits;
  b.bias = bias;
  b.expert_mask = mask;
  if (first == MOEROUTE_OP_SORT) {
    b.topk_ids = in_ids;
    b.topk_weights = in_w;
  }
  moeroute_status st = call(first, &cp, &b);
  if (!valid) {
    CHECK(st != MOEROUTE_OK, "an invalid request was accepted");
    CHECK(moeroute_last_error()[0] != 0, "error %s without a message", moeroute_status_string(st));
    hx_untouched(&o, "invalid request");
  } else if (CHECK(st == MOEROUTE_OK, "a valid request was refused: %s (%s)", moeroute_status_string(st),
                   moeroute_last_error())) {
    const int32_t* used_ids = NULL;
    const float* used_w = NULL;
    if (first != MOEROUTE_OP_SORT && (first == MOEROUTE_OP_GATE || give_topk)) {
      int32_t* oi = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T * k) + 4);
      float* ow = (float*)malloc(sizeof(float) * (size_t)(T * k) + 4);
      unsigned char* flags = (unsigned char*)calloc((size_t)T + 1, 1);
      oracle_gate(&p, logits, bias, oi, ow, flags);
      hx_compare_topk(T, k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, oi, ow, flags, 1e-5f,
                      NULL, "fuzz gate");
      free(oi);
      free(ow);
      free(flags);
      used_ids = (const int32_t*)o.topk_ids.ptr;
      used_w = (const float*)o.topk_weights.ptr;
    } else if (first == MOEROUTE_OP_SORT) {
      used_ids = in_ids;
      used_w = in_w;
    }
    if (first == MOEROUTE_OP_GATE) {
      CHECK(tu_gbody_is(&o.moe_buf, 0, HX_MOE_FILL), "gate touched moe_buf");
      if (mode == OP_CHAIN && request_valid(MOEROUTE_OP_SORT, &p, bias, mask)) {
        /* sort the gate's output */
        size_t ws2 = 0;
        CHECK(moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &p, &ws2) == MOEROUTE_OK, "sort workspace");
        tu_guard w2;
        tu_galloc(&w2, ws2, 0xEE);
        hx_buffers(&o, give | HX_TOPK, &b);
        b.expert_mask = mask;
        b.workspace = w2.ptr;
        b.workspace_bytes = ws2;
        st = moeroute_cpu_sort(&p, &b);
        CHECK(st == MOEROUTE_OK, "sort of the gate's output: %s", moeroute_last_error());
        CHECK(tu_gcanary_ok(&w2), "sort workspace overrun");
        tu_gfree(&w2);
        if (st == MOEROUTE_OK) {
          oracle_sorted want;
          oracle_sort(&p, used_ids, used_w, mask, &want);
          hx_compare_sorted(&o, &want, give_sw, 1, "fuzz gate+sort");
          hx_check_invariants(&o, used_ids, used_w, mask, give_sw, "fuzz gate+sort");
          oracle_sorted_free(&want);
          if (p.moe_buf_bytes) CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "moe_buf not cleared");
        }
      }
    } else if (used_ids) {
      oracle_sorted want;
      oracle_sort(&p, used_ids, used_w, mask, &want);
      hx_compare_sorted(&o, &want, give_sw, 1, "fuzz sort");
      hx_check_invariants(&o, used_ids, used_w, mask, give_sw, "fuzz sort");
      oracle_sorted_free(&want);
      if (p.moe_buf_bytes) CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "moe_buf not cleared");
    } else { /* route without top-k outputs: the oracle's ids, unless a near tie */
      int32_t* oi = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T * k) + 4);
      float* ow = (float*)malloc(sizeof(float) * (size_t)(T * k) + 4);
      unsigned char* flags = (unsigned char*)calloc((size_t)T + 1, 1);
      oracle_gate(&p, logits, bias, oi, ow, flags);
      int near = 0;
      for (int64_t t = 0; t < T; t++) near |= flags[t] & (ORACLE_ROW_NEAR_TIE | ORACLE_ROW_TINY);
      if (!near) {
        oracle_sorted want;
        oracle_sort(&p, oi, ow, mask, &want);
        hx_compare_sorted(&o, &want, give_sw, 0, "fuzz route (no top-k)");
        hx_check_invariants(&o, oi, NULL, mask, 0, "fuzz route (no top-k)");
        oracle_sorted_free(&want);
      }
      if (p.moe_buf_bytes) CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "moe_buf not cleared");
      free(oi);
      free(ow);
      free(flags);
    }
    hx_canaries_ok(&o, "fuzz");
  }
  CHECK(memcmp(logits, logits_copy, logits_bytes) == 0 && tu_gcanary_ok(&lg) && tu_gcanary_ok(&bg) &&
            tu_gcanary_ok(&mg) && tu_gcanary_ok(&ig) && tu_gcanary_ok(&wg),
        "an input was written");

  if (tu_failures != failures_before) {
    fprintf(stderr, "request: op=%d T=%lld E=%d k=%d U=%d stride=%lld dtype=%d score=%d renorm=%d scale=%g G=%d/%d "
                    "gscore=%d layouts=%u bias=%d mask=%d moe=%zu\n",
            mode, (long long)p.num_tokens, p.num_experts, p.top_k, p.unit_size, (long long)p.logits_row_stride,
            (int)p.logits_dtype, (int)p.score, p.renormalize, (double)p.scale, p.num_groups, p.topk_groups,
            (int)p.group_score, p.layouts, has_bias, has_mask, p.moe_buf_bytes);
    dump_request(&p, mode, logits, bias, mask, in_ids, in_w);
    fail_now("see above");
  }
  hx_free(&o);
  tu_gfree(&lg);
  tu_gfree(&bg);
  tu_gfree(&mg);
  tu_gfree(&ig);
  tu_gfree(&wg);
  free(logits_copy);
  return 0;
}
