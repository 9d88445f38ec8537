/*
 * lab_sortcase.h - a sort case for the stamp labs (mid_stamp.cu, ctm_stamp.cu; lab code only):
 * T tokens of k distinct random experts out of E (rand(), seeded by the caller), weights 0, the
 * CK and vLLM layouts, no moe_buf, with the mr_config and mr_sort_out the launch functions take;
 * and the stamps' report of a launch (g_stamp: defined by the includer, as in both labs).
 * Include after src/cuda/common.cuh (directly or through a .cu), g_stamp and lab_util.h.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_DEV_LAB_SORTCASE_H
#define MOEROUTE_DEV_LAB_SORTCASE_H

typedef struct {
  mr_config cfg;
  mr_sort_out o;
  int32_t* ids; /* [T, k] on the device */
  float* w;     /* [T, k] on the device, zeros */
  void* dev[9];
} lab_sort_case;

static void lab_sort_case_make(lab_sort_case* c, int64_t T, int E, int k, int U) {
  const int64_t n = T * k;
  int32_t* h = (int32_t*)malloc((size_t)n * 4);
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) {
      int e, dup;
      do {
        e = rand() % E;
        dup = 0;
        for (int q = 0; q < j; ++q) dup |= h[t * k + q] == e;
      } while (dup);
      h[t * k + j] = e;
    }
  const size_t cap = (size_t)n + (size_t)E * (U - 1), blocks = cap / U * 4 + 4;
  const size_t bytes[9] = {(size_t)n * 4, (size_t)n * 4, cap * 4, cap * 4, cap * 4, blocks, blocks, 8, 4};
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 9; ++i) CK(cudaMalloc(&c->dev[i], bytes[i]));
  c->ids = (int32_t*)c->dev[0];
  c->w = (float*)c->dev[1];
  CK(cudaMemcpy(c->ids, h, (size_t)n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(c->w, 0, (size_t)n * 4));
  free(h);
  c->cfg.num_tokens = T;
  c->cfg.num_experts = E;
  c->cfg.top_k = k;
  c->cfg.unit_size = U;
  mr_sort_out* o = &c->o;
  o->sorted_ids = (int32_t*)c->dev[2];
  o->sorted_weights = (float*)c->dev[3];
  o->sorted_token_ids = (int32_t*)c->dev[4];
  o->sorted_expert_ids = (int32_t*)c->dev[5];
  o->expert_ids = (int32_t*)c->dev[6];
  o->num_valid_ids = (int32_t*)c->dev[7];
  o->num_tokens_post_pad = (int32_t*)c->dev[8];
  o->num_tokens = T;
  o->num_experts = E;
  o->top_k = k;
  o->unit_size = U;
  o->u_magic = mr_magic((uint32_t)U);
  o->k_magic = mr_magic((uint32_t)k);
}

static void lab_sort_case_free(lab_sort_case* c) {
  for (int i = 0; i < 9; ++i) cudaFree(c->dev[i]);
}

static int lab_cmp_d(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double lab_median15(double* v) {
  qsort(v, 15, sizeof(double), lab_cmp_d);
  return v[7];
}

/* The stamps of a sort launch (markers 0 .. nm-1 of g_stamp, which the includer defines):
 * one call at a time, 15 times (the event time, the span and each gap: medians), then 50
 * calls in a graph (the kernel metric, the last call's span and gaps). */
typedef cudaError_t (*lab_sort_launch)(const mr_config*, const mr_sort_out*, const int32_t*, const float*,
                                       cudaStream_t);
static void lab_stamp_report(lab_sort_launch launch, const lab_sort_case* c, int nm, const char* label,
                             cudaStream_t s) {
  double cyc[16][15], ev[15];
  unsigned long long st[16];
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int rep = 0; rep < 15; ++rep) {
    CK(cudaEventRecord(e0, s));
    CK(launch(&c->cfg, &c->o, c->ids, c->w, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
    for (int q = 0; q < nm; ++q) cyc[q][rep] = q ? (double)(st[q] - st[q - 1]) : (double)(st[nm - 1] - st[0]);
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ev[rep] = ms * 1000.0;
  }
  printf("%s: one call event %.2f us; cycles: span %.0f", label, lab_median15(ev), lab_median15(cyc[0]));
  for (int q = 1; q < nm; ++q) printf(" | %d: %.0f", q, lab_median15(cyc[q]));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 50; ++i) CK(launch(&c->cfg, &c->o, c->ids, c->w, s));
  CK(cudaStreamEndCapture(s, &g));
  const double km = lab_graph_us(g, 50, 9, 1, s);
  CK(cudaMemcpyFromSymbol(st, g_stamp, sizeof st));
  printf("\n    kernel metric %.2f us; last graph call: span %llu", km, st[nm - 1] - st[0]);
  for (int q = 1; q < nm; ++q) printf(" | %d: %llu", q, st[q] - st[q - 1]);
  printf("\n");
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

#endif /* MOEROUTE_DEV_LAB_SORTCASE_H */
