/*
 * harness.c - see harness.h.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tu_guard* all_guards(hx_outputs* o, int i) {
  tu_guard* g[] = {&o->topk_ids,         &o->topk_weights,     &o->sorted_ids, &o->sorted_weights,
                   &o->sorted_expert_ids, &o->num_valid_ids,    &o->sorted_token_ids, &o->expert_ids,
                   &o->num_tokens_post_pad, &o->moe_buf,       &o->workspace};
  return i < (int)(sizeof g / sizeof g[0]) ? g[i] : NULL;
}
static const char* guard_name(int i) {
  static const char* n[] = {"topk_ids",         "topk_weights",  "sorted_ids", "sorted_weights",
                            "sorted_expert_ids", "num_valid_ids", "sorted_token_ids", "expert_ids",
                            "num_tokens_post_pad", "moe_buf",     "workspace"};
  return n[i];
}

moeroute_status hx_alloc(hx_outputs* o, const moeroute_params* p, moeroute_op op, const char* ctx) {
  memset(o, 0, sizeof *o);
  o->p = *p;
  oracle_get_sizes(p->num_tokens, p->num_experts, p->top_k, p->unit_size, &o->sz);

  moeroute_params q = *p;
  if (q.layouts == 0) q.layouts = MOEROUTE_LAYOUT_VLLM; /* gate-only params: sizes need a layout */
  moeroute_sizes s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  moeroute_status st = moeroute_get_sizes(&q, &s);
  if (!CHECK(st == MOEROUTE_OK, "%s: moeroute_get_sizes -> %s (%s)", ctx, moeroute_status_string(st),
             moeroute_last_error()))
    return st;
  CHECK(s.topk_len == o->sz.topk_len && s.ck_sorted_len == o->sz.ck_sorted_len &&
            s.ck_blocks_len == o->sz.ck_blocks_len && s.vllm_sorted_len == o->sz.vllm_sorted_len &&
            s.vllm_blocks_len == o->sz.vllm_blocks_len,
        "%s: get_sizes {%lld %lld %lld %lld %lld} != contract {%lld %lld %lld %lld %lld}", ctx,
        (long long)s.topk_len, (long long)s.ck_sorted_len, (long long)s.ck_blocks_len,
        (long long)s.vllm_sorted_len, (long long)s.vllm_blocks_len, (long long)o->sz.topk_len,
        (long long)o->sz.ck_sorted_len, (long long)o->sz.ck_blocks_len, (long long)o->sz.vllm_sorted_len,
        (long long)o->sz.vllm_blocks_len);

  size_t ws = 0;
  st = moeroute_cpu_workspace_size(op, p, &ws);
  if (!CHECK(st == MOEROUTE_OK, "%s: moeroute_cpu_workspace_size -> %s (%s)", ctx, moeroute_status_string(st),
             moeroute_last_error()))
    return st;
  o->ws_bytes = ws;

  const size_t i4 = sizeof(int32_t);
  tu_galloc(&o->topk_ids, (size_t)o->sz.topk_len * i4, HX_FILL);
  tu_galloc(&o->topk_weights, (size_t)o->sz.topk_len * sizeof(float), HX_FILL);
  tu_galloc(&o->sorted_ids, (size_t)o->sz.ck_sorted_len * i4, HX_FILL);
  tu_galloc(&o->sorted_weights, (size_t)o->sz.ck_sorted_len * sizeof(float), HX_FILL);
  tu_galloc(&o->sorted_expert_ids, (size_t)o->sz.ck_blocks_len * i4, HX_FILL);
  tu_galloc(&o->num_valid_ids, 2 * i4, HX_FILL);
  tu_galloc(&o->sorted_token_ids, (size_t)o->sz.vllm_sorted_len * i4, HX_FILL);
  tu_galloc(&o->expert_ids, (size_t)o->sz.vllm_blocks_len * i4, HX_FILL);
  tu_galloc(&o->num_tokens_post_pad, i4, HX_FILL);
  tu_galloc(&o->moe_buf, p->moe_buf_bytes, HX_MOE_FILL);
  tu_galloc(&o->workspace, ws, 0xEE);
  return MOEROUTE_OK;
}

