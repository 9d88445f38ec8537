/*
 * cli_check.c - host output buffers, comparisons, and two checks written from
 * docs/routing-contract.md alone (independent of src/cpu): a reference sort
 * and a validity check for top-k rows that tolerates the near-ties the
 * contract allows. verify and bench use them to judge every backend and path.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- host outputs --------------------------------------------------------- */

int host_route_alloc(host_route* r, const moeroute_params* p, char* err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->sizes.struct_size = sizeof r->sizes;
  moeroute_status st = moeroute_get_sizes(p, &r->sizes);
  if (st != MOEROUTE_OK) {
    snprintf(err, errlen, "%s [%s]", moeroute_last_error(), moeroute_status_string(st));
    return -1;
  }
  const moeroute_sizes* s = &r->sizes;
  r->topk_ids = (int32_t*)cli_malloc((size_t)s->topk_len * 4);
  r->topk_weights = (float*)cli_malloc((size_t)s->topk_len * 4);
  r->sorted_ids = (int32_t*)cli_malloc((size_t)s->ck_sorted_len * 4);
  r->sorted_weights = (float*)cli_malloc((size_t)s->ck_sorted_len * 4);
  r->sorted_expert_ids = (int32_t*)cli_malloc((size_t)s->ck_blocks_len * 4);
  r->num_valid_ids = (int32_t*)cli_malloc(2 * 4);
  r->sorted_token_ids = (int32_t*)cli_malloc((size_t)s->vllm_sorted_len * 4);
  r->expert_ids = (int32_t*)cli_malloc((size_t)s->vllm_blocks_len * 4);
  r->num_tokens_post_pad = (int32_t*)cli_malloc(4);
  if (!r->topk_ids || !r->topk_weights || !r->sorted_ids || !r->sorted_weights || !r->sorted_expert_ids ||
      !r->num_valid_ids || !r->sorted_token_ids || !r->expert_ids || !r->num_tokens_post_pad) {
    host_route_free(r);
    snprintf(err, errlen, "out of host memory for the outputs");
    return -1;
  }
  return 0;
}

void host_route_free(host_route* r) {
  free(r->topk_ids);
  free(r->topk_weights);
  free(r->sorted_ids);
  free(r->sorted_weights);
  free(r->sorted_expert_ids);
  free(r->num_valid_ids);
  free(r->sorted_token_ids);
  free(r->expert_ids);
  free(r->num_tokens_post_pad);
  memset(r, 0, sizeof *r);
}

void host_route_fill(host_route* r, unsigned char byte) {
  const moeroute_sizes* s = &r->sizes;
  memset(r->topk_ids, byte, (size_t)s->topk_len * 4);
  memset(r->topk_weights, byte, (size_t)s->topk_len * 4);
  memset(r->sorted_ids, byte, (size_t)s->ck_sorted_len * 4);
  memset(r->sorted_weights, byte, (size_t)s->ck_sorted_len * 4);
  memset(r->sorted_expert_ids, byte, (size_t)s->ck_blocks_len * 4);
  memset(r->num_valid_ids, byte, 8);
  memset(r->sorted_token_ids, byte, (size_t)s->vllm_sorted_len * 4);
  memset(r->expert_ids, byte, (size_t)s->vllm_blocks_len * 4);
  memset(r->num_tokens_post_pad, byte, 4);
}

void host_route_bind(const host_route* r, const moeroute_params* p, int with_topk, moeroute_buffers* b) {
  if (with_topk) {
    b->topk_ids = r->topk_ids;
    b->topk_weights = r->topk_weights;
  }
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    b->sorted_ids = r->sorted_ids;
    b->sorted_weights = r->sorted_weights;
    b->sorted_expert_ids = r->sorted_expert_ids;
    b->num_valid_ids = r->num_valid_ids;
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
    b->sorted_token_ids = r->sorted_token_ids;
    b->expert_ids = r->expert_ids;
    b->num_tokens_post_pad = r->num_tokens_post_pad;
  }
}

/* ---- comparisons ------------------------------------------------------------ */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

