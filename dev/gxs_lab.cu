/*
 * gxs_lab.cu - lab file for gxs, the sort in one cooperative launch over the grid (gx.cu, v23; lab
 * code only, not built by default).
 *
 * 1. Check: for each preset and T, route and sort with the knob gxs = -1 (the paths before gxs) and
 *    with gxs on (route: 1, the gate kernel then gxs; sort: 2), every output array compared word for
 *    word (poisoned before), the sort's outputs also against the CPU sort of the same top-k; with and
 *    without an expert mask; and sort inputs with duplicates and out-of-range ids in some rows; all of it
 *    in each of gxs's v24 forms (none, place, xchg, both: knobs gxs_place, gxs_xchg; session 26; the
 *    read-back from each CTA's own row, knob gx_stagger, was checked in session 25 and stays off).
 * 2. Timing, kernel metric (50 calls in one graph, median of 9 replays), no moe_buf, U = 32, both
 *    layouts, bf16: route before / route with gxs / sort before / sort gxs / the gate kernel alone; the
 *    sort by each v24 form and route with both; --probes: the phases of the sort by the forms none and
 *    both (probe 5: everything but the entries' stores), outputs wrong there and sorted again.
 *
 * Build (after the library):
 *   nvcc -O3 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu build/libmoeroute.a -o gxs_lab
 * 3. --tail (v25, knob clear_tail): route and sort with a moe_buf, the clear inside the routing's launches
 *    against the clear as a launch of its own after gx / gxs (by 16 KB pieces), a memset before the routing on
 *    any path (clear_tail = 3, v36, session 33) and the automatic choice: checked (outputs word for word, the
 *    sort against the CPU, moe_buf zero) and timed beside a memset of the same buffer (tail_case below).
 * 4. --head (v27, knob p_seg_chain): route with a moe_buf by P's two forms for segmented rows (head_case below):
 *    checked and timed as --tail.
 * 5. --decode (session 28): tiny.cu's decode knobs against the default (decode_case below).
 * 6. --bounds (session 29): gxs's and gx's bounds, gx's exchange by columns (bounds_case below).
 * 7. --gatewide (session 29): the fp32-key gate kernel at large T, the wide kernel forced (gatewide_case below).
 * 8. --gatefilt (session 30): the fp32-key gate kernel's filter form against the merge (gatefilt_case below).
 * 9. --gx-probes (session 41): gx's route by phase, with the library built -DMR_GX_PROBES=1 (gxprobe_case below).
 * 10. --gxclear (session 42, v47): route with a moe_buf by gx, the clear inside gx's launch (gxclear_case below).
 * Run: gxs_lab [--no-time] [--no-check] [--quick] [--probes] [--tail | --head | --decode | --bounds | --gatewide | --gatefilt |
 *              --gx-probes | --gxclear] [--ts 1024,...]
 *              [--models a,b]
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/common.cuh" /* mr_cuda_tune (hidden symbol, reachable through the static library) */
#include "moeroute.h"
#include "lab_util.h"


/* the output arrays of one call, on the device, with their lengths in words */
enum { NOUT = 9 };
typedef struct {
  moeroute_params p;
  moeroute_sizes sz;
  moeroute_buffers b; /* inputs + outputs */
  size_t len[NOUT];
  void* out[NOUT];
} Case;

static void out_ptrs(Case* c) {
  moeroute_buffers* b = &c->b;
  void* o[NOUT] = {b->topk_ids, b->topk_weights, b->sorted_ids, b->sorted_weights, b->sorted_expert_ids,
                   b->num_valid_ids, b->sorted_token_ids, b->expert_ids, b->num_tokens_post_pad};
  memcpy(c->out, o, sizeof o);
}

static int g_with_buf = 0; /* --tail: setup gives the case a moe_buf [T, model_dim] bf16 */

static int setup(Case* c, const char* model, int T, int mask_pct, uint64_t seed) {
  memset(c, 0, sizeof *c);
  const moeroute_preset* pr = moeroute_preset_find(model);
  if (!pr) return -1;
  moeroute_params_init(&c->p);
  moeroute_params_from_preset(&c->p, pr);
  c->p.num_tokens = T;
  c->p.unit_size = 32;
  c->p.logits_dtype = MOEROUTE_DTYPE_BF16;
  moeroute_buffers_init(&c->b);
  if (g_with_buf) {
    c->p.moe_buf_bytes = (size_t)T * (size_t)pr->model_dim * 2u;
    c->b.moe_buf = lab_dalloc(c->p.moe_buf_bytes);
  }
  if (moeroute_get_sizes(&c->p, &c->sz) != MOEROUTE_OK) return -1;
  const int E = c->p.num_experts;
  uint64_t st = seed;
  const size_t nl = (size_t)T * E;
  uint16_t* hl = (uint16_t*)malloc(nl * 2);
  for (size_t i = 0; i < nl; ++i) hl[i] = lab_bf16_uniform(&st, -2.0, 2.0);
  c->b.logits = lab_dalloc(nl * 2);
  CK(cudaMemcpy((void*)c->b.logits, hl, nl * 2, cudaMemcpyHostToDevice));
  free(hl);
  if (pr->has_bias) {
    float* hb = (float*)malloc(E * 4);
    for (int e = 0; e < E; ++e) hb[e] = (float)((lab_splitmix(&st) >> 40) * (0.2 / 16777216.0) - 0.1);
    float* db = (float*)lab_dalloc(E * 4);
    CK(cudaMemcpy(db, hb, E * 4, cudaMemcpyHostToDevice));
    c->b.bias = db;
    free(hb);
  }
  if (mask_pct > 0) {
    int32_t* hm = (int32_t*)malloc(E * 4);
    for (int e = 0; e < E; ++e) hm[e] = (int)(lab_splitmix(&st) % 100) >= mask_pct;
    int32_t* dm = (int32_t*)lab_dalloc(E * 4);
    CK(cudaMemcpy(dm, hm, E * 4, cudaMemcpyHostToDevice));
    c->b.expert_mask = dm;
    free(hm);
  }
  const moeroute_sizes* z = &c->sz;
  const size_t len[NOUT] = {(size_t)z->topk_len,       (size_t)z->topk_len,        (size_t)z->ck_sorted_len,
                            (size_t)z->ck_sorted_len,   (size_t)z->ck_blocks_len,   2,
                            (size_t)z->vllm_sorted_len, (size_t)z->vllm_blocks_len, 1};
  memcpy(c->len, len, sizeof len);
  c->b.topk_ids = (int32_t*)lab_dalloc(len[0] * 4);
  c->b.topk_weights = (float*)lab_dalloc(len[1] * 4);
  c->b.sorted_ids = (int32_t*)lab_dalloc(len[2] * 4);
  c->b.sorted_weights = (float*)lab_dalloc(len[3] * 4);
  c->b.sorted_expert_ids = (int32_t*)lab_dalloc(len[4] * 4);
  c->b.num_valid_ids = (int32_t*)lab_dalloc(8);
  c->b.sorted_token_ids = (int32_t*)lab_dalloc(len[6] * 4);
  c->b.expert_ids = (int32_t*)lab_dalloc(len[7] * 4);
  c->b.num_tokens_post_pad = (int32_t*)lab_dalloc(4);
  out_ptrs(c);
  /* the workspace: the larger of route's and sort's, for every knob value this lab sets */
  size_t ws = 0, w1 = 0;
  for (int g = -1; g <= 2; ++g) {
    mr_cuda_tune.gxs = g;
    CK(moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, &c->p, &w1) == MOEROUTE_OK ? cudaSuccess : cudaErrorUnknown);
    ws = w1 > ws ? w1 : ws;
    CK(moeroute_cuda_workspace_size(MOEROUTE_OP_SORT, &c->p, &w1) == MOEROUTE_OK ? cudaSuccess : cudaErrorUnknown);
    ws = w1 > ws ? w1 : ws;
  }
  mr_cuda_tune.gxs = 0;
  c->b.workspace = lab_dalloc(ws);
  c->b.workspace_bytes = ws;
  return 0;
}