void hx_refill(hx_outputs* o) {
  for (int i = 0; all_guards(o, i); i++) {
    tu_guard* g = all_guards(o, i);
    if (g->base) tu_grefill(g, g == &o->moe_buf ? HX_MOE_FILL : g == &o->workspace ? 0xEE : HX_FILL);
  }
}

void hx_free(hx_outputs* o) {
  for (int i = 0; all_guards(o, i); i++)
    if (all_guards(o, i)->base) tu_gfree(all_guards(o, i));
}

void hx_buffers(const hx_outputs* o, uint32_t give, moeroute_buffers* b) {
  moeroute_buffers_init(b);
  if (give & HX_TOPK) {
    b->topk_ids = (int32_t*)o->topk_ids.ptr;
    b->topk_weights = (float*)o->topk_weights.ptr;
  }
  if ((o->p.layouts & MOEROUTE_LAYOUT_CK) || (give & HX_ALL_LAYOUTS)) {
    b->sorted_ids = (int32_t*)o->sorted_ids.ptr;
    if (give & HX_SORTED_WEIGHTS) b->sorted_weights = (float*)o->sorted_weights.ptr;
    b->sorted_expert_ids = (int32_t*)o->sorted_expert_ids.ptr;
    b->num_valid_ids = (int32_t*)o->num_valid_ids.ptr;
  }
  if ((o->p.layouts & MOEROUTE_LAYOUT_VLLM) || (give & HX_ALL_LAYOUTS)) {
    b->sorted_token_ids = (int32_t*)o->sorted_token_ids.ptr;
    b->expert_ids = (int32_t*)o->expert_ids.ptr;
    b->num_tokens_post_pad = (int32_t*)o->num_tokens_post_pad.ptr;
  }
  if (give & HX_MOE_BUF) b->moe_buf = o->moe_buf.ptr;
  b->workspace = o->workspace.ptr;
  b->workspace_bytes = o->ws_bytes;
}

int hx_canaries_ok(const hx_outputs* o, const char* ctx) {
  int ok = 1;
  for (int i = 0; all_guards((hx_outputs*)o, i); i++) {
    const tu_guard* g = all_guards((hx_outputs*)o, i);
    if (g->base) ok &= CHECK(tu_gcanary_ok(g), "%s: %s: canary overwritten (out-of-bounds write)", ctx, guard_name(i));
  }
  return ok;
}

int hx_untouched(const hx_outputs* o, const char* ctx) {
  int ok = hx_canaries_ok(o, ctx);
  for (int i = 0; all_guards((hx_outputs*)o, i); i++) {
    const tu_guard* g = all_guards((hx_outputs*)o, i);
    if (!g->base || g == &o->workspace) continue;
    unsigned char fill = g == &o->moe_buf ? HX_MOE_FILL : HX_FILL;
    ok &= CHECK(tu_gbody_is(g, 0, fill), "%s: %s was written", ctx, guard_name(i));
  }
  return ok;
}