int cli_close(float a, float b, double rel) {
  if (f2u(a) == f2u(b)) return 1;
  if (isnan(a) || isnan(b)) return 0;
  double d = fabs((double)a - (double)b);
  double m = fmax(fabs((double)a), fabs((double)b));
  /* the floor absorbs a flush-to-zero of a subnormal weight */
  return d <= rel * m || d <= 1e-30;
}

/* total of a layout, clamped to the capacity so a garbage count cannot make us read out of bounds */
static int64_t clamp_total(int32_t total, int64_t cap) {
  if (total < 0) return 0;
  return total > cap ? cap : total;
}

/* Count one difference in the local `bad`; describe the first in `why` (of size `n`). */
#define NOTE_FIRST(...)                                   \
  do {                                                    \
    if (bad == 0 && why) snprintf(why, n, __VA_ARGS__);   \
    bad++;                                                \
  } while (0)

int64_t cli_cmp_sorted(const host_route* a, const host_route* b, const moeroute_params* p, char* why, size_t n) {
  int64_t bad = 0;
  int32_t U = p->unit_size;
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    if (a->num_valid_ids[0] != b->num_valid_ids[0] || a->num_valid_ids[1] != b->num_valid_ids[1]) {
      NOTE_FIRST("num_valid_ids {%d, %d} vs {%d, %d}", a->num_valid_ids[0], a->num_valid_ids[1], b->num_valid_ids[0],
                 b->num_valid_ids[1]);
    } else {
      int64_t total = clamp_total(a->num_valid_ids[0], a->sizes.ck_sorted_len);
      for (int64_t i = 0; i < total; i++) {
        if (a->sorted_ids[i] != b->sorted_ids[i])
          NOTE_FIRST("sorted_ids[%lld] = 0x%08x vs 0x%08x", (long long)i, (unsigned)a->sorted_ids[i],
                     (unsigned)b->sorted_ids[i]);
        if (f2u(a->sorted_weights[i]) != f2u(b->sorted_weights[i]))
          NOTE_FIRST("sorted_weights[%lld] = %.9g vs %.9g", (long long)i, a->sorted_weights[i], b->sorted_weights[i]);
      }
      for (int64_t i = 0; i < total / U; i++)
        if (a->sorted_expert_ids[i] != b->sorted_expert_ids[i])
          NOTE_FIRST("sorted_expert_ids[%lld] = %d vs %d", (long long)i, a->sorted_expert_ids[i], b->sorted_expert_ids[i]);
    }
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
    if (a->num_tokens_post_pad[0] != b->num_tokens_post_pad[0]) {
      NOTE_FIRST("num_tokens_post_pad %d vs %d", a->num_tokens_post_pad[0], b->num_tokens_post_pad[0]);
    } else {
      int64_t total = clamp_total(a->num_tokens_post_pad[0], a->sizes.vllm_sorted_len);
      for (int64_t i = 0; i < total; i++)
        if (a->sorted_token_ids[i] != b->sorted_token_ids[i])
          NOTE_FIRST("sorted_token_ids[%lld] = %d vs %d", (long long)i, a->sorted_token_ids[i], b->sorted_token_ids[i]);
      for (int64_t i = 0; i < total / U; i++)
        if (a->expert_ids[i] != b->expert_ids[i])
          NOTE_FIRST("expert_ids[%lld] = %d vs %d", (long long)i, a->expert_ids[i], b->expert_ids[i]);
    }
  }
  return bad;
}

static int64_t tail_count(const void* base, int64_t from, int64_t len, int64_t* first) {
  const unsigned char* b = (const unsigned char*)base;
  int64_t bad = 0;
  for (int64_t i = from; i < len; i++) {
    const unsigned char* e = b + i * 4;
    if (e[0] != CLI_CANARY || e[1] != CLI_CANARY || e[2] != CLI_CANARY || e[3] != CLI_CANARY) {
      if (bad == 0) *first = i;
      bad++;
    }
  }
  return bad;
}

