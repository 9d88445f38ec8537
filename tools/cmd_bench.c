/*
 * cmd_bench.c - `moeroute bench`: the metrics and shapes of
 * docs/benchmarking.md (shared docs), verifying while it times.
 *
 * CPU: per-call time of moeroute_cpu_route and of the chain gate + sort
 * (median of repeated calls) and the logits routed per second, for every
 * preset and T in {1, 2, 4, ..., 16384}.
 *
 * CUDA: for each shape, the fused path (moeroute_cuda_route) and the unfused
 * chain (moeroute_cuda_gate then moeroute_cuda_sort) side by side; both clear
 * moe_buf [T, model_dim] bf16 (the chain in its sort call) and both write
 * topk_ids/topk_weights. Three metrics per path:
 *   kernel  50 calls captured in one CUDA graph; events around one replay / 50;
 *           median of >= 7 replays (the main figure)
 *   graph   one call per graph; 200 replays back to back; events around them / 200
 *   eager   events around each single call, L2 flushed (memset of 2x L2) before
 *           each; median of >= 50
 * and in the same run the floors: the one-block floor kernel (kernel, one-node
 * graph, eager) and a cudaMemsetAsync of the same moe_buf (kernel metric).
 *
 * Every timed configuration is then run once more on outputs filled with a
 * canary and checked against the CPU backend (ids exactly, or a near-tie the
 * contract allows; sorted outputs bit for bit against the CPU sort of the
 * path's own top-k; nothing written past the valid range; moe_buf zero). The
 * `wrong` column counts failed checks and must read 0; bench exits 1 otherwise.
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

static const char* const bench_usage =
    "usage: moeroute bench [options]\n"
    "\n"
    "Time routing per call, verifying every timed output against the CPU backend.\n"
    "  CPU:  route and the gate+sort chain, median microseconds per call, logits/s\n"
    "  CUDA: fused route vs the gate+sort chain, moe_buf [T, model_dim] bf16 cleared in\n"
    "        both, metrics kernel / graph / eager (see docs/benchmarking.md), speedup\n"
    "        (chain / fused, kernel metric), and the floors of the same run\n"
    "\n"
    "options:\n"
    "  --backend B        auto (default: cuda when a GPU is present, else cpu) | cpu | cuda\n"
    "  --format F         table (default) | csv (one header line) | json (array of objects)\n"
    "  --models A,B,...   presets to run (default: all; moeroute models lists them)\n"
    "  --tokens 1,2,...   token counts (default CPU: 1,2,4,8,12,16,64,256,1024,4096,16384;\n"
    "                     CUDA: 1,2,4,8,12,16)\n"
    "  --unit-size U      block size (default 32)\n"
    "  --layout L         ck (default, the seed's) | vllm | both\n"
    "  --seed S           seed of the random logits and biases (default 1)\n"
    "  --quick            fewer shapes and repetitions (a smoke run)\n"
    "  --no-moe-buf       CUDA: do not clear moe_buf (time the routing alone)\n"
    "  --kernel-only      CUDA: only the kernel metric (fast sweeps over large T)\n"
    "\n"
    "Inputs: logits uniform in [-2, 2) rounded to the preset's router dtype, fresh per\n"
    "shape; presets with a bias get one uniform in [-0.1, 0.1).\n"
    "exit status: 0 ok, 1 a wrong output or an error, 2 usage error\n";

/* ---- output rows: table, csv or json, streamed ------------------------------ */

enum { FMT_TABLE, FMT_CSV, FMT_JSON };

typedef struct col {
  const char* name;
  int width; /* table */
  int prec;  /* numbers: digits after the point; -1: %.4g; -2: text */
} col;

typedef struct writer {
  int format;
  const col* cols;
  int ncols;
  int rows;
} writer;

static void w_begin(writer* w) {
  if (w->format == FMT_JSON) {
    printf("[");
  } else {
    for (int i = 0; i < w->ncols; i++) {
      if (w->format == FMT_CSV) printf("%s%s", i ? "," : "", w->cols[i].name);
      else printf(i ? " %*s" : "%-*s", w->cols[i].width, w->cols[i].name);
    }
    printf("\n");
  }
  fflush(stdout);
}

/* text[i] for text columns, num[i] (NaN = missing) for the others */
static void w_row(writer* w, const char* const* text, const double* num) {
  if (w->format == FMT_JSON) printf("%s\n  {", w->rows ? "," : "");
  for (int i = 0; i < w->ncols; i++) {
    const col* c = &w->cols[i];
    char buf[64];
    if (c->prec == -2) snprintf(buf, sizeof buf, "%s", text[i] ? text[i] : "");
    else if (isnan(num[i])) snprintf(buf, sizeof buf, "%s", w->format == FMT_JSON ? "null" : w->format == FMT_CSV ? "" : "-");
    else if (c->prec == -1) snprintf(buf, sizeof buf, "%.4g", num[i]);
    else snprintf(buf, sizeof buf, "%.*f", c->prec, num[i]);
    if (w->format == FMT_JSON) {
      if (c->prec == -2) printf("%s\"%s\": \"%s\"", i ? ", " : "", c->name, buf); /* our texts need no escaping */
      else printf("%s\"%s\": %s", i ? ", " : "", c->name, buf);
    } else if (w->format == FMT_CSV) {
      printf("%s%s", i ? "," : "", buf);
    } else {
      printf(i ? " %*s" : "%-*s", c->width, buf);
    }
  }
  if (w->format == FMT_JSON) printf("}");
  else printf("\n");
  w->rows++;
  fflush(stdout);
}

