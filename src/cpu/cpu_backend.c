/*
 * cpu_backend.c - the public entry points of the CPU backend: workspace size,
 * route, gate and sort.
 *
 * Every entry point runs the same checks in the same order, and writes nothing
 * (not even moe_buf) until all of them have passed:
 *
 *   1. mr_validate_params: enums, limits, groups, scale (common code);
 *   2. the workspace this call needs, then mr_validate_buffers: required
 *      pointers, moe_buf, workspace size (common code);
 *   3. what only the CPU can check before starting, because it can read the
 *      inputs on the host: bias values finite, expert_mask values 0 or 1
 *      (design.md 7; the CUDA backend cannot read them without a sync).
 *
 * Single-threaded and reentrant: no state but the thread-local last error, and
 * no scratch but the caller's workspace.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* ---- workspace ------------------------------------------------------------ */

/* Walks the layout of op's workspace: with base == NULL it only measures. The one
 * function both sizes and carves, so the two can never disagree. Sizes are
 * summed in uint64 and checked against SIZE_MAX by the caller. */
static uint64_t workspace_walk(moeroute_op op, const mr_config* cfg, unsigned char* base, mr_cpu_workspace* ws) {
  const uint64_t num_experts = (uint64_t)cfg->num_experts;
  const uint64_t num_groups = (uint64_t)cfg->num_groups;
  const uint64_t entries = (uint64_t)cfg->num_tokens * (uint64_t)cfg->top_k;
  const int gates = op == MOEROUTE_OP_ROUTE || op == MOEROUTE_OP_GATE;
  const int sorts = op == MOEROUTE_OP_ROUTE || op == MOEROUTE_OP_SORT;
  uint64_t offset = 0;
  mr_cpu_workspace unused;
  if (!ws) ws = &unused;
  memset(ws, 0, sizeof *ws);

/* reserve n elements of the array's type, on a fresh cache line */
#define MR_TAKE(field, n)                                                        \
  do {                                                                           \
    offset = (offset + MR_CPU_WS_ALIGN - 1) / MR_CPU_WS_ALIGN * MR_CPU_WS_ALIGN; \
    if (base) ws->field = (void*)(base + offset);                                \
    offset += (uint64_t)(n) * sizeof *ws->field;                                 \
  } while (0)

  if (gates) {
    MR_TAKE(logit, num_experts);
    MR_TAKE(score, num_experts);
    MR_TAKE(key, num_experts);
    MR_TAKE(group_value, num_groups);
    MR_TAKE(group_heap, num_groups);
    MR_TAKE(group_kept, num_groups);
  }
  if (sorts) MR_TAKE(expert_cursor, num_experts);
  if (op == MOEROUTE_OP_ROUTE) {
    /* route's top-k outputs are optional; when the caller passes none the
     * result lives here between gating and sorting. Always reserved, so that the
     * size does not depend on which pointers the caller passes. */
    MR_TAKE(topk_ids, entries);
    MR_TAKE(topk_weights, entries);
  }
#undef MR_TAKE
  return offset;
}

moeroute_status mr_cpu_workspace_bytes(moeroute_op op, const mr_config* cfg, const char* fn, size_t* bytes) {
  /* + one cache line: the caller's pointer is aligned up before carving */
  const uint64_t need = workspace_walk(op, cfg, NULL, NULL) + MR_CPU_WS_ALIGN;
#if SIZE_MAX < UINT64_MAX
  /* 32-bit hosts: [T, k] of route's top-k can exceed the address space */
  if (need > (uint64_t)SIZE_MAX) {
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: the workspace (%llu bytes) does not fit a size_t", fn,
                   (unsigned long long)need);
  }
#else
  (void)fn;
#endif
  *bytes = (size_t)need;
  return MOEROUTE_OK;
}

void mr_cpu_workspace_carve(moeroute_op op, const mr_config* cfg, void* base, mr_cpu_workspace* ws) {
  uintptr_t p = (uintptr_t)base;
  p = (p + MR_CPU_WS_ALIGN - 1) & ~(uintptr_t)(MR_CPU_WS_ALIGN - 1);
  (void)workspace_walk(op, cfg, (unsigned char*)p, ws);
}

/* ---- host-side value checks (design.md 7) ---------------------------------- */

static moeroute_status check_bias(const mr_config* cfg, const float* bias, const char* fn) {
  int32_t i;
  if (!bias) return MOEROUTE_OK;
  for (i = 0; i < cfg->num_experts; ++i) {
    if (!isfinite(bias[i])) {
      return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s: bias[%d] = %g is not finite", fn, (int)i, (double)bias[i]);
    }
  }
  return MOEROUTE_OK;
}

static moeroute_status check_mask(const mr_config* cfg, const int32_t* expert_mask, const char* fn) {
  int32_t i;
  if (!expert_mask) return MOEROUTE_OK;
  for (i = 0; i < cfg->num_experts; ++i) {
    if (expert_mask[i] != 0 && expert_mask[i] != 1) {
      return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s: expert_mask[%d] = %d, must be 0 or 1", fn, (int)i,
                     (int)expert_mask[i]);
    }
  }
  return MOEROUTE_OK;
}