int64_t cli_check_tail(const host_route* r, const moeroute_params* p, char* why, size_t n) {
  int64_t bad = 0, first = -1, c;
  int32_t U = p->unit_size;
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    int64_t total = clamp_total(r->num_valid_ids[0], r->sizes.ck_sorted_len);
    if ((c = tail_count(r->sorted_ids, total, r->sizes.ck_sorted_len, &first)))
      NOTE_FIRST("sorted_ids[%lld] past total=%lld was written (%lld entries)", (long long)first, (long long)total,
                 (long long)c);
    if ((c = tail_count(r->sorted_weights, total, r->sizes.ck_sorted_len, &first)))
      NOTE_FIRST("sorted_weights[%lld] past total=%lld was written", (long long)first, (long long)total);
    if ((c = tail_count(r->sorted_expert_ids, total / U, r->sizes.ck_blocks_len, &first)))
      NOTE_FIRST("sorted_expert_ids[%lld] past total/U=%lld was written", (long long)first, (long long)(total / U));
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
    int64_t total = clamp_total(r->num_tokens_post_pad[0], r->sizes.vllm_sorted_len);
    if ((c = tail_count(r->sorted_token_ids, total, r->sizes.vllm_sorted_len, &first)))
      NOTE_FIRST("sorted_token_ids[%lld] past total=%lld was written", (long long)first, (long long)total);
    if ((c = tail_count(r->expert_ids, total / U, r->sizes.vllm_blocks_len, &first)))
      NOTE_FIRST("expert_ids[%lld] past total/U=%lld was written", (long long)first, (long long)(total / U));
  }
  return bad;
}

int64_t cli_cmp_topk(const host_route* a, const host_route* b, const moeroute_params* p, char* why, size_t n) {
  int64_t bad = 0;
  int64_t len = p->num_tokens * p->top_k;
  for (int64_t i = 0; i < len; i++) {
    if (a->topk_ids[i] != b->topk_ids[i])
      NOTE_FIRST("topk_ids[%lld][%lld] = %d vs %d", (long long)(i / p->top_k), (long long)(i % p->top_k),
                 a->topk_ids[i], b->topk_ids[i]);
    else if (!cli_close(a->topk_weights[i], b->topk_weights[i], CLI_WEIGHT_REL))
      NOTE_FIRST("topk_weights[%lld][%lld] = %.9g vs %.9g", (long long)(i / p->top_k), (long long)(i % p->top_k),
                 a->topk_weights[i], b->topk_weights[i]);
  }
  return bad;
}

/* ---- reference sort (contract section 3) ------------------------------------ */

void cli_reference_sort(const moeroute_params* p, const int32_t* topk_ids, const float* topk_weights,
                        const int32_t* expert_mask, host_route* r) {
  const int64_t T = p->num_tokens;
  const int32_t E = p->num_experts, k = p->top_k, U = p->unit_size;
  int64_t* cnt = (int64_t*)calloc((size_t)E, sizeof *cnt);
  int64_t* start = (int64_t*)calloc((size_t)E + 1, sizeof *start);
  int64_t* fill = (int64_t*)calloc((size_t)E, sizeof *fill);
  int32_t* local = (int32_t*)calloc((size_t)E, sizeof *local);
  if (!cnt || !start || !fill || !local) {
    /* a tool's reference: out of memory here is not worth a status */
    fprintf(stderr, "moeroute: error: out of memory in the reference sort\n");
    exit(CLI_EXIT_FAIL);
  }
  int32_t enabled = 0;
  for (int32_t e = 0; e < E; e++) {
    local[e] = enabled;
    if (!expert_mask || expert_mask[e]) enabled++;
  }
  for (int64_t i = 0; i < T * k; i++) {
    int32_t e = topk_ids[i];
    if (e >= 0 && e < E && (!expert_mask || expert_mask[e])) cnt[e]++;
  }
  for (int32_t e = 0; e < E; e++) start[e + 1] = start[e] + (cnt[e] + U - 1) / U * U;
  const int64_t total = start[E];
  for (int64_t t = 0; t < T; t++) {
    for (int32_t slot = 0; slot < k; slot++) {
      int32_t e = topk_ids[t * k + slot];
      if (e < 0 || e >= E || (expert_mask && !expert_mask[e])) continue;
      int64_t pos = start[e] + fill[e]++;
      if (p->layouts & MOEROUTE_LAYOUT_CK) {
        r->sorted_ids[pos] = (int32_t)(((uint32_t)slot << 24) | (uint32_t)t);
        if (topk_weights) r->sorted_weights[pos] = topk_weights[t * k + slot];
      }
      if (p->layouts & MOEROUTE_LAYOUT_VLLM) r->sorted_token_ids[pos] = (int32_t)(t * k + slot);
    }
  }
  for (int32_t e = 0; e < E; e++) {
    for (int64_t pos = start[e] + cnt[e]; pos < start[e + 1]; pos++) {
      if (p->layouts & MOEROUTE_LAYOUT_CK) {
        r->sorted_ids[pos] = (int32_t)(((uint32_t)k << 24) | (uint32_t)T);
        if (topk_weights) r->sorted_weights[pos] = 0.0f;
      }
      if (p->layouts & MOEROUTE_LAYOUT_VLLM) r->sorted_token_ids[pos] = (int32_t)(T * k);
    }
    for (int64_t b = start[e] / U; b < start[e + 1] / U; b++) {
      if (p->layouts & MOEROUTE_LAYOUT_CK) r->sorted_expert_ids[b] = local[e];
      if (p->layouts & MOEROUTE_LAYOUT_VLLM) r->expert_ids[b] = local[e];
    }
  }
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    r->num_valid_ids[0] = (int32_t)total;
    r->num_valid_ids[1] = (int32_t)T;
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) r->num_tokens_post_pad[0] = (int32_t)total;
  free(cnt);
  free(start);
  free(fill);
  free(local);
}