static void w_end(writer* w) {
  if (w->format == FMT_JSON) printf("%s]\n", w->rows ? "\n" : "");
}

/* ---- shapes ---------------------------------------------------------------------- */

typedef struct bench_opts {
  cli_backend backend;
  int format, quick;
  int no_moe_buf;  /* --no-moe-buf: time routing alone */
  int kernel_only; /* --kernel-only: skip the graph and eager metrics (long sweeps) */
  int32_t unit_size;
  uint32_t layouts;
  uint64_t seed;
  const moeroute_preset** models;
  int nmodels;
  int64_t* tokens;
  int ntokens;
} bench_opts;

/* The inputs of one shape: preset settings, T, uniform logits, a bias if the model has one. */
static int make_case(const bench_opts* o, const moeroute_preset* m, int64_t T, route_case* c, char* err, size_t n) {
  memset(c, 0, sizeof *c);
  moeroute_params_init(&c->p);
  moeroute_params_from_preset(&c->p, m);
  c->p.num_tokens = T;
  c->p.unit_size = o->unit_size;
  c->p.layouts = o->layouts;
  /* fresh data per shape, reproducible from the seed */
  cli_rng r = {o->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)T * 0xd1b54a32d192ed03ull ^ (uint64_t)(uintptr_t)m->num_experts};
  for (const char* q = m->name; *q; q++) r.state = r.state * 31 + (unsigned char)*q;
  c->logits = cli_malloc(route_case_logits_bytes(c));
  if (m->has_bias) c->bias = (float*)cli_malloc((size_t)m->num_experts * sizeof(float));
  if (!c->logits || (m->has_bias && !c->bias)) {
    snprintf(err, n, "out of host memory for T=%lld", (long long)T);
    route_case_free(c);
    return -1;
  }
  cli_fill_uniform_logits(&r, c);
  if (c->bias)
    for (int32_t e = 0; e < m->num_experts; e++) c->bias[e] = (float)(cli_rng_uniform(&r) * 0.2 - 0.1);
  snprintf(c->desc, sizeof c->desc, "%s T=%lld", m->name, (long long)T);
  return 0;
}

/* Progress on stderr every few seconds of a long sweep. */
typedef struct progress {
  double start, last;
  int done, total;
} progress;

static void progress_step(progress* pr, const char* what) {
  pr->done++;
  double now = cli_now_us();
  if (now - pr->last > 3e6 && pr->done < pr->total) {
    cli_note("bench: %d/%d shapes (%s), %.0f s", pr->done, pr->total, what, (now - pr->start) * 1e-6);
    pr->last = now;
  }
}

/* ---- CPU ----------------------------------------------------------------------------- */

typedef struct cpu_ctx {
  const moeroute_params* p;
  moeroute_params pg; /* gate: no moe_buf */
  moeroute_buffers route, gate, sort;
  moeroute_status st;
} cpu_ctx;

static void cpu_route_call(cpu_ctx* x) { x->st = moeroute_cpu_route(x->p, &x->route); }
static void cpu_chain_call(cpu_ctx* x) {
  x->st = moeroute_cpu_gate(&x->pg, &x->gate);
  if (x->st == MOEROUTE_OK) x->st = moeroute_cpu_sort(x->p, &x->sort);
}

/* Median microseconds per call: at least min_reps calls and budget_us of calls. */
static double time_cpu(void (*fn)(cpu_ctx*), cpu_ctx* x, double budget_us, int min_reps) {
  enum { MAX_REPS = 20000 };
  static double v[MAX_REPS];
  fn(x); /* warm caches and pages */
  if (x->st != MOEROUTE_OK) return NAN;
  int n = 0;
  double start = cli_now_us();
  while (n < MAX_REPS && (n < min_reps || cli_now_us() - start < budget_us)) {
    double t0 = cli_now_us();
    fn(x);
    v[n++] = cli_now_us() - t0;
    if (x->st != MOEROUTE_OK) return NAN;
  }
  return cli_median(v, n);
}

