/*
 * harness.h - output buffers for one routing call (each guarded by canaries and
 * prefilled with a pattern), and the comparisons every test needs: against the
 * oracle (exact on ids and layouts), the layout invariants, and "nothing was
 * written where nothing may be written".
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_HARNESS_H
#define MOEROUTE_HARNESS_H

#include <stdint.h>

#include "moeroute.h"
#include "oracle.h"
#include "testutil.h"

#define HX_FILL 0x7Bu    /* prefill of every output: int 0x7B7B7B7B, float ~1.3e36 */
#define HX_MOE_FILL 0x5Du /* prefill of moe_buf */

/* What a call is given (route: topk outputs and sorted_weights are optional). */
#define HX_TOPK 1u           /* topk_ids + topk_weights */
#define HX_SORTED_WEIGHTS 2u /* CK sorted_weights */
#define HX_MOE_BUF 4u        /* moe_buf of params.moe_buf_bytes */
#define HX_ALL_LAYOUTS 8u    /* also the pointers of a layout not in params.layouts (to be ignored) */

typedef struct hx_outputs {
  moeroute_params p;  /* copy of the call's params */
  oracle_sizes sz;    /* capacities (oracle's formula; compared with get_sizes by hx_alloc) */
  size_t ws_bytes;    /* workspace the backend asked for */
  tu_guard topk_ids, topk_weights;
  tu_guard sorted_ids, sorted_weights, sorted_expert_ids, num_valid_ids;
  tu_guard sorted_token_ids, expert_ids, num_tokens_post_pad;
  tu_guard moe_buf, workspace;
} hx_outputs;

/* Allocate every output at the capacity of p (all of them, whatever the
 * layouts), checking moeroute_get_sizes against the contract's formulas and
 * asking moeroute_cpu_workspace_size(op). Returns the first failing status. */
moeroute_status hx_alloc(hx_outputs* o, const moeroute_params* p, moeroute_op op, const char* ctx);
/* Re-prefill every output (between two calls on the same outputs). */
void hx_refill(hx_outputs* o);
void hx_free(hx_outputs* o);

/* Point b at the outputs p's layouts need, plus what `give` adds. Inputs
 * (logits, bias, mask, topk for sort) are left to the caller. */
void hx_buffers(const hx_outputs* o, uint32_t give, moeroute_buffers* b);

/* All canaries intact. Returns 1 when OK (failures are counted as checks). */
int hx_canaries_ok(const hx_outputs* o, const char* ctx);

/* Every output untouched (a failed call must write nothing): canaries and the
 * prefill pattern of every body, moe_buf included. */
int hx_untouched(const hx_outputs* o, const char* ctx);

/* The sorted outputs of layout(s) in o.p.layouts against the oracle's: exact
 * ints, num_* values, block ids; sorted_weights exact bits when exact_weights,
 * else within 1e-5 relative; and nothing written past the valid range.
 * check_weights: 0 when sorted_weights was not requested (must stay untouched). */
int hx_compare_sorted(const hx_outputs* o, const oracle_sorted* want, int check_weights, int exact_weights,
                      const char* ctx);

/* The layout invariants, independent of the oracle: every (t, slot) whose id
 * is a valid, enabled expert appears exactly once, in its expert's run, runs in
 * increasing expert order starting on a block boundary, ascending token order
 * inside a run, padding only at a run's end with the sentinel, block ids = the
 * run's local id, totals consistent; sorted_weights a bit copy of weights. */
int hx_check_invariants(const hx_outputs* o, const int32_t* topk_ids, const float* topk_weights,
                        const int32_t* expert_mask, int check_weights, const char* ctx);

/* topk outputs against expected ids/weights: ids exact (except rows flagged
 * ORACLE_ROW_NEAR_TIE, which are counted in *tolerated when they differ),
 * weights within rel (and exactly 0 where expected is 0). Returns 1 when OK. */
int hx_compare_topk(int64_t T, int32_t k, const int32_t* ids, const float* weights, const int32_t* want_ids,
                    const float* want_weights, const unsigned char* row_flags, float rel, long* tolerated,
                    const char* ctx);

#endif /* MOEROUTE_HARNESS_H */