/* ---- route cases -------------------------------------------------------------- */

void route_case_free(route_case* c) {
  free(c->logits);
  free(c->bias);
  free(c->expert_mask);
  c->logits = NULL;
  c->bias = NULL;
  c->expert_mask = NULL;
}

size_t route_case_logits_bytes(const route_case* c) {
  const moeroute_params* p = &c->p;
  if (p->num_tokens == 0) return 0;
  int64_t stride = p->logits_row_stride ? p->logits_row_stride : p->num_experts;
  /* the last row ends at E, not at the stride: reading past it is a bug a sanitizer should see */
  return (size_t)((p->num_tokens - 1) * stride + p->num_experts) * cli_dtype_size(p->logits_dtype);
}

static int64_t case_stride(const route_case* c) {
  return c->p.logits_row_stride ? c->p.logits_row_stride : c->p.num_experts;
}

/* Row padding holds +inf: a backend that reads it would pick it first. */
static void fill_padding(route_case* c) {
  int64_t stride = case_stride(c);
  int32_t E = c->p.num_experts;
  if (stride == E) return;
  float inf = INFINITY;
  unsigned char enc[4];
  cli_encode(c->p.logits_dtype, &inf, enc, 1);
  size_t ds = cli_dtype_size(c->p.logits_dtype);
  for (int64_t t = 0; t + 1 < c->p.num_tokens; t++)
    for (int64_t i = E; i < stride; i++) memcpy((char*)c->logits + (size_t)(t * stride + i) * ds, enc, ds);
}

void cli_fill_uniform_logits(cli_rng* r, route_case* c) {
  int64_t stride = case_stride(c);
  int32_t E = c->p.num_experts;
  size_t ds = cli_dtype_size(c->p.logits_dtype);
  float* row = (float*)cli_malloc((size_t)E * sizeof(float));
  for (int64_t t = 0; t < c->p.num_tokens; t++) {
    for (int32_t i = 0; i < E; i++) row[i] = (float)(cli_rng_uniform(r) * 4.0 - 2.0);
    cli_encode(c->p.logits_dtype, row, (char*)c->logits + (size_t)(t * stride) * ds, (size_t)E);
  }
  free(row);
  fill_padding(c);
}

/* The pool: every bf16 value with 2^-6 <= |x| < 4 (8 binades x 128 x 2 signs = 2048),
 * in increasing order. Rows draw E distinct entries; for fp16/fp32 each is moved by
 * less than half a bf16 step, which keeps them distinct and ordered. */
#define POOL_SIZE 2048
static float pool_value(int index) {
  int neg = index < 1024;
  int m = neg ? 1023 - index : index - 1024; /* magnitude rank 0..1023 */
  uint32_t bits = ((uint32_t)(121 + m / 128) << 23) | ((uint32_t)(m % 128) << 16);
  float v;
  memcpy(&v, &bits, 4);
  return neg ? -v : v;
}

