/*
 * cpu_internal.h - what the files of the CPU backend share: the workspace
 * layout, the gating of a range of rows, and the counting sort.
 *
 * The CPU backend is the reference: the executable form of
 * docs/routing-contract.md plus the decisions of docs/design.md. Every GPU path
 * is judged against it, so it is written to be obviously right first and fast
 * second (it is also a real backend for CPU inference engines).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CPU_INTERNAL_H
#define MOEROUTE_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/internal.h"

/* Every scratch array starts on its own cache line; the caller's workspace
 * pointer is aligned up first, so the size asks for one line of slack. */
#define MR_CPU_WS_ALIGN 64u

/* The caller's workspace, carved into the arrays of one call. A routing call
 * uses only this memory for scratch (no malloc): the library never allocates. */
typedef struct mr_cpu_workspace {
  /* gating (route, gate): one row at a time */
  float* logit;                 /* [E] the row in fp32, clamped: +inf -> FLT_MAX, NaN/-inf -> -inf */
  float* score;                 /* [E] s_i (only filled where something needs every score) */
  float* key;                   /* [E] selection keys (-inf outside the kept groups) */
  float* group_value;           /* [G] TOP2_SUM or MAX of (s_i + bias_i) per group */
  int32_t* group_heap;          /* [G] the kept groups while they are being selected */
  unsigned char* group_kept;    /* [G] 1 = the group survives grouped selection */
  /* sorting (route, sort) */
  int32_t* expert_cursor;       /* [E] count, then start, then write cursor of each expert */
  /* route: the top-k result when the caller did not ask for it */
  int32_t* topk_ids;            /* [T*k] */
  float* topk_weights;          /* [T*k] */
} mr_cpu_workspace;

/* Bytes of workspace op needs for cfg (the slack for aligning the base
 * included). The size never depends on which optional pointers are NULL.
 * Fails (BAD_SHAPE) only when the size does not fit a size_t. */
moeroute_status mr_cpu_workspace_bytes(moeroute_op op, const mr_config* cfg, const char* fn, size_t* bytes);

/* Carve base (at least mr_cpu_workspace_bytes() bytes) into *ws. Arrays op does
 * not use are NULL. */
void mr_cpu_workspace_carve(moeroute_op op, const mr_config* cfg, void* base, mr_cpu_workspace* ws);

/* Gate every row: logits [T, row_stride] of cfg->dtype -> topk_ids [T, k],
 * topk_weights [T, k] (contract section 2, design.md 1-6). bias may be NULL.
 * When expert_count is not NULL, expert_count[e] is incremented for every pick
 * of e: route fuses the counting pass of the sort into gating. */
void mr_cpu_gate_rows(const mr_config* cfg, const void* logits, const float* bias, const mr_cpu_workspace* ws,
                      int32_t* topk_ids, float* topk_weights, int32_t* expert_count);

/* The counting pass of the sort: expert_count[e] = number of entries of topk_ids
 * [T, k] equal to e (ids outside [0, E) are not counted). */
void mr_cpu_sort_count(const mr_config* cfg, const int32_t* topk_ids, int32_t* expert_count);

/* The rest of the sort (contract section 3): from the counts in expert_cursor
 * (overwritten), place every entry of topk_ids, pad each expert to U and write
 * the requested layouts (valid range only). topk_weights may be NULL when
 * buffers->sorted_weights is NULL. expert_mask may be NULL (all enabled).
 * The caller has checked the mask values. Positions fit an int32: total <=
 * T*k + E*(U-1) = vllm_sorted_len, which mr_validate_params bounds by INT32_MAX. */
void mr_cpu_sort_place(const mr_config* cfg, const int32_t* topk_ids, const float* topk_weights,
                       const int32_t* expert_mask, int32_t* expert_cursor, const moeroute_buffers* buffers);

#endif /* MOEROUTE_CPU_INTERNAL_H */