static void release(Case* c) {
  cudaFree((void*)c->b.logits);
  cudaFree((void*)c->b.bias);
  cudaFree((void*)c->b.expert_mask);
  for (int i = 0; i < NOUT; ++i) cudaFree(c->out[i]);
  cudaFree(c->b.workspace);
  cudaFree(c->b.moe_buf);
}

/* (on the legacy stream, which the lab's non-blocking stream does not wait for: finished before the call;
 * lab call 63's racecheck / synccheck runs caught its first form, without the synchronisation) */
static void poison(const Case* c, int from) {
  for (int i = from; i < NOUT; ++i) CK(cudaMemset(c->out[i], 0xAB, c->len[i] * 4));
  CK(cudaDeviceSynchronize());
}

/* host copies of the outputs from index `from` on */
static uint32_t** fetch(const Case* c, int from) {
  uint32_t** h = (uint32_t**)calloc(NOUT, sizeof *h);
  for (int i = from; i < NOUT; ++i) {
    h[i] = (uint32_t*)malloc(c->len[i] * 4);
    CK(cudaMemcpy(h[i], c->out[i], c->len[i] * 4, cudaMemcpyDeviceToHost));
  }
  return h;
}
static void free_h(uint32_t** h) {
  for (int i = 0; i < NOUT; ++i) free(h[i]);
  free(h);
}
static const char* NAMES[NOUT] = {"topk_ids", "topk_weights", "sorted_ids", "sorted_weights", "sorted_expert_ids",
                                  "num_valid_ids", "sorted_token_ids", "expert_ids", "num_tokens_post_pad"};
static int cmp(const char* what, uint32_t** a, uint32_t** b, const size_t* len, int from) {
  int bad = 0;
  for (int i = from; i < NOUT; ++i) {
    size_t nd = 0, first = 0;
    for (size_t j = 0; j < len[i]; ++j)
      if (a[i][j] != b[i][j]) {
        if (!nd) first = j;
        ++nd;
      }
    if (nd) {
      printf("   MISMATCH %s %s: %zu words differ, first at %zu (%08x vs %08x)\n", what, NAMES[i], nd, first,
             a[i][first], b[i][first]);
      ++bad;
    }
  }
  return bad;
}

static int run_op(Case* c, moeroute_op op, cudaStream_t s) {
  const moeroute_status st = op == MOEROUTE_OP_ROUTE ? moeroute_cuda_route(&c->p, &c->b, s)
                                                     : moeroute_cuda_sort(&c->p, &c->b, s);
  if (st != MOEROUTE_OK) {
    printf("   call failed: %s\n", moeroute_last_error());
    return 1;
  }
  CK(cudaStreamSynchronize(s));
  return 0;
}

/* the CPU sort of the top-k now in c's device buffers, against the device's sort outputs h */
static int cpu_check(const Case* c, uint32_t** h) {
  moeroute_buffers hb;
  moeroute_buffers_init(&hb);
  const size_t n = c->len[0];
  int32_t* ids = (int32_t*)malloc(n * 4);
  float* w = (float*)malloc(n * 4);
  CK(cudaMemcpy(ids, c->b.topk_ids, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(w, c->b.topk_weights, n * 4, cudaMemcpyDeviceToHost));
  int32_t* mask = NULL;
  if (c->b.expert_mask) {
    mask = (int32_t*)malloc(c->p.num_experts * 4);
    CK(cudaMemcpy(mask, c->b.expert_mask, c->p.num_experts * 4, cudaMemcpyDeviceToHost));
  }
  hb.topk_ids = ids;
  hb.topk_weights = w;
  hb.expert_mask = mask;
  uint32_t* o[NOUT];
  for (int i = 2; i < NOUT; ++i) {
    o[i] = (uint32_t*)malloc(c->len[i] * 4);
    memset(o[i], 0xAB, c->len[i] * 4);
  }
  hb.sorted_ids = (int32_t*)o[2];
  hb.sorted_weights = (float*)o[3];
  hb.sorted_expert_ids = (int32_t*)o[4];
  hb.num_valid_ids = (int32_t*)o[5];
  hb.sorted_token_ids = (int32_t*)o[6];
  hb.expert_ids = (int32_t*)o[7];
  hb.num_tokens_post_pad = (int32_t*)o[8];
  size_t cws = 0;
  moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &c->p, &cws);
  hb.workspace = cws ? malloc(cws) : NULL;
  hb.workspace_bytes = cws;
  int bad = 0;
  if (moeroute_cpu_sort(&c->p, &hb) != MOEROUTE_OK) {
    printf("   cpu sort failed: %s\n", moeroute_last_error());
    bad = 1;
  } else {
    bad = cmp("gxs sort vs cpu", h, o, c->len, 2);
  }
  for (int i = 2; i < NOUT; ++i) free(o[i]);
  free(ids);
  free(w);
  free(mask);
  free(hb.workspace);
  return bad;
}

/* sort inputs with duplicates (every 7th row names its first expert twice) and an out-of-range id
 * (every 11th row), written into c's top-k */
static void corrupt_topk(Case* c) {
  const size_t n = c->len[0];
  const int k = c->p.top_k, E = c->p.num_experts;
  int32_t* ids = (int32_t*)malloc(n * 4);
  CK(cudaMemcpy(ids, c->b.topk_ids, n * 4, cudaMemcpyDeviceToHost));
  for (size_t t = 0; t * k < n; ++t) {
    if (k > 1 && t % 7 == 3) ids[t * k + k - 1] = ids[t * k];
    if (t % 11 == 5) ids[t * k] = (t % 2) ? E + 3 : -1;
  }
  CK(cudaMemcpy(c->b.topk_ids, ids, n * 4, cudaMemcpyHostToDevice));
  free(ids);
}

static int check_case(const char* model, int T, int mask_pct, cudaStream_t s) {
  Case c;
  if (setup(&c, model, T, mask_pct, 0x5eedu + (uint64_t)T * 31u + (uint64_t)mask_pct) != 0) {
    printf("check %s T=%d: setup failed\n", model, T);
    return 1;
  }
  int bad = 0;
  /* route: before vs the gate kernel + gxs */
  mr_cuda_tune.gxs = -1;
  poison(&c, 0);
  bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
  uint32_t** ref = fetch(&c, 0);
  mr_cuda_tune.gxs = 1;
  mr_cuda_tune.gx = -1; /* the gate kernel + gxs, also where gx would run */
  poison(&c, 0);
  bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
  mr_cuda_tune.gx = 0;
  uint32_t** got = fetch(&c, 0);
  bad += cmp("route gxs vs before", got, ref, c.len, 0);
  bad += cpu_check(&c, got);
  free_h(got);
  /* sort from the same top-k: before vs gxs; then twice more with corrupted rows */
  for (int pass = 0; pass < 2; ++pass) {
    if (pass) corrupt_topk(&c);
    mr_cuda_tune.gxs = -1;
    poison(&c, 2);
    bad += run_op(&c, MOEROUTE_OP_SORT, s);
    uint32_t** sref = fetch(&c, 2);
    mr_cuda_tune.gxs = 2;
    poison(&c, 2);
    bad += run_op(&c, MOEROUTE_OP_SORT, s);
    uint32_t** sgot = fetch(&c, 2);
    bad += cmp(pass ? "sort gxs vs before (dup rows)" : "sort gxs vs before", sgot, sref, c.len, 2);
    bad += cpu_check(&c, sgot);
    free_h(sref);
    free_h(sgot);
  }
  free_h(ref);
  mr_cuda_tune.gxs = 0;
  printf("check %-20s T=%6d mask %2d%%: %s\n", model, T, mask_pct, bad ? "FAIL" : "ok");
  release(&c);
  return bad != 0;
}