void cli_fill_tiefree_logits(cli_rng* r, route_case* c, int hot_expert) {
  int64_t stride = case_stride(c);
  int32_t E = c->p.num_experts;
  size_t ds = cli_dtype_size(c->p.logits_dtype);
  int perm[POOL_SIZE];
  /* the hot expert keeps the largest pool value for itself, in every row */
  int avail = hot_expert >= 0 ? POOL_SIZE - 1 : POOL_SIZE;
  if (E > avail) { /* more experts than distinct values: ties cannot be avoided */
    cli_fill_uniform_logits(r, c);
    return;
  }
  float* row = (float*)cli_malloc((size_t)E * sizeof(float));
  for (int64_t t = 0; t < c->p.num_tokens; t++) {
    for (int i = 0; i < avail; i++) perm[i] = i;
    for (int32_t i = 0; i < E; i++) {
      int j = (int)cli_rng_range(r, i, avail - 1);
      int tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
      int idx = (i == hot_expert) ? POOL_SIZE - 1 : perm[i];
      float v = pool_value(idx);
      if (c->p.logits_dtype != MOEROUTE_DTYPE_BF16) {
        /* bf16 step at v is |v| * 2^-7 (or more); stay within +-3/8 of it */
        float step = fabsf(v) * (1.0f / 128.0f);
        v += (float)((cli_rng_uniform(r) - 0.5) * 0.75) * step;
      }
      row[i] = v;
    }
    cli_encode(c->p.logits_dtype, row, (char*)c->logits + (size_t)(t * stride) * ds, (size_t)E);
  }
  free(row);
  fill_padding(c);
}

/* ---- the gate checker ---------------------------------------------------------- */

/* Keys that compare within this fraction of their magnitude may order either
 * way (contract 4: ids may differ where two keys differ by < 1e-6 relative). */
#define KEY_REL 1e-6

static int near(double a, double ma, double b, double mb) {
  return fabs(a - b) <= KEY_REL * fmax(ma, mb) + 1e-30;
}

typedef struct gate_ctx {
  int32_t E, k, G, tg, per_group;
  double* x;     /* clamped logits */
  double* s;     /* scores */
  double* sel;   /* selection value before group masking (-inf when not finite) */
  double* mag;   /* magnitude of sel's summands, for the tolerance */
  double* gv;    /* group value per expert: s + b, -inf when not finite */
  double* gmag;
  double* gs;    /* group scores */
  double* gsm;
  int* order;    /* groups sorted by score */
  char* kept;    /* candidate kept groups */
  double* key;
} gate_ctx;

