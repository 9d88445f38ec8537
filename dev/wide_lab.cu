/*
 * wide_lab.cu - lab file (session 7): the four-warp gate rows of gate.cu
 * (mr_gate_wide_kernel) against the warp-per-row gate kernel, same run.
 *
 * 1. Bit-identity: for every shape and T, gate with mr_cuda_tune.gate_wide = -1
 *    (warp per row) and = 1 << 20 (wide forced) must give the same topk_ids and
 *    topk_weights bits, on gaussian rows, on rows quantised to a coarse grid
 *    (ties: the pair re-rank and the exact fallback), and with NaN / inf mixed in.
 *    (Lab run 11 at de5a513 also forced softmax shapes wide, weights within 1e-5;
 *    that form was removed, gate.cu.)
 * 2. Kernel metric (50 calls in one graph, median of 15 replays / 50): gate
 *    alone and route (moe_buf [T, hidden] bf16 cleared, CK layout, U = 32), old
 *    against wide, T = 1 .. 512 (tiny.cu's wide form off: mr_cuda_tune.tiny_wide = -1).
 * --tiny (session 9): route by tiny.cu's wide form (mr_cuda_tune.tiny_wide = 8)
 *    against route without it (-1: the pair, wide gate kernel + one-launch sort),
 *    T = 1 .. 8: the sorted outputs, totals and top-k compared bit for bit on the
 *    three input kinds, then both timed (kernel metric, moe_buf cleared).
 * --tiny-pk (session 9): the same for 16-bit softmax rows, tiny.cu forced
 *    (tiny_max_n = 32) against the pair (no_tiny), T*k <= 32.
 * --tiny-1p (session 9): tiny.cu forced (T*k <= 128) with its sorts
 *    against the one-pass finish (mr_cuda_tune.tiny_onepass).
 * --tiny16 (session 15): tiny.cu's one-pass route by 16 gating warps against 8 warps and
 *    the pair, T = 2 .. 16 (mr_cuda_tune.tiny_threads).
 * --tiny-op (session 15): the one-pass route's presence words in registers against the
 *    shuffle form (mr_cuda_tune.tiny_op_regs), checked, and timed with stage probes.
 * --tcl (session 16, perf-log v15): tiny.cu's one-pass route by a cluster of C = 1, 2, 4, 8, 16 (session 33) CTAs
 *    that split the rows (mr_cuda_tune.tiny_cluster): 16-bit softmax rows, the wide gate rows, and
 *    the fp32-key rows a warp per row (RW), T = 1 .. 32, against the default route bit for bit
 *    (U = 32 and 16, four input kinds: the three of make_case and an expert mask; the SH shapes also a
 *    warp per row), then timed (kernel metric, route, moe_buf cleared).
 *    --no-time [--quick]: the check alone.
 * --twarm (session 16, perf-log v15): the warm pass of tiny.cu's one-pass route (an idle warp runs
 *    the layout's code during gating, loads and stores off; mr_cuda_tune.tiny_warm) against the
 *    default, 16-bit softmax rows, T = 2 .. 8: bit for bit, then the kernel metric and the eager
 *    metric (events around one call after an L2 flush, as moeroute bench), off / on.
 *    --no-time [--quick]: the check alone (--quick: U = 32, gaussian rows).
 * --town (session 18, perf-log v17): the one-pass layout's blocks by word ownership
 *    (mr_cuda_tune.tiny_op_own) against the default, 16-bit softmax rows, T = 2 .. 16, four input
 *    kinds (the expert mask included), as --twarm: bits, then the kernel and eager metrics.
 *    --no-time [--quick]: the check alone.
 * --tent (session 43, perf-log v48): the one-pass layout's blocks by entry ownership (tiny_op_own 2) against the
 *    default, as --town: bits (T = 2 .. 16, three forms, odd E), then the kernel and eager metrics at T = 2 .. 8.
 *    --no-time [--quick]: the check alone.
 * --trows (session 44, perf-log v49): tiny.cu's rows form (T = 2 .. 4 rows in one warp, no barrier; tiny_rows 1, and 2
 *    with the early padding) against the default route: bits over odd E and the presets (five input kinds, U = 32 and
 *    16), then the kernel and eager metrics at T = 2 .. 4. --no-time [--quick]: the check alone.
 * --tru (session 18, perf-log v17): the grouped wide rows' group ranks unrolled
 *    (mr_cuda_tune.wide_rank_unroll) against the default, tiny.cu's wide route at T = 1, four grouped
 *    shapes, as --twarm: bits, then the kernel and eager metrics. --no-time [--quick]: the check alone.
 * --tfilt (session 35, perf-log v40): the sigmoid rows of the wide form a warp per row by the filter on approximate
 *    keys (mr_cuda_tune.tiny_filt) against the default route, T = 1 - 16 (the solo form at T = 1, the cluster form
 *    above), as --twarm: bits, then the kernel, eager and graph metrics (the graph metric: a one-call graph replayed
 *    back to back). --no-time [--quick]: the check alone.
 * --tfilt9 (session 35, perf-log v40): the filter rows against the wide rows on sigmoid shapes with k = 9 - 16 (the
 *    rows v40's rule would take).
 * --tmsort (session 11): the token-mask sort (any U, T <= 256) against the other sorts, bit for
 *    bit and timed. --time-only [--no-buf]: the timing table alone (--no-buf: without moe_buf, the
 *    16-bit softmax shapes at T >= 48; session 18).
 * --spread (session 11): the one-pass layout written by 1, 2, 4 or 8 CTAs (tiny_ctas), the
 *    sort alone and route by tiny.cu, checked bit for bit and timed.
 * --ctm (session 13): the cluster token-mask path (ctm.cu) against the other paths, bit for
 *    bit (route, sort, sort of corrupted ids; cluster sizes 1 - 16; U = 32, 8, 64) and timed
 *    (--time-only: the table alone; --no-time [--quick | --race]: the check alone).
 * --ctm-probe (session 13): ctm's fixed cost taken apart (cluster barrier and DSMEM, the
 *    cluster attribute, PDL), timed only.
 * --ctm-pair (session 13): ctm's sort without moe_buf at T = 256 - 4096, alone and as the mid
 *    pair's second launch, timed only.
 * --tsort (session 10): the one-launch sort at decode, the mask-table sort against
 *    tiny.cu's one-CTA one-pass sort (mr_cuda_tune.tiny_sort), bit for bit (route
 *    as the pair, sort, sort of corrupted ids) and timed.
 *
 * Build (after cmake --build B):
 *   nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/wide_lab.cu B/libmoeroute.a -o B/wide_lab
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/common.cuh"
#include "internal.h" /* mr_validate_params: --tcl asks the library's own rule (mr_cuda_tiny_cluster_c) */
#include "moeroute.h"
#include "lab_util.h"

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) { return lab_splitmix(&g_rng); }
static double urand(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static float gauss(void) {
  double u = urand() + 1e-12, v = urand();
  return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

typedef struct {
  const char* name;
  int E, k;
  moeroute_score score;
  int bias, G, tg;
  float scale;
  int hidden;
  moeroute_dtype dt;
  int norenorm; /* 1: renormalize off (make_case sets it on otherwise) */
  int gmax;     /* 1: group score = the group's max (else the top-2 sum) */
} Shape;
static const Shape SH[] = {
    {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32},
    {"kimi-k2", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 2.827f, 7168, MOEROUTE_DTYPE_FP32},
    {"glm-4.5", 160, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 2.5f, 5120, MOEROUTE_DTYPE_FP32},
    {"minimax-m2", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1.0f, 3072, MOEROUTE_DTYPE_FP32},
    {"deepseek-v4-flash", 256, 6, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 1, 1, 1.5f, 4096, MOEROUTE_DTYPE_FP32},
    {"kimi-bf16-k16", 384, 16, MOEROUTE_SCORE_SIGMOID, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16},
    {"e1024-g32-k4", 1024, 4, MOEROUTE_SCORE_SIGMOID, 1, 32, 8, 1.0f, 4096, MOEROUTE_DTYPE_FP16},
};
#define NSH (int)(sizeof SH / sizeof SH[0])

static uint16_t to16(moeroute_dtype d, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (d == MOEROUTE_DTYPE_BF16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  /* fp16 via the host's conversion of a float in range (the lab keeps |f| < 60000) */
  __half h = __float2half(f);
  uint16_t r;
  memcpy(&r, &h, 2);
  return r;
}

typedef struct {
  moeroute_params p;
  moeroute_buffers b;
  void* dev[12];
  int nd;
} Case;

static void* dalloc(Case* c, size_t n) {
  void* q;
  CK(cudaMalloc(&q, n < 16 ? 16 : n));
  CK(cudaMemset(q, 0, n < 16 ? 16 : n));
  c->dev[c->nd++] = q;
  return q;
}

static int32_t g_unit = 32; /* U of the cases make_case builds (--tmsort varies it) */
/* kind 0 gaussian, 1 coarse grid (ties), 2 with NaN / inf, 3 gaussian with an expert mask (30% of the
 * experts off; only --tcl asks for it) */
static void make_case(Case* c, const Shape* s, int T, int kind) {
  memset(c, 0, sizeof *c);
  moeroute_params_init(&c->p);
  moeroute_buffers_init(&c->b);
  moeroute_params* p = &c->p;
  p->num_tokens = T;
  p->num_experts = s->E;
  p->top_k = s->k;
  p->unit_size = g_unit;
  p->logits_dtype = s->dt;
  p->score = s->score;
  p->renormalize = !s->norenorm;
  p->scale = s->scale;
  if (s->gmax) p->group_score = MOEROUTE_GROUP_SCORE_MAX;
  p->num_groups = s->G;
  p->topk_groups = s->tg;
  p->layouts = MOEROUTE_LAYOUT_CK;
  p->moe_buf_bytes = (size_t)T * s->hidden * 2;
  const size_t n = (size_t)T * s->E, es = s->dt == MOEROUTE_DTYPE_FP32 ? 4 : 2;
  unsigned char* h = (unsigned char*)malloc(n * es);
  for (size_t i = 0; i < n; ++i) {
    float f = 2.0f * gauss();
    if (kind == 1) f = floorf(f * 4.0f) * 0.25f;
    /* (session 44, --trows) 4: hot experts (every 7th expert 4 higher: the tokens share most picks); 5: every row
       the same (each expert picked by every token) */
    if (kind == 4 && (i % (size_t)s->E) % 7 == 0) f += 4.0f;
    if (kind == 5) {
      static float row5[1024];
      if (i < (size_t)s->E) row5[i] = f;
      else f = row5[i % (size_t)s->E];
    }
    if (kind == 2) {
      const double u = urand();
      if (u < 0.03) f = NAN;
      else if (u < 0.05) f = INFINITY;
      else if (u < 0.07) f = -INFINITY;
    }
    if (es == 4) memcpy(h + 4 * i, &f, 4);
    else {
      const uint16_t v = to16(s->dt, f);
      memcpy(h + 2 * i, &v, 2);
    }
  }
  void* dl = dalloc(c, n * es);
  CK(cudaMemcpy(dl, h, n * es, cudaMemcpyHostToDevice));
  free(h);
  c->b.logits = dl;
  if (s->bias) {
    float* hb = (float*)malloc(4 * (size_t)s->E);
    for (int e = 0; e < s->E; ++e) hb[e] = kind == 1 ? 0.0f : 0.1f * gauss();
    float* db = (float*)dalloc(c, 4 * (size_t)s->E);
    CK(cudaMemcpy(db, hb, 4 * (size_t)s->E, cudaMemcpyHostToDevice));
    free(hb);
    c->b.bias = db;
  }
  moeroute_sizes z;
  memset(&z, 0, sizeof z);
  if (moeroute_get_sizes(p, &z) != MOEROUTE_OK) {
    fprintf(stderr, "sizes: %s\n", moeroute_last_error());
    exit(2);
  }
  if (kind == 3) {
    int32_t* hm = (int32_t*)malloc(4 * (size_t)s->E);
    for (int e = 0; e < s->E; ++e) hm[e] = urand() < 0.3 ? 0 : 1;
    int32_t* dm = (int32_t*)dalloc(c, 4 * (size_t)s->E);
    CK(cudaMemcpy(dm, hm, 4 * (size_t)s->E, cudaMemcpyHostToDevice));
    free(hm);
    c->b.expert_mask = dm;
  }
  c->b.topk_ids = (int32_t*)dalloc(c, 4 * (size_t)z.topk_len);
  c->b.topk_weights = (float*)dalloc(c, 4 * (size_t)z.topk_len);
  c->b.sorted_ids = (int32_t*)dalloc(c, 4 * (size_t)z.ck_sorted_len);
  c->b.sorted_weights = (float*)dalloc(c, 4 * (size_t)z.ck_sorted_len);
  c->b.sorted_expert_ids = (int32_t*)dalloc(c, 4 * (size_t)z.ck_blocks_len);
  c->b.num_valid_ids = (int32_t*)dalloc(c, 8);
  c->b.moe_buf = dalloc(c, p->moe_buf_bytes);
  /* workspace: the most that route or sort asks for, with the knobs as set and with the
   * one-pass sorts off (the modes switch them between calls on one case) */
  size_t ws = 0;
  const int ts0 = mr_cuda_tune.tiny_sort, tm0 = mr_cuda_tune.tm_sort;
  for (int v = 0; v < 2; ++v) {
    if (v == 1) mr_cuda_tune.tiny_sort = mr_cuda_tune.tm_sort = -1;
    for (int op = 0; op < 2; ++op) {
      size_t w = 0;
      if (moeroute_cuda_workspace_size(op ? MOEROUTE_OP_SORT : MOEROUTE_OP_ROUTE, p, &w) != MOEROUTE_OK) {
        fprintf(stderr, "ws: %s\n", moeroute_last_error());
        exit(2);
      }
      if (w > ws) ws = w;
    }
  }
  mr_cuda_tune.tiny_sort = ts0;
  mr_cuda_tune.tm_sort = tm0;
  c->b.workspace = ws ? dalloc(c, ws) : NULL;
  c->b.workspace_bytes = ws;
  /* dalloc's cudaMemset runs on the legacy stream, which the modes' non-blocking stream
   * does not wait for: without this a late memset could zero an output after a call wrote
   * it (lab call 26: one reference route read total 0) */
  CK(cudaDeviceSynchronize());
}
static void free_case(Case* c) {
  for (int i = 0; i < c->nd; ++i) cudaFree(c->dev[i]);
}

static void gate_to_host(Case* c, int knob, int32_t* ids, float* w, cudaStream_t s) {
  mr_cuda_tune.gate_wide = knob;
  CK(cudaMemsetAsync(c->b.topk_ids, 0xff, 4 * (size_t)c->p.num_tokens * c->p.top_k, s));
  if (moeroute_cuda_gate(&c->p, &c->b, s) != MOEROUTE_OK) {
    fprintf(stderr, "gate: %s\n", moeroute_last_error());
    exit(2);
  }
  const size_t n = (size_t)c->p.num_tokens * c->p.top_k;
  CK(cudaMemcpyAsync(ids, c->b.topk_ids, 4 * n, cudaMemcpyDeviceToHost, s));
  CK(cudaMemcpyAsync(w, c->b.topk_weights, 4 * n, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  mr_cuda_tune.gate_wide = 0;
}

static double time_op(Case* c, int knob, int route, cudaStream_t s) {
  mr_cuda_tune.gate_wide = knob;
  if (knob != 0) mr_cuda_tune.tiny_wide = -1; /* the wide gate kernel against the warp-per-row one */
  const int calls = 50, reps = 15;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) {
    const moeroute_status st = route == 2 ? moeroute_cuda_sort(&c->p, &c->b, s)
                               : route   ? moeroute_cuda_route(&c->p, &c->b, s)
                                         : moeroute_cuda_gate(&c->p, &c->b, s);
    if (st != MOEROUTE_OK) {
      fprintf(stderr, "timed call: %s\n", moeroute_last_error());
      exit(2);
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  mr_cuda_tune.gate_wide = 0;
  return lab_graph_us(g, calls, reps, 3, s);
}

/* route (the knobs as the caller set them); the outputs to host (o: totals | ids |
 * weights bits | block ids | topk ids | topk weights bits, int32 words; n words) */
static int g_sort_op; /* route_to_host runs moeroute_cuda_sort on the case's top-k instead */
/* Words of route_to_host's copy of a case's outputs: the totals, the CK layout and the top-k. */
static size_t host_words(const Case* c) {
  moeroute_sizes z;
  memset(&z, 0, sizeof z);
  moeroute_get_sizes(&c->p, &z);
  return 2 + 2 * (size_t)z.ck_sorted_len + (size_t)z.ck_blocks_len + 2 * (size_t)z.topk_len;
}

static size_t route_to_host(Case* c, int32_t* o, cudaStream_t s) {
  moeroute_sizes z;
  memset(&z, 0, sizeof z);
  moeroute_get_sizes(&c->p, &z);
  /* every output compared below, poisoned first: a path that skips a write cannot inherit the previous call's
   * value (the top-k only for route: sort reads it) */
  CK(cudaMemsetAsync(c->b.sorted_ids, 0xff, 4 * (size_t)z.ck_sorted_len, s));
  CK(cudaMemsetAsync(c->b.sorted_weights, 0xff, 4 * (size_t)z.ck_sorted_len, s));
  CK(cudaMemsetAsync(c->b.sorted_expert_ids, 0xff, 4 * (size_t)z.ck_blocks_len, s));
  CK(cudaMemsetAsync(c->b.num_valid_ids, 0xff, 8, s));
  if (!g_sort_op) {
    CK(cudaMemsetAsync(c->b.topk_ids, 0xff, 4 * (size_t)z.topk_len, s));
    CK(cudaMemsetAsync(c->b.topk_weights, 0xff, 4 * (size_t)z.topk_len, s));
  }
  if ((g_sort_op ? moeroute_cuda_sort(&c->p, &c->b, s) : moeroute_cuda_route(&c->p, &c->b, s)) != MOEROUTE_OK) {
    fprintf(stderr, "route/sort: %s\n", moeroute_last_error());
    exit(2);
  }
  int32_t nv[2];
  CK(cudaMemcpyAsync(nv, c->b.num_valid_ids, 8, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  const size_t tot = (size_t)nv[0], nb = tot / (size_t)c->p.unit_size, n = (size_t)c->p.num_tokens * c->p.top_k;
  size_t w = 0;
  o[w++] = nv[0];
  o[w++] = nv[1];
  CK(cudaMemcpyAsync(o + w, c->b.sorted_ids, 4 * tot, cudaMemcpyDeviceToHost, s));
  w += tot;
  CK(cudaMemcpyAsync(o + w, c->b.sorted_weights, 4 * tot, cudaMemcpyDeviceToHost, s));
  w += tot;
  CK(cudaMemcpyAsync(o + w, c->b.sorted_expert_ids, 4 * nb, cudaMemcpyDeviceToHost, s));
  w += nb;
  CK(cudaMemcpyAsync(o + w, c->b.topk_ids, 4 * n, cudaMemcpyDeviceToHost, s));
  w += n;
  CK(cudaMemcpyAsync(o + w, c->b.topk_weights, 4 * n, cudaMemcpyDeviceToHost, s));
  w += n;
  CK(cudaStreamSynchronize(s));
  return w;
}

/* 1 when the two output dumps are the same words; else prints "MISMATCH <case>: words na/nb,
 * first difference at j" (the case described printf-style) and returns 0 */
static int same_words(const int32_t* a, size_t na, const int32_t* b, size_t nb, const char* fmt, ...) {
  if (na == nb && !memcmp(a, b, 4 * na)) return 1;
  size_t j = 0;
  while (j < na && j < nb && a[j] == b[j]) ++j;
  va_list ap;
  va_start(ap, fmt);
  printf("MISMATCH ");
  vprintf(fmt, ap);
  va_end(ap);
  printf(": words %zu/%zu, first difference at %zu\n", na, nb, j);
  return 0;
}

/* The top-k of the case's last route, corrupted for the sorts' fallbacks: token 0 names
 * one expert twice (k >= 2) and the last entry's id is out of range (dropped). */
static void corrupt_topk(Case* c, int64_t n, int32_t E) {
  int32_t* h = (int32_t*)malloc((size_t)n * 4);
  CK(cudaMemcpy(h, c->b.topk_ids, (size_t)n * 4, cudaMemcpyDeviceToHost));
  if (n > 1) h[1] = h[0];
  h[n - 1] = E + 5;
  CK(cudaMemcpy(c->b.topk_ids, h, (size_t)n * 4, cudaMemcpyHostToDevice));
  free(h);
}

/* Route with two dispatch variants, A and B, set by set(1) and set(2) (set(0):
 * the defaults): the outputs compared bit for bit on the three input kinds, then
 * A, B and auto timed (kernel metric, moe_buf cleared). Shapes with T*k > max_n
 * are skipped. */
static int g_check_only; /* --no-time after the mode: the comparison only (for the sanitizers) */
static int route_ab(const Shape* sh, int ns, int max_n, void (*set)(int), const char* what) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 2, 3, 4, 6, 8};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  long checks = 0, bad = 0;
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti)
      for (int kind = 0; kind < 3 && TS[ti] * sh[si].k <= max_n; ++kind) {
        Case c;
        make_case(&c, &sh[si], TS[ti], kind);
        const size_t cap = host_words(&c);
        int32_t *a = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
        set(1);
        const size_t na = route_to_host(&c, a, s);
        set(2);
        const size_t nb = route_to_host(&c, b, s);
        set(0);
        checks++;
        if (!same_words(a, na, b, nb, "%s T=%d kind=%d", sh[si].name, TS[ti], kind)) bad++;
        free(a);
        free(b);
        free_case(&c);
      }
  printf("check: %ld cases, %ld mismatches (%s, bits)\n", checks, bad, what);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us, route (moe_buf cleared): %s | auto\n", what);
  printf("%-18s %5s %8s %8s %8s\n", "shape", "T", "A", "B", "auto");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      if (TS[ti] * sh[si].k > max_n) continue;
      Case c;
      make_case(&c, &sh[si], TS[ti], 0);
      double r[3];
      for (int v = 1; v <= 3; ++v) {
        set(v % 3);
        r[v - 1] = time_op(&c, 0, 1, s);
      }
      set(0);
      printf("%-18s %5d %8.2f %8.2f %8.2f\n", sh[si].name, TS[ti], r[0], r[1], r[2]);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --tiny: A = the pair (tiny_wide -1), B = tiny.cu's wide form forced (8) */
static void set_tw(int v) { mr_cuda_tune.tiny_wide = v == 1 ? -1 : v == 2 ? 8 : 0; }

/* --tiny-pk: 16-bit softmax rows (no bias, no groups): A = the pair (no_tiny),
 * B = tiny.cu forced (tiny_max_n = 32: any E and T while T*k <= 32) */
static const Shape PK[] = {
    {"ds-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16},
    {"qwen3-next", 512, 10, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16},
    {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16},
    {"olmoe", 64, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"e1024-k8", 1024, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_FP16},
};
#define NPK (int)(sizeof PK / sizeof PK[0])
/* The fp32-key shapes, then the 16-bit softmax ones (index >= NSH); returns the count. */
static int all_shapes(const Shape** all) {
  int ns = 0;
  for (int i = 0; i < NSH; ++i) all[ns++] = &SH[i];
  for (int i = 0; i < NPK; ++i) all[ns++] = &PK[i];
  return ns;
}
static void set_pk(int v) {
  mr_cuda_tune.no_tiny = v == 1;
  mr_cuda_tune.tiny_max_n = v == 2 ? 32 : 0;
  mr_cuda_tune.tiny_onepass = v == 2 ? -1 : 0; /* forced: tiny.cu's own sorts */
}
/* --tiny-1p: tiny.cu forced up to T*k = 128, A = its sorts (one warp / multi-warp),
 * B = the one-pass finish (mr_cuda_tune.tiny_onepass; perf-log v8 "Next") */
static void set_1p(int v) {
  mr_cuda_tune.tiny_max_n = v ? 128 : 0;
  mr_cuda_tune.tiny_onepass = v == 2 ? 1 : v == 1 ? -1 : 0; /* the default (v = 0) picks by its rule */
}

/* --tsort (session 10): the one-launch sort at decode, A = the mask-table sort of
 * sort.cuh (tiny_sort -1), B = tiny.cu's one-CTA one-pass sort (tiny_sort 1, where
 * it fits: T <= 32, T*k <= 128, U >= T). Checked bit for bit: route as the pair
 * (no_tiny), sort alone on the route's top-k, and sort alone on corrupted top-k (a
 * duplicate id in token 0, one id out of range: the one-pass sort's fallback).
 * Timed: sort alone A / B, route as the pair A / B, route auto (kernel metric). */
static void set_ts(int v) { mr_cuda_tune.tiny_sort = v == 1 ? -1 : v == 2 ? 1 : 0; }
static int sort_ab(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 2, 4, 8, 12, 16};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  const Shape* all[NSH + NPK];
  const int ns = all_shapes(all);
  long checks = 0, bad = 0;
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti)
      for (int kind = 0; kind < 3; ++kind)
        for (int what = 0; what < 3; ++what) { /* route as the pair, sort, sort of corrupted ids */
          Case c;
          make_case(&c, all[si], TS[ti], kind);
          mr_cuda_tune.no_tiny = 1;
          const size_t cap = host_words(&c);
          int32_t *a = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
          if (what > 0) { /* the top-k from one default route, then the sort alone */
            g_sort_op = 0;
            route_to_host(&c, a, s);
            if (what == 2) corrupt_topk(&c, (int64_t)TS[ti] * all[si]->k, all[si]->E);
            g_sort_op = 1;
          }
          set_ts(1);
          const size_t na = route_to_host(&c, a, s);
          set_ts(2);
          const size_t nb = route_to_host(&c, b, s);
          set_ts(0);
          g_sort_op = 0;
          mr_cuda_tune.no_tiny = 0;
          checks++;
          if (!same_words(a, na, b, nb, "%s T=%d kind=%d what=%d", all[si]->name, TS[ti], kind, what)) bad++;
          free(a);
          free(b);
          free_case(&c);
        }
  printf("check: %ld cases, %ld mismatches (A = the mask-table sort | B = tiny.cu's one-pass sort; route as the pair, "
         "sort, sort of corrupted ids; bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us (moe_buf cleared): sort alone A / B, route as the pair A / B, route auto\n");
  printf("%-18s %5s %8s %8s %8s %8s %8s\n", "shape", "T", "sortA", "sortB", "pairA", "pairB", "auto");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      Case c;
      make_case(&c, all[si], TS[ti], 0);
      double r[5];
      g_sort_op = 0;
      int32_t* tmp = (int32_t*)calloc(1 << 20, 4);
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      mr_cuda_tune.no_tiny = 1;
      set_ts(1);
      r[0] = time_op(&c, 0, 2, s);
      set_ts(2);
      r[1] = time_op(&c, 0, 2, s);
      set_ts(1);
      r[2] = time_op(&c, 0, 1, s);
      set_ts(2);
      r[3] = time_op(&c, 0, 1, s);
      set_ts(0);
      mr_cuda_tune.no_tiny = 0;
      r[4] = time_op(&c, 0, 1, s);
      printf("%-18s %5d %8.2f %8.2f %8.2f %8.2f %8.2f\n", all[si]->name, TS[ti], r[0], r[1], r[2], r[3], r[4]);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --spread (session 11): the one-pass layout written by R = 1, 2, 4, 8 CTAs
 * (mr_cuda_tune.tiny_ctas; each CTA loads / gates every entry alike and writes the
 * blocks b with b % R == its index). Lab call 22: the one-CTA sort grew ~0.13 us per
 * token of k = 8 from T = 1 to 16. Checked bit for bit: the sort alone (route's top-k
 * and corrupted top-k) with R = 1, 2, 4, 8 against the mask-table sort; for 16-bit
 * softmax rows, route by tiny.cu (forced, one-pass finish) with R = 2, 4, 8 against
 * R = 1 and R = 1 against the pair. Timed (kernel metric, moe_buf cleared): the sort
 * alone A (mask table) and B with each R, route as the pair with A / B (R = 4),
 * route by tiny.cu with each R (16-bit softmax rows), route auto. */
static void set_sp(int ts, int ctas, int tiny) { /* tiny: 0 auto, 1 never, 2 forced with the one-pass finish */
  mr_cuda_tune.tiny_sort = ts;
  mr_cuda_tune.tiny_ctas = ctas;
  mr_cuda_tune.no_tiny = tiny == 1;
  mr_cuda_tune.tiny_max_n = tiny == 2 ? 128 : 0;
  mr_cuda_tune.tiny_onepass = tiny == 2 ? 1 : 0;
}
static int spread(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {2, 4, 8, 12, 16};
  static const int RS[] = {1, 2, 4, 8};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  const Shape* all[NSH + NPK];
  const int ns = all_shapes(all);
  long checks = 0, bad = 0;
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti)
      for (int kind = 0; kind < 3; ++kind)
        for (int what = 0; what < 3; ++what) { /* route by tiny.cu, sort, sort of corrupted ids */
          const bool pk = si >= NSH;
          if (what == 0 && !pk) continue;
          Case c;
          make_case(&c, all[si], TS[ti], kind);
          const size_t cap = host_words(&c);
          int32_t *ref = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
          if (what > 0) {
            set_sp(0, 0, 1);
            g_sort_op = 0;
            route_to_host(&c, ref, s);
            if (what == 2) corrupt_topk(&c, (int64_t)TS[ti] * all[si]->k, all[si]->E);
            g_sort_op = 1;
            set_sp(-1, 0, 1); /* reference: the mask-table sort */
          } else {
            set_sp(-1, 0, 1); /* reference: the pair */
          }
          const size_t nr = route_to_host(&c, ref, s);
          for (int ri = 0; ri < 4; ++ri) {
            if (what == 0)
              set_sp(-1, RS[ri], 2);
            else
              set_sp(1, RS[ri], 1);
            const size_t nb = route_to_host(&c, b, s);
            checks++;
            if (!same_words(ref, nr, b, nb, "%s T=%d kind=%d what=%d R=%d", all[si]->name, TS[ti], kind, what, RS[ri]))
              bad++;
          }
          set_sp(0, 0, 0);
          g_sort_op = 0;
          free(ref);
          free(b);
          free_case(&c);
        }
  printf("check: %ld cases, %ld mismatches (one-pass layout by R = 1, 2, 4, 8 CTAs against the mask-table sort / the "
         "pair; bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us (moe_buf cleared): sort alone A (mask table) / B by R CTAs; route as the pair with A / B "
         "(R = 4); route by tiny.cu with R CTAs (16-bit softmax rows); route auto\n");
  printf("%-18s %3s %6s %6s %6s %6s %6s | %6s %6s | %6s %6s %6s %6s | %6s\n", "shape", "T", "sA", "sB1", "sB2", "sB4",
         "sB8", "pairA", "pairB4", "t1", "t2", "t4", "t8", "auto");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      const bool pk = si >= NSH;
      Case c;
      make_case(&c, all[si], TS[ti], 0);
      g_sort_op = 0;
      set_sp(0, 0, 1);
      int32_t* tmp = (int32_t*)calloc(1 << 20, 4);
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      double r[12];
      set_sp(-1, 0, 1);
      r[0] = time_op(&c, 0, 2, s);
      for (int ri = 0; ri < 4; ++ri) {
        set_sp(1, RS[ri], 1);
        r[1 + ri] = time_op(&c, 0, 2, s);
      }
      set_sp(-1, 0, 1);
      r[5] = time_op(&c, 0, 1, s);
      set_sp(1, 4, 1);
      r[6] = time_op(&c, 0, 1, s);
      for (int ri = 0; ri < 4; ++ri) {
        r[7 + ri] = -1.0;
        if (!pk) continue;
        set_sp(-1, RS[ri], 2);
        r[7 + ri] = time_op(&c, 0, 1, s);
      }
      set_sp(0, 0, 0);
      r[11] = time_op(&c, 0, 1, s);
      printf("%-18s %3d %6.2f %6.2f %6.2f %6.2f %6.2f | %6.2f %6.2f | %6.2f %6.2f %6.2f %6.2f | %6.2f\n",
             all[si]->name, TS[ti], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --tmsort (session 11): the token-mask sort (tmsort.cu; T <= 256, T*k <= 2048, any U)
 * against the sorts it replaces (tiny.cu's one-pass sort off in both: the mask-table,
 * mid and general sorts), bit for bit: the sort alone on route's top-k and on corrupted
 * top-k (a duplicate, an id out of range) with R = 4, 8, 16, 32 CTAs, route as the pair;
 * U = 32, 8 and 64. Timed (kernel metric, moe_buf cleared, U = 32): the sort alone
 * without it (ref) and with it (R = 8, 16, 32), route without it and auto. */
static void set_tm(int tm, int ctas) {
  mr_cuda_tune.tm_sort = tm;
  mr_cuda_tune.tm_sort_ctas = ctas;
  mr_cuda_tune.tiny_sort = -1;
}
static int g_time_only; /* --tmsort / --ctm --time-only: the timing table alone */
static int g_nobuf;     /* --tmsort --time-only --no-buf: the table without moe_buf, the 16-bit softmax shapes
                           at T >= 48 (session 18: results run 26's one point where route lost to the chain,
                           DeepSeek-R1 softmax T = 128 without moe_buf, perf-log v14) */
static int g_tm_quick; /* --tmsort --no-time --quick: U = 32, one input kind, T = 4, 48, 256 (sanitizers);
                          --race: DeepSeek-R1 softmax only, T = 48, 256 (racecheck) */
static int tm_ab(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 4, 16, 33, 48, 64, 96, 128, 192, 256};
  static const int US[] = {32, 8, 64};
  static const int RS[] = {4, 8, 16, 32};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  const Shape* all[NSH + NPK];
  const int ns = all_shapes(all);
  long checks = 0, bad = 0;
  for (int ui = 0; ui < (g_tm_quick ? 1 : 3) && !g_time_only; ++ui)
    for (int si = 0; si < ns; ++si)
      for (int ti = 0; ti < nt; ++ti) {
        if (TS[ti] * all[si]->k > 2048) continue;
        if (g_tm_quick && TS[ti] != 4 && TS[ti] != 48 && TS[ti] != 256) continue;
        if (g_tm_quick == 2 && (strcmp(all[si]->name, "ds-softmax") || TS[ti] == 4)) continue;
        g_unit = US[ui];
        for (int kind = 0; kind < (ui == 0 && !g_tm_quick ? 3 : 1); ++kind)
          for (int what = 0; what < 3; ++what) { /* route as the pair, sort, sort of corrupted ids */
            Case c;
            make_case(&c, all[si], TS[ti], kind);
            const size_t cap = host_words(&c);
            int32_t *ref = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
            mr_cuda_tune.no_tiny = 1;
            if (what > 0) {
              set_tm(-1, 0);
              g_sort_op = 0;
              route_to_host(&c, ref, s);
              if (what == 2) corrupt_topk(&c, (int64_t)TS[ti] * all[si]->k, all[si]->E);
              g_sort_op = 1;
            }
            set_tm(-1, 0);
            const size_t nr = route_to_host(&c, ref, s);
            for (int ri = 0; ri < (what == 0 ? 1 : 4); ++ri) {
              set_tm(1, what == 0 ? 0 : RS[ri]);
              const size_t nb = route_to_host(&c, b, s);
              checks++;
              if (!same_words(ref, nr, b, nb, "%s T=%d U=%d kind=%d what=%d R=%d", all[si]->name, TS[ti], US[ui], kind,
                              what, RS[ri]))
                bad++;
            }
            set_tm(0, 0);
            mr_cuda_tune.tiny_sort = 0;
            mr_cuda_tune.no_tiny = 0;
            g_sort_op = 0;
            free(ref);
            free(b);
            free_case(&c);
          }
      }
  g_unit = 32;
  printf("check: %ld cases, %ld mismatches (the token-mask sort with R = 4 - 32 CTAs against the library's other sorts; "
         "sort, sort of corrupted ids, route as the pair; U = 32, 8, 64; bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us (%s, U = 32): sort alone without the token-mask sort (ref) / with it, R CTAs; "
         "route without it / with it (R auto) / auto (the defaults)\n", g_nobuf ? "no moe_buf" : "moe_buf cleared");
  printf("%-18s %4s %7s %7s %7s %7s | %7s %7s %7s\n", "shape", "T", "sref", "tm8", "tm16", "tm32", "rref", "rtm",
         "auto");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      if (TS[ti] * all[si]->k > 2048 || (g_nobuf && (si < NSH || TS[ti] < 48))) continue;
      Case c;
      make_case(&c, all[si], TS[ti], 0);
      if (g_nobuf) {
        c.p.moe_buf_bytes = 0;
        c.b.moe_buf = NULL;
      }
      g_sort_op = 0;
      int32_t* tmp = (int32_t*)calloc(1 << 22, 4);
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      double r[7];
      set_tm(-1, 0);
      mr_cuda_tune.tiny_sort = 0; /* the reference as the defaults were before tmsort.cu */
      r[0] = time_op(&c, 0, 2, s);
      for (int ri = 0; ri < 3; ++ri) {
        set_tm(1, 8 << ri);
        mr_cuda_tune.tiny_sort = 0;
        r[1 + ri] = time_op(&c, 0, 2, s);
      }
      set_tm(-1, 0);
      mr_cuda_tune.tiny_sort = 0;
      r[4] = time_op(&c, 0, 1, s);
      set_tm(1, 0);
      mr_cuda_tune.tiny_sort = 0;
      r[5] = time_op(&c, 0, 1, s);
      set_tm(0, 0);
      mr_cuda_tune.tiny_sort = 0;
      r[6] = time_op(&c, 0, 1, s);
      printf("%-18s %4d %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f\n", all[si]->name, TS[ti], r[0], r[1], r[2], r[3],
             r[4], r[5], r[6]);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --ctm (session 13): the cluster token-mask path (ctm.cu; route with the gating fused,
 * and the sort) against the library's other paths (knob ctm = -1), bit for bit: route
 * (sorted outputs, totals, top-k), the sort alone on route's top-k and on corrupted top-k
 * (a duplicate, an id out of range), with the cluster size auto and 1, 4, 8, 16; U = 32,
 * and U = 8, 64 on a subset. Timed (kernel metric, U = 32): route and sort with moe_buf
 * cleared, other paths / ctm with R = 4, 8, 16; without moe_buf, other paths / ctm R auto. */
static void set_ctm(int on, int R) {
  mr_cuda_tune.ctm = on;
  mr_cuda_tune.ctm_ctas = R;
}
static double time_nobuf(Case* c, int route, cudaStream_t s) {
  void* mb = c->b.moe_buf;
  const size_t bytes = c->p.moe_buf_bytes;
  c->b.moe_buf = NULL;
  c->p.moe_buf_bytes = 0;
  const double r = time_op(c, 0, route, s);
  c->b.moe_buf = mb;
  c->p.moe_buf_bytes = bytes;
  return r;
}
static int ctm_ab(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 4, 9, 16, 17, 33, 64, 129, 256, 512, 1024, 2048};
  static const int US[] = {32, 8, 64};
  static const int RS[] = {0, 1, 4, 8, 16};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  const Shape* all[NSH + NPK];
  const int ns = all_shapes(all);
  long checks = 0, bad = 0;
  for (int ui = 0; ui < (g_tm_quick ? 1 : 3) && !g_time_only; ++ui)
    for (int si = 0; si < ns; ++si)
      for (int ti = 0; ti < nt; ++ti) {
        if (g_tm_quick && TS[ti] != 17 && TS[ti] != 129 && TS[ti] != 1024) continue;
        if (g_tm_quick == 2 && (strcmp(all[si]->name, "ds-softmax") || TS[ti] == 1024)) continue;
        if (ui > 0 && (TS[ti] > 256 || (si % 3) != 0)) continue; /* U = 8, 64: a subset */
        g_unit = US[ui];
        const int kinds = ui == 0 && !g_tm_quick && TS[ti] <= 256 ? 3 : 1;
        for (int kind = 0; kind < kinds; ++kind)
          for (int what = 0; what < 3; ++what) { /* route, sort, sort of corrupted ids */
            Case c;
            make_case(&c, all[si], TS[ti], kind);
            const size_t cap = host_words(&c);
            int32_t *ref = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
            g_sort_op = 0;
            if (what > 0) {
              set_ctm(-1, 0);
              route_to_host(&c, ref, s);
              if (what == 2) corrupt_topk(&c, (int64_t)TS[ti] * all[si]->k, all[si]->E);
              g_sort_op = 1;
            }
            set_ctm(-1, 0);
            const size_t nr = route_to_host(&c, ref, s);
            for (int ri = 0; ri < 2 * (int)(sizeof RS / sizeof RS[0]); ++ri) {
              const int mode = ri & 1 ? 2 : 1, R = RS[ri / 2]; /* 2: route as the mid pair with ctm's sort */
              if (mode == 2 && what > 0) continue;
              set_ctm(mode, R);
              const size_t nb = route_to_host(&c, b, s);
              checks++;
              if (!same_words(ref, nr, b, nb, "%s T=%d U=%d kind=%d what=%d ctm=%d R=%d", all[si]->name, TS[ti], US[ui],
                              kind, what, mode, R))
                bad++;
            }
            set_ctm(0, 0);
            g_sort_op = 0;
            free(ref);
            free(b);
            free_case(&c);
          }
      }
  g_unit = 32;
  printf("check: %ld cases, %ld mismatches (ctm forced with R = auto, 1, 4, 8, 16 against the library's other "
         "paths; route, sort, sort of corrupted ids, route with ctm = 2; U = 32, 8, 64; bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  static const int TT[] = {4, 8, 9, 12, 16, 17, 24, 32, 48, 64, 128, 256, 512, 1024, 2048};
  printf("\nkernel metric, us (U = 32). With moe_buf cleared: route by the other paths (ref) / ctm with R = 4, 8, "
         "16 | the sort alone, the same | without moe_buf: route ref / ctm auto R, sort ref / ctm auto R\n");
  printf("%-18s %4s %7s %7s %7s %7s | %7s %7s %7s %7s | %7s %7s %7s %7s\n", "shape", "T", "rref", "r4", "r8", "r16",
         "sref", "s4", "s8", "s16", "rnb", "rnbc", "snb", "snbc");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < (int)(sizeof TT / sizeof TT[0]); ++ti) {
      Case c;
      make_case(&c, all[si], TT[ti], 0);
      g_sort_op = 0;
      int32_t* tmp = (int32_t*)calloc(1 << 22, 4);
      set_ctm(-1, 0);
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      double r[12];
      for (int op = 0; op < 2; ++op) {
        const int route = op == 0 ? 1 : 2;
        set_ctm(-1, 0);
        r[4 * op] = time_op(&c, 0, route, s);
        for (int ri = 0; ri < 3; ++ri) {
          set_ctm(1, 4 << ri);
          r[4 * op + 1 + ri] = time_op(&c, 0, route, s);
        }
        set_ctm(-1, 0);
        r[8 + 2 * op] = time_nobuf(&c, route, s);
        set_ctm(1, 0);
        r[9 + 2 * op] = time_nobuf(&c, route, s);
      }
      set_ctm(0, 0);
      printf("%-18s %4d %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %7.2f\n",
             all[si]->name, TT[ti], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
      fflush(stdout);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --ctm-probe (session 13): where ctm's fixed cost goes. Kernel metric (moe_buf cleared,
 * U = 32), the sort alone and route: the other paths (ref), ctm, ctm without its cluster
 * barrier and DSMEM reads (probe 1), and that without the cluster attribute (probe 2; the
 * probes' outputs are WRONG: timing only); with PDL on (the default) and off. */
static double time_probe(Case* c, int route, int ctm, int R, int probe, int pdl, cudaStream_t s) {
  set_ctm(ctm, R);
  mr_cuda_tune.ctm_probe = probe;
  mr_cuda_tune.decode_pdl = pdl;
  const double r = time_op(c, 0, route, s);
  set_ctm(0, 0);
  mr_cuda_tune.ctm_probe = 0;
  mr_cuda_tune.decode_pdl = 0;
  return r;
}
static int ctm_probe(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TT[] = {4, 16, 64, 256, 1024};
  const Shape* sh[] = {&PK[0], &PK[3], &SH[0]};
  printf("kernel metric, us (moe_buf cleared, U = 32). PDL on: ref, ctm R = 8 / 16, probe 1 (R = 8), probe 2 (R = 8, "
         "R = 1) | PDL off: ref, ctm R = 8, probe 2 R = 8\n");
  printf("%-14s %5s %4s %6s %6s %6s %6s %6s %6s | %6s %6s %6s\n", "shape", "op", "T", "ref", "c8", "c16", "p1", "p2",
         "p2r1", "ref", "c8", "p2");
  for (int si = 0; si < 3; ++si)
    for (int ti = 0; ti < (int)(sizeof TT / sizeof TT[0]); ++ti) {
      Case c;
      make_case(&c, sh[si], TT[ti], 0);
      int32_t* tmp = (int32_t*)calloc(1 << 22, 4);
      set_ctm(-1, 0);
      g_sort_op = 0;
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      for (int op = 2; op >= 1; --op) {
        double r[9];
        r[0] = time_probe(&c, op, -1, 0, 0, 0, s);
        r[1] = time_probe(&c, op, 1, 8, 0, 0, s);
        r[2] = time_probe(&c, op, 1, 16, 0, 0, s);
        r[3] = time_probe(&c, op, 1, 8, 1, 0, s);
        r[4] = time_probe(&c, op, 1, 8, 2, 0, s);
        r[5] = time_probe(&c, op, 1, 1, 2, 0, s);
        r[6] = time_probe(&c, op, -1, 0, 0, -1, s);
        r[7] = time_probe(&c, op, 1, 8, 0, -1, s);
        r[8] = time_probe(&c, op, 1, 8, 2, -1, s);
        printf("%-14s %5s %4d %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f | %6.2f %6.2f %6.2f\n", sh[si]->name,
               op == 2 ? "sort" : "route", TT[ti], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]);
        fflush(stdout);
      }
      free_case(&c);
    }
  return 0;
}

/* --ctm-pair (session 13): the sort by ctm where moe_buf is not cleared, at T = 256 - 4096: the
 * sort alone and route (where route is the mid pair, ctm = 2 makes ctm's sort its second
 * launch), the other paths (ctm -1) against ctm = 2 with R = 16 and 8; kernel metric, U = 32. */
static int ctm_pair(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TT[] = {256, 512, 1024, 1536, 2048, 3072, 4096};
  const Shape* sh[] = {&PK[0], &PK[3], &SH[1], &PK[1], &SH[0], &PK[2], &PK[4]};
  printf("kernel metric, us, no moe_buf (U = 32): sort alone ref / ctm R 16 / R 8 | route ref / ctm sort R 16 / R 8 "
         "| with moe_buf: sort ref / ctm R 16\n");
  printf("%-14s %5s %7s %7s %7s | %7s %7s %7s | %7s %7s\n", "shape", "T", "sref", "s16", "s8", "rref", "r16", "r8",
         "sbref", "sb16");
  for (int si = 0; si < (int)(sizeof sh / sizeof sh[0]); ++si)
    for (int ti = 0; ti < (int)(sizeof TT / sizeof TT[0]); ++ti) {
      Case c;
      make_case(&c, sh[si], TT[ti], 0);
      int32_t* tmp = (int32_t*)calloc(1 << 22, 4);
      set_ctm(-1, 0);
      g_sort_op = 0;
      route_to_host(&c, tmp, s); /* top-k for the sort */
      free(tmp);
      double r[8];
      for (int op = 2; op >= 1; --op) {
        const int b = op == 2 ? 0 : 3;
        set_ctm(-1, 0);
        r[b] = time_nobuf(&c, op, s);
        set_ctm(2, 16);
        r[b + 1] = time_nobuf(&c, op, s);
        set_ctm(2, 8);
        r[b + 2] = time_nobuf(&c, op, s);
      }
      set_ctm(-1, 0);
      r[6] = time_op(&c, 0, 2, s);
      set_ctm(2, 16);
      r[7] = time_op(&c, 0, 2, s);
      set_ctm(0, 0);
      printf("%-14s %5d %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f | %7.2f %7.2f\n", sh[si]->name, TT[ti], r[0], r[1], r[2],
             r[3], r[4], r[5], r[6], r[7]);
      fflush(stdout);
      free_case(&c);
    }
  return 0;
}

/* --tiny16 (session 15, perf-log v14): tiny.cu's one-pass route with 16 gating warps (512
 * threads, a row per warp; mr_cuda_tune.tiny_threads = 512) against 8 warps (two rows per warp
 * above T = 8; tiny_threads = -1) and the pair (no_tiny), 16-bit softmax rows, T = 2 .. 16.
 * Checked bit for bit against the pair (U = 32 and 16, three input kinds); timed (kernel
 * metric, route, moe_buf cleared): pair / 8 warps / 16 warps / auto. */
static void set_t16(int v) { /* 0 auto, 1 the pair, 2 eight warps forced, 3 sixteen warps forced */
  mr_cuda_tune.no_tiny = v == 1;
  mr_cuda_tune.tiny_max_n = v >= 2 ? 128 : 0;
  mr_cuda_tune.tiny_onepass = v >= 2 ? 1 : 0;
  mr_cuda_tune.tiny_threads = v == 2 ? -1 : v == 3 ? 512 : 0;
}
/* The check of both: every case (U = 32 and 16, the 16-bit softmax shapes, T in TS with
 * T*k <= 128, three input kinds; --quick: U = 32, one kind, T = q0 and q1) by the pair, then by
 * each variant v < nv (set(v) sets the knobs), bit for bit; returns the mismatches. */
static long t16_check(const int* TS, int nt, int q0, int q1, int nv, void (*set)(int), const char* what, long* checks) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long bad = 0;
  for (int ui = 0; ui < 2; ++ui) {
    g_unit = ui ? 16 : 32;
    for (int si = 0; si < NPK; ++si)
      for (int ti = 0; ti < nt; ++ti)
        for (int kind = 0; kind < (g_tm_quick ? 1 : 3); ++kind) {
          if (TS[ti] * PK[si].k > 128 || (g_tm_quick && (ui || (TS[ti] != q0 && TS[ti] != q1)))) continue;
          Case c;
          make_case(&c, &PK[si], TS[ti], kind);
          const size_t cap = host_words(&c);
          int32_t *a = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
          set_t16(1);
          const size_t na = route_to_host(&c, a, s);
          for (int v = 0; v < nv; ++v) {
            set(v);
            const size_t nb = route_to_host(&c, b, s);
            (*checks)++;
            if (!same_words(a, na, b, nb, "%s T=%d U=%d kind=%d %s variant %d", PK[si].name, TS[ti], g_unit, kind, what, v))
              bad++;
          }
          set(-1);
          free(a);
          free(b);
          free_case(&c);
        }
  }
  g_unit = 32;
  CK(cudaStreamDestroy(s));
  return bad;
}

/* tiny16's variants: 0 eight warps, 1 sixteen warps, -1 the defaults */
static void set_t16v(int v) { set_t16(v < 0 ? 0 : v + 2); }

static int tiny16(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {2, 4, 8, 9, 10, 12, 14, 16};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  long checks = 0;
  const long bad = t16_check(TS, nt, 9, 16, 2, set_t16v, "warps (0: 8, 1: 16)", &checks);
  printf("check: %ld cases, %ld mismatches (tiny.cu's one-pass route by 8 and by 16 warps against the pair, bits)\n",
         checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us, route (moe_buf cleared, U = 32): the pair | tiny.cu one-pass, 8 warps | 16 warps | auto"
         " || probes (WRONG outputs, timing only; tiny.cu one-pass forced, 8 warps to T = 8, 16 above): gating and the"
         " barrier, no layout | gating alone. T = 1: every column is the solo path\n");
  printf("%-18s %5s %8s %8s %8s %8s || %8s %8s\n", "shape", "T", "pair", "w8", "w16", "auto", "no_lay", "gate");
  for (int si = 0; si < NPK; ++si)
    for (int ti = -1; ti < nt; ++ti) {
      const int T = ti < 0 ? 1 : TS[ti];
      if (T * PK[si].k > 128) continue;
      Case c;
      make_case(&c, &PK[si], T, 0);
      double r[6];
      for (int rep = 0; rep < 2; ++rep) /* two alternating passes, the lower kept */
        for (int v = 1; v <= 6; ++v) {
          set_t16(v <= 4 ? v % 4 : T > 8 ? 3 : 2);
          mr_cuda_tune.tiny_probe = v <= 4 ? 0 : v == 5 ? 2 : 1;
          const double x = time_op(&c, 0, 1, s);
          if (rep == 0 || x < r[v - 1]) r[v - 1] = x;
        }
      set_t16(0);
      mr_cuda_tune.tiny_probe = 0;
      printf("%-18s %5d %8.2f %8.2f %8.2f %8.2f || %8.2f %8.2f\n", PK[si].name, T, r[0], r[1], r[2], r[3], r[4], r[5]);
      fflush(stdout);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --tiny-op (session 15, perf-log v14): the one-pass route's presence words in registers
 * (mr_cuda_tune.tiny_op_regs = 1) against the shuffle form, bit for bit against the pair (16-bit
 * softmax rows, T = 2 .. 16, U = 32 and 16, three input kinds, 8 and 16 warps); timed (kernel
 * metric, route, moe_buf cleared) with the probes (WRONG outputs, timing only) that stop the
 * one-pass route after gating (1), the barrier (2), the presence prefix (3), the entries (4), or
 * skip the entries (5). */
/* tiny_op's variants: v = 2 * warps + twice (warps 0: 8, 1: 16; twice: probe 6, the layout written
 * twice, right outputs), registers on; -1 the defaults */
static void set_opv(int v) {
  set_t16(v < 0 ? 0 : 2 + v / 2);
  mr_cuda_tune.tiny_op_regs = v < 0 ? 0 : 1;
  mr_cuda_tune.tiny_probe = v < 0 ? 0 : v % 2 ? 6 : 0;
}

static int tiny_op(void) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {2, 3, 4, 6, 8, 9, 12, 16};
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  long checks = 0;
  const long bad = t16_check(TS, nt, 2, 16, 4, set_opv, "registers, 2 x warps (0: 8, 1: 16) + twice", &checks);
  printf("check: %ld cases, %ld mismatches (tiny.cu's one-pass route, presence words in registers, the layout once "
         "and twice (probe 6), by 8 and by 16 warps against the pair, bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us, route (moe_buf cleared, U = 32): the pair | tiny.cu one-pass forced (8 warps to T = 8, 16 "
         "above), shuffle form | registers || probes (WRONG outputs), shuffle form: 1 gating | 2 +barrier | 3 +prefix | "
         "4 +entries | 5 all but entries || registers: 3 | 4 | 5 || registers, the layout written twice by the same "
         "code (probe 6, right outputs)\n");
  printf("%-14s %3s %6s %6s %6s || %6s %6s %6s %6s %6s || %6s %6s %6s || %6s\n", "shape", "T", "pair", "shfl", "regs",
         "p1", "p2", "p3", "p4", "p5", "r3", "r4", "r5", "twice");
  for (int si = 0; si < NPK; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      const int T = TS[ti];
      if (T * PK[si].k > 128 || PK[si].E > 512) continue;
      Case c;
      make_case(&c, &PK[si], T, 0);
      double r[12];
      for (int rep = 0; rep < 2; ++rep) /* two alternating passes, the lower kept */
        for (int v = 0; v < 12; ++v) {
          set_t16(v == 0 ? 1 : T > 8 ? 3 : 2);
          mr_cuda_tune.tiny_op_regs = v == 2 || v >= 8 ? 1 : -1;
          mr_cuda_tune.tiny_probe = v >= 3 && v <= 7 ? v - 2 : v >= 8 && v <= 10 ? v - 5 : v == 11 ? 6 : 0;
          const double x = time_op(&c, 0, 1, s);
          if (rep == 0 || x < r[v]) r[v] = x;
        }
      set_t16(0);
      mr_cuda_tune.tiny_op_regs = 0;
      mr_cuda_tune.tiny_probe = 0;
      printf("%-14s %3d %6.2f %6.2f %6.2f || %6.2f %6.2f %6.2f %6.2f %6.2f || %6.2f %6.2f %6.2f || %6.2f\n", PK[si].name,
             T, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
      fflush(stdout);
      free_case(&c);
    }
  return bad ? 1 : 0;
}

/* --tcl (session 16, perf-log v15): the cluster form of tiny.cu's one-pass route
 * (mr_cuda_tune.tiny_cluster = C). Where it applies (the library's rule mr_tiny_cluster_size,
 * restated: 1 <= T <= 32, U >= T, T*k <= 128, at most 2 rows per CTA for the wide rows and 8 for
 * the others; every shape of SH (wide; a warp per row with tiny_wide = -1), PK and RW (a warp per
 * row) qualifies by kind and E): each C against the default route, bit for bit; where it does
 * not, the case is skipped (the knob would fall back to the default path and the comparison
 * would prove nothing). Every compared case also asks the library's rule
 * (mr_cuda_tiny_cluster_c) and counts a disagreement as a mismatch. */
static int tcl_applies(const Shape* sh, int wide, int T, int C) {
  const int rows = (T + C - 1) / C;
  return T >= 1 && T <= 32 && g_unit >= T && T * sh->k <= 128 && rows <= (wide ? 2 : 8);
}
/* fp32-key rows that the wide form does not take (a warp per row in the cluster form too):
 * softmax with groups, no renormalize (DeepSeek-V2), softmax with bias (ERNIE-4.5), sigmoid
 * with E = 128 (Llama-4-Maverick) */
static const Shape RW[] = {
    {"deepseek-v2", 160, 6, MOEROUTE_SCORE_SOFTMAX, 0, 8, 3, 16.0f, 5120, MOEROUTE_DTYPE_FP32, 1, 1},
    {"ernie-4.5-21b", 64, 6, MOEROUTE_SCORE_SOFTMAX, 1, 1, 1, 1.0f, 2560, MOEROUTE_DTYPE_FP32, 0, 0},
    {"llama4-maverick", 128, 1, MOEROUTE_SCORE_SIGMOID, 0, 1, 1, 1.0f, 5120, MOEROUTE_DTYPE_BF16, 1, 0},
    {"e1024-sm-bias", 1024, 8, MOEROUTE_SCORE_SOFTMAX, 1, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_FP32, 0, 0},
    {"e512-sm-g16", 512, 8, MOEROUTE_SCORE_SOFTMAX, 0, 16, 4, 1.0f, 4096, MOEROUTE_DTYPE_FP32, 0, 1},
};
#define NRW (int)(sizeof RW / sizeof RW[0])

/* The library's answer for a case: the C its cluster form runs with under the knob as set, 0 = none. */
static int tcl_lib_c(const Case* c) {
  mr_config cfg;
  if (mr_validate_params(MOEROUTE_OP_ROUTE, &c->p, MR_BACKEND_CUDA, "wide_lab", &cfg) != MOEROUTE_OK) return -1;
  mr_gate_args a;
  mr_cuda_gate_args_init(&cfg, c->b.logits, c->b.bias, &a);
  return mr_cuda_tiny_cluster_c(&cfg, &a);
}

/* TCL_SHAPES=a,b (session 32): --tcl on the named shapes alone (every shape without it) */
static int tcl_wanted(const char* name) {
  const char* w = getenv("TCL_SHAPES");
  if (!w || !*w) return 1;
  const size_t n = strlen(name);
  for (const char* q = w; *q;) {
    const char* e = strchr(q, ',');
    const size_t m = e ? (size_t)(e - q) : strlen(q);
    if (m == n && !strncmp(q, name, n)) return 1;
    if (!e) break;
    q = e + 1;
  }
  return 0;
}

/* TCL_TMIN=t (session 33): --tcl from T = t on (every T without it) */
static int tcl_tmin(void) {
  const char* w = getenv("TCL_TMIN");
  return w && *w ? atoi(w) : 1;
}

static int tcl(void) {
  if (mr_cuda_no_cluster()) {
    fprintf(stderr, "--tcl: MOEROUTE_CUDA_NO_CLUSTER is set, the cluster form cannot run\n");
    return 2;
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 2, 3, 4, 6, 8, 9, 10, 11, 12, 13, 14, 16, 24, 32}; /* (10, 11, 13, 14: session 32) */
  static const int CS[] = {1, 2, 4, 8, 16}; /* (16: session 33, a non-portable cluster) */
  const int ncs = (int)(sizeof CS / sizeof CS[0]);
  const int nt = (int)(sizeof TS / sizeof TS[0]);
  const Shape* all[NSH + NPK + NRW];
  int ns = all_shapes(all);
  for (int i = 0; i < NRW; ++i) all[ns++] = &RW[i];
  long checks = 0, bad = 0;
  /* wf = 1: the SH shapes again with tiny_wide = -1 (the warp-per-row form for their rows; both the
   * reference and the cluster form run under it) */
  for (int wf = 0; wf < 2; ++wf)
    for (int ui = 0; ui < 2; ++ui) {
      g_unit = ui ? 16 : 32;
      for (int si = 0; si < (wf ? NSH : ns); ++si)
        for (int ti = 0; ti < nt; ++ti)
          for (int kind = 0; kind < (g_tm_quick ? 1 : 4); ++kind) {
            const int T = TS[ti], wide = si < NSH && !wf;
            if (!tcl_wanted(all[si]->name) || T < tcl_tmin()) continue;
            if (!tcl_applies(all[si], wide, T, 8) || (g_tm_quick && (ui || (T != 1 && T != 3 && T != 16)))) continue;
            mr_cuda_tune.tiny_wide = wf ? -1 : 0;
            Case c;
            make_case(&c, all[si], T, kind);
            const size_t cap = host_words(&c);
            int32_t *a = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
            mr_cuda_tune.tiny_cluster = -1; /* the reference: the route without the cluster form */
            const size_t na = route_to_host(&c, a, s);
            for (int ci = 0; ci < ncs; ++ci) {
              /* --quick (the sanitizers): no C = 1, whose DSMEM writes memcheck reports as invalid ("Cluster
               * needs to have at least 2 blocks", dev/runs/run53/tcl_mem.log; the bits agree without it) */
              if (!tcl_applies(all[si], wide, T, CS[ci]) || (g_tm_quick && CS[ci] == 1)) continue;
              mr_cuda_tune.tiny_cluster = CS[ci];
              const int lib = tcl_lib_c(&c);
              const size_t nb = route_to_host(&c, b, s);
              mr_cuda_tune.tiny_cluster = 0;
              checks++;
              if (lib != CS[ci]) {
                printf("MISMATCH %s T=%d U=%d kind=%d: the library's rule gives C=%d, the lab's %d (the form did not run)\n",
                       all[si]->name, T, g_unit, kind, lib, CS[ci]);
                bad++;
              } else if (!same_words(a, na, b, nb, "%s T=%d U=%d kind=%d cluster C=%d%s", all[si]->name, T, g_unit, kind,
                                     CS[ci], wf ? " (warp per row)" : "")) {
                bad++;
              }
            }
            mr_cuda_tune.tiny_wide = 0;
            free(a);
            free(b);
            free_case(&c);
          }
    }
  g_unit = 32;
  printf("check: %ld cases, %ld mismatches (tiny.cu's one-pass route by a cluster of C = 1, 2, 4, 8, 16 CTAs against the "
         "default route, bits)\n", checks, bad);
  if (g_check_only) return bad ? 1 : 0;
  printf("\nkernel metric, us, route (moe_buf cleared, U = 32): the route without the cluster form (off) | the default "
         "route (auto: the cluster form where mr_tiny_cluster_auto takes it) || the cluster form, C = 1 | 2 | 4 | 8 | 16 "
         "('-': the form does not apply)\n");
  printf("%-18s %3s %7s %7s || %7s %7s %7s %7s %7s\n", "shape", "T", "off", "auto", "C1", "C2", "C4", "C8", "C16");
  for (int si = 0; si < ns; ++si)
    for (int ti = 0; ti < nt; ++ti) {
      const int T = TS[ti], wide = si < NSH;
      if (!tcl_wanted(all[si]->name) || T < tcl_tmin() || !tcl_applies(all[si], wide, T, 8)) continue;
      Case c;
      make_case(&c, all[si], T, 0);
      double r[7];
      for (int rep = 0; rep < 2; ++rep) /* two alternating passes, the lower kept */
        for (int v = 0; v < 2 + ncs; ++v) {
          if (v > 1 && !tcl_applies(all[si], wide, T, CS[v - 2])) {
            r[v] = -1.0;
            continue;
          }
          mr_cuda_tune.tiny_cluster = v == 0 ? -1 : v == 1 ? 0 : CS[v - 2];
          const double x = time_op(&c, 0, 1, s);
          if (rep == 0 || x < r[v]) r[v] = x;
        }
      mr_cuda_tune.tiny_cluster = 0;
      printf("%-18s %3d %7.2f %7.2f ||", all[si]->name, T, r[0], r[1]);
      for (int v = 2; v < 2 + ncs; ++v)
        if (r[v] < 0.0)
          printf(" %7s", "-");
        else
          printf(" %7.2f", r[v]);
      printf("\n");
      fflush(stdout);
      free_case(&c);
    }
  CK(cudaStreamDestroy(s));
  return bad ? 1 : 0;
}

/* The eager metric of moeroute bench (docs/benchmarking.md): events around one route call issued
 * after a memset of twice the L2 (so the call starts with a cold L2), median of 50 after 5. */
static double time_eager_route(Case* c, cudaStream_t s) {
  static void* flush = NULL;
  static size_t fbytes = 0;
  if (!flush) {
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    fbytes = 2u * (size_t)(l2 > 0 ? l2 : 64 << 20);
    CK(cudaMalloc(&flush, fbytes));
  }
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  enum { WARM = 5, N = 50 };
  double v[N];
  for (int i = 0; i < WARM + N; ++i) {
    CK(cudaMemsetAsync(flush, i & 0xff, fbytes, s));
    CK(cudaEventRecord(a, s));
    if (moeroute_cuda_route(&c->p, &c->b, s) != MOEROUTE_OK) {
      fprintf(stderr, "eager route: %s\n", moeroute_last_error());
      exit(2);
    }
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (i >= WARM) v[i - WARM] = ms * 1000.0;
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return lab_median(v, N);
}

/* The graph metric (benchmarking.md): one route call captured in a graph, the graph replayed back to back, events
 * around 200 replays; the median of 5 such, us per replay. */
static int g_graph1; /* knob_ab: the graph column too */
static double time_graph1_route(Case* c, cudaStream_t s) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (moeroute_cuda_route(&c->p, &c->b, s) != MOEROUTE_OK) {
    fprintf(stderr, "graph route: %s\n", moeroute_last_error());
    exit(2);
  }
  CK(cudaStreamEndCapture(s, &g));
  return lab_graph_replay_us(g, 200, 1.0, 5, 20, s);
}

/* A lab knob of tiny.cu's route off / on (--twarm, --town, --tru, --tfilt, --tfilt9): where the library says the
 * knob's form runs (lib_runs with the knob on), every case bit for bit against the default; the others are counted
 * as skipped. Then the kernel metric and the eager metric (events around one call after an L2 flush, as moeroute
 * bench), off / on, and with g_graph1 the graph metric. */
typedef struct KnobAB {
  const char* name; /* the knob, as printed */
  int off, on;      /* its values for off and on */
  const Shape* sh;  /* the shapes */
  int ns;
  int* knob;        /* its field in mr_cuda_tune: 0 off, 1 on */
  int (*lib_runs)(const mr_config*, const mr_gate_args*);
  const int* TS;    /* the token counts */
  int nt;
  int kinds;        /* input kinds of make_case checked (3: the three; 4: and the expert mask) */
  int check_only;   /* 1: the bits alone, no timing table */
  int no_mask;      /* 1: not kind 3 (a form that does not take an expert mask; kinds 4 and 5 need kinds = 6) */
} KnobAB;

static int knob_runs(const KnobAB* k, const Case* c) {
  mr_config cfg;
  if (mr_validate_params(MOEROUTE_OP_ROUTE, &c->p, MR_BACKEND_CUDA, "wide_lab", &cfg) != MOEROUTE_OK) return 0;
  mr_gate_args a;
  mr_cuda_gate_args_init(&cfg, c->b.logits, c->b.bias, &a);
  *k->knob = k->on;
  const int on = k->lib_runs(&cfg, &a);
  *k->knob = 0;
  return on;
}

static int knob_ab(const KnobAB* k) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long checks = 0, bad = 0, skipped = 0;
  for (int ui = 0; ui < 2; ++ui) {
    g_unit = ui ? 16 : 32;
    for (int si = 0; si < k->ns; ++si)
      for (int ti = 0; ti < k->nt; ++ti)
        for (int kind = 0; kind < k->kinds; ++kind) {
          /* --quick (the sanitizers): U = 32, gaussian rows and the expert mask */
          if (k->TS[ti] * k->sh[si].k > 128 || (g_tm_quick && (ui || (kind != 0 && kind != 3 && kind != 5)))) continue;
          if (kind == 3 && k->no_mask) continue;
          Case c;
          make_case(&c, &k->sh[si], k->TS[ti], kind);
          if (!knob_runs(k, &c)) {
            skipped++;
            free_case(&c);
            continue;
          }
          const size_t cap = host_words(&c);
          int32_t *a = (int32_t*)calloc(cap, 4), *b = (int32_t*)calloc(cap, 4);
          *k->knob = k->off;
          const size_t na = route_to_host(&c, a, s);
          *k->knob = k->on;
          const size_t nb = route_to_host(&c, b, s);
          *k->knob = 0;
          checks++;
          if (!same_words(a, na, b, nb, "%s T=%d U=%d kind=%d %s", k->sh[si].name, k->TS[ti], g_unit, kind, k->name))
            bad++;
          free(a);
          free(b);
          free_case(&c);
        }
  }
  g_unit = 32;
  printf("check: %ld cases, %ld mismatches (%s on against the default route, bits; %ld cases skipped where the "
         "library says the form does not run)\n", checks, bad, k->name, skipped);
  if (g_check_only || k->check_only) {
    CK(cudaStreamDestroy(s));
    return bad ? 1 : 0;
  }
  printf("\nus, route (moe_buf cleared, U = 32), the default route (%s off) | on: kernel metric | eager metric "
         "(cold L2)\n", k->name);
  if (g_graph1) printf("(then the graph metric: one call captured per graph, replayed back to back)\n");
  printf("%-14s %3s %7s %7s || %7s %7s", "shape", "T", "k_off", "k_on", "e_off", "e_on");
  if (g_graph1) printf(" || %7s %7s", "g_off", "g_on");
  printf("\n");
  for (int si = 0; si < k->ns; ++si)
    for (int ti = 0; ti < k->nt; ++ti) {
      if (k->TS[ti] * k->sh[si].k > 128) continue;
      Case c;
      make_case(&c, &k->sh[si], k->TS[ti], 0);
      if (!knob_runs(k, &c)) {
        free_case(&c);
        continue;
      }
      double r[6];
      const int nv = g_graph1 ? 6 : 4;
      for (int rep = 0; rep < 2; ++rep) /* two alternating passes, the lower kept */
        for (int v = 0; v < nv; ++v) {
          *k->knob = v & 1 ? k->on : k->off;
          const double x = v < 2 ? time_op(&c, 0, 1, s) : v < 4 ? time_eager_route(&c, s) : time_graph1_route(&c, s);
          if (rep == 0 || x < r[v]) r[v] = x;
        }
      *k->knob = 0;
      printf("%-14s %3d %7.2f %7.2f || %7.2f %7.2f", k->sh[si].name, k->TS[ti], r[0], r[1], r[2], r[3]);
      if (g_graph1) printf(" || %7.2f %7.2f", r[4], r[5]);
      printf("\n");
      fflush(stdout);
      free_case(&c);
    }
  CK(cudaStreamDestroy(s));
  return bad ? 1 : 0;
}

/* --twarm (session 16, perf-log v15): tiny_warm, where the default route is tiny.cu's one-pass route
 * with 256 threads and a warp to spare (T <= 6: warp 6 gates no row). */
static int twarm(void) {
  static const int TS[] = {2, 3, 4, 6};
  const KnobAB k = {"tiny_warm", 0, 1, PK, NPK, &mr_cuda_tune.tiny_warm, mr_cuda_tiny_warm_c, TS, 4, 3, 0};
  return knob_ab(&k);
}

/* --town (session 18, perf-log v17): tiny_op_own, the one-pass layout's blocks by word ownership.
 * First the bits alone over PK and shapes whose E is not a multiple of 32 (or is at most 32), in the
 * one-pass layout's three forms: the default (registers for E <= 256, shuffles above), registers
 * everywhere (tiny_op_regs 1: 16 words for E 257 - 512), and shuffles with 16 gating warps wherever
 * T <= 16 (tiny_op_regs -1, tiny_threads 512); then bits and the timing table over PK, defaults.
 * T = 2 .. 16, four input kinds (the expert mask included). */
static const Shape PKX[] = {
    {"e20-k2", 20, 2, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 1024, MOEROUTE_DTYPE_BF16},
    {"e60-k4", 60, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"e160-k6", 160, 6, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 5120, MOEROUTE_DTYPE_FP16},
    {"e300-k8", 300, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16},
    {"e513-k4", 513, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16},
};
/* The bits of tiny_op_own = on against off (name as printed) in the one-pass layout's three forms (the default;
 * registers everywhere; shuffles with 512 threads): over PKX, and over PK from form pk_from on. */
static int own_forms(const char* name, int off, int on, int pk_from, const int* ts, int nt) {
  int bad = 0;
  for (int form = 0; form < 3; ++form) {
    mr_cuda_tune.tiny_op_regs = form == 1 ? 1 : form == 2 ? -1 : 0;
    mr_cuda_tune.tiny_threads = form == 2 ? 512 : 0;
    printf("form %d (tiny_op_regs %d, tiny_threads %d): ", form, mr_cuda_tune.tiny_op_regs, mr_cuda_tune.tiny_threads);
    const KnobAB x = {name, off, on, PKX, (int)(sizeof PKX / sizeof PKX[0]), &mr_cuda_tune.tiny_op_own,
                      mr_cuda_tiny_own_c, ts, nt, 4, 1};
    bad |= knob_ab(&x);
    if (form >= pk_from) {
      printf("form %d, PK: ", form);
      const KnobAB y = {name, off, on, PK, NPK, &mr_cuda_tune.tiny_op_own, mr_cuda_tiny_own_c, ts, nt, 4, 1};
      bad |= knob_ab(&y);
    }
  }
  mr_cuda_tune.tiny_op_regs = 0;
  mr_cuda_tune.tiny_threads = 0;
  return bad;
}
static int town(void) {
  static const int TS[] = {2, 3, 4, 6, 8, 9, 10, 12, 14, 16}, TQ[] = {2, 9, 16};
  const int* ts = g_tm_quick ? TQ : TS;
  const int nt = g_tm_quick ? 3 : 10;
  int bad = own_forms("tiny_op_own", -1, 1, 1, ts, nt);
  const KnobAB k = {"tiny_op_own", -1, 1, PK, NPK, &mr_cuda_tune.tiny_op_own, mr_cuda_tiny_own_c, ts, nt, 4, 0};
  bad |= knob_ab(&k);
  return bad;
}

/* --tent (session 43, perf-log v48): tiny_op_own 2, the one-pass layout's blocks by entry ownership (the entry of each
 * expert's lowest token writes its block's id, its warp the padding), against the default route (the block search, or
 * word ownership where mr_tiny_own_auto takes it: k <= 4, T*k <= 16). The bits first in --town's three forms over PKX
 * and PK, T = 2 .. 16 (the cluster form is off in wide_lab, so T = 9 - 16 run the 512-thread one-pass route), then
 * the timing table over PK at T = 2 .. 8 (the default route there is this form's only competitor). */
static int tent(void) {
  static const int TS[] = {2, 3, 4, 5, 6, 8, 9, 12, 16}, TQ[] = {2, 5, 9}, TT[] = {2, 3, 4, 6, 8};
  const int* ts = g_tm_quick ? TQ : TS;
  const int nt = g_tm_quick ? 3 : 9;
  int bad = own_forms("tiny_op_own=2", 0, 2, 0, ts, nt);
  if (g_check_only) return bad;
  const KnobAB k = {"tiny_op_own=2", 0, 2, PK, NPK, &mr_cuda_tune.tiny_op_own, mr_cuda_tiny_own_c, TT, 5, 4, 0};
  bad |= knob_ab(&k);
  return bad;
}

/* --trows (session 44, perf-log v49): tiny_rows, the rows form (T = 2 .. 4 rows of 16-bit softmax gated by one warp
 * side by side, the layout from its registers, no barrier) against the default route (the one-pass route), and
 * tiny_rows 2 (the padding of blocks 0 .. k-1 written by the other warps during gating). The bits over PKX and PK,
 * T = 2 .. 4, U = 32 and 16, five input kinds (gaussian, ties, NaN / inf, hot experts, identical rows; no expert mask:
 * the form does not take one), then the kernel and eager metrics over PK. */
static int trows(void) {
  static const int TS[] = {2, 3, 4};
  int bad = 0;
  static const char* NAME[] = {"", "tiny_rows=1", "tiny_rows=2"};
  for (int on = 1; on <= 2; ++on) {
    const KnobAB x = {NAME[on], 0, on, PKX, (int)(sizeof PKX / sizeof PKX[0]), &mr_cuda_tune.tiny_rows,
                      mr_cuda_tiny_rows_c, TS, 3, 6, 1, 1};
    bad |= knob_ab(&x);
    const KnobAB y = {NAME[on], 0, on, PK, NPK, &mr_cuda_tune.tiny_rows, mr_cuda_tiny_rows_c, TS, 3, 6, 0, 1};
    bad |= knob_ab(&y);
  }
  return bad;
}

/* --trows-probe (session 44, perf-log v49): where the rows form's time goes. The kernel metric (route, moe_buf cleared,
 * U = 32) of the default route, its gating alone (tiny_probe 1), the rows form, its gating alone (probe 1), its layout
 * alone (probe 8: no gating), and its rows gated one after the other by mr_gate_packed (probe 9, right outputs). */
static int trows_probe(void) {
  static const int TS[] = {2, 4};
  static const int PR[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 8}, {1, 9}};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  printf("us, kernel metric, route (moe_buf cleared, U = 32): default | default gating alone | rows | rows gating "
         "alone | rows layout alone | rows one after the other\n");
  for (int si = 0; si < NPK; ++si)
    for (int ti = 0; ti < 2; ++ti) {
      if (TS[ti] * PK[si].k > 32 || PK[si].E > 512) continue;
      Case c;
      make_case(&c, &PK[si], TS[ti], 0);
      printf("%-14s %3d", PK[si].name, TS[ti]);
      for (int v = 0; v < 6; ++v) {
        mr_cuda_tune.tiny_rows = PR[v][0];
        mr_cuda_tune.tiny_probe = PR[v][1];
        double best = 1e30;
        for (int rep = 0; rep < 2; ++rep) {
          const double x = time_op(&c, 0, 1, s);
          if (x < best) best = x;
        }
        printf(" %7.2f", best);
      }
      mr_cuda_tune.tiny_rows = 0;
      mr_cuda_tune.tiny_probe = 0;
      printf("\n");
      fflush(stdout);
      free_case(&c);
    }
  CK(cudaStreamDestroy(s));
  return 0;
}

/* --tfilt (session 35, perf-log v40): tiny_filt, the sigmoid rows that the wide form takes, a warp per row by
 * gate.cuh's filter on approximate keys, against the default route (the wide rows: tiny.cu at T = 1, the cluster
 * form of the wide rows at 2 <= T <= 16 for E <= 256 and T <= 8 for E = 384, else the pair), with the cluster form's
 * automatic rule on (main sets it off for the other modes): SH's fp32 router presets and its k = 16 shape without
 * bias (its other rows: skipped), then FSX's bf16 grouped shape and grouped E = 384 shape (groups of two lanes);
 * T = 1 - 16, four input kinds (ties and NaN / inf send rows to the exact fallback inside the filter form), U = 32
 * and 16; bits, then the kernel, eager and graph metrics. --no-time [--quick]: the check alone. (Lab call 103 ran
 * the same seven shapes from one table of its own, in another order.) */
static const Shape FSX[] = { /* besides SH, whose sigmoid rows with E 129 - 512 the form takes (the others: skipped) */
    {"ds-r1-bf16", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_BF16},
    {"e384-g12-fp16", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 12, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP16},
};
/* tiny_filt off (-1) against on (1) over shapes sh at the token counts ts (quick: tq), with the cluster form's
 * automatic rule on, as the library runs by default: --tfilt and --tfilt9 */
static int filt_ab(const Shape* sh, int ns, const int* ts, int nt, const int* tq, int nq) {
  mr_cuda_tune.tiny_cluster = 0;
  g_graph1 = 1;
  const KnobAB k = {"tiny_filt", -1, 1, sh, ns, &mr_cuda_tune.tiny_filt, mr_cuda_tiny_filt_c, g_tm_quick ? tq : ts,
                    g_tm_quick ? nq : nt, 4, 0};
  const int bad = knob_ab(&k);
  g_graph1 = 0;
  mr_cuda_tune.tiny_cluster = -1;
  return bad;
}
static int tfilt(void) {
  static const int TS[] = {1, 2, 3, 4, 8, 12, 16}, TQ[] = {1, 2, 16};
  return filt_ab(SH, NSH, TS, 7, TQ, 3) | filt_ab(FSX, (int)(sizeof FSX / sizeof FSX[0]), TS, 7, TQ, 3);
}

/* --tfilt9 (session 35, perf-log v40): what v40's rule would take (the filter rows where k >= 9; tiny_filt 1 on these
 * shapes, whatever MR_TINY_FILT_AUTO says) against the wide rows (tiny_filt -1) on sigmoid shapes with k = 9 - 16
 * (E 160 - 512, with and without bias, one grouped), as --tfilt. */
static const Shape FS9[] = {
    {"e384-k16-bf16", 384, 16, MOEROUTE_SCORE_SIGMOID, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16},
    {"e256-k12-bias", 256, 12, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 2.5f, 5120, MOEROUTE_DTYPE_FP32},
    {"e256-g8-k10", 256, 10, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32},
    {"e512-k9-fp16", 512, 9, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_FP16},
    {"e160-k16-bias", 160, 16, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1.0f, 5120, MOEROUTE_DTYPE_BF16},
};
static int tfilt9(void) {
  static const int TS[] = {1, 2, 4, 8, 12, 16}, TQ[] = {1, 2, 8};
  return filt_ab(FS9, (int)(sizeof FS9 / sizeof FS9[0]), TS, 6, TQ, 3);
}

/* --tru (session 18, perf-log v17): wide_rank_unroll, the grouped wide rows' group ranks from eight
 * reads in flight, where tiny.cu's wide form routes (T = 1): grouped shapes with G = 4, 8, 12, 32,
 * top-2-sum and max group scores, fp32 / bf16 / fp16 logits, four input kinds. */
static const Shape GW[] = {
    {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32},
    {"e384-g12-k8", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 12, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32},
    {"e256-g4-max", 256, 8, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 4, 2, 1.0f, 4096, MOEROUTE_DTYPE_BF16, 0, 1},
    {"e1024-g32-k4", 1024, 4, MOEROUTE_SCORE_SIGMOID, 1, 32, 8, 1.0f, 4096, MOEROUTE_DTYPE_FP16},
};
static int tru(void) {
  static const int TS[] = {1};
  const KnobAB k = {"wide_rank_unroll", -1, 1, GW, (int)(sizeof GW / sizeof GW[0]), &mr_cuda_tune.wide_rank_unroll,
                    mr_cuda_tiny_ru_c, TS, 1, 4, 0};
  return knob_ab(&k);
}

int main(int argc, char** argv) {
  g_check_only = argc > 2 && !strcmp(argv[2], "--no-time");
  g_tm_quick = argc > 3 && !strcmp(argv[3], "--quick") ? 1 : argc > 3 && !strcmp(argv[3], "--race") ? 2 : 0;
  /* the modes below study the other forms: the cluster form off (its automatic rule since lab call 53);
   * --tcl sets the knob case by case */
  mr_cuda_tune.tiny_cluster = -1;
  if (argc > 1 && !strcmp(argv[1], "--tiny"))
    return route_ab(SH, NSH, 128, set_tw, "A = the pair (tiny_wide -1) | B = tiny.cu's wide form (tiny_wide 8)");
  if (argc > 1 && !strcmp(argv[1], "--tiny-1p"))
    return route_ab(PK, (int)(sizeof PK / sizeof PK[0]), 128, set_1p,
                    "A = tiny.cu forced, its sorts | B = tiny.cu forced, one-pass finish");
  if (argc > 1 && !strcmp(argv[1], "--tsort")) return sort_ab();
  if (argc > 1 && !strcmp(argv[1], "--tiny16")) return tiny16();
  if (argc > 1 && !strcmp(argv[1], "--tiny-op")) return tiny_op();
  if (argc > 1 && !strcmp(argv[1], "--tcl")) return tcl();
  if (argc > 1 && !strcmp(argv[1], "--twarm")) return twarm();
  if (argc > 1 && !strcmp(argv[1], "--town")) return town();
  if (argc > 1 && !strcmp(argv[1], "--tent")) return tent();
  if (argc > 1 && !strcmp(argv[1], "--trows")) return trows();
  if (argc > 1 && !strcmp(argv[1], "--trows-probe")) return trows_probe();
  if (argc > 1 && !strcmp(argv[1], "--tru")) return tru();
  if (argc > 1 && !strcmp(argv[1], "--tfilt")) return tfilt();
  if (argc > 1 && !strcmp(argv[1], "--tfilt9")) return tfilt9();
  if (argc > 1 && !strcmp(argv[1], "--spread")) return spread();
  if (argc > 1 && !strcmp(argv[1], "--tmsort")) {
    g_time_only = argc > 2 && !strcmp(argv[2], "--time-only");
    g_nobuf = g_time_only && argc > 3 && !strcmp(argv[3], "--no-buf");
    return tm_ab();
  }
  if (argc > 1 && !strcmp(argv[1], "--ctm-probe")) return ctm_probe();
  if (argc > 1 && !strcmp(argv[1], "--ctm-pair")) return ctm_pair();
  if (argc > 1 && !strcmp(argv[1], "--ctm")) {
    g_time_only = argc > 2 && !strcmp(argv[2], "--time-only");
    return ctm_ab();
  }
  if (argc > 1 && !strcmp(argv[1], "--tiny-pk"))
    return route_ab(PK, (int)(sizeof PK / sizeof PK[0]), 32, set_pk, "A = the pair (no tiny.cu) | B = tiny.cu forced");
  int no_time = argc > 1 && !strcmp(argv[1], "--no-time");
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static const int TS[] = {1, 2, 4, 8, 16, 33, 64, 128, 129, 256, 512};
  long checks = 0, bad = 0;
  for (int si = 0; si < NSH; ++si)
    for (int ti = 0; ti < (int)(sizeof TS / sizeof TS[0]); ++ti)
      for (int kind = 0; kind < 3; ++kind) {
        Case c;
        make_case(&c, &SH[si], TS[ti], kind);
        const size_t n = (size_t)TS[ti] * SH[si].k;
        int32_t *i0 = (int32_t*)malloc(4 * n), *i1 = (int32_t*)malloc(4 * n);
        float *w0 = (float*)malloc(4 * n), *w1 = (float*)malloc(4 * n);
        gate_to_host(&c, -1, i0, w0, s);
        gate_to_host(&c, 1 << 20, i1, w1, s);
        const int same = !memcmp(i0, i1, 4 * n) && !memcmp(w0, w1, 4 * n);
        checks++;
        if (!same) {
          bad++;
          size_t j = 0;
          while (j < n && i0[j] == i1[j] && !memcmp(&w0[j], &w1[j], 4)) ++j;
          if (j == n) j = 0;
          printf("MISMATCH %s T=%d kind=%d at %zu: id %d/%d w %.9g/%.9g\n", SH[si].name, TS[ti], kind, j, i0[j], i1[j],
                 w0[j], w1[j]);
        }
        free(i0);
        free(i1);
        free(w0);
        free(w1);
        free_case(&c);
      }
  printf("check: %ld cases, %ld mismatches (wide against warp per row, bits)\n", checks, bad);
  if (no_time) return bad ? 1 : 0;
  printf("\nkernel metric, us: gate old | gate wide | route old | route wide (moe_buf cleared)\n");
  printf("%-18s %5s %8s %8s %8s %8s\n", "shape", "T", "g_old", "g_wide", "r_old", "r_wide");
  for (int si = 0; si < NSH; ++si)
    for (int ti = 0; ti < (int)(sizeof TS / sizeof TS[0]); ++ti) {
      Case c;
      make_case(&c, &SH[si], TS[ti], 0);
      const double g0 = time_op(&c, -1, 0, s), g1 = time_op(&c, 1 << 20, 0, s);
      const double r0 = time_op(&c, -1, 1, s), r1 = time_op(&c, 1 << 20, 1, s);
      printf("%-18s %5d %8.2f %8.2f %8.2f %8.2f\n", SH[si].name, TS[ti], g0, g1, r0, r1);
      free_case(&c);
    }
  return bad ? 1 : 0;
}
