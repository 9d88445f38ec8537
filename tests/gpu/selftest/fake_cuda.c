/*
 * fake_cuda.c - a host-memory CUDA runtime and a "CUDA backend" that is the CPU
 * backend, for the self-test of tests/gpu/test_cuda.c (target test_cuda_selftest).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 *
 * It tests the harness, not the library: with no fault the harness must pass
 * every case (no false alarms from the poison, canary, tie and determinism
 * checks); with a fault planted (environment MOEROUTE_FAKE_FAULT) it must fail.
 *   canary     a byte written just past sorted_token_ids
 *   past_total sorted_ids written at position `total` (past the valid range)
 *   swap       the first two picks of token 0 swapped (route and gate)
 *   moe_buf    the last byte of moe_buf left uncleared
 *   nondet     every 7th call perturbs sorted_ids (a determinism failure)
 *   legit_ulp  gate and route flip the last mantissa bit of every third weight and
 *              sort from those weights: a difference the contract allows (must PASS)
 * Stream capture is emulated: calls made while capturing are recorded as graph
 * nodes (after validation) and run at cudaGraphLaunch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime_api.h"
#include "internal.h" /* mr_fail: the fake's refusals set moeroute_last_error() like the library's */
#include "moeroute.h"

/* ---- runtime on host memory ------------------------------------------------- */

const char* cudaGetErrorName(cudaError_t e) {
  return e ? "cudaErrorInvalidValue" : "cudaSuccess";
}
const char* cudaGetErrorString(cudaError_t e) {
  return e ? "invalid value (fake)" : "no error";
}
cudaError_t cudaMalloc(void** p, size_t n) {
  *p = aligned_alloc(256, (n + 255) / 256 * 256);
  return *p ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  (void)s;
  memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
  (void)k;
  (void)st;
  memcpy(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  return cudaSuccess;
}
cudaError_t cudaPeekAtLastError(void) {
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int d) {
  (void)d;
  snprintf(p->name, sizeof p->name, "fake (host memory, CPU backend)");
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 1;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned f) {
  (void)f;
  *s = (cudaStream_t)malloc(16);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  free(s);
  return cudaSuccess;
}

/* ---- capture ------------------------------------------------------------------ */

#define MAX_NODES 16
typedef struct node {
  moeroute_op op;
  moeroute_params p;
  moeroute_buffers b;
} node;
struct fake_graph {
  node n[MAX_NODES];
  int count;
};
static struct fake_graph* g_capture; /* non-NULL while capturing */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m) {
  (void)s;
  (void)m;
  g_capture = (struct fake_graph*)calloc(1, sizeof *g_capture);
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  (void)s;
  *g = g_capture;
  g_capture = NULL;
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  (void)nodes;
  *n = (size_t)g->count;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags) {
  (void)flags;
  *e = g;
  return cudaSuccess;
}
static moeroute_status execute(moeroute_op op, const moeroute_params* p, const moeroute_buffers* b);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  (void)s;
  for (int i = 0; i < e->count; i++)
    if (execute(e->n[i].op, &e->n[i].p, &e->n[i].b) != MOEROUTE_OK) return cudaErrorInvalidValue;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  (void)e; /* the same object as the graph */
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  free(g);
  return cudaSuccess;
}

/* ---- the "CUDA backend" --------------------------------------------------------- */

#define WS_EXTRA 64 /* the fake asks for more workspace than the CPU needs */

static int fault(const char* name) {
  const char* f = getenv("MOEROUTE_FAKE_FAULT");
  return f && strcmp(f, name) == 0;
}

int moeroute_cuda_device_count(void) {
  return 1;
}
int moeroute_cuda_supports(moeroute_op op, const moeroute_params* p) {
  size_t ws;
  if (!p || p->num_experts > MOEROUTE_MAX_EXPERTS) return 0;
  return moeroute_cpu_workspace_size(op, p, &ws) == MOEROUTE_OK;
}
moeroute_status moeroute_cuda_workspace_size(moeroute_op op, const moeroute_params* p, size_t* bytes) {
  moeroute_status s = moeroute_cpu_workspace_size(op, p, bytes);
  if (s == MOEROUTE_OK) *bytes += WS_EXTRA;
  return s;
}

static moeroute_status cpu_op(moeroute_op op, const moeroute_params* p, const moeroute_buffers* b) {
  return op == MOEROUTE_OP_ROUTE  ? moeroute_cpu_route(p, b)
         : op == MOEROUTE_OP_GATE ? moeroute_cpu_gate(p, b)
                                  : moeroute_cpu_sort(p, b);
}

/* legit_ulp: gate on the CPU, flip weight bits, sort from the flipped top-k */
static moeroute_status legit_ulp(moeroute_op op, const moeroute_params* p, const moeroute_buffers* c) {
  int64_t n = p->num_tokens * p->top_k;
  int32_t* ids = (int32_t*)malloc((size_t)n * 4 + 4);
  float* w = (float*)malloc((size_t)n * 4 + 4);
  moeroute_buffers g = *c;
  g.topk_ids = ids;
  g.topk_weights = w;
  moeroute_status s = moeroute_cpu_gate(p, &g);
  for (int64_t i = 0; s == MOEROUTE_OK && i < n; i += 3) {
    uint32_t u;
    memcpy(&u, &w[i], 4);
    if (u) u ^= 1u;
    memcpy(&w[i], &u, 4);
  }
  if (s == MOEROUTE_OK && c->topk_ids) {
    memcpy(c->topk_ids, ids, (size_t)n * 4);
    memcpy(c->topk_weights, w, (size_t)n * 4);
  }
  if (s == MOEROUTE_OK && op == MOEROUTE_OP_ROUTE) s = moeroute_cpu_sort(p, &g);
  free(ids);
  free(w);
  return s;
}

