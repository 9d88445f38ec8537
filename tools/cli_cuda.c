/*
 * cli_cuda.c - device buffers for the moeroute command, through the CUDA
 * runtime's C API (cuda_runtime_api.h is plain C). Compiled in every build;
 * without MOEROUTE_WITH_CUDA only cli_cuda_devices() exists and says 0.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef MOEROUTE_WITH_CUDA

int cli_cuda_devices(void) { return 0; }

#else

#include <cuda_runtime_api.h>

int cli_cuda_devices(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError(); /* "no device" / "no driver" is an answer, not an error to keep */
    return 0;
  }
  return n;
}

const char* gpu_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

#define GPU_TRY(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      snprintf(err, errlen, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, \
               __LINE__);                                                                    \
      goto fail;                                                                             \
    }                                                                                        \
  } while (0)

static void* dmalloc(size_t bytes, cudaError_t* e) {
  void* p = NULL;
  *e = cudaMalloc(&p, bytes ? bytes : 4);
  return *e == cudaSuccess ? p : NULL;
}

int gpu_route_alloc(gpu_route* g, const route_case* c, size_t moe_buf_bytes, char* err, size_t errlen) {
  memset(g, 0, sizeof *g);
  const moeroute_params* p = &c->p;
  g->sizes.struct_size = sizeof g->sizes;
  moeroute_status st = moeroute_get_sizes(p, &g->sizes);
  if (st != MOEROUTE_OK) {
    snprintf(err, errlen, "moeroute_get_sizes: %s", moeroute_last_error());
    return -1;
  }
  /* one workspace that fits every op, so route, gate and sort can share it */
  size_t ws = 0;
  for (int op = MOEROUTE_OP_ROUTE; op <= MOEROUTE_OP_SORT; op++) {
    size_t b = 0;
    moeroute_params q = *p;
    if (op == MOEROUTE_OP_GATE) q.moe_buf_bytes = 0;
    st = moeroute_cuda_workspace_size((moeroute_op)op, &q, &b);
    if (st != MOEROUTE_OK) {
      snprintf(err, errlen, "moeroute_cuda_workspace_size: %s", moeroute_last_error());
      return -1;
    }
    if (b > ws) ws = b;
  }
  const moeroute_sizes* s = &g->sizes;
  const int32_t E = p->num_experts;
  size_t logits_bytes = route_case_logits_bytes(c);
  cudaError_t e = cudaSuccess;
#define ALLOC(field, type, bytes)                      \
  do {                                                 \
    g->field = (type)dmalloc((bytes), &e);             \
    if (!g->field) GPU_TRY(e);                         \
  } while (0)
  ALLOC(logits, void*, logits_bytes);
  if (c->bias) ALLOC(bias, float*, (size_t)E * 4);
  if (c->expert_mask) ALLOC(expert_mask, int32_t*, (size_t)E * 4);
  ALLOC(topk_ids, int32_t*, (size_t)s->topk_len * 4);
  ALLOC(topk_weights, float*, (size_t)s->topk_len * 4);
  ALLOC(sorted_ids, int32_t*, (size_t)s->ck_sorted_len * 4);
  ALLOC(sorted_weights, float*, (size_t)s->ck_sorted_len * 4);
  ALLOC(sorted_expert_ids, int32_t*, (size_t)s->ck_blocks_len * 4);
  ALLOC(num_valid_ids, int32_t*, 8);
  ALLOC(sorted_token_ids, int32_t*, (size_t)s->vllm_sorted_len * 4);
  ALLOC(expert_ids, int32_t*, (size_t)s->vllm_blocks_len * 4);
  ALLOC(num_tokens_post_pad, int32_t*, 4);
  if (moe_buf_bytes) ALLOC(moe_buf, void*, moe_buf_bytes);
  if (ws) ALLOC(workspace, void*, ws);
#undef ALLOC
  g->moe_buf_bytes = moe_buf_bytes;
  g->workspace_bytes = ws;
  if (logits_bytes) GPU_TRY(cudaMemcpy(g->logits, c->logits, logits_bytes, cudaMemcpyHostToDevice));
  if (c->bias) GPU_TRY(cudaMemcpy(g->bias, c->bias, (size_t)E * 4, cudaMemcpyHostToDevice));
  if (c->expert_mask) GPU_TRY(cudaMemcpy(g->expert_mask, c->expert_mask, (size_t)E * 4, cudaMemcpyHostToDevice));
  GPU_TRY(cudaDeviceSynchronize()); /* as gpu_route_upload_topk: the DMA has landed before any call */
  return 0;
fail:
  gpu_route_free(g);
  return -1;
}

void gpu_route_free(gpu_route* g) {
  void* ptrs[] = {g->logits,         g->bias,           g->expert_mask,     g->topk_ids,      g->topk_weights,
                  g->sorted_ids,     g->sorted_weights, g->sorted_expert_ids, g->num_valid_ids, g->sorted_token_ids,
                  g->expert_ids,     g->num_tokens_post_pad, g->moe_buf,    g->workspace};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
    if (ptrs[i]) cudaFree(ptrs[i]);
  memset(g, 0, sizeof *g);
}

