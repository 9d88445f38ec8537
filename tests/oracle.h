/*
 * oracle.h - a brute-force implementation of docs/routing-contract.md (plus the
 * decisions of docs/design.md), written from those pages alone, without looking
 * at src/cpu. It is slow on purpose: every rule is implemented the most literal
 * way (full sort of the keys, explicit group scores, and the sort as "for each
 * expert, scan every (t, slot) pair"), so that it can judge the backends.
 *
 * It does not validate: callers pass valid parameters (see moeroute.h).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_ORACLE_H
#define MOEROUTE_ORACLE_H

#include <stdint.h>

#include "moeroute.h"

/* Capacities of every output (contract 3.1 / 3.2). */
typedef struct oracle_sizes {
  int64_t topk_len;
  int64_t ck_sorted_len;
  int64_t ck_blocks_len;
  int64_t vllm_sorted_len;
  int64_t vllm_blocks_len;
} oracle_sizes;

void oracle_get_sizes(int64_t num_tokens, int32_t num_experts, int32_t top_k, int32_t unit_size,
                      oracle_sizes* sizes);

/* Logit number `index` (row * stride + column) widened to fp32, exactly. */
float oracle_load_logit(moeroute_dtype dtype, const void* logits, int64_t index);

/* Row flags written by oracle_gate. */
#define ORACLE_ROW_NEAR_TIE 1u /* the picks or their order depend on two keys (or group scores)
                                  that differ by less than rounding can be trusted with, and
                                  that come from different inputs: another correct fp32
                                  implementation may pick differently (contract 4) */
#define ORACLE_ROW_NO_FINITE 2u /* no finite logit: ids 0..k-1, weights 0 */
#define ORACLE_ROW_TINY 4u      /* a pick's score went through the subnormal range (sigmoid or
                                   sqrt_softplus of x < -80, or a score below 1e-30): its
                                   weight is only as precise as a subnormal, so weights of the
                                   row are not compared to 1e-5 */

/* Gating of every row (contract 2): topk_ids [T, k], topk_weights [T, k].
 * params gives T, E, k, stride, dtype, score, renormalize, scale, groups.
 * bias may be NULL. row_flags (may be NULL) gets T bytes of ORACLE_ROW_* flags. */
void oracle_gate(const moeroute_params* params, const void* logits, const float* bias, int32_t* topk_ids,
                 float* topk_weights, unsigned char* row_flags);

/* The sorted layouts, each array exactly its valid range (total entries,
 * total / U blocks), malloc'ed by oracle_sort; free with oracle_sorted_free. */
typedef struct oracle_sorted {
  int64_t total;               /* sum of pad_e */
  int64_t blocks;              /* total / U */
  int32_t* sorted_ids;         /* CK: (slot << 24) | t, sentinel (k << 24) | T */
  float* sorted_weights;       /* CK: copy of topk_weights, 0 at sentinels; NULL when topk_weights is NULL */
  int32_t* sorted_expert_ids;  /* CK: local id per block */
  int32_t num_valid_ids[2];    /* CK: {total, T} */
  int32_t* sorted_token_ids;   /* vLLM: t * k + slot, padding T * k */
  int32_t* expert_ids;         /* vLLM: local id per block (same as sorted_expert_ids) */
  int32_t num_tokens_post_pad; /* vLLM: total */
  int64_t* expert_count;       /* [E] cnt_e after dropping (0 for masked experts) */
} oracle_sorted;

/* Sorting (contract 3) of topk_ids [T, k] (any values: ids outside [0, E) are
 * dropped), weights optional, expert_mask optional ([E], non-zero = enabled).
 * Uses T, E, k, U of params. Returns total. */
int64_t oracle_sort(const moeroute_params* params, const int32_t* topk_ids, const float* topk_weights,
                    const int32_t* expert_mask, oracle_sorted* out);
void oracle_sorted_free(oracle_sorted* s);

#endif /* MOEROUTE_ORACLE_H */