static int check_picks(const gate_ctx* g, const route_case* c, const int32_t* ids, const float* w, double rel,
                       char* why, size_t n) {
  const int32_t E = g->E, k = g->k;
  const moeroute_params* p = &c->p;
  if (E <= 0 || k <= 0 || k > MOEROUTE_MAX_TOPK) {
    snprintf(why, n, "bad E=%d or k=%d", E, k);
    return 0;
  }
  int F = 0;
  for (int32_t i = 0; i < E; i++) {
    int in = g->G <= 1 || g->kept[i / g->per_group];
    g->key[i] = in ? g->sel[i] : -INFINITY;
    F += g->key[i] != -INFINITY;
  }
  int m = F < k ? F : k;
  char* picked = (char*)calloc((size_t)E, 1);
  int ok = 1;
  for (int j = 0; j < k && ok; j++) {
    if (ids[j] < 0 || ids[j] >= E) {
      snprintf(why, n, "slot %d: id %d out of [0, %d)", j, ids[j], E);
      ok = 0;
    } else if (picked[ids[j]]) {
      snprintf(why, n, "slot %d: id %d picked twice", j, ids[j]);
      ok = 0;
    } else {
      picked[ids[j]] = 1;
    }
  }
  for (int j = 0; j < m && ok; j++) {
    int32_t a = ids[j];
    if (g->key[a] == -INFINITY) {
      snprintf(why, n, "slot %d: id %d has key -inf while %d finite keys exist", j, a, F);
      ok = 0;
    } else if (j + 1 < m) {
      int32_t b = ids[j + 1];
      double ka = g->key[a], kb = g->key[b];
      /* exact ties follow the index rule; near-ties may go either way */
      if (ka == kb ? a > b : (ka < kb && !near(ka, g->mag[a], kb, g->mag[b]))) {
        snprintf(why, n, "slot %d: id %d (key %.9g) before id %d (key %.9g)", j, a, ka, b, kb);
        ok = 0;
      }
    }
  }
  if (ok && m > 0) {
    int32_t last = ids[m - 1];
    double kl = g->key[last];
    for (int32_t u = 0; u < E && ok; u++) {
      if (picked[u] || g->key[u] == -INFINITY) continue;
      double ku = g->key[u];
      if (ku == kl ? u < last : (ku > kl && !near(ku, g->mag[u], kl, g->mag[last]))) {
        snprintf(why, n, "id %d (key %.9g) not picked but id %d (key %.9g) is", u, ku, last, kl);
        ok = 0;
      }
    }
  }
  /* picks past the finite keys: the lowest unpicked ids, ascending (exact -inf ties) */
  if (ok && m < k) {
    char* used = (char*)calloc((size_t)E, 1);
    for (int j = 0; j < m; j++) used[ids[j]] = 1;
    int32_t next = 0;
    for (int j = m; j < k && ok; j++) {
      while (next < E && used[next]) next++;
      if (ids[j] != next) {
        snprintf(why, n, "slot %d: id %d, but the -inf tie rule gives %d", j, ids[j], next);
        ok = 0;
      }
      next++;
    }
    free(used);
  }
  free(picked);
  if (!ok || !w) return ok;
  /* weights (contract 2.6), in double */
  double ref[MOEROUTE_MAX_TOPK];
  double sum = 0;
  for (int j = 0; j < k; j++) {
    ref[j] = j < m ? g->s[ids[j]] : 0.0;
    sum += ref[j];
  }
  for (int j = 0; j < k; j++) {
    double v = ref[j];
    if (p->renormalize) v /= fmax(sum, 1e-20);
    v *= (double)p->scale;
    double d = fabs((double)w[j] - v);
    if (!(d <= rel * fmax(fabs(v), fabs((double)w[j])) || d <= 1e-30)) {
      snprintf(why, n, "slot %d (id %d): weight %.9g, contract gives %.9g (rel err %.2g)", j, ids[j], w[j], v,
               v != 0 ? d / fabs(v) : d);
      return 0;
    }
  }
  return 1;
}

/* Try every choice of the groups whose scores are near the cut-off (few, in
 * practice one) until one makes the picks valid. */
static int try_groups(gate_ctx* g, const route_case* c, const int32_t* ids, const float* w, double rel, char* why,
                      size_t n) {
  const int32_t G = g->G, tg = g->tg;
  if (G > 1024) { /* beyond what verify generates: take the exact top groups */
    memset(g->kept, 0, (size_t)G);
    for (int q = 0; q < tg; q++) g->kept[g->order[q]] = 1;
    return check_picks(g, c, ids, w, rel, why, n);
  }
  double cut = g->gs[g->order[tg - 1]], cutm = g->gsm[g->order[tg - 1]];
  int sure[1024], amb[1024], ns = 0, na = 0;
  for (int q = 0; q < G; q++) {
    int grp = g->order[q];
    double v = g->gs[grp];
    int ambiguous = cut != -INFINITY && v != -INFINITY && v != cut ? near(v, g->gsm[grp], cut, cutm) : 0;
    if (cut != -INFINITY && v == cut) ambiguous = 1; /* exact ties in double may split on fp32 */
    if (ambiguous) amb[na++] = grp;
    else if (q < tg) sure[ns++] = grp;
  }
  int need = tg - ns;
  if (need < 0 || need > na || na > 20) { /* cannot happen; be safe */
    memset(g->kept, 0, (size_t)G);
    for (int q = 0; q < tg; q++) g->kept[g->order[q]] = 1;
    return check_picks(g, c, ids, w, rel, why, n);
  }
  /* enumerate subsets of amb of size need (Gosper's hack on na <= 20 bits) */
  uint32_t limit = 1u << na;
  uint32_t set = need == 0 ? 0 : (1u << need) - 1;
  char first_why[256] = "";
  for (;;) {
    memset(g->kept, 0, (size_t)G);
    for (int q = 0; q < ns; q++) g->kept[sure[q]] = 1;
    for (int q = 0; q < na; q++)
      if (set & (1u << q)) g->kept[amb[q]] = 1;
    char tmp[256];
    if (check_picks(g, c, ids, w, rel, tmp, sizeof tmp)) return 1;
    if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s", tmp);
    if (need == 0) break;
    uint32_t lo = set & (~set + 1u), r = set + lo;
    set = (((r ^ set) >> 2) / lo) | r;
    if (set >= limit) break;
  }
  snprintf(why, n, "%s", first_why);
  return 0;
}