static int bench_cpu(const bench_opts* o) {
  static const col cols[] = {
      {"model", 20, -2},    {"T", 6, 0},           {"E", 5, 0},           {"k", 3, 0},         {"dtype", 5, -2},
      {"U", 4, 0},          {"layout", 6, -2},     {"route_us", 10, 2},   {"chain_us", 10, 2}, {"speedup", 7, 2},
      {"route_logits_per_s", 18, -1}, {"chain_logits_per_s", 18, -1}, {"wrong", 5, 0}, {"backend", 7, -2}};
  enum { NC = sizeof cols / sizeof cols[0] };
  writer w = {o->format, cols, NC, 0};
  if (o->format == FMT_TABLE) {
    printf("# moeroute bench, backend cpu (single thread), %s\n", moeroute_build_info());
    printf("# per call: median of repeated calls; chain = moeroute_cpu_gate + moeroute_cpu_sort; no moe_buf\n");
  }
  w_begin(&w);
  const double budget = o->quick ? 2e4 : 2e5;
  const int min_reps = o->quick ? 3 : 7;
  progress pr = {cli_now_us(), cli_now_us(), 0, o->nmodels * o->ntokens};
  int64_t wrong_total = 0;
  int rc = CLI_EXIT_OK;
  for (int mi = 0; mi < o->nmodels; mi++) {
    for (int ti = 0; ti < o->ntokens; ti++) {
      const moeroute_preset* m = o->models[mi];
      route_case c;
      char err[512];
      if (make_case(o, m, o->tokens[ti], &c, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_FAIL;
      }
      const moeroute_params* p = &c.p;
      host_route route, chain, fresh;
      if (host_route_alloc(&route, p, err, sizeof err) || host_route_alloc(&chain, p, err, sizeof err) ||
          host_route_alloc(&fresh, p, err, sizeof err)) {
        cli_error("%s: %s", c.desc, err);
        route_case_free(&c);
        return CLI_EXIT_FAIL;
      }
      host_route_fill(&route, CLI_CANARY);
      host_route_fill(&chain, CLI_CANARY);
      host_route_fill(&fresh, CLI_CANARY);
      cpu_ctx x;
      memset(&x, 0, sizeof x);
      x.p = p;
      x.pg = *p;
      size_t ws_route = 0, ws_gate = 0, ws_sort = 0;
      moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, p, &ws_route);
      moeroute_cpu_workspace_size(MOEROUTE_OP_GATE, &x.pg, &ws_gate);
      moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, p, &ws_sort);
      size_t ws = ws_route > ws_gate ? ws_route : ws_gate;
      if (ws_sort > ws) ws = ws_sort;
      void* work = cli_malloc(ws);
      moeroute_buffers_init(&x.route);
      x.route.logits = c.logits;
      x.route.bias = c.bias;
      host_route_bind(&route, p, 1, &x.route);
      x.route.workspace = work;
      x.route.workspace_bytes = ws;
      moeroute_buffers_init(&x.gate);
      x.gate.logits = c.logits;
      x.gate.bias = c.bias;
      x.gate.topk_ids = chain.topk_ids;
      x.gate.topk_weights = chain.topk_weights;
      x.gate.workspace = work;
      x.gate.workspace_bytes = ws;
      moeroute_buffers_init(&x.sort);
      host_route_bind(&chain, p, 1, &x.sort);
      x.sort.workspace = work;
      x.sort.workspace_bytes = ws;

      double route_us = time_cpu(cpu_route_call, &x, budget, min_reps);
      if (x.st == MOEROUTE_OK) {
        double chain_us = time_cpu(cpu_chain_call, &x, budget, min_reps);
        /* verify: the timed buffers against a fresh call */
        int64_t wrong = 0;
        if (x.st == MOEROUTE_OK) {
          moeroute_status st = cli_cpu_run(MOEROUTE_OP_ROUTE, &c, p, &fresh, NULL, NULL, NULL);
          if (st != MOEROUTE_OK) {
            cli_error("%s: moeroute_cpu_route: %s", c.desc, moeroute_last_error());
            rc = CLI_EXIT_FAIL;
          }
          char why[512];
          int64_t bad = cli_cmp_topk(&route, &fresh, p, why, sizeof why) + cli_cmp_sorted(&route, &fresh, p, why, sizeof why) +
                        cli_cmp_topk(&chain, &fresh, p, why, sizeof why) + cli_cmp_sorted(&chain, &fresh, p, why, sizeof why) +
                        cli_check_tail(&route, p, why, sizeof why) + cli_check_tail(&chain, p, why, sizeof why);
          if (bad) cli_error("%s: wrong output: %s", c.desc, why);
          wrong += bad;
        }
        if (x.st != MOEROUTE_OK) {
          cli_error("%s: %s: %s", c.desc, moeroute_status_string(x.st), moeroute_last_error());
          rc = CLI_EXIT_FAIL;
        }
        wrong_total += wrong;
        const double T = (double)p->num_tokens;
        const char* text[NC] = {m->name, NULL, NULL, NULL, cli_dtype_name(p->logits_dtype), NULL,
                                cli_layout_name(p->layouts), NULL, NULL, NULL, NULL, NULL, NULL, "cpu"};
        double num[NC] = {NAN,
                          T,
                          p->num_experts,
                          p->top_k,
                          NAN,
                          p->unit_size,
                          NAN,
                          route_us,
                          chain_us,
                          chain_us / route_us,
                          T / (route_us * 1e-6),
                          T / (chain_us * 1e-6),
                          (double)wrong,
                          NAN};
        w_row(&w, text, num);
      } else {
        cli_error("%s: moeroute_cpu_route: %s: %s", c.desc, moeroute_status_string(x.st), moeroute_last_error());
        rc = CLI_EXIT_FAIL;
      }
      free(work);
      host_route_free(&route);
      host_route_free(&chain);
      host_route_free(&fresh);
      route_case_free(&c);
      progress_step(&pr, c.desc);
    }
  }
  w_end(&w);
  if (wrong_total) {
    cli_error("%" PRId64 " wrong outputs", wrong_total);
    rc = CLI_EXIT_FAIL;
  }
  return rc;
}