int gpu_route_fill(gpu_route* g, unsigned char byte, char* err, size_t errlen) {
  const moeroute_sizes* s = &g->sizes;
  GPU_TRY(cudaMemset(g->topk_ids, byte, (size_t)s->topk_len * 4));
  GPU_TRY(cudaMemset(g->topk_weights, byte, (size_t)s->topk_len * 4));
  GPU_TRY(cudaMemset(g->sorted_ids, byte, (size_t)s->ck_sorted_len * 4));
  GPU_TRY(cudaMemset(g->sorted_weights, byte, (size_t)s->ck_sorted_len * 4));
  GPU_TRY(cudaMemset(g->sorted_expert_ids, byte, (size_t)s->ck_blocks_len * 4));
  GPU_TRY(cudaMemset(g->num_valid_ids, byte, 8));
  GPU_TRY(cudaMemset(g->sorted_token_ids, byte, (size_t)s->vllm_sorted_len * 4));
  GPU_TRY(cudaMemset(g->expert_ids, byte, (size_t)s->vllm_blocks_len * 4));
  GPU_TRY(cudaMemset(g->num_tokens_post_pad, byte, 4));
  if (g->moe_buf) GPU_TRY(cudaMemset(g->moe_buf, byte, g->moe_buf_bytes));
  GPU_TRY(cudaDeviceSynchronize());
  return 0;
fail:
  return -1;
}

int gpu_route_upload_topk(gpu_route* g, const int32_t* ids, const float* weights, int64_t n, char* err,
                          size_t errlen) {
  if (n == 0) return 0;
  GPU_TRY(cudaMemcpy(g->topk_ids, ids, (size_t)n * 4, cudaMemcpyHostToDevice));
  GPU_TRY(cudaMemcpy(g->topk_weights, weights, (size_t)n * 4, cudaMemcpyHostToDevice));
  /* A pageable cudaMemcpy to the device may return before its DMA lands, and the
   * calls run on a non-blocking stream, which does not wait for the legacy one:
   * without this the sort could read the previous ids (results run 15: one cuda:sort
   * case of verify read the canary, 1 of 3328). */
  GPU_TRY(cudaDeviceSynchronize());
  return 0;
fail:
  return -1;
}

int gpu_route_download(const gpu_route* g, host_route* h, char* err, size_t errlen) {
  const moeroute_sizes* s = &g->sizes;
  GPU_TRY(cudaDeviceSynchronize());
  GPU_TRY(cudaMemcpy(h->topk_ids, g->topk_ids, (size_t)s->topk_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->topk_weights, g->topk_weights, (size_t)s->topk_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->sorted_ids, g->sorted_ids, (size_t)s->ck_sorted_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->sorted_weights, g->sorted_weights, (size_t)s->ck_sorted_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->sorted_expert_ids, g->sorted_expert_ids, (size_t)s->ck_blocks_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->num_valid_ids, g->num_valid_ids, 8, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->sorted_token_ids, g->sorted_token_ids, (size_t)s->vllm_sorted_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->expert_ids, g->expert_ids, (size_t)s->vllm_blocks_len * 4, cudaMemcpyDeviceToHost));
  GPU_TRY(cudaMemcpy(h->num_tokens_post_pad, g->num_tokens_post_pad, 4, cudaMemcpyDeviceToHost));
  return 0;
fail:
  return -1;
}

int gpu_moe_buf_is_zero(const gpu_route* g, char* err, size_t errlen) {
  if (!g->moe_buf || g->moe_buf_bytes == 0) return 1;
  const size_t chunk = (size_t)64 << 20;
  size_t len = g->moe_buf_bytes < chunk ? g->moe_buf_bytes : chunk;
  unsigned char* h = (unsigned char*)malloc(len);
  if (!h) {
    snprintf(err, errlen, "out of host memory");
    return -1;
  }
  int zero = 1;
  for (size_t off = 0; off < g->moe_buf_bytes && zero; off += chunk) {
    size_t nb = g->moe_buf_bytes - off < chunk ? g->moe_buf_bytes - off : chunk;
    cudaError_t e = cudaMemcpy(h, (const char*)g->moe_buf + off, nb, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      snprintf(err, errlen, "cudaMemcpy(moe_buf) failed: %s", cudaGetErrorString(e));
      free(h);
      return -1;
    }
    for (size_t i = 0; i < nb; i++)
      if (h[i]) {
        snprintf(err, errlen, "moe_buf byte %zu is 0x%02x, not 0", off + i, h[i]);
        zero = 0;
        break;
      }
  }
  free(h);
  return zero;
}

void gpu_route_bind(const gpu_route* g, const moeroute_params* p, moeroute_op op, int with_topk,
                    moeroute_buffers* b) {
  moeroute_buffers_init(b);
  b->logits = g->logits;
  b->bias = g->bias;
  b->expert_mask = g->expert_mask;
  if (with_topk || op != MOEROUTE_OP_ROUTE) {
    b->topk_ids = g->topk_ids;
    b->topk_weights = g->topk_weights;
  }
  if (op != MOEROUTE_OP_GATE) {
    if (p->layouts & MOEROUTE_LAYOUT_CK) {
      b->sorted_ids = g->sorted_ids;
      b->sorted_weights = g->sorted_weights;
      b->sorted_expert_ids = g->sorted_expert_ids;
      b->num_valid_ids = g->num_valid_ids;
    }
    if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
      b->sorted_token_ids = g->sorted_token_ids;
      b->expert_ids = g->expert_ids;
      b->num_tokens_post_pad = g->num_tokens_post_pad;
    }
    if (p->moe_buf_bytes) b->moe_buf = g->moe_buf;
  }
  b->workspace = g->workspace;
  b->workspace_bytes = g->workspace_bytes;
}

#endif /* MOEROUTE_WITH_CUDA */
