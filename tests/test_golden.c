/*
 * test_golden.c - the golden cases of tests/golden/ (computed by an independent
 * high-precision implementation of the contract) through the C API:
 *   - moeroute_cpu_route with both layouts, top-k outputs and moe_buf;
 *   - moeroute_cpu_gate, then moeroute_cpu_sort on its outputs;
 *   - route with one layout at a time and no top-k outputs;
 *   - and the test oracle itself (so the oracle that judges the random tests is
 *     judged here too).
 * ids and layouts compare exactly, weights to 1e-5 relative.
 *
 * usage: test_golden GOLDEN_DIR [CASE...]
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L /* opendir/readdir */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "moeroute.h"
#include "npy.h"
#include "oracle.h"
#include "testutil.h"

typedef struct golden_case {
  char dir[1024];
  moeroute_params p;
  mr_npy logits, bias, mask;
  int has_bias, has_mask;
  /* expected */
  mr_npy topk_ids, topk_weights, sorted_ids, sorted_weights, sorted_expert_ids, num_valid_ids;
  mr_npy sorted_token_ids, expert_ids, num_tokens_post_pad;
} golden_case;

static int load(const char* dir, const char* name, mr_npy* a) {
  char path[2048], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (mr_npy_load(path, a, err, sizeof err) != 0) {
    CHECK(0, "cannot load %s", err);
    return -1;
  }
  return 0;
}

static int want_dtype(const mr_npy* a, const char* dtype, const char* what) {
  return CHECK(strcmp(a->dtype, dtype) == 0, "%s has dtype %s, want %s", what, a->dtype, dtype);
}

/* args.txt: the `moeroute route` options of the case. */
static int parse_args(golden_case* c) {
  char path[2048];
  snprintf(path, sizeof path, "%s/args.txt", c->dir);
  FILE* f = fopen(path, "r");
  if (!CHECK(f != NULL, "cannot open %s", path)) return -1;
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;

  moeroute_params_init(&c->p);
  c->p.layouts = MOEROUTE_LAYOUT_BOTH;
  char logits_name[256] = "", bias_name[256] = "", mask_name[256] = "";
  char* tok[64];
  int ntok = 0;
  for (char* s = strtok(text, " \t\r\n"); s && ntok < 64; s = strtok(NULL, " \t\r\n")) tok[ntok++] = s;
  for (int i = 0; i + 1 < ntok; i += 2) {
    const char* o = tok[i];
    const char* v = tok[i + 1];
    if (!strcmp(o, "--logits")) snprintf(logits_name, sizeof logits_name, "%s", v);
    else if (!strcmp(o, "--bias")) snprintf(bias_name, sizeof bias_name, "%s", v);
    else if (!strcmp(o, "--expert-mask")) snprintf(mask_name, sizeof mask_name, "%s", v);
    else if (!strcmp(o, "--topk")) c->p.top_k = atoi(v);
    else if (!strcmp(o, "--renormalize")) c->p.renormalize = atoi(v);
    else if (!strcmp(o, "--scale")) c->p.scale = strtof(v, NULL);
    else if (!strcmp(o, "--unit-size")) c->p.unit_size = atoi(v);
    else if (!strcmp(o, "--score")) {
      c->p.score = !strcmp(v, "softmax") ? MOEROUTE_SCORE_SOFTMAX
                   : !strcmp(v, "sigmoid") ? MOEROUTE_SCORE_SIGMOID
                                           : MOEROUTE_SCORE_SQRT_SOFTPLUS;
      CHECK(!strcmp(v, "softmax") || !strcmp(v, "sigmoid") || !strcmp(v, "sqrt_softplus"), "score %s", v);
    } else if (!strcmp(o, "--dtype")) {
      c->p.logits_dtype = !strcmp(v, "fp32") ? MOEROUTE_DTYPE_FP32
                          : !strcmp(v, "fp16") ? MOEROUTE_DTYPE_FP16
                                               : MOEROUTE_DTYPE_BF16;
    } else if (!strcmp(o, "--layout")) {
      c->p.layouts = !strcmp(v, "ck") ? MOEROUTE_LAYOUT_CK : !strcmp(v, "vllm") ? MOEROUTE_LAYOUT_VLLM
                                                                                : MOEROUTE_LAYOUT_BOTH;
    } else if (!strcmp(o, "--groups")) {
      if (sscanf(v, "%d:%d", &c->p.num_groups, &c->p.topk_groups) != 2) CHECK(0, "bad --groups %s", v);
    } else if (!strcmp(o, "--group-score")) {
      c->p.group_score = !strcmp(v, "max") ? MOEROUTE_GROUP_SCORE_MAX : MOEROUTE_GROUP_SCORE_TOP2_SUM;
    } else {
      CHECK(0, "%s: unknown option %s", c->dir, o);
    }
  }
  if (!CHECK(logits_name[0] != 0, "%s: no --logits", c->dir)) return -1;
  if (load(c->dir, logits_name, &c->logits)) return -1;
  const char* want = c->p.logits_dtype == MOEROUTE_DTYPE_FP32   ? "<f4"
                     : c->p.logits_dtype == MOEROUTE_DTYPE_FP16 ? "<f2"
                                                                : "<u2";
  if (!want_dtype(&c->logits, want, "logits")) return -1;
  if (!CHECK(c->logits.ndim == 2, "logits ndim %d", c->logits.ndim)) return -1;
  c->p.num_tokens = c->logits.shape[0];
  c->p.num_experts = (int32_t)c->logits.shape[1];
  if (bias_name[0]) {
    if (load(c->dir, bias_name, &c->bias) || !want_dtype(&c->bias, "<f4", "bias")) return -1;
    c->has_bias = 1;
  }
  if (mask_name[0]) {
    if (load(c->dir, mask_name, &c->mask) || !want_dtype(&c->mask, "<i4", "expert_mask")) return -1;
    c->has_mask = 1;
  }
  char ed[1100];
  snprintf(ed, sizeof ed, "%s/expected", c->dir);
  if (load(ed, "topk_ids.npy", &c->topk_ids) || load(ed, "topk_weights.npy", &c->topk_weights) ||
      load(ed, "sorted_ids.npy", &c->sorted_ids) || load(ed, "sorted_weights.npy", &c->sorted_weights) ||
      load(ed, "sorted_expert_ids.npy", &c->sorted_expert_ids) || load(ed, "num_valid_ids.npy", &c->num_valid_ids) ||
      load(ed, "sorted_token_ids.npy", &c->sorted_token_ids) || load(ed, "expert_ids.npy", &c->expert_ids) ||
      load(ed, "num_tokens_post_pad.npy", &c->num_tokens_post_pad))
    return -1;
  return 0;
}