int cli_check_gate_row(const route_case* c, int64_t t, const int32_t* ids, const float* weights, double rel,
                       char* why, size_t n) {
  const moeroute_params* p = &c->p;
  gate_ctx g;
  memset(&g, 0, sizeof g);
  g.E = p->num_experts;
  g.k = p->top_k;
  g.G = p->num_groups > 1 ? p->num_groups : 1;
  g.tg = p->topk_groups;
  g.per_group = g.E / g.G;
  size_t E = (size_t)g.E;
  g.x = (double*)calloc(E, sizeof(double));
  g.s = (double*)calloc(E, sizeof(double));
  g.sel = (double*)calloc(E, sizeof(double));
  g.mag = (double*)calloc(E, sizeof(double));
  g.gv = (double*)calloc(E, sizeof(double));
  g.gmag = (double*)calloc(E, sizeof(double));
  g.key = (double*)calloc(E, sizeof(double));
  g.gs = (double*)calloc((size_t)g.G, sizeof(double));
  g.gsm = (double*)calloc((size_t)g.G, sizeof(double));
  g.order = (int*)calloc((size_t)g.G, sizeof(int));
  g.kept = (char*)calloc((size_t)g.G, 1);
  char* fin = (char*)calloc(E, 1);
  int64_t stride = case_stride(c);
  double mx = -INFINITY;
  for (size_t i = 0; i < E; i++) {
    float v = cli_decode1(p->logits_dtype, c->logits, (size_t)(t * stride) + i);
    fin[i] = !(isnan(v) || v == -INFINITY);
    if (v == INFINITY) v = FLT_MAX;
    g.x[i] = v;
    if (fin[i] && v > mx) mx = v;
  }
  double sum = 0;
  if (p->score == MOEROUTE_SCORE_SOFTMAX)
    for (size_t i = 0; i < E; i++)
      if (fin[i]) sum += exp(g.x[i] - mx);
  for (size_t i = 0; i < E; i++) {
    double x = g.x[i], s = 0;
    if (fin[i]) {
      switch (p->score) {
        case MOEROUTE_SCORE_SOFTMAX: s = exp(x - mx) / sum; break;
        case MOEROUTE_SCORE_SIGMOID: s = 1.0 / (1.0 + exp(-x)); break;
        case MOEROUTE_SCORE_SQRT_SOFTPLUS: s = sqrt(fmax(x, 0.0) + log1p(exp(-fabs(x)))); break;
      }
    }
    g.s[i] = s;
    double b = c->bias ? (double)c->bias[i] : 0.0;
    g.gv[i] = fin[i] ? s + b : -INFINITY;
    g.gmag[i] = fabs(s) + fabs(b);
    if (!fin[i]) {
      g.sel[i] = -INFINITY;
      g.mag[i] = 0;
    } else if (p->score == MOEROUTE_SCORE_SOFTMAX && !c->bias) {
      g.sel[i] = x;
      g.mag[i] = 0; /* the logit itself: exact on every backend, no tolerance */
    } else {
      g.sel[i] = s + b;
      g.mag[i] = g.gmag[i];
    }
  }
  int ok;
  if (g.G <= 1) {
    ok = check_picks(&g, c, ids, weights, rel, why, n);
  } else {
    for (int q = 0; q < g.G; q++) {
      double best = -INFINITY, second = -INFINITY, bm = 0, sm = 0;
      for (int i = q * g.per_group; i < (q + 1) * g.per_group; i++) {
        double v = g.gv[i];
        if (v > best) {
          second = best;
          sm = bm;
          best = v;
          bm = g.gmag[i];
        } else if (v > second) {
          second = v;
          sm = g.gmag[i];
        }
      }
      if (p->group_score == MOEROUTE_GROUP_SCORE_MAX) {
        g.gs[q] = best;
        g.gsm[q] = bm;
      } else {
        g.gs[q] = second == -INFINITY ? -INFINITY : best + second;
        g.gsm[q] = bm + sm;
      }
      g.order[q] = q;
    }
    /* stable sort by score, descending (ties: lower group first) */
    for (int a = 1; a < g.G; a++) {
      int v = g.order[a], b = a - 1;
      while (b >= 0 && g.gs[g.order[b]] < g.gs[v]) {
        g.order[b + 1] = g.order[b];
        b--;
      }
      g.order[b + 1] = v;
    }
    ok = try_groups(&g, c, ids, weights, rel, why, n);
  }
  free(g.x);
  free(g.s);
  free(g.sel);
  free(g.mag);
  free(g.gv);
  free(g.gmag);
  free(g.key);
  free(g.gs);
  free(g.gsm);
  free(g.order);
  free(g.kept);
  free(fin);
  return ok;
}