/* ---- CUDA ------------------------------------------------------------------------------ */

#ifdef MOEROUTE_WITH_CUDA

#define CU_TRY(call)                                                                                   \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      cli_error("%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, __LINE__);          \
      return -1;                                                                                       \
    }                                                                                                  \
  } while (0)

/* What gets timed: enqueue one call on stream s; 0 ok, -1 with a message printed. */
typedef int (*enqueue_fn)(void* ctx, cudaStream_t s);

typedef struct timer {
  cudaEvent_t start, stop;
  void* flush;       /* 2x L2, memset before each eager call */
  size_t flush_bytes;
  int kernel_replays, eager_calls, graph_repeats;
} timer;

enum { KERNEL_CALLS = 50, GRAPH_REPLAYS = 200 };

static int capture(enqueue_fn fn, void* ctx, cudaStream_t s, int calls, cudaGraphExec_t* exec) {
  cudaGraph_t graph = NULL;
  CU_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  int bad = 0;
  for (int i = 0; i < calls && !bad; i++) bad = fn(ctx, s) != 0;
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  if (bad || e != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    if (!bad) cli_error("cudaStreamEndCapture failed: %s (is the call graph-capturable?)", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
  }
  e = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    cli_error("cudaGraphInstantiate failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

/* kernel metric: 50 calls in one graph, events around one replay / 50, median of replays */
static int time_kernel(const timer* t, enqueue_fn fn, void* ctx, cudaStream_t s, double* us) {
  cudaGraphExec_t exec;
  if (capture(fn, ctx, s, KERNEL_CALLS, &exec) != 0) return -1;
  double v[256];
  int n = t->kernel_replays < 256 ? t->kernel_replays : 256;
  for (int i = 0; i < 2; i++) CU_TRY(cudaGraphLaunch(exec, s)); /* warm-up */
  for (int i = 0; i < n; i++) {
    float ms = 0;
    CU_TRY(cudaEventRecord(t->start, s));
    CU_TRY(cudaGraphLaunch(exec, s));
    CU_TRY(cudaEventRecord(t->stop, s));
    CU_TRY(cudaEventSynchronize(t->stop));
    CU_TRY(cudaEventElapsedTime(&ms, t->start, t->stop));
    v[i] = ms * 1e3 / KERNEL_CALLS;
  }
  cudaGraphExecDestroy(exec);
  *us = cli_median(v, n);
  return 0;
}

/* graph metric: one call per graph, 200 replays back to back / 200 (median of a few such runs) */
static int time_graph(const timer* t, enqueue_fn fn, void* ctx, cudaStream_t s, double* us) {
  cudaGraphExec_t exec;
  if (capture(fn, ctx, s, 1, &exec) != 0) return -1;
  double v[16];
  int n = t->graph_repeats < 16 ? t->graph_repeats : 16;
  for (int i = 0; i < 10; i++) CU_TRY(cudaGraphLaunch(exec, s));
  for (int r = 0; r < n; r++) {
    float ms = 0;
    CU_TRY(cudaEventRecord(t->start, s));
    for (int i = 0; i < GRAPH_REPLAYS; i++) CU_TRY(cudaGraphLaunch(exec, s));
    CU_TRY(cudaEventRecord(t->stop, s));
    CU_TRY(cudaEventSynchronize(t->stop));
    CU_TRY(cudaEventElapsedTime(&ms, t->start, t->stop));
    v[r] = ms * 1e3 / GRAPH_REPLAYS;
  }
  cudaGraphExecDestroy(exec);
  *us = cli_median(v, n);
  return 0;
}

/* eager metric: events around each call, L2 flushed before each, median */
static int time_eager(const timer* t, enqueue_fn fn, void* ctx, cudaStream_t s, double* us) {
  double v[1024];
  int n = t->eager_calls < 1024 ? t->eager_calls : 1024;
  const int warm = 5;
  for (int i = 0; i < warm + n; i++) {
    float ms = 0;
    CU_TRY(cudaMemsetAsync(t->flush, i & 0xff, t->flush_bytes, s));
    CU_TRY(cudaEventRecord(t->start, s));
    if (fn(ctx, s) != 0) return -1;
    CU_TRY(cudaEventRecord(t->stop, s));
    CU_TRY(cudaEventSynchronize(t->stop));
    CU_TRY(cudaEventElapsedTime(&ms, t->start, t->stop));
    if (i >= warm) v[i - warm] = ms * 1e3;
  }
  *us = cli_median(v, n);
  return 0;
}

typedef struct gpu_ctx {
  const moeroute_params* p;
  moeroute_params pg; /* gate: no moe_buf */
  moeroute_buffers route, gate, sort;
  void* floor_line;
  void* moe_buf;
  size_t moe_buf_bytes;
} gpu_ctx;

static int status_ok(moeroute_status st, const char* fn) {
  if (st == MOEROUTE_OK) return 0;
  cli_error("%s: %s: %s", fn, moeroute_status_string(st), moeroute_last_error());
  return -1;
}
static int enq_fused(void* v, cudaStream_t s) {
  gpu_ctx* x = (gpu_ctx*)v;
  return status_ok(moeroute_cuda_route(x->p, &x->route, s), "moeroute_cuda_route");
}
static int enq_chain(void* v, cudaStream_t s) {
  gpu_ctx* x = (gpu_ctx*)v;
  if (status_ok(moeroute_cuda_gate(&x->pg, &x->gate, s), "moeroute_cuda_gate")) return -1;
  return status_ok(moeroute_cuda_sort(x->p, &x->sort, s), "moeroute_cuda_sort");
}
static int enq_sort(void* v, cudaStream_t s) {
  gpu_ctx* x = (gpu_ctx*)v;
  return status_ok(moeroute_cuda_sort(x->p, &x->sort, s), "moeroute_cuda_sort");
}
static int enq_floor(void* v, cudaStream_t s) {
  gpu_ctx* x = (gpu_ctx*)v;
  int e = mr_floor_kernel_launch(x->floor_line, s);
  if (e == 0) return 0;
  cli_error("floor kernel launch failed: %s", cudaGetErrorString((cudaError_t)e));
  return -1;
}
static int enq_memset(void* v, cudaStream_t s) {
  gpu_ctx* x = (gpu_ctx*)v;
  cudaError_t e = cudaMemsetAsync(x->moe_buf, 0, x->moe_buf_bytes, s);
  if (e == cudaSuccess) return 0;
  cli_error("cudaMemsetAsync(moe_buf) failed: %s", cudaGetErrorString(e));
  return -1;
}

/* Run one path once more on canary-filled outputs and check it against the CPU
 * reference. Returns the number of failed checks, -1 on a CUDA error. */
static int64_t check_path(enqueue_fn fn, gpu_ctx* x, gpu_route* g, const route_case* c, const host_route* ref,
                          cudaStream_t s, const char* path) {
  char err[512], why[512] = "";
  if (gpu_route_fill(g, CLI_CANARY, err, sizeof err) != 0) {
    cli_error("%s", err);
    return -1;
  }
  if (fn(x, s) != 0) return -1;
  CU_TRY(cudaStreamSynchronize(s));
  host_route got, want;
  if (host_route_alloc(&got, &c->p, err, sizeof err) || host_route_alloc(&want, &c->p, err, sizeof err)) {
    cli_error("%s", err);
    return -1;
  }
  int64_t bad = 0;
  if (gpu_route_download(g, &got, err, sizeof err) != 0) {
    cli_error("%s", err);
    bad = -1;
    goto out;
  }
  int64_t near = 0;
  bad += cli_cmp_gate(c, &got, ref, &near, why, sizeof why);
  if (bad) goto report;
  moeroute_params pq = c->p;
  pq.moe_buf_bytes = 0;
  /* the sort must be the CPU sort of the path's own top-k (its sorted_weights
   * copy its own weights, which may differ from the CPU's within 1e-5) */
  if (cli_cpu_run(MOEROUTE_OP_SORT, c, &pq, &want, got.topk_ids, got.topk_weights, NULL) == MOEROUTE_OK) {
    bad += cli_cmp_sorted(&got, &want, &c->p, why, sizeof why);
  } else {
    snprintf(why, sizeof why, "moeroute_cpu_sort: %s", moeroute_last_error());
    bad++;
  }
  if (!bad) bad += cli_check_tail(&got, &c->p, why, sizeof why);
  if (!bad) {
    int z = gpu_moe_buf_is_zero(g, err, sizeof err);
    if (z < 0) {
      cli_error("%s", err);
      bad = -1;
      goto out;
    }
    if (!z) {
      snprintf(why, sizeof why, "%s", err);
      bad++;
    }
  }
report:
  if (bad > 0) cli_error("%s %s: wrong output: %s", c->desc, path, why);
out:
  host_route_free(&got);
  host_route_free(&want);
  return bad;
}

static int bench_cuda(const bench_opts* o) {
  static const col cols[] = {{"model", 20, -2},          {"T", 6, 0},
                             {"E", 5, 0},                {"k", 3, 0},
                             {"dtype", 5, -2},           {"U", 4, 0},
                             {"layout", 6, -2},          {"moe_buf_bytes", 13, 0},
                             {"fused_kernel_us", 15, 2}, {"fused_graph_us", 14, 2},
                             {"fused_eager_us", 14, 2},  {"chain_kernel_us", 15, 2},
                             {"chain_graph_us", 14, 2},  {"chain_eager_us", 14, 2},
                             {"speedup", 7, 2},          {"sort_kernel_us", 14, 2},
                             {"memset_kernel_us", 16, 2},
                             {"floor_kernel_us", 15, 2}, {"floor_graph_us", 14, 2},
                             {"floor_eager_us", 14, 2},  {"wrong", 5, 0},
                             {"device", 10, -2}};
  enum { NC = sizeof cols / sizeof cols[0] };
  int dev = 0;
  struct cudaDeviceProp prop;
  CU_TRY(cudaGetDevice(&dev));
  CU_TRY(cudaGetDeviceProperties(&prop, dev));
  char device[256];
  snprintf(device, sizeof device, "%s", prop.name);
  for (char* q = device; *q; q++)
    if (*q == ',' || *q == '"') *q = ' '; /* keep csv/json plain */

  timer t;
  memset(&t, 0, sizeof t);
  t.kernel_replays = o->quick ? 7 : 21;
  t.eager_calls = o->quick ? 50 : 100;
  t.graph_repeats = o->quick ? 1 : 3;
  t.flush_bytes = 2 * (size_t)(prop.l2CacheSize > 0 ? prop.l2CacheSize : (64 << 20));
  CU_TRY(cudaMalloc(&t.flush, t.flush_bytes));
  CU_TRY(cudaEventCreate(&t.start));
  CU_TRY(cudaEventCreate(&t.stop));
  cudaStream_t s;
  CU_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  /* the floors, once per run */
  gpu_ctx fx;
  memset(&fx, 0, sizeof fx);
  CU_TRY(cudaMalloc(&fx.floor_line, 128));
  CU_TRY(cudaMemset(fx.floor_line, 0, 128));
  double floor_kernel = NAN, floor_graph = NAN, floor_eager = NAN;
  if (time_kernel(&t, enq_floor, &fx, s, &floor_kernel) || time_graph(&t, enq_floor, &fx, s, &floor_graph) ||
      time_eager(&t, enq_floor, &fx, s, &floor_eager))
    return -1;

  writer w = {o->format, cols, NC, 0};
  if (o->format == FMT_TABLE) {
    printf("# moeroute bench, backend cuda: %s, %d SMs, L2 %d MiB; %s\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20, moeroute_build_info());
    printf("# kernel: %d calls in one graph, median of %d replays; graph: 1 call per graph, %d replays; eager: "
           "median of %d calls, L2 flushed before each. Microseconds per call.\n",
           KERNEL_CALLS, t.kernel_replays, GRAPH_REPLAYS, t.eager_calls);
    printf("# fused = moeroute_cuda_route; chain = moeroute_cuda_gate + moeroute_cuda_sort; both clear moe_buf "
           "[T, model_dim] bf16; speedup = chain / fused (kernel)\n");
    printf("# floors: one-block kernel %.2f us (kernel), %.2f us (one-node graph), %.2f us (eager)\n", floor_kernel,
           floor_graph, floor_eager);
  }
  w_begin(&w);
  progress pr = {cli_now_us(), cli_now_us(), 0, o->nmodels * o->ntokens};
  int64_t wrong_total = 0;
  int rc = 0;
  for (int mi = 0; mi < o->nmodels && rc == 0; mi++) {
    for (int ti = 0; ti < o->ntokens && rc == 0; ti++) {
      const moeroute_preset* m = o->models[mi];
      route_case c;
      char err[512];
      if (make_case(o, m, o->tokens[ti], &c, err, sizeof err) != 0) {
        cli_error("%s", err);
        rc = -1;
        break;
      }
      const moeroute_params* p = &c.p;
      /* both paths clear moe_buf [T, model_dim] bf16 */
      c.p.moe_buf_bytes = o->no_moe_buf ? 0 : (size_t)(2 * p->num_tokens * (int64_t)m->model_dim);
      gpu_route g;
      if (gpu_route_alloc(&g, &c, c.p.moe_buf_bytes, err, sizeof err) != 0) {
        cli_error("%s: %s", c.desc, err);
        route_case_free(&c);
        rc = -1;
        break;
      }
      gpu_ctx x;
      memset(&x, 0, sizeof x);
      x.p = p;
      x.pg = *p;
      x.pg.moe_buf_bytes = 0;
      gpu_route_bind(&g, p, MOEROUTE_OP_ROUTE, 1, &x.route);
      gpu_route_bind(&g, &x.pg, MOEROUTE_OP_GATE, 1, &x.gate);
      gpu_route_bind(&g, p, MOEROUTE_OP_SORT, 1, &x.sort);
      x.moe_buf = g.moe_buf;
      x.moe_buf_bytes = g.moe_buf_bytes;
      int fused_ok = moeroute_cuda_supports(MOEROUTE_OP_ROUTE, p);
      int chain_ok = moeroute_cuda_supports(MOEROUTE_OP_GATE, &x.pg) && moeroute_cuda_supports(MOEROUTE_OP_SORT, p);
      double fk = NAN, fg = NAN, fe = NAN, ck = NAN, cg = NAN, ce = NAN, mk = NAN, sk = NAN;
      const int all = !o->kernel_only;
      if (fused_ok && (time_kernel(&t, enq_fused, &x, s, &fk) || (all && time_graph(&t, enq_fused, &x, s, &fg)) ||
                       (all && time_eager(&t, enq_fused, &x, s, &fe))))
        rc = -1;
      if (rc == 0 && chain_ok &&
          (time_kernel(&t, enq_chain, &x, s, &ck) || (all && time_graph(&t, enq_chain, &x, s, &cg)) ||
           (all && time_eager(&t, enq_chain, &x, s, &ce))))
        rc = -1;
      /* sort alone (engines that run their own router); its topk input is what the chain's gate left */
      if (rc == 0 && chain_ok && time_kernel(&t, enq_sort, &x, s, &sk)) rc = -1;
      if (rc == 0 && x.moe_buf_bytes && time_kernel(&t, enq_memset, &x, s, &mk)) rc = -1;
      if (rc == 0 && !x.moe_buf_bytes) mk = 0;

      /* verify what was timed */
      int64_t wrong = 0;
      if (rc == 0 && (fused_ok || chain_ok)) {
        host_route ref;
        if (host_route_alloc(&ref, p, err, sizeof err) != 0) {
          cli_error("%s", err);
          rc = -1;
        } else {
          moeroute_params pq = *p;
          pq.moe_buf_bytes = 0;
          moeroute_status st = cli_cpu_run(MOEROUTE_OP_ROUTE, &c, &pq, &ref, NULL, NULL, NULL);
          if (st != MOEROUTE_OK) {
            cli_error("%s: moeroute_cpu_route: %s", c.desc, moeroute_last_error());
            rc = -1;
          }
          int64_t b1 = rc == 0 && fused_ok ? check_path(enq_fused, &x, &g, &c, &ref, s, "fused") : 0;
          int64_t b2 = rc == 0 && b1 >= 0 && chain_ok ? check_path(enq_chain, &x, &g, &c, &ref, s, "chain") : 0;
          if (b1 < 0 || b2 < 0) rc = -1;
          else wrong = b1 + b2;
          host_route_free(&ref);
        }
      }
      if (!fused_ok || !chain_ok)
        cli_note("%s: CUDA has no path for the %s (moeroute_cuda_supports)", c.desc,
                 !fused_ok && !chain_ok ? "fused route or the chain" : !fused_ok ? "fused route" : "chain");
      if (rc == 0) {
        wrong_total += wrong;
        const char* text[NC] = {m->name, NULL, NULL, NULL, cli_dtype_name(p->logits_dtype), NULL,
                                cli_layout_name(p->layouts), NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                NULL, NULL, NULL, NULL, NULL, NULL, NULL, device};
        double num[NC] = {NAN, (double)p->num_tokens, p->num_experts, p->top_k, NAN, p->unit_size, NAN,
                          (double)p->moe_buf_bytes, fk, fg, fe, ck, cg, ce, ck / fk, sk, mk,
                          floor_kernel, floor_graph, floor_eager, (double)wrong, NAN};
        w_row(&w, text, num);
      }
      gpu_route_free(&g);
      route_case_free(&c);
      progress_step(&pr, c.desc);
    }
  }
  w_end(&w);
  cudaStreamDestroy(s);
  cudaEventDestroy(t.start);
  cudaEventDestroy(t.stop);
  cudaFree(t.flush);
  cudaFree(fx.floor_line);
  if (rc != 0) return -1;
  if (wrong_total) {
    cli_error("%" PRId64 " wrong outputs", wrong_total);
    return 1;
  }
  return 0;
}
#endif /* MOEROUTE_WITH_CUDA */

/* ---- the command ---------------------------------------------------------------------- */

int cmd_bench(int argc, char** argv) {
  bench_opts o;
  memset(&o, 0, sizeof o);
  o.backend = CLI_BACKEND_AUTO;
  o.format = FMT_TABLE;
  o.unit_size = 32;
  o.layouts = MOEROUTE_LAYOUT_CK;
  o.seed = 1;
  const char* models = NULL;
  const char* tokens = NULL;
  for (int i = 0; i < argc; i++) {
    const char* v = NULL;
    if (cli_is_help(argv[i])) {
      fputs(bench_usage, stdout);
      return CLI_EXIT_OK;
    }
    if (cli_opt(argc, argv, &i, "--backend", &v)) {
      if (cli_parse_backend(v, &o.backend)) {
        cli_error("--backend: '%s' is not auto, cpu or cuda", v);
        return CLI_EXIT_USAGE;
      }
    } else if (cli_opt(argc, argv, &i, "--format", &v)) {
      if (!strcmp(v, "table")) o.format = FMT_TABLE;
      else if (!strcmp(v, "csv")) o.format = FMT_CSV;
      else if (!strcmp(v, "json")) o.format = FMT_JSON;
      else {
        cli_error("--format: '%s' is not table, csv or json", v);
        return CLI_EXIT_USAGE;
      }
    } else if (cli_opt(argc, argv, &i, "--models", &v)) {
      models = v;
    } else if (cli_opt(argc, argv, &i, "--tokens", &v)) {
      tokens = v;
    } else if (cli_opt(argc, argv, &i, "--unit-size", &v)) {
      int64_t u;
      if (cli_parse_i64("--unit-size", v, 1, MOEROUTE_MAX_UNIT_SIZE, &u)) return CLI_EXIT_USAGE;
      o.unit_size = (int32_t)u;
    } else if (cli_opt(argc, argv, &i, "--layout", &v)) {
      if (cli_parse_layout(v, &o.layouts)) {
        cli_error("--layout: '%s' is not ck, vllm or both", v);
        return CLI_EXIT_USAGE;
      }
    } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
      int64_t sd;
      if (cli_parse_i64("--seed", v, 0, INT64_MAX, &sd)) return CLI_EXIT_USAGE;
      o.seed = (uint64_t)sd;
    } else if (cli_flag(argv[i], "--quick")) {
      o.quick = 1;
    } else if (cli_flag(argv[i], "--no-moe-buf")) {
      o.no_moe_buf = 1;
    } else if (cli_flag(argv[i], "--kernel-only")) {
      o.kernel_only = 1;
    } else {
      cli_error("bench: unknown option '%s' (see moeroute bench --help)", argv[i]);
      return CLI_EXIT_USAGE;
    }
  }

  int use_cuda = 0;
  int have_gpu = cli_cuda_built() && moeroute_cuda_device_count() > 0;
  if (o.backend == CLI_BACKEND_CUDA) {
    if (!have_gpu) {
      cli_error("--backend cuda: %s", cli_cuda_built() ? "no CUDA device found" : "this moeroute was built without CUDA");
      return CLI_EXIT_FAIL;
    }
    use_cuda = 1;
  } else if (o.backend == CLI_BACKEND_AUTO) {
    use_cuda = have_gpu;
    if (!have_gpu) cli_note("bench: backend cpu (%s)", cli_cuda_built() ? "no CUDA device found" : "built without CUDA");
  }

  /* models: the seed's two tables first, then every other preset */
  const int np = moeroute_preset_count();
  o.models = (const moeroute_preset**)calloc((size_t)np + 64, sizeof *o.models);
  if (!o.models) return CLI_EXIT_FAIL;
  if (models) {
    char* copy = (char*)malloc(strlen(models) + 1);
    strcpy(copy, models);
    for (char* name = strtok(copy, ","); name; name = strtok(NULL, ",")) {
      const moeroute_preset* m = moeroute_preset_find(name);
      if (!m) {
        cli_error("--models: unknown model '%s' (moeroute models lists them)", name);
        free(copy);
        free(o.models);
        return CLI_EXIT_USAGE;
      }
      if (o.nmodels < np + 64) o.models[o.nmodels++] = m;
    }
    free(copy);
    if (o.nmodels == 0) {
      cli_error("--models: empty list");
      free(o.models);
      return CLI_EXIT_USAGE;
    }
  } else {
    const char* seed_tables[] = {"deepseek-r1-softmax", "gpt-oss-120b"};
    for (int i = 0; i < 2; i++) {
      const moeroute_preset* m = moeroute_preset_find(seed_tables[i]);
      if (m) o.models[o.nmodels++] = m;
    }
    for (int i = 0; i < np; i++) {
      const moeroute_preset* m = moeroute_preset_at(i);
      if (strcmp(m->name, seed_tables[0]) && strcmp(m->name, seed_tables[1])) o.models[o.nmodels++] = m;
    }
    if (o.quick) o.nmodels = o.nmodels < 4 ? o.nmodels : 4;
  }

  int64_t cpu_tokens[] = {1, 2, 4, 8, 12, 16, 64, 256, 1024, 4096, 16384};
  int64_t cpu_quick[] = {1, 16, 256, 4096};
  int64_t cuda_tokens[] = {1, 2, 4, 8, 12, 16};
  int64_t cuda_quick[] = {1, 16};
  if (tokens) {
    if (cli_parse_i64_list("--tokens", tokens, 0, MOEROUTE_CK_MAX_TOKENS, &o.tokens, &o.ntokens)) {
      free(o.models);
      return CLI_EXIT_USAGE;
    }
  } else {
    const int64_t* src = use_cuda ? (o.quick ? cuda_quick : cuda_tokens) : (o.quick ? cpu_quick : cpu_tokens);
    int n = use_cuda ? (o.quick ? 2 : 6) : (o.quick ? 4 : 11);
    o.tokens = (int64_t*)malloc((size_t)n * sizeof(int64_t));
    memcpy(o.tokens, src, (size_t)n * sizeof(int64_t));
    o.ntokens = n;
  }

  int rc;
#ifdef MOEROUTE_WITH_CUDA
  if (use_cuda) {
    int r = bench_cuda(&o);
    rc = r == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
  } else
#endif
  {
    rc = bench_cpu(&o);
  }
  free(o.models);
  free(o.tokens);
  return rc;
}