static void free_case(golden_case* c) {
  mr_npy* all[] = {&c->logits,         &c->bias,          &c->mask,           &c->topk_ids,
                   &c->topk_weights,   &c->sorted_ids,    &c->sorted_weights, &c->sorted_expert_ids,
                   &c->num_valid_ids,  &c->sorted_token_ids, &c->expert_ids,  &c->num_tokens_post_pad};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mr_npy_free(all[i]);
}

/* The expected outputs as an oracle_sorted (borrowed pointers). */
static void expected_sorted(const golden_case* c, oracle_sorted* s) {
  memset(s, 0, sizeof *s);
  s->total = mr_npy_count(&c->sorted_ids);
  s->blocks = mr_npy_count(&c->sorted_expert_ids);
  s->sorted_ids = (int32_t*)c->sorted_ids.data;
  s->sorted_weights = (float*)c->sorted_weights.data;
  s->sorted_expert_ids = (int32_t*)c->sorted_expert_ids.data;
  s->num_valid_ids[0] = ((int32_t*)c->num_valid_ids.data)[0];
  s->num_valid_ids[1] = ((int32_t*)c->num_valid_ids.data)[1];
  s->sorted_token_ids = (int32_t*)c->sorted_token_ids.data;
  s->expert_ids = (int32_t*)c->expert_ids.data;
  s->num_tokens_post_pad = ((int32_t*)c->num_tokens_post_pad.data)[0];
}

static const float* bias_of(const golden_case* c) { return c->has_bias ? (const float*)c->bias.data : NULL; }
static const int32_t* mask_of(const golden_case* c) { return c->has_mask ? (const int32_t*)c->mask.data : NULL; }

static void set_inputs(const golden_case* c, moeroute_buffers* b) {
  b->logits = c->logits.data;
  b->bias = bias_of(c);
  b->expert_mask = mask_of(c);
}

