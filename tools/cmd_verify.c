/*
 * cmd_verify.c - `moeroute verify`: every backend and path against the CPU
 * reference, over every preset and random shapes.
 *
 * Paths (a case counts once per path it runs on):
 *   cpu:route-vs-chain   moeroute_cpu_route against moeroute_cpu_gate + moeroute_cpu_sort
 *   cpu:gate-contract    the CPU's top-k rows against this file's own reading of the
 *                        contract (cli_check_gate_row: recomputed in double)
 *   cpu:sort-reference   moeroute_cpu_sort against cli_reference_sort, with some ids
 *                        out of range, duplicated or masked
 *   cuda:route           moeroute_cuda_route against the CPU
 *   cuda:gate            moeroute_cuda_gate against the CPU
 *   cuda:sort            moeroute_cuda_sort against moeroute_cpu_sort (same, possibly
 *                        corrupted, ids): bit-identical
 *   cuda:gate+sort       the unfused CUDA chain against the CPU
 *   checks:self-test     the checks above catch faults planted in correct outputs
 *                        (ids swapped or replaced, a weight off by 1e-4, a sorted
 *                        entry changed, a write past the valid range)
 *
 * Exact comparisons need inputs without ties: the logits of a row are distinct
 * values of the dtype (cli_fill_tiefree_logits). Selection keys s + bias may
 * still come within rounding of each other; where a backend's ids differ from
 * the CPU's, the row must be a valid top-k under the contract's near-tie rule
 * (cli_check_gate_row), and its sorted outputs are compared with the CPU sort
 * of that backend's own top-k. Sorted outputs are always compared bit for bit,
 * entries past the valid range must be untouched, and moe_buf must be zero.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifdef MOEROUTE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static const char* const verify_usage =
    "usage: moeroute verify [--backend auto|cpu|cuda] [--count N] [--seed S] [--case I] [--verbose]\n"
    "\n"
    "Check every backend and path against the CPU reference: every preset at a set of\n"
    "token counts, then N random shapes (T incl. 0 and large, E in 1..1024, k, U, scores,\n"
    "groups, bias, expert masks, dtypes, row strides, non-finite logits, moe_buf sizes).\n"
    "Ids and sorted outputs must match exactly (sorted outputs bit for bit), weights within\n"
    "1e-5 relative; rows may differ from the CPU only by a near-tie the contract allows.\n"
    "\n"
    "  --backend B   auto (default): the CPU paths, and the CUDA paths when a GPU is present;\n"
    "                cpu: the CPU paths only; cuda: the CUDA paths only (fails without a GPU)\n"
    "  --count N     random cases after the preset cases (default 300)\n"
    "  --seed S      seed of the random cases (default 1)\n"
    "  --case I      run only case I (as numbered in a failure report)\n"
    "  --verbose     print every case\n"
    "\n"
    "Prints a table (path, cases, passed, failed, skipped) and a last line 'N passed, N failed'.\n"
    "exit status: 0 all passed, 1 a failure, 2 usage error\n";

enum {
  P_CPU_CHAIN,
  P_CPU_CONTRACT,
  P_CPU_SORT_REF,
  P_CUDA_ROUTE,
  P_CUDA_GATE,
  P_CUDA_SORT,
  P_CUDA_CHAIN,
  P_SELF_TEST,
  P_COUNT
};

static const char* const path_names[P_COUNT] = {"cpu:route-vs-chain", "cpu:gate-contract", "cpu:sort-reference",
                                                "cuda:route",         "cuda:gate",         "cuda:sort",
                                                "cuda:gate+sort",     "checks:self-test"};

typedef struct path_stat {
  int64_t cases, passed, failed, skipped, near_tie_rows;
} path_stat;

typedef struct verify_state {
  path_stat stat[P_COUNT];
  int run_cpu, run_cuda, verbose;
  int reported;      /* failures printed so far */
  int64_t case_index;
  void* stream;      /* cudaStream_t */
} verify_state;

#define MAX_REPORTS 20

static void record(verify_state* v, int path, int ok, const route_case* c, const char* why) {
  path_stat* s = &v->stat[path];
  s->cases++;
  if (ok) {
    s->passed++;
  } else {
    s->failed++;
    if (v->reported++ < MAX_REPORTS)
      printf("FAIL %-18s case %" PRId64 " (%s): %s\n", path_names[path], v->case_index, c->desc, why);
    else if (v->reported == MAX_REPORTS + 1)
      printf("(more failures not shown)\n");
  }
}

static void skip(verify_state* v, int path) { v->stat[path].skipped++; }

/* ---- case generation ---------------------------------------------------------- */

static const int preset_tokens[] = {0, 1, 2, 3, 4, 7, 8, 12, 16, 17, 33, 64, 100, 256, 1000, 4096};