/* First index where two int arrays differ, or -1. */
static int64_t first_diff_i32(const int32_t* a, const int32_t* b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

static int cmp_i32(const char* ctx, const char* name, const int32_t* got, const int32_t* want, int64_t n) {
  int64_t i = first_diff_i32(got, want, n);
  return CHECK(i < 0, "%s: %s[%lld] = %d, want %d (of %lld)", ctx, name, (long long)i, i < 0 ? 0 : got[i],
               i < 0 ? 0 : want[i], (long long)n);
}

static int cmp_f32(const char* ctx, const char* name, const float* got, const float* want, int64_t n, int exact) {
  for (int64_t i = 0; i < n; i++) {
    int ok = exact ? tu_same_bits(got[i], want[i])
                   : (want[i] == 0.0f ? fabsf(got[i]) <= 1e-30f : tu_close(got[i], want[i], 1e-5f, 1e-30f));
    if (!ok)
      return CHECK(0, "%s: %s[%lld] = %.9g, want %.9g (%s)", ctx, name, (long long)i, (double)got[i],
                   (double)want[i], exact ? "bit-exact" : "1e-5 rel");
  }
  return CHECK(1, "%s", ctx);
}

int hx_compare_sorted(const hx_outputs* o, const oracle_sorted* want, int check_weights, int exact_weights,
                      const char* ctx) {
  int ok = hx_canaries_ok(o, ctx);
  const int64_t total = want->total, blocks = want->blocks;
  const size_t i4 = sizeof(int32_t);
  if (o->p.layouts & MOEROUTE_LAYOUT_CK) {
    const int32_t* nv = (const int32_t*)o->num_valid_ids.ptr;
    ok &= CHECK(nv[0] == want->num_valid_ids[0] && nv[1] == want->num_valid_ids[1],
                "%s: num_valid_ids = {%d, %d}, want {%d, %d}", ctx, nv[0], nv[1], want->num_valid_ids[0],
                want->num_valid_ids[1]);
    if (nv[0] == want->num_valid_ids[0]) {
      ok &= cmp_i32(ctx, "sorted_ids", (const int32_t*)o->sorted_ids.ptr, want->sorted_ids, total);
      ok &= cmp_i32(ctx, "sorted_expert_ids", (const int32_t*)o->sorted_expert_ids.ptr, want->sorted_expert_ids,
                    blocks);
      if (check_weights && want->sorted_weights)
        ok &= cmp_f32(ctx, "sorted_weights", (const float*)o->sorted_weights.ptr, want->sorted_weights, total,
                      exact_weights);
    }
    ok &= CHECK(tu_gbody_is(&o->sorted_ids, (size_t)total * i4, HX_FILL), "%s: sorted_ids written past total=%lld",
                ctx, (long long)total);
    ok &= CHECK(tu_gbody_is(&o->sorted_expert_ids, (size_t)blocks * i4, HX_FILL),
                "%s: sorted_expert_ids written past total/U=%lld", ctx, (long long)blocks);
    ok &= CHECK(tu_gbody_is(&o->sorted_weights, check_weights ? (size_t)total * 4 : 0, HX_FILL),
                "%s: sorted_weights written %s", ctx, check_weights ? "past total" : "though not requested");
  } else {
    ok &= CHECK(tu_gbody_is(&o->sorted_ids, 0, HX_FILL) && tu_gbody_is(&o->sorted_weights, 0, HX_FILL) &&
                    tu_gbody_is(&o->sorted_expert_ids, 0, HX_FILL) && tu_gbody_is(&o->num_valid_ids, 0, HX_FILL),
                "%s: CK outputs written without the CK layout", ctx);
  }
  if (o->p.layouts & MOEROUTE_LAYOUT_VLLM) {
    const int32_t npp = *(const int32_t*)o->num_tokens_post_pad.ptr;
    ok &= CHECK(npp == want->num_tokens_post_pad, "%s: num_tokens_post_pad = %d, want %d", ctx, npp,
                want->num_tokens_post_pad);
    if (npp == want->num_tokens_post_pad) {
      ok &= cmp_i32(ctx, "sorted_token_ids", (const int32_t*)o->sorted_token_ids.ptr, want->sorted_token_ids, total);
      ok &= cmp_i32(ctx, "expert_ids", (const int32_t*)o->expert_ids.ptr, want->expert_ids, blocks);
    }
    ok &= CHECK(tu_gbody_is(&o->sorted_token_ids, (size_t)total * i4, HX_FILL),
                "%s: sorted_token_ids written past total=%lld", ctx, (long long)total);
    ok &= CHECK(tu_gbody_is(&o->expert_ids, (size_t)blocks * i4, HX_FILL), "%s: expert_ids written past total/U",
                ctx);
  } else {
    ok &= CHECK(tu_gbody_is(&o->sorted_token_ids, 0, HX_FILL) && tu_gbody_is(&o->expert_ids, 0, HX_FILL) &&
                    tu_gbody_is(&o->num_tokens_post_pad, 0, HX_FILL),
                "%s: vLLM outputs written without the vLLM layout", ctx);
  }
  return ok;
}

/* One layout's invariants. pos_entry decodes a position into (t, slot) or
 * returns 0 for the sentinel; -1 for garbage. */
static int check_layout(const hx_outputs* o, const char* lname, int is_ck, const int32_t* sorted,
                        const int32_t* blocks, int64_t total, const int32_t* topk_ids, const float* topk_weights,
                        const int32_t* expert_mask, int check_weights, const char* ctx) {
  const moeroute_params* p = &o->p;
  const int64_t T = p->num_tokens;
  const int32_t E = p->num_experts, k = p->top_k, U = p->unit_size;
  const int64_t cap = is_ck ? o->sz.ck_sorted_len : o->sz.vllm_sorted_len;
  int ok = 1;
  ok &= CHECK(total >= 0 && total <= cap && total % U == 0, "%s: %s total=%lld not a multiple of U=%d within %lld",
              ctx, lname, (long long)total, U, (long long)cap);
  if (!ok) return 0;

  /* local id -> global id */
  int32_t* global_of = (int32_t*)malloc(sizeof(int32_t) * (size_t)E + 4);
  int32_t enabled = 0;
  for (int32_t e = 0; e < E; e++)
    if (!expert_mask || expert_mask[e]) global_of[enabled++] = e;
  unsigned char* seen = (unsigned char*)calloc((size_t)(T * k) + 1, 1);
  const float* sw = (const float*)o->sorted_weights.ptr;

  int32_t prev_local = -1;
  int64_t prev_flat = -1; /* last (t * k + slot) in the current run */
  int in_padding = 0;
  int64_t run_len = 0, run_pad = 0;
  int bad = 0;
  for (int64_t pos = 0; pos < total && !bad; pos++) {
    const int64_t b = pos / U;
    const int32_t local = blocks[b];
    if (local < 0 || local >= enabled) {
      bad = !CHECK(0, "%s: %s block %lld has local id %d outside [0, %d)", ctx, lname, (long long)b, local, enabled);
      break;
    }
    if (local != prev_local) {
      if (!CHECK(pos % U == 0 && local > prev_local,
                 "%s: %s position %lld: run of local %d starts off a block boundary or out of order (prev %d)",
                 ctx, lname, (long long)pos, local, prev_local)) {
        bad = 1;
        break;
      }
      prev_local = local;
      prev_flat = -1;
      in_padding = 0;
      run_len = run_pad = 0;
    }
    const int32_t e = global_of[local];
    const int32_t v = sorted[pos];
    int is_sentinel;
    int64_t t = 0, slot = 0;
    if (is_ck) {
      is_sentinel = v == (int32_t)(((uint32_t)k << 24) | (uint32_t)T);
      t = (uint32_t)v & 0xffffffu;
      slot = (uint32_t)v >> 24;
    } else {
      is_sentinel = v == (int32_t)(T * k);
      if (!is_sentinel && v >= 0) {
        t = v / k;
        slot = v % k;
      }
    }
    if (is_sentinel) {
      if (!CHECK(run_len > 0, "%s: %s position %lld: run of expert %d starts with padding", ctx, lname,
                 (long long)pos, e)) {
        bad = 1;
        break;
      }
      in_padding = 1;
      run_pad++;
      if (is_ck && check_weights)
        bad |= !CHECK(sw[pos] == 0.0f && !signbit(sw[pos]), "%s: sorted_weights[%lld] = %g at a sentinel", ctx,
                      (long long)pos, (double)sw[pos]);
      continue;
    }
    if (!CHECK(!in_padding && v >= 0 && t < T && slot < k,
               "%s: %s position %lld: value %d is neither an entry nor the sentinel (or follows padding)", ctx, lname,
               (long long)pos, v)) {
      bad = 1;
      break;
    }
    const int64_t flat = t * k + slot;
    bad |= !CHECK(topk_ids[flat] == e, "%s: %s position %lld: entry (t=%lld, slot=%lld) has id %d, in run of %d", ctx,
                  lname, (long long)pos, (long long)t, (long long)slot, topk_ids[flat], e);
    bad |= !CHECK(!seen[flat], "%s: %s entry (t=%lld, slot=%lld) appears twice", ctx, lname, (long long)t,
                  (long long)slot);
    bad |= !CHECK(flat > prev_flat, "%s: %s position %lld: not in ascending (token, slot) order", ctx, lname,
                  (long long)pos);
    if (is_ck && check_weights && topk_weights)
      bad |= !CHECK(tu_same_bits(sw[pos], topk_weights[flat]),
                    "%s: sorted_weights[%lld] = %.9g is not a bit copy of topk_weights[%lld] = %.9g", ctx,
                    (long long)pos, (double)sw[pos], (long long)flat, (double)topk_weights[flat]);
    seen[flat] = 1;
    prev_flat = flat;
    run_len++;
    bad |= !CHECK(run_pad < U, "%s: %s: padding of a run reaches U", ctx, lname);
  }
  if (!bad) {
    for (int64_t i = 0; i < T * k; i++) {
      const int32_t id = topk_ids[i];
      const int want = id >= 0 && id < E && (!expert_mask || expert_mask[id]);
      if (want != seen[i]) {
        bad = !CHECK(0, "%s: %s entry %lld (id %d) %s", ctx, lname, (long long)i, id,
                     want ? "is missing" : "appears though dropped");
        break;
      }
    }
  }
  free(global_of);
  free(seen);
  return !bad;
}

int hx_check_invariants(const hx_outputs* o, const int32_t* topk_ids, const float* topk_weights,
                        const int32_t* expert_mask, int check_weights, const char* ctx) {
  int ok = 1;
  if (o->p.layouts & MOEROUTE_LAYOUT_CK) {
    const int32_t* nv = (const int32_t*)o->num_valid_ids.ptr;
    ok &= CHECK(nv[1] == (int32_t)o->p.num_tokens, "%s: num_valid_ids[1] = %d, want T = %lld", ctx, nv[1],
                (long long)o->p.num_tokens);
    ok &= check_layout(o, "ck", 1, (const int32_t*)o->sorted_ids.ptr, (const int32_t*)o->sorted_expert_ids.ptr, nv[0],
                       topk_ids, topk_weights, expert_mask, check_weights, ctx);
  }
  if (o->p.layouts & MOEROUTE_LAYOUT_VLLM) {
    const int32_t npp = *(const int32_t*)o->num_tokens_post_pad.ptr;
    ok &= check_layout(o, "vllm", 0, (const int32_t*)o->sorted_token_ids.ptr, (const int32_t*)o->expert_ids.ptr, npp,
                       topk_ids, topk_weights, expert_mask, 0, ctx);
    if (o->p.layouts & MOEROUTE_LAYOUT_CK) {
      const int32_t* nv = (const int32_t*)o->num_valid_ids.ptr;
      ok &= CHECK(npp == nv[0], "%s: num_tokens_post_pad %d != num_valid_ids[0] %d", ctx, npp, nv[0]);
    }
  }
  return ok;
}

int hx_compare_topk(int64_t T, int32_t k, const int32_t* ids, const float* weights, const int32_t* want_ids,
                    const float* want_weights, const unsigned char* row_flags, float rel, long* tolerated,
                    const char* ctx) {
  int ok = 1;
  for (int64_t t = 0; t < T; t++) {
    const int32_t* a = ids + t * k;
    const int32_t* b = want_ids + t * k;
    if (memcmp(a, b, sizeof(int32_t) * (size_t)k) != 0) {
      if (row_flags && (row_flags[t] & ORACLE_ROW_NEAR_TIE)) {
        if (tolerated) (*tolerated)++;
        continue;
      }
      char got[400], want[400];
      int n1 = 0, n2 = 0;
      for (int32_t j = 0; j < k && n1 < 380 && n2 < 380; j++) {
        n1 += snprintf(got + n1, sizeof got - (size_t)n1, "%d ", a[j]);
        n2 += snprintf(want + n2, sizeof want - (size_t)n2, "%d ", b[j]);
      }
      ok &= CHECK(0, "%s: row %lld: topk_ids [%s] want [%s]", ctx, (long long)t, got, want);
      continue;
    }
    if (!weights || !want_weights) continue;
    if (row_flags && (row_flags[t] & ORACLE_ROW_TINY)) continue;
    for (int32_t j = 0; j < k; j++) {
      float g = weights[t * k + j], w = want_weights[t * k + j];
      int good = w == 0.0f ? fabsf(g) <= 1e-30f : tu_close(g, w, rel, 1e-30f);
      if (!good) {
        ok &= CHECK(0, "%s: row %lld slot %d (expert %d): weight %.9g want %.9g", ctx, (long long)t, j, a[j],
                    (double)g, (double)w);
        break;
      }
    }
  }
  return ok;
}