int64_t cli_cmp_gate(const route_case* c, const host_route* got, const host_route* ref, int64_t* near_ties,
                     char* why, size_t n) {
  const moeroute_params* p = &c->p;
  const int32_t k = p->top_k;
  int64_t bad = 0;
  for (int64_t t = 0; t < p->num_tokens; t++) {
    const int32_t* gi = got->topk_ids + t * k;
    const float* gw = got->topk_weights + t * k;
    if (memcmp(gi, ref->topk_ids + t * k, (size_t)k * 4) == 0) {
      for (int j = 0; j < k; j++)
        if (!cli_close(gw[j], ref->topk_weights[t * k + j], CLI_WEIGHT_REL)) {
          NOTE_FIRST("row %lld slot %d (id %d): weight %.9g vs CPU %.9g", (long long)t, j, gi[j], gw[j],
                     ref->topk_weights[t * k + j]);
          break;
        }
      continue;
    }
    char tmp[256];
    if (cli_check_gate_row(c, t, gi, gw, CLI_WEIGHT_REL, tmp, sizeof tmp)) {
      if (near_ties) (*near_ties)++;
    } else {
      NOTE_FIRST("row %lld: ids differ from the CPU's and are not a near-tie: %s", (long long)t, tmp);
    }
  }
  return bad;
}

/* ---- CPU calls ------------------------------------------------------------------ */

moeroute_status cli_cpu_run(moeroute_op op, const route_case* c, const moeroute_params* p, host_route* out,
                            const int32_t* sort_ids, const float* sort_weights, void* moe_buf) {
  moeroute_buffers b;
  moeroute_buffers_init(&b);
  b.logits = c->logits;
  b.bias = c->bias;
  b.expert_mask = c->expert_mask;
  if (op == MOEROUTE_OP_GATE) {
    b.topk_ids = out->topk_ids;
    b.topk_weights = out->topk_weights;
  } else {
    host_route_bind(out, p, 1, &b);
    b.moe_buf = moe_buf;
  }
  if (op == MOEROUTE_OP_SORT) {
    /* the API's topk arrays are not const because gate writes them; sort only reads */
    if (sort_ids) b.topk_ids = (int32_t*)(uintptr_t)sort_ids;
    if (sort_weights) b.topk_weights = (float*)(uintptr_t)sort_weights;
  }
  size_t ws = 0;
  moeroute_status st = moeroute_cpu_workspace_size(op, p, &ws);
  if (st != MOEROUTE_OK) return st;
  void* w = ws ? malloc(ws) : NULL;
  if (ws && !w) return MOEROUTE_ERR_INTERNAL;
  b.workspace = w;
  b.workspace_bytes = ws;
  switch (op) {
    case MOEROUTE_OP_ROUTE: st = moeroute_cpu_route(p, &b); break;
    case MOEROUTE_OP_GATE: st = moeroute_cpu_gate(p, &b); break;
    case MOEROUTE_OP_SORT: st = moeroute_cpu_sort(p, &b); break;
  }
  free(w);
  return st;
}