static int pick_unit(cli_rng* r) {
  static const int common[] = {1, 2, 3, 4, 7, 8, 16, 32, 32, 32, 32, 64, 64, 128, 256, 1024};
  if (cli_rng_uniform(r) < 0.1) return (int)cli_rng_range(r, 1, MOEROUTE_MAX_UNIT_SIZE);
  return common[cli_rng_range(r, 0, (int64_t)(sizeof common / sizeof common[0]) - 1)];
}

/* Everything random about a case beyond E/k/score: shared by preset and random cases. */
typedef struct case_extras {
  int has_bias, has_mask, hot_expert, nonfinite, corrupt_sort;
  double bias_range, mask_density;
  size_t moe_buf_bytes;
  const char* tag; /* appended to the description (the preset's name) */
} case_extras;

static int build_case(cli_rng* r, route_case* c, const case_extras* x, char* err, size_t errlen) {
  moeroute_params* p = &c->p;
  const int32_t E = p->num_experts;
  c->logits = cli_malloc(route_case_logits_bytes(c));
  if (x->has_bias) c->bias = (float*)cli_malloc((size_t)E * sizeof(float));
  if (x->has_mask) c->expert_mask = (int32_t*)cli_malloc((size_t)E * sizeof(int32_t));
  if (!c->logits || (x->has_bias && !c->bias) || (x->has_mask && !c->expert_mask)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  cli_fill_tiefree_logits(r, c, x->hot_expert);
  if (c->bias)
    for (int32_t e = 0; e < E; e++) c->bias[e] = (float)((cli_rng_uniform(r) * 2.0 - 1.0) * x->bias_range);
  if (c->expert_mask)
    for (int32_t e = 0; e < E; e++) c->expert_mask[e] = cli_rng_uniform(r) < x->mask_density;
  if (x->nonfinite && p->num_tokens > 0) {
    /* sprinkle -inf / NaN / +inf, and make some rows entirely non-finite */
    int64_t stride = p->logits_row_stride ? p->logits_row_stride : E;
    size_t ds = cli_dtype_size(p->logits_dtype);
    const float specials[3] = {-INFINITY, NAN, INFINITY};
    int64_t n = 1 + p->num_tokens * E / 16;
    for (int64_t i = 0; i < n; i++) {
      int64_t t = cli_rng_range(r, 0, p->num_tokens - 1);
      int64_t e = cli_rng_range(r, 0, E - 1);
      int which = cli_rng_uniform(r) < 0.1 ? 2 : (int)cli_rng_range(r, 0, 1);
      cli_encode(p->logits_dtype, &specials[which], (char*)c->logits + (size_t)(t * stride + e) * ds, 1);
    }
    int64_t rows = cli_rng_range(r, 0, 2);
    for (int64_t i = 0; i < rows; i++) {
      int64_t t = cli_rng_range(r, 0, p->num_tokens - 1);
      for (int32_t e = 0; e < E; e++)
        cli_encode(p->logits_dtype, &specials[cli_rng_range(r, 0, 1)], (char*)c->logits + (size_t)(t * stride + e) * ds,
                   1);
    }
  }
  p->moe_buf_bytes = x->moe_buf_bytes;
  int o = snprintf(c->desc, sizeof c->desc, "T=%lld E=%d k=%d U=%d %s %s renorm=%d scale=%g", (long long)p->num_tokens,
                   E, p->top_k, p->unit_size, cli_dtype_name(p->logits_dtype), cli_score_name(p->score), p->renormalize,
                   (double)p->scale);
  if (p->num_groups > 1)
    o += snprintf(c->desc + o, sizeof c->desc - (size_t)o, " groups=%d:%d/%s", p->num_groups, p->topk_groups,
                  cli_group_score_name(p->group_score));
  o += snprintf(c->desc + o, sizeof c->desc - (size_t)o, " layout=%s%s%s%s%s", cli_layout_name(p->layouts),
                c->bias ? " bias" : "", c->expert_mask ? " mask" : "", x->nonfinite ? " nonfinite" : "",
                x->hot_expert >= 0 ? " hot" : "");
  if (p->logits_row_stride) o += snprintf(c->desc + o, sizeof c->desc - (size_t)o, " stride=%lld", (long long)p->logits_row_stride);
  if (p->moe_buf_bytes) o += snprintf(c->desc + o, sizeof c->desc - (size_t)o, " moe_buf=%zu", p->moe_buf_bytes);
  if (x->tag) snprintf(c->desc + o, sizeof c->desc - (size_t)o, " [%s]", x->tag);
  return 0;
}

static void random_extras(cli_rng* r, const moeroute_params* p, case_extras* x, int bias_known) {
  memset(x, 0, sizeof *x);
  x->has_bias = bias_known >= 0 ? bias_known : cli_rng_uniform(r) < 0.4;
  x->bias_range = cli_rng_uniform(r) < 0.8 ? 0.1 : 1.0;
  x->has_mask = cli_rng_uniform(r) < 0.2;
  static const double densities[] = {0.0, 0.5, 0.9, 1.0};
  x->mask_density = densities[cli_rng_range(r, 0, 3)];
  x->hot_expert = cli_rng_uniform(r) < 0.1 ? (int)cli_rng_range(r, 0, p->num_experts - 1) : -1;
  x->nonfinite = cli_rng_uniform(r) < 0.15;
  x->corrupt_sort = cli_rng_uniform(r) < 0.3;
  x->moe_buf_bytes = cli_rng_uniform(r) < 0.5 ? (size_t)cli_rng_range(r, 1, 100000) : 0;
}

static void random_params(cli_rng* r, moeroute_params* p) {
  static const int preset_e[] = {256, 160, 384, 128, 512, 60, 32, 8, 16, 64};
  double u = cli_rng_uniform(r);
  int32_t E;
  if (u < 0.15) E = (int32_t)cli_rng_range(r, 1, 8);
  else if (u < 0.5) E = preset_e[cli_rng_range(r, 0, 9)];
  else E = (int32_t)cli_rng_range(r, 1, MOEROUTE_MAX_EXPERTS);
  int32_t kmax = E < MOEROUTE_MAX_TOPK ? E : MOEROUTE_MAX_TOPK;
  int32_t k = (int32_t)cli_rng_range(r, 1, cli_rng_uniform(r) < 0.5 && kmax > 10 ? 10 : kmax);
  u = cli_rng_uniform(r);
  int64_t T;
  if (u < 0.08) T = 0;
  else if (u < 0.6) T = cli_rng_range(r, 1, 16);
  else if (u < 0.85) T = cli_rng_range(r, 17, 300);
  else if (u < 0.97) T = cli_rng_range(r, 301, 3000);
  else T = cli_rng_range(r, 3001, 20000);
  p->num_tokens = T;
  p->num_experts = E;
  p->top_k = k;
  p->unit_size = pick_unit(r);
  p->score = (moeroute_score)cli_rng_range(r, 0, 2);
  p->renormalize = cli_rng_uniform(r) < 0.5;
  p->scale = cli_rng_uniform(r) < 0.5 ? 1.0f : (float)(0.1 + cli_rng_uniform(r) * 20.0);
  p->logits_dtype = (moeroute_dtype)cli_rng_range(r, 0, 2);
  u = cli_rng_uniform(r);
  p->layouts = u < 0.6 ? MOEROUTE_LAYOUT_BOTH : u < 0.8 ? MOEROUTE_LAYOUT_CK : MOEROUTE_LAYOUT_VLLM;
  p->logits_row_stride = cli_rng_uniform(r) < 0.2 ? E + cli_rng_range(r, 1, 64) : 0;
  if (cli_rng_uniform(r) < 0.3) {
    /* grouped selection: a divisor G of E in 2..64 that leaves enough experts */
    int32_t divisors[64], nd = 0;
    for (int32_t g = 2; g <= 64 && g <= E; g++)
      if (E % g == 0) divisors[nd++] = g;
    if (nd > 0) {
      int32_t G = divisors[cli_rng_range(r, 0, nd - 1)];
      int32_t per = E / G;
      moeroute_group_score gs = (moeroute_group_score)cli_rng_range(r, 0, 1);
      if (per < 2) gs = MOEROUTE_GROUP_SCORE_MAX;
      int32_t tg_min = (k + per - 1) / per;
      if (tg_min <= G) {
        p->num_groups = G;
        p->topk_groups = (int32_t)cli_rng_range(r, tg_min, G);
        p->group_score = gs;
      }
    }
  }
}

/* ---- checks of one case ------------------------------------------------------------ */

static int moe_buf_zero(const unsigned char* b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

/* Corrupt some ids of a sort input: out of range, negative, duplicated. */
static void corrupt_ids(cli_rng* r, int32_t* ids, int64_t n, int32_t E) {
  int64_t count = 1 + n / 20;
  for (int64_t i = 0; i < count && n > 0; i++) {
    int64_t at = cli_rng_range(r, 0, n - 1);
    switch (cli_rng_range(r, 0, 3)) {
      case 0: ids[at] = -1; break;
      case 1: ids[at] = E; break;
      case 2: ids[at] = INT32_MIN + (int32_t)cli_rng_range(r, 0, 1000); break;
      default: ids[at] = (int32_t)cli_rng_range(r, 0, E - 1); break; /* may duplicate one in its row */
    }
  }
}

typedef struct cpu_ref {
  host_route route;  /* cpu route */
  host_route gate;   /* cpu gate (topk only) */
  host_route chain;  /* cpu sort of gate's topk */
  host_route sort_in_out; /* cpu sort of the (maybe corrupted) sort input */
  int32_t* sort_ids; /* the sort input */
  float* sort_weights;
  int sort_ok;       /* the CPU sorted sort_ids (else cuda:sort has no reference) */
} cpu_ref;

static void cpu_ref_free(cpu_ref* f) {
  host_route_free(&f->route);
  host_route_free(&f->gate);
  host_route_free(&f->chain);
  host_route_free(&f->sort_in_out);
  free(f->sort_ids);
  free(f->sort_weights);
}

/* The CPU reference outputs and the CPU paths. Returns -1 if the CPU could not
 * produce a reference (then the case's CUDA paths are skipped). */
static int run_cpu(verify_state* v, cli_rng* r, const route_case* c, const case_extras* x, cpu_ref* f) {
  const moeroute_params* p = &c->p;
  char why[512] = "";
  memset(f, 0, sizeof *f);
  if (host_route_alloc(&f->route, p, why, sizeof why) || host_route_alloc(&f->gate, p, why, sizeof why) ||
      host_route_alloc(&f->chain, p, why, sizeof why) || host_route_alloc(&f->sort_in_out, p, why, sizeof why)) {
    record(v, P_CPU_CHAIN, 0, c, why);
    return -1;
  }
  host_route_fill(&f->route, CLI_CANARY);
  host_route_fill(&f->gate, CLI_CANARY);
  host_route_fill(&f->chain, CLI_CANARY);
  host_route_fill(&f->sort_in_out, CLI_CANARY);
  size_t mb = p->moe_buf_bytes;
  unsigned char* moe_buf = mb ? (unsigned char*)malloc(mb) : NULL;
  if (mb) memset(moe_buf, CLI_CANARY, mb);
  moeroute_params pg = *p;
  pg.moe_buf_bytes = 0;

  moeroute_status st = cli_cpu_run(MOEROUTE_OP_ROUTE, c, p, &f->route, NULL, NULL, moe_buf);
  if (st != MOEROUTE_OK) {
    snprintf(why, sizeof why, "moeroute_cpu_route: %s: %s", moeroute_status_string(st), moeroute_last_error());
    record(v, P_CPU_CHAIN, 0, c, why);
    free(moe_buf);
    return -1;
  }
  int route_cleared = moe_buf_zero(moe_buf, mb);
  st = cli_cpu_run(MOEROUTE_OP_GATE, c, &pg, &f->gate, NULL, NULL, NULL);
  if (st != MOEROUTE_OK) {
    snprintf(why, sizeof why, "moeroute_cpu_gate: %s: %s", moeroute_status_string(st), moeroute_last_error());
    record(v, P_CPU_CHAIN, 0, c, why);
    free(moe_buf);
    return -1;
  }
  if (mb) memset(moe_buf, CLI_CANARY, mb);
  st = cli_cpu_run(MOEROUTE_OP_SORT, c, p, &f->chain, f->gate.topk_ids, f->gate.topk_weights, moe_buf);
  if (st != MOEROUTE_OK) {
    snprintf(why, sizeof why, "moeroute_cpu_sort: %s: %s", moeroute_status_string(st), moeroute_last_error());
    record(v, P_CPU_CHAIN, 0, c, why);
    free(moe_buf);
    return -1;
  }
  int sort_cleared = moe_buf_zero(moe_buf, mb);
  /* the chain's top-k are the gate's, for the comparison below */
  int64_t n = f->route.sizes.topk_len;
  memcpy(f->chain.topk_ids, f->gate.topk_ids, (size_t)n * 4);
  memcpy(f->chain.topk_weights, f->gate.topk_weights, (size_t)n * 4);

  /* the sort input of cpu:sort-reference and cuda:sort */
  f->sort_ids = (int32_t*)cli_malloc((size_t)n * 4);
  f->sort_weights = (float*)cli_malloc((size_t)n * 4);
  memcpy(f->sort_ids, f->gate.topk_ids, (size_t)n * 4);
  memcpy(f->sort_weights, f->gate.topk_weights, (size_t)n * 4);
  if (x->corrupt_sort) corrupt_ids(r, f->sort_ids, n, p->num_experts);
  st = cli_cpu_run(MOEROUTE_OP_SORT, c, &pg, &f->sort_in_out, f->sort_ids, f->sort_weights, NULL);
  f->sort_ok = st == MOEROUTE_OK;

  if (v->run_cpu) {
    why[0] = '\0';
    int ok = route_cleared && sort_cleared;
    if (!ok) snprintf(why, sizeof why, "moe_buf not cleared by %s", route_cleared ? "sort" : "route");
    if (ok && cli_cmp_topk(&f->route, &f->chain, p, why, sizeof why)) ok = 0;
    if (ok && cli_cmp_sorted(&f->route, &f->chain, p, why, sizeof why)) ok = 0;
    if (ok && cli_check_tail(&f->route, p, why, sizeof why)) ok = 0;
    if (ok && cli_check_tail(&f->chain, p, why, sizeof why)) ok = 0;
    record(v, P_CPU_CHAIN, ok, c, why);

    ok = 1;
    for (int64_t t = 0; t < p->num_tokens && ok; t++) {
      char w2[400];
      if (!cli_check_gate_row(c, t, f->route.topk_ids + t * p->top_k, f->route.topk_weights + t * p->top_k,
                              CLI_WEIGHT_REL, w2, sizeof w2)) {
        snprintf(why, sizeof why, "row %lld: %s", (long long)t, w2);
        ok = 0;
      }
    }
    record(v, P_CPU_CONTRACT, ok, c, why);

    if (st != MOEROUTE_OK) {
      snprintf(why, sizeof why, "moeroute_cpu_sort: %s: %s", moeroute_status_string(st), moeroute_last_error());
      record(v, P_CPU_SORT_REF, 0, c, why);
    } else {
      host_route ref;
      if (host_route_alloc(&ref, p, why, sizeof why) == 0) {
        host_route_fill(&ref, CLI_CANARY);
        cli_reference_sort(p, f->sort_ids, f->sort_weights, c->expert_mask, &ref);
        ok = cli_cmp_sorted(&ref, &f->sort_in_out, p, why, sizeof why) == 0 &&
             cli_check_tail(&f->sort_in_out, p, why, sizeof why) == 0;
        host_route_free(&ref);
      } else {
        ok = 0;
      }
      record(v, P_CPU_SORT_REF, ok, c, why);
    }
  }
  free(moe_buf);
  return 0;
}

#ifdef MOEROUTE_WITH_CUDA
/* One CUDA path of one case. Returns -1 on a CUDA error (the context may be
 * unusable: verify stops). */
static int run_cuda_path(verify_state* v, int path, const route_case* c, const cpu_ref* f, gpu_route* g) {
  const moeroute_params* p = &c->p;
  moeroute_params pg = *p;
  pg.moe_buf_bytes = 0;
  moeroute_op op = path == P_CUDA_GATE ? MOEROUTE_OP_GATE : path == P_CUDA_SORT ? MOEROUTE_OP_SORT : MOEROUTE_OP_ROUTE;
  int supported = path == P_CUDA_CHAIN
                      ? moeroute_cuda_supports(MOEROUTE_OP_GATE, &pg) && moeroute_cuda_supports(MOEROUTE_OP_SORT, p)
                      : moeroute_cuda_supports(op, op == MOEROUTE_OP_GATE ? &pg : p);
  if (!supported || (path == P_CUDA_SORT && !f->sort_ok)) {
    skip(v, path);
    return 0;
  }
  char why[512] = "", err[512];
  if (gpu_route_fill(g, CLI_CANARY, err, sizeof err) != 0) {
    cli_error("cuda: %s", err);
    return -1;
  }
  if (path == P_CUDA_SORT && gpu_route_upload_topk(g, f->sort_ids, f->sort_weights, f->route.sizes.topk_len, err,
                                                   sizeof err) != 0) {
    cli_error("cuda: %s", err);
    return -1;
  }
  moeroute_buffers b;
  moeroute_status st;
  const char* fn;
  if (path == P_CUDA_ROUTE) {
    gpu_route_bind(g, p, MOEROUTE_OP_ROUTE, 1, &b);
    fn = "moeroute_cuda_route";
    st = moeroute_cuda_route(p, &b, v->stream);
  } else if (path == P_CUDA_GATE) {
    gpu_route_bind(g, &pg, MOEROUTE_OP_GATE, 1, &b);
    fn = "moeroute_cuda_gate";
    st = moeroute_cuda_gate(&pg, &b, v->stream);
  } else if (path == P_CUDA_SORT) {
    gpu_route_bind(g, p, MOEROUTE_OP_SORT, 1, &b);
    fn = "moeroute_cuda_sort";
    st = moeroute_cuda_sort(p, &b, v->stream);
  } else {
    gpu_route_bind(g, &pg, MOEROUTE_OP_GATE, 1, &b);
    fn = "moeroute_cuda_gate";
    st = moeroute_cuda_gate(&pg, &b, v->stream);
    if (st == MOEROUTE_OK) {
      gpu_route_bind(g, p, MOEROUTE_OP_SORT, 1, &b);
      fn = "moeroute_cuda_sort";
      st = moeroute_cuda_sort(p, &b, v->stream);
    }
  }
  if (st != MOEROUTE_OK) {
    snprintf(why, sizeof why, "%s: %s: %s", fn, moeroute_status_string(st), moeroute_last_error());
    record(v, path, 0, c, why);
    return st == MOEROUTE_ERR_CUDA ? -1 : 0;
  }
  cudaError_t ce = cudaStreamSynchronize((cudaStream_t)v->stream);
  if (ce != cudaSuccess) {
    cli_error("cuda: %s (case %" PRId64 ", %s, %s) failed on the device: %s", fn, v->case_index, path_names[path],
              c->desc, cudaGetErrorString(ce));
    return -1;
  }
  host_route got;
  if (host_route_alloc(&got, p, why, sizeof why) != 0) {
    record(v, path, 0, c, why);
    return 0;
  }
  if (gpu_route_download(g, &got, err, sizeof err) != 0) {
    cli_error("cuda: %s", err);
    host_route_free(&got);
    return -1;
  }
  int ok = 1;
  int64_t near = 0;
  if (path != P_CUDA_SORT) {
    if (cli_cmp_gate(c, &got, path == P_CUDA_GATE ? &f->gate : &f->route, &near, why, sizeof why)) ok = 0;
  }
  if (ok && path != P_CUDA_GATE) {
    /* the sort must be the CPU sort of the very ids the path sorted */
    host_route want;
    const int32_t* in_ids = path == P_CUDA_SORT ? f->sort_ids : got.topk_ids;
    const float* in_w = path == P_CUDA_SORT ? f->sort_weights : got.topk_weights;
    /* (never the CPU route's sorted arrays: sorted_weights copy the path's own
     * top-k weights bit for bit, which may differ from the CPU's within 1e-5) */
    if (host_route_alloc(&want, p, why, sizeof why) == 0) {
      moeroute_status s2 = cli_cpu_run(MOEROUTE_OP_SORT, c, &pg, &want, in_ids, in_w, NULL);
      if (s2 != MOEROUTE_OK) {
        snprintf(why, sizeof why, "moeroute_cpu_sort (reference): %s", moeroute_last_error());
        ok = 0;
      } else {
        ok = cli_cmp_sorted(&got, &want, p, why, sizeof why) == 0;
      }
      host_route_free(&want);
    } else {
      ok = 0;
    }
    if (ok && cli_check_tail(&got, p, why, sizeof why)) ok = 0;
    if (ok && p->moe_buf_bytes) {
      int z = gpu_moe_buf_is_zero(g, err, sizeof err);
      if (z < 0) {
        cli_error("cuda: %s", err);
        host_route_free(&got);
        return -1;
      }
      if (!z) {
        snprintf(why, sizeof why, "%s", err);
        ok = 0;
      }
    }
  }
  v->stat[path].near_tie_rows += near;
  record(v, path, ok, c, why);
  host_route_free(&got);
  return 0;
}
#endif

/* Returns -1 when verify must stop (a CUDA error). */
static int run_case(verify_state* v, cli_rng* r, route_case* c, const case_extras* x) {
  char err[512];
  if (build_case(r, c, x, err, sizeof err) != 0) {
    record(v, P_CPU_CHAIN, 0, c, err);
    return 0;
  }
  if (v->verbose) printf("case %" PRId64 ": %s\n", v->case_index, c->desc);
  cpu_ref f;
  int rc = 0;
  if (run_cpu(v, r, c, x, &f) != 0) {
    for (int pth = P_CUDA_ROUTE; pth <= P_CUDA_CHAIN; pth++)
      if (v->run_cuda) skip(v, pth);
    cpu_ref_free(&f);
    return 0;
  }
#ifdef MOEROUTE_WITH_CUDA
  if (v->run_cuda) {
    gpu_route g;
    if (gpu_route_alloc(&g, c, c->p.moe_buf_bytes, err, sizeof err) != 0) {
      cli_error("cuda: %s", err);
      cpu_ref_free(&f);
      return -1;
    }
    for (int pth = P_CUDA_ROUTE; pth <= P_CUDA_CHAIN && rc == 0; pth++) rc = run_cuda_path(v, pth, c, &f, &g);
    gpu_route_free(&g);
  }
#endif
  cpu_ref_free(&f);
  return rc;
}

/* Plant faults in correct CPU outputs; every one must be caught. */
static void self_test(verify_state* v, uint64_t seed) {
  for (int64_t idx = 0; idx < 24; idx++) {
    cli_rng r = {seed ^ 0x5e1f7e57ull ^ (uint64_t)idx * 0x9e3779b97f4a7c15ull};
    route_case c;
    memset(&c, 0, sizeof c);
    moeroute_params_init(&c.p);
    random_params(&r, &c.p);
    /* small shapes with room for every fault: k >= 2, a non-empty padding tail */
    c.p.num_experts = (int32_t)cli_rng_range(&r, 9, 300); /* > k: fault 1 needs an expert outside the row */
    c.p.top_k = (int32_t)cli_rng_range(&r, 2, 8);
    c.p.num_tokens = cli_rng_range(&r, 2, 40);
    c.p.unit_size = (int32_t)cli_rng_range(&r, 2, 64);
    c.p.num_groups = 1;
    c.p.topk_groups = 1;
    c.p.logits_row_stride = 0;
    case_extras x;
    random_extras(&r, &c.p, &x, -1);
    x.has_mask = 0;
    x.nonfinite = 0;
    x.moe_buf_bytes = 0;
    x.tag = "self-test";
    char err[512], why[512];
    host_route ref, bad;
    if (build_case(&r, &c, &x, err, sizeof err) || host_route_alloc(&ref, &c.p, err, sizeof err)) {
      record(v, P_SELF_TEST, 0, &c, err);
      route_case_free(&c);
      continue;
    }
    host_route_alloc(&bad, &c.p, err, sizeof err);
    host_route_fill(&ref, CLI_CANARY);
    if (cli_cpu_run(MOEROUTE_OP_ROUTE, &c, &c.p, &ref, NULL, NULL, NULL) != MOEROUTE_OK) {
      record(v, P_SELF_TEST, 0, &c, moeroute_last_error());
    } else {
      const int32_t k = c.p.top_k, E = c.p.num_experts;
      const int64_t t = cli_rng_range(&r, 0, c.p.num_tokens - 1);
      const char* missed = NULL;
      for (int fault = 0; fault < 5 && !missed; fault++) {
        /* copy ref into bad */
        const moeroute_sizes* sz = &ref.sizes;
        memcpy(bad.topk_ids, ref.topk_ids, (size_t)sz->topk_len * 4);
        memcpy(bad.topk_weights, ref.topk_weights, (size_t)sz->topk_len * 4);
        memcpy(bad.sorted_ids, ref.sorted_ids, (size_t)sz->ck_sorted_len * 4);
        memcpy(bad.sorted_weights, ref.sorted_weights, (size_t)sz->ck_sorted_len * 4);
        memcpy(bad.sorted_expert_ids, ref.sorted_expert_ids, (size_t)sz->ck_blocks_len * 4);
        memcpy(bad.num_valid_ids, ref.num_valid_ids, 8);
        memcpy(bad.sorted_token_ids, ref.sorted_token_ids, (size_t)sz->vllm_sorted_len * 4);
        memcpy(bad.expert_ids, ref.expert_ids, (size_t)sz->vllm_blocks_len * 4);
        memcpy(bad.num_tokens_post_pad, ref.num_tokens_post_pad, 4);
        int32_t* row = bad.topk_ids + t * k;
        int caught = 0;
        if (fault == 0) { /* first and last pick swapped */
          int32_t tmp = row[0];
          row[0] = row[k - 1];
          row[k - 1] = tmp;
          caught = cli_cmp_gate(&c, &bad, &ref, NULL, why, sizeof why) > 0;
          missed = caught ? NULL : "ids swapped";
        } else if (fault == 1) { /* last pick replaced by an expert outside the row */
          int32_t e = (int32_t)cli_rng_range(&r, 0, E - 1);
          for (int j = 0; j < k; j++)
            if (row[j] == e) {
              e = (e + 1) % E;
              j = -1;
            }
          row[k - 1] = e;
          caught = cli_cmp_gate(&c, &bad, &ref, NULL, why, sizeof why) > 0;
          missed = caught ? NULL : "an id replaced";
        } else if (fault == 2) { /* a weight off by 1e-4 relative */
          bad.topk_weights[t * k] *= 1.0001f;
          caught = cli_cmp_gate(&c, &bad, &ref, NULL, why, sizeof why) > 0;
          missed = caught ? NULL : "a weight off by 1e-4";
        } else if (fault == 3) { /* one sorted entry changed */
          if (c.p.layouts & MOEROUTE_LAYOUT_CK) bad.sorted_ids[0] ^= 1;
          else bad.sorted_token_ids[0] ^= 1;
          caught = cli_cmp_sorted(&bad, &ref, &c.p, why, sizeof why) > 0;
          missed = caught ? NULL : "a sorted entry changed";
        } else { /* a write past the valid range */
          int64_t total = (c.p.layouts & MOEROUTE_LAYOUT_CK) ? bad.num_valid_ids[0] : bad.num_tokens_post_pad[0];
          int64_t cap = (c.p.layouts & MOEROUTE_LAYOUT_CK) ? sz->ck_sorted_len : sz->vllm_sorted_len;
          if (total < cap) {
            if (c.p.layouts & MOEROUTE_LAYOUT_CK) bad.sorted_ids[cap - 1] = 0;
            else bad.sorted_token_ids[cap - 1] = 0;
            caught = cli_check_tail(&bad, &c.p, why, sizeof why) > 0;
            missed = caught ? NULL : "a write past total";
          }
        }
      }
      if (missed) snprintf(why, sizeof why, "a planted fault was not caught: %s (row %lld)", missed, (long long)t);
      record(v, P_SELF_TEST, missed == NULL, &c, why);
    }
    host_route_free(&ref);
    host_route_free(&bad);
    route_case_free(&c);
  }
}

static cli_rng case_rng(uint64_t seed, int64_t index) {
  cli_rng r = {seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)index * 0xd1b54a32d192ed03ull};
  cli_rng_next(&r);
  return r;
}

int cmd_verify(int argc, char** argv) {
  cli_backend backend = CLI_BACKEND_AUTO;
  int64_t count = 300, seed = 1, only = -1;
  int verbose = 0;
  for (int i = 0; i < argc; i++) {
    const char* v = NULL;
    if (cli_is_help(argv[i])) {
      fputs(verify_usage, stdout);
      return CLI_EXIT_OK;
    }
    if (cli_opt(argc, argv, &i, "--backend", &v)) {
      if (cli_parse_backend(v, &backend)) {
        cli_error("--backend: '%s' is not auto, cpu or cuda", v);
        return CLI_EXIT_USAGE;
      }
    } else if (cli_opt(argc, argv, &i, "--count", &v)) {
      if (cli_parse_i64("--count", v, 0, 100000000, &count)) return CLI_EXIT_USAGE;
    } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
      if (cli_parse_i64("--seed", v, 0, INT64_MAX, &seed)) return CLI_EXIT_USAGE;
    } else if (cli_opt(argc, argv, &i, "--case", &v)) {
      if (cli_parse_i64("--case", v, 0, INT64_MAX, &only)) return CLI_EXIT_USAGE;
    } else if (cli_flag(argv[i], "--verbose")) {
      verbose = 1;
    } else {
      cli_error("verify: unknown option '%s' (see moeroute verify --help)", argv[i]);
      return CLI_EXIT_USAGE;
    }
  }

  verify_state v;
  memset(&v, 0, sizeof v);
  v.verbose = verbose;
  int have_gpu = cli_cuda_built() && moeroute_cuda_device_count() > 0;
  v.run_cpu = backend != CLI_BACKEND_CUDA;
  v.run_cuda = backend != CLI_BACKEND_CPU && have_gpu;
  if (backend == CLI_BACKEND_CUDA && !have_gpu) {
    cli_error("--backend cuda: %s", cli_cuda_built() ? "no CUDA device found" : "this moeroute was built without CUDA");
    return CLI_EXIT_FAIL;
  }
  if (backend == CLI_BACKEND_AUTO && !have_gpu)
    cli_note("cuda paths skipped: %s", cli_cuda_built() ? "no CUDA device found" : "built without CUDA");
#ifdef MOEROUTE_WITH_CUDA
  cudaStream_t stream = NULL;
  if (v.run_cuda) {
    cudaError_t ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (ce != cudaSuccess) {
      cli_error("cuda: cudaStreamCreate failed: %s", cudaGetErrorString(ce));
      return CLI_EXIT_FAIL;
    }
    v.stream = stream;
  }
#endif

  if (only < 0) self_test(&v, (uint64_t)seed);
  const int npresets = moeroute_preset_count();
  const int ntok = (int)(sizeof preset_tokens / sizeof preset_tokens[0]);
  const int64_t total_cases = (int64_t)npresets * ntok + count;
  double t0 = cli_now_us(), last_note = t0;
  int stop = 0;
  for (int64_t idx = 0; idx < total_cases && !stop; idx++) {
    if (only >= 0 && idx != only) continue;
    v.case_index = idx;
    cli_rng r = case_rng((uint64_t)seed, idx);
    route_case c;
    memset(&c, 0, sizeof c);
    moeroute_params_init(&c.p);
    case_extras x;
    if (idx < (int64_t)npresets * ntok) {
      const moeroute_preset* m = moeroute_preset_at((int)(idx / ntok));
      moeroute_params_from_preset(&c.p, m);
      c.p.num_tokens = preset_tokens[idx % ntok];
      c.p.unit_size = cli_rng_uniform(&r) < 0.7 ? 32 : pick_unit(&r);
      random_extras(&r, &c.p, &x, m->has_bias);
      x.bias_range = 0.1;
      x.nonfinite = 0;
      x.has_mask = cli_rng_uniform(&r) < 0.15;
      x.moe_buf_bytes = c.p.num_tokens <= 256 ? (size_t)(2 * c.p.num_tokens * m->model_dim) : x.moe_buf_bytes;
      x.tag = m->name;
      stop = run_case(&v, &r, &c, &x) != 0;
    } else {
      random_params(&r, &c.p);
      random_extras(&r, &c.p, &x, -1);
      stop = run_case(&v, &r, &c, &x) != 0;
    }
    route_case_free(&c);
    double now = cli_now_us();
    if (now - last_note > 5e6) {
      cli_note("verify: %" PRId64 "/%" PRId64 " cases, %.0f s", idx + 1, total_cases, (now - t0) * 1e-6);
      last_note = now;
    }
  }
#ifdef MOEROUTE_WITH_CUDA
  if (stream) cudaStreamDestroy(stream);
#endif

  int64_t passed = 0, failed = 0;
  printf("%-20s %8s %8s %8s %8s %10s\n", "path", "cases", "passed", "failed", "skipped", "near-ties");
  for (int pth = 0; pth < P_COUNT; pth++) {
    const path_stat* s = &v.stat[pth];
    int is_cuda = pth >= P_CUDA_ROUTE && pth <= P_CUDA_CHAIN;
    if ((is_cuda && !v.run_cuda) || (!is_cuda && !v.run_cpu && s->cases == 0)) {
      printf("%-20s %8s %8s %8s %8s %10s  (%s)\n", path_names[pth], "-", "-", "-", "-", "-",
             is_cuda ? (cli_cuda_built() ? "no CUDA device" : "built without CUDA") : "not selected");
      continue;
    }
    printf("%-20s %8" PRId64 " %8" PRId64 " %8" PRId64 " %8" PRId64 " %10" PRId64 "\n", path_names[pth], s->cases,
           s->passed, s->failed, s->skipped, s->near_tie_rows);
    passed += s->passed;
    failed += s->failed;
  }
  if (stop) {
    printf("stopped early on a CUDA error (case %" PRId64 ")\n", v.case_index);
    failed++;
  }
  printf("%" PRId64 " passed, %" PRId64 " failed\n", passed, failed);
  return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