/* Steps 1 and 2 of every entry point (see the top of this file). */
static moeroute_status validate_call(moeroute_op op, const moeroute_params* params, const moeroute_buffers* buffers,
                                     const char* fn, mr_config* cfg) {
  size_t need = 0;
  moeroute_status st = mr_validate_params(op, params, MR_BACKEND_CPU, fn, cfg);
  if (st != MOEROUTE_OK) return st;
  st = mr_cpu_workspace_bytes(op, cfg, fn, &need);
  if (st != MOEROUTE_OK) return st;
  return mr_validate_buffers(op, cfg, buffers, need, fn);
}

static void clear_moe_buf(const mr_config* cfg, const moeroute_buffers* buffers) {
  /* design.md 8: route and sort clear it, also when T = 0 */
  if (cfg->moe_buf_bytes > 0) memset(buffers->moe_buf, 0, cfg->moe_buf_bytes);
}

/* ---- entry points ------------------------------------------------------------ */

moeroute_status moeroute_cpu_workspace_size(moeroute_op op, const moeroute_params* params, size_t* bytes) {
  static const char fn[] = "moeroute_cpu_workspace_size";
  mr_config cfg;
  size_t need = 0;
  moeroute_status st;
  mr_clear_error();
  st = mr_validate_params(op, params, MR_BACKEND_CPU, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  if (!bytes) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: bytes is NULL", fn);
  st = mr_cpu_workspace_bytes(op, &cfg, fn, &need);
  if (st != MOEROUTE_OK) return st;
  *bytes = need;
  return MOEROUTE_OK;
}

moeroute_status moeroute_cpu_route(const moeroute_params* params, const moeroute_buffers* buffers) {
  static const char fn[] = "moeroute_cpu_route";
  mr_config cfg;
  mr_cpu_workspace ws;
  moeroute_status st;
  int32_t* topk_ids;
  float* topk_weights;
  mr_clear_error();
  st = validate_call(MOEROUTE_OP_ROUTE, params, buffers, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  if ((st = check_bias(&cfg, buffers->bias, fn)) != MOEROUTE_OK) return st;
  if ((st = check_mask(&cfg, buffers->expert_mask, fn)) != MOEROUTE_OK) return st;

  /* Every check has passed: from here on the call only writes. */
  clear_moe_buf(&cfg, buffers);
  mr_cpu_workspace_carve(MOEROUTE_OP_ROUTE, &cfg, buffers->workspace, &ws);
  topk_ids = buffers->topk_ids ? buffers->topk_ids : ws.topk_ids;
  topk_weights = buffers->topk_weights ? buffers->topk_weights : ws.topk_weights;

  /* Gating counts each expert's picks as it goes, which is the first pass of
   * the counting sort; gated ids are always in [0, E). */
  memset(ws.expert_cursor, 0, (size_t)cfg.num_experts * sizeof *ws.expert_cursor);
  mr_cpu_gate_rows(&cfg, buffers->logits, buffers->bias, &ws, topk_ids, topk_weights, ws.expert_cursor);
  mr_cpu_sort_place(&cfg, topk_ids, topk_weights, buffers->expert_mask, ws.expert_cursor, buffers);
  return MOEROUTE_OK;
}

moeroute_status moeroute_cpu_gate(const moeroute_params* params, const moeroute_buffers* buffers) {
  static const char fn[] = "moeroute_cpu_gate";
  mr_config cfg;
  mr_cpu_workspace ws;
  moeroute_status st;
  mr_clear_error();
  st = validate_call(MOEROUTE_OP_GATE, params, buffers, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  /* gate does not read expert_mask (the mask acts in sorting only) */
  if ((st = check_bias(&cfg, buffers->bias, fn)) != MOEROUTE_OK) return st;

  mr_cpu_workspace_carve(MOEROUTE_OP_GATE, &cfg, buffers->workspace, &ws);
  mr_cpu_gate_rows(&cfg, buffers->logits, buffers->bias, &ws, buffers->topk_ids, buffers->topk_weights, NULL);
  return MOEROUTE_OK;
}

moeroute_status moeroute_cpu_sort(const moeroute_params* params, const moeroute_buffers* buffers) {
  static const char fn[] = "moeroute_cpu_sort";
  mr_config cfg;
  mr_cpu_workspace ws;
  moeroute_status st;
  mr_clear_error();
  st = validate_call(MOEROUTE_OP_SORT, params, buffers, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  /* sort does not read bias (selection only) */
  if ((st = check_mask(&cfg, buffers->expert_mask, fn)) != MOEROUTE_OK) return st;

  clear_moe_buf(&cfg, buffers);
  mr_cpu_workspace_carve(MOEROUTE_OP_SORT, &cfg, buffers->workspace, &ws);
  mr_cpu_sort_count(&cfg, buffers->topk_ids, ws.expert_cursor);
  /* topk_weights is read only for sorted_weights (CK layout) */
  mr_cpu_sort_place(&cfg, buffers->topk_ids, buffers->topk_weights, buffers->expert_mask, ws.expert_cursor,
                    buffers);
  return MOEROUTE_OK;
}