/* gxs's v24 forms: f = 0 none, 1 place, 2 xchg, 3 both (the knobs at -1 / 1); -1 the defaults */
static const char* form_name[5] = {"none", "place", "xchg", "both", "both, lean barriers"};
static void set_form(int f) { /* f = 4: both, and the lean grid barriers (knob gx_lean_bar, v24b) */
  mr_cuda_tune.gxs_place = f < 0 ? 0 : (f & 1) || f == 4 ? 1 : -1;
  mr_cuda_tune.gxs_xchg = f < 0 ? 0 : (f & 2) || f == 4 ? 1 : -1;
  mr_cuda_tune.gx_lean_bar = f == 4 ? 1 : -1; /* -1 (the defaults, "before"): the full-fence barriers, so that
                                                  "before" stays v24b's baseline now that the lean ones are the default */
}

static double time_op(Case* c, int op, int knob, cudaStream_t s) {
  const int calls = 50;
  mr_cuda_tune.gxs = knob;
  mr_cuda_tune.gx = knob == 1 ? -1 : 0; /* route's gxs form is the gate kernel + gxs, also where gx would run */
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) {
    const moeroute_status st = op == 0   ? moeroute_cuda_route(&c->p, &c->b, s)
                               : op == 1 ? moeroute_cuda_sort(&c->p, &c->b, s)
                                         : moeroute_cuda_gate(&c->p, &c->b, s);
    if (st != MOEROUTE_OK) {
      printf("timing call failed: %s\n", moeroute_last_error());
      exit(2);
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  const double us = lab_graph_us(g, calls, 9, 2, s);
  mr_cuda_tune.gxs = 0;
  mr_cuda_tune.gx = 0;
  return us;
}

/* --tail (v25, knob clear_tail): route and sort WITH a moe_buf [T, model_dim] bf16, the clear inside the
 * routing's launches (clear_tail = -1) against the clear as a launch of its own after gx / gxs (1), a memset
 * before the routing on any path (3, v36) and the automatic choice (0): every
 * output word for word between the two, the sort's also against the CPU sort, moe_buf all zero after each
 * (poisoned before); then the kernel metric (50 calls in one graph, median of 9) of route + buf and sort +
 * buf by each, a cudaMemsetAsync of the same moe_buf alone, and route without the moe_buf. */
static int buf_is_zero(const Case* c) {
  const size_t n = c->p.moe_buf_bytes, chunk = (size_t)64 << 20;
  unsigned char* h = (unsigned char*)malloc(chunk);
  int zero = 1;
  for (size_t off = 0; off < n && zero; off += chunk) {
    const size_t nb = n - off < chunk ? n - off : chunk;
    CK(cudaMemcpy(h, (const unsigned char*)c->b.moe_buf + off, nb, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < nb; ++i)
      if (h[i]) {
        printf("   moe_buf byte %zu is 0x%02x\n", off + i, h[i]);
        zero = 0;
        break;
      }
  }
  free(h);
  return zero;
}
static double time_calls(Case* c, int op, cudaStream_t s) { /* op 0 route, 1 sort, 2 memset of moe_buf */
  const int calls = 50;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) {
    if (op == 2) {
      CK(cudaMemsetAsync(c->b.moe_buf, 0, c->p.moe_buf_bytes, s));
      continue;
    }
    const moeroute_status st = op == 0 ? moeroute_cuda_route(&c->p, &c->b, s) : moeroute_cuda_sort(&c->p, &c->b, s);
    if (st != MOEROUTE_OK) {
      printf("timing call failed: %s\n", moeroute_last_error());
      exit(2);
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  return lab_graph_us(g, calls, 9, 2, s);
}
/* setup() with a moe_buf [T, model_dim] bf16 (--tail, --head); what names the mode in the failure's line */
static int setup_with_buf(Case* c, const char* what, const char* model, int T, uint64_t seed) {
  g_with_buf = 1;
  const int rc = setup(c, model, T, 0, seed);
  g_with_buf = 0;
  if (rc != 0) printf("%s %s T=%d: setup failed\n", what, model, T);
  return rc;
}
/* route once with every output poisoned and moe_buf 0xFF first; moe_buf must come back zero (else a line naming
 * `what` and *bad + 1); returns the host copies of the outputs (--head, --gxclear) */
static uint32_t** route_buf_fetch(Case* c, const char* what, int* bad, cudaStream_t s) {
  poison(c, 0);
  CK(cudaMemset(c->b.moe_buf, 0xFF, c->p.moe_buf_bytes));
  CK(cudaDeviceSynchronize()); /* the legacy stream does not order the non-blocking one (session 42's review) */
  *bad += run_op(c, MOEROUTE_OP_ROUTE, s);
  if (!buf_is_zero(c)) {
    printf("   %s: moe_buf not zero\n", what);
    ++*bad;
  }
  return fetch(c, 0);
}
static int tail_case(const char* model, int T, int do_check, int do_time, cudaStream_t s) {
  Case c;
  if (setup_with_buf(&c, "tail", model, T, 0x7a11u + (uint64_t)T) != 0) return 1;
  int bad = 0;
  /* [route, sort][inside, pieces, memset first (v36, session 33; by thread, v25's first form, before), auto] */
  enum { NF = 4 };
  uint32_t** h[2][NF] = {{NULL, NULL, NULL, NULL}, {NULL, NULL, NULL, NULL}};
  static const int form[NF] = {-1, 1, 3, 0};
  for (int f = 0; f < NF; ++f) {
    mr_cuda_tune.clear_tail = form[f];
    poison(&c, 0);
    CK(cudaMemset(c.b.moe_buf, 0xFF, c.p.moe_buf_bytes));
    CK(cudaDeviceSynchronize()); /* the legacy stream does not order the non-blocking one (session 42's review) */
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
    if (do_check && !buf_is_zero(&c)) ++bad;
    h[0][f] = fetch(&c, 0);
    /* the sort from the top-k route left (the same in both forms: compared below) */
    poison(&c, 2);
    CK(cudaMemset(c.b.moe_buf, 0xFF, c.p.moe_buf_bytes));
    CK(cudaDeviceSynchronize()); /* the legacy stream does not order the non-blocking one (session 42's review) */
    bad += run_op(&c, MOEROUTE_OP_SORT, s);
    if (do_check && !buf_is_zero(&c)) ++bad;
    h[1][f] = fetch(&c, 2);
    if (f == 1) { /* the CPU sort without the moe_buf (it has no host copy of it; checked above) */
      const size_t nb = c.p.moe_buf_bytes;
      c.p.moe_buf_bytes = 0;
      bad += cpu_check(&c, h[1][1]);
      c.p.moe_buf_bytes = nb;
    }
  }
  for (int f = 1; f < NF; ++f) {
    bad += cmp("route + buf, tail vs inside", h[0][f], h[0][0], c.len, 0);
    bad += cmp("sort + buf, tail vs inside", h[1][f], h[1][0], c.len, 2);
  }
  for (int i = 0; i < 2; ++i)
    for (int f = 0; f < NF; ++f) free_h(h[i][f]);
  if (do_time) {
    double r[NF], so[NF];
    for (int f = 0; f < NF; ++f) {
      mr_cuda_tune.clear_tail = form[f];
      r[f] = time_calls(&c, 0, s);
      so[f] = time_calls(&c, 1, s);
    }
    mr_cuda_tune.clear_tail = 0;
    const double ms = time_calls(&c, 2, s);
    const size_t nb = c.p.moe_buf_bytes;
    c.p.moe_buf_bytes = 0;
    const double rn = time_calls(&c, 0, s);
    c.p.moe_buf_bytes = nb;
    printf("tail %-20s T=%6d  route+buf inside %8.2f  tail %8.2f  memset first %8.2f  auto %8.2f | sort+buf inside "
           "%8.2f  tail %8.2f  memset first %8.2f  auto %8.2f | memset %8.2f | route w/o buf %7.2f | route+buf / memset "
           "auto %.3f, memset first %.3f%s\n", model, T, r[0], r[1], r[2], r[3], so[0], so[1], so[2], so[3], ms, rn,
           r[3] / ms, r[2] / ms, bad ? "  WRONG" : "");
  } else {
    printf("tail check %-20s T=%6d: %s\n", model, T, bad ? "FAIL" : "ok");
  }
  mr_cuda_tune.clear_tail = 0;
  release(&c);
  return bad != 0;
}

/* --gxclear (v47, session 42, knob gx_clear): route WITH a moe_buf [T, model_dim] bf16 by gx, moe_buf cleared inside
 * gx's launch (gx_clear 1: the clearing warps start at once; 2: after their CTA's gating), against the paths with a
 * moe_buf ("before": gx_clear -1) and the clear as a launch of its own after gx (v25: clear_tail 1). Checks, with and
 * without an expert mask (30 %): every output word for word against "before", its layouts against the CPU sort,
 * moe_buf all zero after each form (0xFF before). Then the kernel metric (50 calls in one graph, median of 9) of each
 * form, a cudaMemsetAsync of the same moe_buf alone and route without the moe_buf; then gx_clear 2's outputs once
 * more against "before" (both poisoned first). */
enum { NGC = 4 };
static const char* gc_name[NGC] = {"before", "gx-clr1", "gx-clr2", "tail"};
static void gc_form(int f) {
  static const int gc[NGC] = {-1, 1, 2, -1}, ct[NGC] = {-1, -1, -1, 1};
  mr_cuda_tune.gx_clear = gc[f];
  mr_cuda_tune.clear_tail = ct[f];
}
static int gxclear_case(const char* model, int T, int do_check, int do_time, cudaStream_t s) {
  int bad = 0;
  for (int mp = 0; do_check && mp < 2; ++mp) {
    Case c;
    g_with_buf = 1;
    const int rc = setup(&c, model, T, mp ? 30 : 0, 0x6c1u + (uint64_t)T * 5u + (uint64_t)mp);
    g_with_buf = 0;
    if (rc != 0) {
      printf("gxclear %s T=%d: setup failed\n", model, T);
      return 1;
    }
    uint32_t** r[NGC];
    for (int f = 0; f < NGC; ++f) {
      gc_form(f);
      r[f] = route_buf_fetch(&c, gc_name[f], &bad, s);
    }
    gc_form(0);
    for (int f = 1; f < NGC; ++f) bad += cmp(gc_name[f], r[f], r[0], c.len, 0);
    const size_t nb = c.p.moe_buf_bytes; /* the CPU sort without the moe_buf (checked zero above) */
    c.p.moe_buf_bytes = 0;
    bad += cpu_check(&c, r[1]);
    c.p.moe_buf_bytes = nb;
    for (int f = 0; f < NGC; ++f) free_h(r[f]);
    release(&c);
  }
  if (do_check) printf("gxclear check %-20s T=%6d: %s\n", model, T, bad ? "FAIL" : "ok");
  if (do_time) {
    Case c;
    if (setup_with_buf(&c, "gxclear", model, T, 0x6c3u + (uint64_t)T) != 0) return 1;
    printf("gxclear %-20s T=%6d route+buf:", model, T);
    double t[NGC];
    for (int f = 0; f < NGC; ++f) {
      gc_form(f);
      t[f] = time_calls(&c, 0, s);
      printf(" %s %7.2f", gc_name[f], t[f]);
    }
    /* the outputs of gx_clear 2 once more, poisoned first (lab call 129 compared the timed calls' outputs unpoisoned:
       the words past the padded total, which no call writes, differed from the poisoned reference in every line) */
    gc_form(2);
    poison(&c, 0);
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
    uint32_t** last = fetch(&c, 0);
    gc_form(0);
    poison(&c, 0);
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
    uint32_t** ref = fetch(&c, 0);
    const int b2 = cmp("timed", last, ref, c.len, 0);
    free_h(last);
    free_h(ref);
    mr_cuda_tune.gx_clear = 0;
    mr_cuda_tune.clear_tail = 0;
    const double ms = time_calls(&c, 2, s);
    const size_t nb = c.p.moe_buf_bytes;
    c.p.moe_buf_bytes = 0;
    const double rn = time_calls(&c, 0, s);
    c.p.moe_buf_bytes = nb;
    printf(" | memset %7.2f | route w/o buf %6.2f | / memset: before %.3f clr1 %.3f clr2 %.3f%s\n", ms, rn, t[0] / ms,
           t[1] / ms, t[2] / ms, b2 ? "  WRONG" : "");
    bad += b2;
    release(&c);
  }
  mr_cuda_tune.gx_clear = 0;
  mr_cuda_tune.clear_tail = 0;
  return bad != 0;
}

/* --head (v27, knob p_seg_chain; large.cu): route WITH a moe_buf by P for rows the gate kernel segments, in its two
 * forms: the capped gate beside P's clear and the chain's order (gate kernel, zeroing launch, P), and the default:
 * every output word for word against the chain's order, that one's sort against the CPU sort, moe_buf zero after
 * each (poisoned before); then the kernel metric of each, beside a memset of the same buffer, the sort + buf and
 * route without the buffer. The tail clear (clear_tail) is off in the two forms: they are P's. Lab calls 77 - 78
 * (session 28) also timed a head clear before the gate kernel (4 - 16 % of moe_buf, 1 - 2 CTAs per SM, with and
 * without a preferred carveout): slower or even everywhere, removed (commit 5d8445f has it; perf-log v27). */
/* capped-filter (lab call 79): the capped form with the gate kernel's filter forced (knob gate_seg_filter = 1; the
 * automatic rule keeps the filter out of a gate launch beside a clear). Lab call 80 also timed v28 (the chain's order
 * without the zeroing launch, the gate kernel zeroing P's words; commit 0a2e18d): removed, perf-log v28. */
enum { NHEAD = 4 };
static const char* head_name[NHEAD] = {"capped", "chain", "capped-filter", "default"};
static void head_form(int f) {
  static const int chain[NHEAD] = {-1, 1, -1, 0}, tail[NHEAD] = {-1, -1, -1, 0}, filt[NHEAD] = {0, 0, 1, 0};
  mr_cuda_tune.p_seg_chain = chain[f];
  mr_cuda_tune.clear_tail = tail[f];
  mr_cuda_tune.gate_seg_filter = filt[f];
}
static int head_case(const char* model, int T, int do_check, int do_time, cudaStream_t s) {
  Case c;
  if (setup_with_buf(&c, "head", model, T, 0x4ead0u + (uint64_t)T) != 0) return 1;
  int bad = 0;
  if (do_check) {
    uint32_t** h[NHEAD];
    for (int f = 0; f < NHEAD; ++f) {
      head_form(f);
      h[f] = route_buf_fetch(&c, head_name[f], &bad, s);
      if (f == 1) { /* the CPU sort of this top-k (without the moe_buf: no host copy of it; checked above) */
        const size_t nb = c.p.moe_buf_bytes;
        c.p.moe_buf_bytes = 0;
        bad += cpu_check(&c, h[1]);
        c.p.moe_buf_bytes = nb;
      }
    }
    for (int f = 0; f < NHEAD; ++f)
      if (f != 1) bad += cmp(head_name[f], h[f], h[1], c.len, 0);
    for (int f = 0; f < NHEAD; ++f) free_h(h[f]);
  }
  if (do_time) {
    double r[NHEAD];
    for (int f = 0; f < NHEAD; ++f) {
      head_form(f);
      r[f] = time_calls(&c, 0, s);
    }
    head_form(NHEAD - 1);
    const double so = time_calls(&c, 1, s), ms = time_calls(&c, 2, s);
    const size_t nb = c.p.moe_buf_bytes;
    c.p.moe_buf_bytes = 0;
    const double rn = time_calls(&c, 0, s);
    c.p.moe_buf_bytes = nb;
    printf("head %-20s T=%6d memset %8.2f | route+buf", model, T, ms);
    for (int f = 0; f < NHEAD; ++f) printf(" %s %8.2f (%.3f)", head_name[f], r[f], r[f] / ms);
    printf(" | sort+buf %8.2f | route w/o buf %7.2f%s\n", so, rn, bad ? "  WRONG" : "");
  } else {
    printf("head check %-20s T=%6d: %s\n", model, T, bad ? "FAIL" : "ok");
  }
  head_form(NHEAD - 1);
  release(&c);
  return bad != 0;
}

/* --decode (session 28, lab call 81): tiny.cu's one-pass route at T = 2 - 8 for GPT-OSS-120B and DeepSeek-R1 softmax
 * (with a moe_buf [T, model_dim], U = 32), its knobs against the default: the CTAs writing the layout (tiny_ctas 1 /
 * 2 / 8; auto 4 up to T*k = 32, else 8), the blocks by word ownership off (tiny_op_own = -1; auto on for k <= 4,
 * T*k <= 16), the presence words by shuffles (tiny_op_regs = -1), the cluster form with C = 2 / 4 (tiny_cluster;
 * auto from T = 6 - 9 for these rows). Every form's outputs word for word against the default's; kernel metric of
 * each (50 calls in one graph, median of 9 replays). GPT-OSS-120B misses its 2.3 us by 0.07 - 0.08 at T = 2 - 4
 * (results run 44): is a knob's setting already there? */
/* Lab call 82: the route's new rule (8 CTAs for k <= 4 from T = 3) as the default, against 4 ("ctas4", the rule
 * before) and the own-off form, in both layouts and in the CK layout alone (moeroute bench's), for the k <= 4 presets
 * that take the one-pass route (E >= 16) and DeepSeek-R1 softmax. (Call 81's forms: ctas1, ctas2, ctas8, regs-off,
 * cl2, cl4 besides.) */
enum { NDEC = 3 };
static const char* dec_name[NDEC] = {"default", "ctas4", "own-off"};
static void dec_form(int f) {
  static const int ctas[NDEC] = {0, 4, 0}, own[NDEC] = {0, 0, -1}, regs[NDEC] = {0, 0, 0}, cl[NDEC] = {0, 0, 0};
  mr_cuda_tune.tiny_ctas = ctas[f];
  mr_cuda_tune.tiny_op_own = own[f];
  mr_cuda_tune.tiny_op_regs = regs[f];
  mr_cuda_tune.tiny_cluster = cl[f];
}
static int decode_case(const char* model, int T, uint32_t layouts, cudaStream_t s) {
  Case c;
  if (setup_with_buf(&c, "decode", model, T, 0xdec0u + (uint64_t)T) != 0) return 1;
  c.p.layouts = layouts; /* the unused layout's buffers stay poisoned in every form alike */
  int bad = 0;
  uint32_t** h[NDEC];
  for (int f = 0; f < NDEC; ++f) {
    dec_form(f);
    poison(&c, 0);
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
    h[f] = fetch(&c, 0);
  }
  for (int f = 1; f < NDEC; ++f) bad += cmp(dec_name[f], h[f], h[0], c.len, 0);
  for (int f = 0; f < NDEC; ++f) free_h(h[f]);
  printf("decode %-20s T=%3d %s", model, T, layouts == MOEROUTE_LAYOUT_CK ? "ck  " : "both");
  for (int f = 0; f < NDEC; ++f) {
    dec_form(f);
    printf(" %s %6.3f", dec_name[f], time_calls(&c, 0, s));
  }
  printf("%s\n", bad ? "  WRONG" : "");
  dec_form(0);
  release(&c);
  return bad != 0;
}

/* --bounds (session 29, lab call 83): where gxs and gx should take, with v24b's lean barriers (results run 39 on). gxs's sort bound (T*k = 49152) and route's bound for rows the
 * gate kernel does not segment were set in lab call 69, before the lean barriers took ~1.4 us off every gxs call;
 * results run 44 has the sort alone at DeepSeek-R1 softmax T = 4096 (8.91 us, not gxs) above T = 8192's (8.39,
 * gxs). Route's forms (no moe_buf): auto | gx forced (gx = 1) | gx forced, the read-back staggered (gx_stagger = 1)
 * | the paths before gx and gxs (gx = gxs = -1) | the gate kernel + gxs (gx = -1, gxs = 1) | large.cu's L1 by
 * segments forced (ctm = -1, large_seg = 1, gx = gxs = -1; lab call 84); the sort's: auto | gxs (gxs = 2) | the paths before gxs
 * (gxs = -1). Every form's outputs word for word against auto's (route: every array; sort: the layouts), auto's
 * layouts against the CPU sort, with and without an expert mask (30 %); then each form's kernel metric (50 calls
 * in one graph, median of 9 replays; the mask off). gx's forms where gx fits (16-bit softmax without bias or
 * groups, E <= 256, k <= 8, T <= 32 rows per CTA); elsewhere they are auto's path again. */
/* (Lab call 83 also timed gx by columns, v30's knob gx_xchg, since removed: perf-log v30.) */
/* gx-bar (session 40): gx forced with the grid barrier (knob gx_flag = -1), against "gx" (gx_flag = 0: the build's
 * default rule, gx.cu MR_GX_FLAG; lab call 121 built with -DMR_GX_FLAG=1, v46 at every G). */
/* gx-flag / gx-flag1 (session 41, lab call 124): gx forced with v46d (gx_flag = 1: the pending rows loaded again
 * together) and v46's first form (2: each row's repeats in turn) at any G. (Session 40's gx-sent, v46b, and gx-r32,
 * 32 rows per CTA, measured slower in lab call 123, and lab call 124's gx-warp, v46e, even with the barrier: removed;
 * perf-log v46b, v46c, v46e.) */
enum { NBR = 9, NBS = 3 };
static const char* br_name[NBR] = {"auto", "gx", "gx-stagger", "before", "gate+gxs", "l1seg", "gx-bar", "gx-flag", "gx-flag1"};
static const char* bs_name[NBS] = {"auto", "gxs", "before"};
static void br_form(int f) {
  static const int gx[NBR] = {0, 1, 1, -1, -1, -1, 1, 1, 1}, gxs[NBR] = {0, 0, 0, -1, 1, -1, 0, 0, 0},
                   st[NBR] = {0, -1, 1, 0, 0, 0, 0, 0, 0}, l1[NBR] = {0, 0, 0, 0, 0, 1, 0, 0, 0},
                   fl[NBR] = {0, 0, 0, 0, 0, 0, -1, 1, 2};
  mr_cuda_tune.gx_flag = fl[f];
  mr_cuda_tune.gx = gx[f];
  mr_cuda_tune.gxs = gxs[f];
  mr_cuda_tune.gx_stagger = st[f];
  mr_cuda_tune.ctm = l1[f] ? -1 : 0; /* l1seg (session 29, lab call 84): large.cu's L1 by segments forced where the */
  mr_cuda_tune.large_seg = l1[f];    /* rows are segmented (elsewhere: the large path as it is) */
}
static void bs_form(int f) {
  static const int gxs[NBS] = {0, 2, -1};
  mr_cuda_tune.gx = 0;
  mr_cuda_tune.gxs = gxs[f];
  mr_cuda_tune.gx_stagger = 0;
  mr_cuda_tune.gx_flag = 0;
  mr_cuda_tune.ctm = 0;
  mr_cuda_tune.large_seg = 0;
}
static int bounds_case(const char* model, int T, int do_check, int do_time, cudaStream_t s) {
  int bad = 0;
  for (int mp = 0; do_check && mp < 2; ++mp) {
    Case c;
    if (setup(&c, model, T, mp ? 30 : 0, 0xb0u + (uint64_t)T * 7u + (uint64_t)mp) != 0) {
      printf("bounds %s T=%d: setup failed\n", model, T);
      return 1;
    }
    uint32_t** r[NBR];
    for (int f = 0; f < NBR; ++f) {
      br_form(f);
      poison(&c, 0);
      bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
      r[f] = fetch(&c, 0);
    }
    br_form(0);
    for (int f = 1; f < NBR; ++f) bad += cmp(br_name[f], r[f], r[0], c.len, 0);
    bad += cpu_check(&c, r[0]); /* the device's top-k of the last form, the same as auto's (compared above) */
    uint32_t** q[NBS];
    for (int f = 0; f < NBS; ++f) {
      bs_form(f);
      poison(&c, 2);
      bad += run_op(&c, MOEROUTE_OP_SORT, s);
      q[f] = fetch(&c, 2);
    }
    bs_form(0);
    for (int f = 1; f < NBS; ++f) bad += cmp(bs_name[f], q[f], q[0], c.len, 2);
    bad += cpu_check(&c, q[0]);
    for (int f = 0; f < NBR; ++f) free_h(r[f]);
    for (int f = 0; f < NBS; ++f) free_h(q[f]);
    release(&c);
  }
  if (do_check) printf("bounds check %-20s T=%6d: %s\n", model, T, bad ? "FAIL" : "ok");
  if (do_time) {
    Case c;
    if (setup(&c, model, T, 0, 0xb1u + (uint64_t)T) != 0) return 1;
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s); /* the sort's input */
    printf("bounds %-20s T=%6d route:", model, T);
    for (int f = 0; f < NBR; ++f) {
      br_form(f);
      printf(" %s %6.2f", br_name[f], time_calls(&c, 0, s));
    }
    printf(" | sort:");
    for (int f = 0; f < NBS; ++f) {
      bs_form(f);
      printf(" %s %6.2f", bs_name[f], time_calls(&c, 1, s));
    }
    bs_form(0);
    /* the outputs after timing: the sort once more (auto), poisoned before, against the CPU (lab call 83 fetched
       without poisoning and running again: the unpoisoned words past the padded total differed from the CPU's
       poisoned ones, a flag of the harness in every timing line, while every poisoned check passed) */
    poison(&c, 2);
    bad += run_op(&c, MOEROUTE_OP_SORT, s);
    uint32_t** h = fetch(&c, 2);
    const int b2 = cpu_check(&c, h);
    free_h(h);
    printf("%s\n", b2 ? "  WRONG" : "");
    bad += b2;
    release(&c);
  }
  return bad != 0;
}

/* --gx-probes (session 41; targets.md L1): where gx's route time goes. The library and this file built with
 * -DMR_GX_PROBES=1 (dev/lab_run126.sh); gx forced (knob gx = 1) in three exchange forms (the barrier, v46d, v46: knob
 * gx_flag -1 / 1 / 2), each timed whole and returning at each phase end (knob gx_probe 1 - 4: prologue, gating,
 * exchange and read-back, scan; the outputs of a probe are WRONG), kernel metric. Afterwards the whole call once
 * more, poisoned, against the CPU sort. Without MR_GX_PROBES in the library every probe times the whole call. */
extern "C" int mr_cuda_gx_probes_built(void); /* gx.cu */
static int gxprobe_case(const char* model, int T, cudaStream_t s) {
  if (!mr_cuda_gx_probes_built()) {
    printf("gx probes: the library was built without -DMR_GX_PROBES=1 (every probe would time the whole call)\n");
    return 1;
  }
  Case c;
  if (setup(&c, model, T, 0, 0x9b0u + (uint64_t)T) != 0) return 1;
  static const int fl[3] = {-1, 1, 2};
  static const char* fn[3] = {"bar", "v46d", "v46"};
  mr_cuda_tune.gx = 1;
  int bad = 0;
  for (int f = 0; f < 3; ++f) {
    mr_cuda_tune.gx_flag = fl[f];
    double t[5];
    for (int q = 0; q < 5; ++q) {
      mr_cuda_tune.gx_probe = q;
      t[q] = time_calls(&c, 0, s);
    }
    mr_cuda_tune.gx_probe = 0;
    printf("gx probes %-20s T=%6d %-4s: prologue %6.2f | gated %6.2f | exchanged %6.2f | scanned %6.2f | whole %6.2f"
           "  (steps %.2f / %.2f / %.2f / %.2f)\n",
           model, T, fn[f], t[1], t[2], t[3], t[4], t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[0] - t[4]);
    poison(&c, 0);
    bad += run_op(&c, MOEROUTE_OP_ROUTE, s);
    uint32_t** h = fetch(&c, 0);
    const int b = cpu_check(&c, h);
    free_h(h);
    if (b) printf("   WRONG after the probes (%s)\n", fn[f]);
    bad += b;
  }
  mr_cuda_tune.gx = 0;
  mr_cuda_tune.gx_flag = 0;
  release(&c);
  return bad != 0;
}

/* --gatewide (session 29, lab call 86): the fp32-key rows' gate kernel at large T (targets.md L6), the default (the
 * warp-per-row kernel above T = 512 / 256) against the wide kernel (a row over four warps, knob gate_wide) forced at
 * every T: topk_ids and topk_weights word for word, then the gate alone's kernel metric (50 calls in one graph). */
static int gatewide_case(const char* model, int T, cudaStream_t s) {
  Case c;
  if (setup(&c, model, T, 0, 0x9a7eu + (uint64_t)T) != 0) return 1;
  int bad = 0;
  uint32_t** h[2];
  for (int f = 0; f < 2; ++f) {
    mr_cuda_tune.gate_wide = f ? (1 << 30) : 0;
    poison(&c, 0);
    if (moeroute_cuda_gate(&c.p, &c.b, s) != MOEROUTE_OK) {
      printf("   gate failed: %s\n", moeroute_last_error());
      bad = 1;
    }
    CK(cudaStreamSynchronize(s));
    h[f] = fetch(&c, 0);
  }
  for (int i = 0; i < 2; ++i) { /* topk_ids, topk_weights */
    size_t nd = 0;
    for (size_t j = 0; j < c.len[i]; ++j) nd += h[0][i][j] != h[1][i][j];
    if (nd) {
      printf("   MISMATCH wide vs default %s: %zu words differ\n", NAMES[i], nd);
      bad = 1;
    }
  }
  free_h(h[0]);
  free_h(h[1]);
  double us[2];
  for (int f = 0; f < 2; ++f) {
    mr_cuda_tune.gate_wide = f ? (1 << 30) : 0;
    us[f] = time_op(&c, 2, 0, s);
  }
  mr_cuda_tune.gate_wide = 0;
  printf("gatewide %-20s T=%6d gate alone: default %8.2f  wide %8.2f  (%.3f)%s\n", model, T, us[0], us[1], us[1] / us[0],
         bad ? "  WRONG" : "");
  release(&c);
  return bad;
}

/* --gatefilt (session 30, lab call 88, perf-log v31): the warp-per-row gate kernel's fp32-key rows with the filter
 * (knob gate_filt = 1, at every T; with gate_filt_approx -1 the exact keys, 0 approximate keys first for sigmoid rows
 * without groups, v31b) against the merge (-1): topk_ids and topk_weights word for word on the random
 * rows of setup, then on rows made hard for the filter (special = 1: by t % 8, rows 4 coarse values, many ties;
 * 5 all -inf; 6 NaN in ~30% of the places and +inf in a few; 7 one hot expert; 0 - 3 random), then the gate alone's
 * kernel metric (50 calls in one graph) and route's, both forms. */
static void gatefilt_special(Case* c, uint64_t seed) {
  const int E = c->p.num_experts;
  const int64_t T = c->p.num_tokens;
  const size_t nl = (size_t)T * E;
  uint16_t* hl = (uint16_t*)malloc(nl * 2);
  uint64_t st = seed;
  static const uint16_t coarse[3] = {0x3F80u, 0x0000u, 0xBF80u}; /* 1, 0, -1 */
  for (int64_t t = 0; t < T; ++t) {
    uint16_t* r = hl + (size_t)t * E;
    for (int e = 0; e < E; ++e) {
      uint16_t v = lab_bf16_uniform(&st, -2.0, 2.0);
      const uint64_t h = lab_splitmix(&st);
      switch (t % 8) {
        case 4: v = (t / 8) % 2 ? 0x3F80u : coarse[h % 3]; break; /* every other one all equal */
        case 5: v = 0xFF80u; break;                                /* -inf */
        case 6: v = h % 10 < 3 ? 0x7FC0u : h % 97 == 0 ? 0x7F80u : v; break;
        case 7: v = e == 3 ? 0x4100u : v; break; /* 8.0 */
        default: break;
      }
      r[e] = v;
    }
  }
  CK(cudaMemcpy((void*)c->b.logits, hl, nl * 2, cudaMemcpyHostToDevice));
  free(hl);
}

/* form f: 0 the merge (gate_filt -1), 1 the filter on exact keys (gate_filt 1, gate_filt_approx -1), 2 the filter
 * with approximate keys first where it applies (sigmoid rows without groups; elsewhere form 1 again), 3 (session 31,
 * v33) as 2 with sigmoid rows without groups by segments of 16 lanes (gate_sig_seg 1; elsewhere form 2 again) */
enum { NGF = 4 };
static void gatefilt_form(int f) {
  mr_cuda_tune.gate_filt = f ? 1 : -1;
  mr_cuda_tune.gate_filt_approx = f == 1 ? -1 : 0;
  mr_cuda_tune.gate_sig_seg = f == 3 ? 1 : -1;
}
static int gatefilt_case(const char* model, int T, int do_time, cudaStream_t s) {
  Case c;
  if (setup(&c, model, T, 0, 0xf117u + (uint64_t)T) != 0) return 1;
  int bad = 0;
  for (int special = 0; special < 2; ++special) {
    if (special) gatefilt_special(&c, 0x5eedu + (uint64_t)T);
    uint32_t** h[NGF];
    for (int f = 0; f < NGF; ++f) {
      gatefilt_form(f);
      poison(&c, 0);
      if (moeroute_cuda_gate(&c.p, &c.b, s) != MOEROUTE_OK) {
        printf("   gate failed: %s\n", moeroute_last_error());
        bad = 1;
      }
      CK(cudaStreamSynchronize(s));
      h[f] = fetch(&c, 0);
    }
    for (int f = 1; f < NGF; ++f)
      for (int i = 0; i < 2; ++i) { /* topk_ids, topk_weights */
        size_t nd = 0, first = 0;
        for (size_t j = 0; j < c.len[i]; ++j)
          if (h[0][i][j] != h[f][i][j] && nd++ == 0) first = j;
        if (nd) {
          printf("   MISMATCH %s vs merge%s %s: %zu words differ, first at %zu (row %zu): %08x vs %08x\n",
                 f == 1 ? "filter" : f == 2 ? "approx" : "seg", special ? " (special rows)" : "", NAMES[i], nd, first,
                 first / (size_t)c.p.top_k, h[f][i][first], h[0][i][first]);
          bad = 1;
        }
      }
    for (int f = 0; f < NGF; ++f) free_h(h[f]);
  }
  gatefilt_form(0);
  mr_cuda_tune.gate_filt = 0;
  mr_cuda_tune.gate_sig_seg = 0;
  printf("gatefilt check %-20s T=%6d: %s\n", model, T, bad ? "FAIL" : "ok");
  release(&c);
  if (!do_time) return bad;
  if (setup(&c, model, T, 0, 0xf118u + (uint64_t)T) != 0) return 1;
  double us[2 * NGF];
  for (int f = 0; f < NGF; ++f) {
    gatefilt_form(f);
    us[f] = time_op(&c, 2, 0, s);
    us[NGF + f] = time_op(&c, 0, 0, s);
  }
  gatefilt_form(0);
  mr_cuda_tune.gate_filt = 0;
  mr_cuda_tune.gate_sig_seg = 0;
  printf("gatefilt %-20s T=%6d gate alone: merge %8.2f  filter %8.2f  approx %8.2f  seg %8.2f (%.3f %.3f %.3f) | route: "
         "merge %8.2f  filter %8.2f  approx %8.2f  seg %8.2f\n",
         model, T, us[0], us[1], us[2], us[3], us[1] / us[0], us[2] / us[0], us[3] / us[0], us[4], us[5], us[6],
         us[7]);
  release(&c);
  return bad;
}

/* A mode whose case takes (model, T, do_check, do_time): each model at each T, then the stream destroyed and the
 * failures counted (--bounds, --gxclear); the exit status */
typedef int (*lab_case_fn)(const char* model, int T, int do_check, int do_time, cudaStream_t s);
static int each_case(lab_case_fn f, const char* mode, const char* const* models, int nm, const int* ts, int nts,
                     int do_check, int do_time, cudaStream_t s) {
  int fails = 0;
  for (int m = 0; m < nm; ++m)
    for (int j = 0; j < nts; ++j) fails += f(models[m], ts[j], do_check, do_time, s);
  CK(cudaStreamDestroy(s));
  printf("gxs lab --%s: %d failure(s)\n", mode, fails);
  return fails ? 1 : 0;
}

int main(int argc, char** argv) {
  int do_time = 1, quick = 0, probes = 0, do_check = 1, tail = 0;
  int ts[24] = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}, nts = 9;
  const char* models[12] = {"deepseek-r1-softmax", "gpt-oss-120b", "kimi-k2", "qwen3-next"};
  int nm = 4;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--no-time")) do_time = 0;
    if (!strcmp(argv[i], "--no-check")) do_check = 0; /* timing only (the timed outputs are still checked) */
    if (!strcmp(argv[i], "--quick")) quick = 1; /* the sanitizers' set: T = 5, 2048, 4097, no timing */
    if (!strcmp(argv[i], "--probes")) probes = 1; /* gxs's phases timed by its probes (outputs wrong) */
    if (!strcmp(argv[i], "--tail")) tail = 1;     /* v25: moe_buf by a launch of its own (knob clear_tail) */
    if (!strcmp(argv[i], "--head")) tail = 2;     /* v27: route + buf by P's forms (knob p_seg_chain) */
    if (!strcmp(argv[i], "--decode")) tail = 3;   /* tiny.cu's decode knobs against the default (session 28) */
    if (!strcmp(argv[i], "--bounds")) tail = 4;   /* gxs's and gx's bounds (session 29) */
    if (!strcmp(argv[i], "--gatewide")) tail = 5; /* the fp32-key gate kernel at large T, wide forced (session 29) */
    if (!strcmp(argv[i], "--gatefilt")) tail = 6; /* the fp32-key gate kernel's filter against the merge (session 30) */
    if (!strcmp(argv[i], "--gx-probes")) tail = 7; /* where gx's time goes, by phase (session 41; -DMR_GX_PROBES=1) */
    if (!strcmp(argv[i], "--gxclear")) tail = 8;   /* v47: moe_buf cleared inside gx's launch (session 42) */
    if (!strcmp(argv[i], "--gx-flag") && i + 1 < argc) /* session 40: knob gx_flag for the run (--bounds sets its own) */
      mr_cuda_tune.gx_flag = atoi(argv[++i]);
    if (!strcmp(argv[i], "--ts") && i + 1 < argc) {
      nts = 0;
      for (char* q = strtok(argv[++i], ","); q && nts < 24; q = strtok(NULL, ",")) ts[nts++] = atoi(q);
    }
    if (!strcmp(argv[i], "--models") && i + 1 < argc) {
      nm = 0;
      for (char* q = strtok(argv[++i], ","); q && nm < 12; q = strtok(NULL, ",")) models[nm++] = q;
    }
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int fails = 0;
  if (tail == 3) { /* --decode: repeated twice, alternating the order of nothing but the passes */
    static const int dts[] = {2, 3, 4, 8};
    static const char* dm[] = {"gpt-oss-120b", "gpt-oss-20b", "qwen1.5-moe", "dbrx", "deepseek-r1-softmax"};
    for (int rep = 0; rep < 2; ++rep)
      for (int lay = 0; lay < 2; ++lay)
        for (int m = 0; m < 5; ++m)
          for (int j = 0; j < 4; ++j)
            fails += decode_case(dm[m], dts[j], lay ? MOEROUTE_LAYOUT_CK : MOEROUTE_LAYOUT_BOTH, s);
    CK(cudaStreamDestroy(s));
    printf("gxs lab --decode: %d failure(s)\n", fails);
    return fails ? 1 : 0;
  }
  if (tail == 6) { /* --gatefilt: each model at each T of --ts */
    int fails = 0;
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nts; ++j) fails += gatefilt_case(models[m], ts[j], do_time, s);
    printf("gxs lab --gatefilt: %d failure(s)\n", fails);
    return fails != 0;
  }
  if (tail == 7) { /* --gx-probes: each model at each T of --ts */
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nts; ++j) fails += gxprobe_case(models[m], ts[j], s);
    CK(cudaStreamDestroy(s));
    printf("gxs lab --gx-probes: %d failure(s)\n", fails);
    return fails ? 1 : 0;
  }
  if (tail == 8) { /* --gxclear: each model at each T of --ts (--quick: DeepSeek-R1 softmax at T = 1024, checks) */
    if (quick) {
      nm = 1;
      nts = 1;
      ts[0] = 1024;
    }
    return each_case(gxclear_case, "gxclear", models, nm, ts, nts, do_check, do_time && !quick, s);
  }
  if (tail == 5) { /* --gatewide: each model at each T of --ts */
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nts; ++j) fails += gatewide_case(models[m], ts[j], s);
    CK(cudaStreamDestroy(s));
    printf("gxs lab --gatewide: %d failure(s)\n", fails);
    return fails ? 1 : 0;
  }
  if (tail == 4) { /* --bounds: each model at each T of --ts (--quick: DeepSeek-R1 softmax at T = 1024, 4096, checks) */
    if (quick) {
      nm = 1;
      nts = 2;
      ts[0] = 1024;
      ts[1] = 4096;
    }
    return each_case(bounds_case, "bounds", models, nm, ts, nts, do_check, do_time && !quick, s);
  }
  if (tail) { /* --tail alone: its checks and (unless --no-time) its timing at each T of --ts */
    if (quick) { /* the sanitizers' set: gx's route (2048) and gxs's sort and route (6500) */
      nm = 1;
      nts = 2;
      ts[0] = 2048;
      ts[1] = 6500;
    }
    if (quick && tail == 2) { /* the sanitizers' set for --head: DeepSeek-R1 softmax at two T (the forms forced) */
      ts[0] = 4096;
      ts[1] = 8192;
    }
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nts; ++j)
        fails += tail == 2 ? head_case(models[m], ts[j], do_check, do_time && !quick, s)
                           : tail_case(models[m], ts[j], do_check, do_time && !quick, s);
    CK(cudaStreamDestroy(s));
    printf("gxs lab --%s: %d failure(s)\n", tail == 2 ? "head" : "tail", fails);
    return fails ? 1 : 0;
  }
  const int checks[] = {1, 5, 133, 1000, 2048, 4097, 16384, 40000}, qchecks[] = {5, 2048, 4097}; /* 2048: route's
                                                                                                 default is gx */
  const int* ck = quick ? qchecks : checks;
  if (quick && nm == 4) { /* the sanitizers' models: E = 256 k = 8 and E = 512 k = 10 */
    models[1] = "qwen3-next";
    nm = 2;
  }
  const int nck = quick ? 3 : (int)(sizeof checks / sizeof checks[0]);
  if (quick) do_time = 0;
  for (int f = 0; do_check && f < 5; ++f) { /* gxs's v24 forms: none, place, xchg, both (knobs gxs_place, gxs_xchg),
                                                both with the lean barriers (gx_lean_bar) */
    set_form(f);
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nck; ++j)
        for (int mp = 0; mp < 2; ++mp) fails += check_case(models[m], ck[j], mp ? 30 : 0, s);
  }
  set_form(-1);
  printf("gxs check: %d failure(s)\n", fails);
  if (do_time) {
    printf("kernel metric, us (no moe_buf, U = 32, both layouts, bf16): route before | route gxs | sort before | "
           "sort gxs | gate alone\n");
    for (int m = 0; m < nm; ++m)
      for (int j = 0; j < nts; ++j) {
        Case c;
        if (setup(&c, models[m], ts[j], 0, 99u + ts[j]) != 0) continue;
        mr_cuda_tune.gxs = -1;
        if (run_op(&c, MOEROUTE_OP_ROUTE, s)) exit(2); /* the sort's input: this top-k */
        const double rb = time_op(&c, 0, -1, s), rg = time_op(&c, 0, 1, s);
        const double sb = time_op(&c, 1, -1, s), sg = time_op(&c, 1, 2, s);
        const double ga = time_op(&c, 2, 0, s);
        /* gxs's v24 forms (knobs gxs_place, gxs_xchg): the sort by each, route by both */
        double sf[5], rf3, rf4;
        for (int f = 0; f < 5; ++f) {
          set_form(f);
          sf[f] = time_op(&c, 1, 2, s);
        }
        set_form(3);
        rf3 = time_op(&c, 0, 1, s);
        set_form(4);
        rf4 = time_op(&c, 0, 1, s);
        const double rb4 = time_op(&c, 0, -1, s); /* route before gxs, lean barriers: gx's, where gx routes */
        mr_cuda_tune.gxs_gate_zero = -1; /* v26 off: the zeroing launch between the gate kernel and gxs */
        const double rz = time_op(&c, 0, 1, s);
        mr_cuda_tune.gxs_gate_zero = 0;
        set_form(-1);
        /* the outputs after timing: the last calls were route's; sort once more by each form and check */
        int bad = 0;
        for (int f = 0; f < 5; ++f) {
          set_form(f);
          mr_cuda_tune.gxs = 2;
          poison(&c, 2);
          bad += run_op(&c, MOEROUTE_OP_SORT, s);
          uint32_t** h = fetch(&c, 2);
          bad += cpu_check(&c, h);
          free_h(h);
          mr_cuda_tune.gxs = 0;
        }
        set_form(-1);
        printf("gxs %-20s T=%6d  %7.2f  %7.2f  %7.2f  %7.2f  %7.2f  (route %.3f, sort %.3f)%s\n", models[m], ts[j],
               rb, rg, sb, sg, ga, rg / rb, sg / sb, bad ? "  WRONG" : "");
        printf("   v24 sort by form: none %.2f | place %.2f | xchg %.2f | both %.2f | both, lean barriers %.2f; route "
               "with both %.2f, with lean barriers %.2f; route before gxs with lean barriers (gx's) %.2f; route by gxs "
               "with the zeroing launch (v26 off) %.2f\n", sf[0], sf[1], sf[2], sf[3], sf[4], rf3, rf4, rb4, rz);
        for (int f = 0; probes && f < 4; f += 3) { /* the sort by gxs, returning at each probe point (outputs
                                                      wrong; sorted again before the next case) */
          double pr[6];
          set_form(f);
          for (int q = 1; q <= 5; ++q) {
            mr_cuda_tune.gxs_probe = q;
            pr[q] = time_op(&c, 1, 2, s);
          }
          mr_cuda_tune.gxs_probe = 0;
          set_form(-1);
          printf("   probes (%s): entry %.2f | counts (no barrier) %.2f | barrier %.2f | scan %.2f | all but the entries' "
                 "stores %.2f | all %.2f\n", form_name[f], pr[1], pr[2], pr[3], pr[4], pr[5], sf[f]);
        }
        fails += bad != 0;
        release(&c);
      }
  }
  CK(cudaStreamDestroy(s));
  printf("gxs lab: %d failure(s)\n", fails);
  return fails ? 1 : 0;
}