/* The oracle against the expected outputs. */
static void run_oracle(const golden_case* c, const char* name) {
  char ctx[300];
  snprintf(ctx, sizeof ctx, "%s [oracle]", name);
  const int64_t T = c->p.num_tokens;
  const int32_t k = c->p.top_k;
  int32_t* ids = (int32_t*)malloc(sizeof(int32_t) * (size_t)(T * k) + 4);
  float* w = (float*)malloc(sizeof(float) * (size_t)(T * k) + 4);
  unsigned char* flags = (unsigned char*)malloc((size_t)T + 1);
  oracle_gate(&c->p, c->logits.data, bias_of(c), ids, w, flags);
  hx_compare_topk(T, k, ids, w, (const int32_t*)c->topk_ids.data, (const float*)c->topk_weights.data, NULL, 1e-5f,
                  NULL, ctx);
  oracle_sorted got, want;
  oracle_sort(&c->p, (const int32_t*)c->topk_ids.data, (const float*)c->topk_weights.data, mask_of(c), &got);
  expected_sorted(c, &want);
  CHECK(got.total == want.total && got.blocks == want.blocks, "%s: total %lld blocks %lld, want %lld %lld", ctx,
        (long long)got.total, (long long)got.blocks, (long long)want.total, (long long)want.blocks);
  if (got.total == want.total && got.blocks == want.blocks) {
    CHECK(!memcmp(got.sorted_ids, want.sorted_ids, sizeof(int32_t) * (size_t)got.total), "%s: sorted_ids", ctx);
    CHECK(!memcmp(got.sorted_weights, want.sorted_weights, sizeof(float) * (size_t)got.total), "%s: sorted_weights",
          ctx);
    CHECK(!memcmp(got.sorted_token_ids, want.sorted_token_ids, sizeof(int32_t) * (size_t)got.total),
          "%s: sorted_token_ids", ctx);
    CHECK(!memcmp(got.sorted_expert_ids, want.sorted_expert_ids, sizeof(int32_t) * (size_t)got.blocks),
          "%s: sorted_expert_ids", ctx);
    CHECK(!memcmp(got.expert_ids, want.expert_ids, sizeof(int32_t) * (size_t)got.blocks), "%s: expert_ids", ctx);
    CHECK(got.num_valid_ids[0] == want.num_valid_ids[0] && got.num_valid_ids[1] == want.num_valid_ids[1] &&
              got.num_tokens_post_pad == want.num_tokens_post_pad,
          "%s: counts", ctx);
  }
  oracle_sorted_free(&got);
  free(ids);
  free(w);
  free(flags);
}

/* route with p's layouts; give = HX_* extras. */
static void run_route(const golden_case* c, const char* name, uint32_t layouts, uint32_t give) {
  char ctx[300];
  snprintf(ctx, sizeof ctx, "%s [route layouts=%u give=%u]", name, layouts, give);
  moeroute_params p = c->p;
  p.layouts = layouts;
  if (give & HX_MOE_BUF) p.moe_buf_bytes = 1000;
  hx_outputs o;
  if (hx_alloc(&o, &p, MOEROUTE_OP_ROUTE, ctx) != MOEROUTE_OK) return;
  moeroute_buffers b;
  hx_buffers(&o, give, &b);
  set_inputs(c, &b);
  moeroute_status st = moeroute_cpu_route(&p, &b);
  if (CHECK(st == MOEROUTE_OK, "%s: moeroute_cpu_route -> %s: %s", ctx, moeroute_status_string(st),
            moeroute_last_error())) {
    CHECK(moeroute_last_error()[0] == 0, "%s: last_error not empty after success: %s", ctx, moeroute_last_error());
    const int64_t T = p.num_tokens;
    if (give & HX_TOPK)
      hx_compare_topk(T, p.top_k, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr,
                      (const int32_t*)c->topk_ids.data, (const float*)c->topk_weights.data, NULL, 1e-5f, NULL, ctx);
    else
      CHECK(tu_gbody_is(&o.topk_ids, 0, HX_FILL) && tu_gbody_is(&o.topk_weights, 0, HX_FILL),
            "%s: topk written though not requested", ctx);
    oracle_sorted want;
    expected_sorted(c, &want);
    hx_compare_sorted(&o, &want, (give & HX_SORTED_WEIGHTS) != 0, 0, ctx);
    if (give & HX_TOPK)
      hx_check_invariants(&o, (const int32_t*)o.topk_ids.ptr, (const float*)o.topk_weights.ptr, mask_of(c),
                          (give & HX_SORTED_WEIGHTS) != 0, ctx);
    if (give & HX_MOE_BUF) CHECK(tu_gbody_is(&o.moe_buf, 0, 0), "%s: moe_buf not cleared", ctx);
  }
  hx_canaries_ok(&o, ctx);
  hx_free(&o);
}