static moeroute_status execute(moeroute_op op, const moeroute_params* p, const moeroute_buffers* b) {
  static long calls;
  moeroute_buffers c = *b;
  int32_t* mask = NULL;
  if (b->expert_mask) { /* CUDA semantics: any non-zero value enables the expert */
    mask = (int32_t*)malloc((size_t)p->num_experts * 4);
    for (int32_t i = 0; i < p->num_experts; i++) mask[i] = b->expert_mask[i] != 0;
    c.expert_mask = mask;
  }
  c.workspace_bytes = b->workspace_bytes >= WS_EXTRA ? b->workspace_bytes - WS_EXTRA : 0;
  moeroute_status s = cpu_op(op, p, &c); /* validates and computes */
  if (s == MOEROUTE_OK && fault("legit_ulp") && op != MOEROUTE_OP_SORT && p->num_tokens > 0) s = legit_ulp(op, p, &c);
  free(mask);
  if (s != MOEROUTE_OK) return s;
  calls++;
  int64_t total = b->num_valid_ids ? b->num_valid_ids[0] : b->num_tokens_post_pad ? b->num_tokens_post_pad[0] : 0;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  moeroute_get_sizes(p, &sz);
  if (fault("canary") && b->sorted_token_ids && p->num_tokens > 3)
    ((unsigned char*)b->sorted_token_ids)[sz.vllm_sorted_len * 4] = 0;
  if (fault("past_total") && b->sorted_ids && p->num_tokens > 3) b->sorted_ids[total] = 0;
  if (fault("swap") && b->topk_ids && op != MOEROUTE_OP_SORT && p->num_tokens > 0 && p->top_k > 1) {
    int32_t t = b->topk_ids[0];
    b->topk_ids[0] = b->topk_ids[1];
    b->topk_ids[1] = t;
  }
  if (fault("moe_buf") && b->moe_buf && p->moe_buf_bytes && op != MOEROUTE_OP_GATE)
    ((unsigned char*)b->moe_buf)[p->moe_buf_bytes - 1] = 0xAB;
  if (fault("nondet") && calls % 7 == 0 && b->sorted_ids && total > 1) {
    int32_t t = b->sorted_ids[0];
    b->sorted_ids[0] = b->sorted_ids[1];
    b->sorted_ids[1] = t;
  }
  return MOEROUTE_OK;
}

static moeroute_status call(moeroute_op op, const char* fn, const moeroute_params* p, const moeroute_buffers* b) {
  mr_clear_error();
  if (!p || !b) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): params or buffers NULL", fn);
  if (p->struct_size == sizeof *p && p->num_experts > MOEROUTE_MAX_EXPERTS)
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s (fake): num_experts above the CUDA limit", fn);
  size_t need = 0;
  moeroute_status s = moeroute_cuda_workspace_size(op, p, &need);
  if (s != MOEROUTE_OK) return s;
  if (b->workspace_bytes < need) return mr_fail(MOEROUTE_ERR_WORKSPACE_TOO_SMALL, "%s (fake): workspace", fn);
  if (need && !b->workspace) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): workspace NULL", fn);
  if (need && ((uintptr_t)b->workspace & 15u) != 0) /* as the CUDA backend (entry.cu mr_cuda_prepare) */
    return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s (fake): workspace not 16-byte aligned", fn);
  if (!g_capture) return execute(op, p, b);
  /* capturing: validate on host copies of nothing - check what the CPU would refuse
   * without touching the buffers, then record the call */
  if (op != MOEROUTE_OP_SORT && p->num_tokens > 0 && !b->logits)
    return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): logits NULL", fn);
  if (op == MOEROUTE_OP_GATE && p->num_tokens > 0 && (!b->topk_ids || !b->topk_weights))
    return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): topk NULL", fn);
  if (op != MOEROUTE_OP_GATE) {
    if ((p->layouts & MOEROUTE_LAYOUT_CK) && (!b->sorted_ids || !b->sorted_expert_ids || !b->num_valid_ids))
      return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): CK output NULL", fn);
    if ((p->layouts & MOEROUTE_LAYOUT_VLLM) && (!b->sorted_token_ids || !b->expert_ids || !b->num_tokens_post_pad))
      return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s (fake): vLLM output NULL", fn);
    if (p->moe_buf_bytes && !b->moe_buf) return mr_fail(MOEROUTE_ERR_MOE_BUF, "%s (fake): moe_buf NULL", fn);
  }
  if (g_capture->count == MAX_NODES) return mr_fail(MOEROUTE_ERR_INTERNAL, "%s (fake): graph full", fn);
  node* nd = &g_capture->n[g_capture->count++];
  nd->op = op;
  nd->p = *p;
  nd->b = *b;
  return MOEROUTE_OK;
}

moeroute_status moeroute_cuda_route(const moeroute_params* p, const moeroute_buffers* b, void* stream) {
  (void)stream;
  return call(MOEROUTE_OP_ROUTE, "moeroute_cuda_route", p, b);
}
moeroute_status moeroute_cuda_gate(const moeroute_params* p, const moeroute_buffers* b, void* stream) {
  (void)stream;
  return call(MOEROUTE_OP_GATE, "moeroute_cuda_gate", p, b);
}
moeroute_status moeroute_cuda_sort(const moeroute_params* p, const moeroute_buffers* b, void* stream) {
  (void)stream;
  return call(MOEROUTE_OP_SORT, "moeroute_cuda_sort", p, b);
}