/* gate, then sort on the gate's outputs. */
static void run_chain(const golden_case* c, const char* name) {
  char ctx[300];
  snprintf(ctx, sizeof ctx, "%s [gate+sort]", name);
  moeroute_params p = c->p;
  p.moe_buf_bytes = 64;
  hx_outputs g, s;
  if (hx_alloc(&g, &p, MOEROUTE_OP_GATE, ctx) != MOEROUTE_OK) return;
  if (hx_alloc(&s, &p, MOEROUTE_OP_SORT, ctx) != MOEROUTE_OK) {
    hx_free(&g);
    return;
  }
  moeroute_buffers b;
  moeroute_buffers_init(&b);
  set_inputs(c, &b);
  b.topk_ids = (int32_t*)g.topk_ids.ptr;
  b.topk_weights = (float*)g.topk_weights.ptr;
  b.moe_buf = g.moe_buf.ptr; /* gate never clears moe_buf (design 8) */
  b.workspace = g.workspace.ptr;
  b.workspace_bytes = g.ws_bytes;
  moeroute_status st = moeroute_cpu_gate(&p, &b);
  if (CHECK(st == MOEROUTE_OK, "%s: moeroute_cpu_gate -> %s: %s", ctx, moeroute_status_string(st),
            moeroute_last_error())) {
    hx_compare_topk(p.num_tokens, p.top_k, (const int32_t*)g.topk_ids.ptr, (const float*)g.topk_weights.ptr,
                    (const int32_t*)c->topk_ids.data, (const float*)c->topk_weights.data, NULL, 1e-5f, NULL, ctx);
    CHECK(tu_gbody_is(&g.moe_buf, 0, HX_MOE_FILL), "%s: gate touched moe_buf", ctx);
    hx_canaries_ok(&g, ctx);

    moeroute_buffers sb;
    hx_buffers(&s, HX_SORTED_WEIGHTS | HX_MOE_BUF, &sb);
    sb.topk_ids = (int32_t*)g.topk_ids.ptr;
    sb.topk_weights = (float*)g.topk_weights.ptr;
    sb.expert_mask = mask_of(c);
    st = moeroute_cpu_sort(&p, &sb);
    if (CHECK(st == MOEROUTE_OK, "%s: moeroute_cpu_sort -> %s: %s", ctx, moeroute_status_string(st),
              moeroute_last_error())) {
      oracle_sorted want;
      expected_sorted(c, &want);
      hx_compare_sorted(&s, &want, 1, 0, ctx);
      /* and exactly the oracle's sort of the gate's own outputs */
      oracle_sorted mine;
      oracle_sort(&p, (const int32_t*)g.topk_ids.ptr, (const float*)g.topk_weights.ptr, mask_of(c), &mine);
      hx_compare_sorted(&s, &mine, 1, 1, ctx);
      oracle_sorted_free(&mine);
      hx_check_invariants(&s, (const int32_t*)g.topk_ids.ptr, (const float*)g.topk_weights.ptr, mask_of(c), 1, ctx);
      CHECK(tu_gbody_is(&s.moe_buf, 0, 0), "%s: sort did not clear moe_buf", ctx);
    }
  }
  hx_free(&g);
  hx_free(&s);
}

static int run_case(const char* root, const char* name) {
  golden_case c;
  memset(&c, 0, sizeof c);
  snprintf(c.dir, sizeof c.dir, "%s/%s", root, name);
  long before = tu_failures;
  if (parse_args(&c) == 0) {
    run_oracle(&c, name);
    run_route(&c, name, MOEROUTE_LAYOUT_BOTH, HX_TOPK | HX_SORTED_WEIGHTS | HX_MOE_BUF);
    run_route(&c, name, MOEROUTE_LAYOUT_CK, HX_SORTED_WEIGHTS);
    run_route(&c, name, MOEROUTE_LAYOUT_CK, HX_TOPK);
    run_route(&c, name, MOEROUTE_LAYOUT_VLLM, 0);
    run_chain(&c, name);
  }
  free_case(&c);
  int ok = tu_failures == before;
  printf("%-28s %s\n", name, ok ? "ok" : "FAILED");
  return ok;
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(const char* const*)a, *(const char* const*)b); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GOLDEN_DIR [CASE...]\n", argv[0]);
    return 2;
  }
  const char* root = argv[1];
  char* names[256];
  int n = 0;
  if (argc > 2) {
    for (int i = 2; i < argc && n < 256; i++) names[n++] = argv[i];
  } else {
    DIR* d = opendir(root);
    if (!d) {
      fprintf(stderr, "cannot open %s\n", root);
      return 2;
    }
    struct dirent* e;
    static char store[256][256];
    while ((e = readdir(d)) && n < 256) {
      if (e->d_name[0] == '.') continue;
      char path[2048];
      snprintf(path, sizeof path, "%s/%s/args.txt", root, e->d_name);
      FILE* f = fopen(path, "r");
      if (!f) continue;
      fclose(f);
      snprintf(store[n], sizeof store[n], "%s", e->d_name);
      names[n] = store[n];
      n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
  }
  long passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    if (run_case(root, names[i]))
      passed++;
    else
      failed++;
  }
  if (!CHECK(n >= 16 || argc > 2, "only %d golden cases found in %s (want 16)", n, root)) failed++;
  printf("golden: %ld checks, %ld failed\n", tu_checks, tu_failures);
  return tu_summary(passed, failed);
}
