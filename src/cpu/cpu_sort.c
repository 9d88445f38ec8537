/*
 * cpu_sort.c - sorting on the CPU: top-k ids -> token slots grouped by expert,
 * each expert padded to the unit size U, in the CK and/or vLLM layout.
 *
 * Contract section 3 as a counting sort, linear in T*k + E (+ the padding it
 * writes), never T*E:
 *
 *   1. count the entries of each expert (route does this while gating);
 *   2. padded exclusive prefix sum in increasing global id: start_e, total;
 *   3. one pass over (t, slot) in ascending order places each entry at its
 *      expert's cursor, so each expert's entries come out in ascending (t, slot)
 *      order without any comparison;
 *   4. one pass over the experts writes the padding sentinels and the block ids.
 *
 * One int32 array of E does all three jobs (count, start, cursor): after step 3
 * cursor_e = start_e + cnt_e, and step 4 recovers start_e as a running sum.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* A masked expert's cursor: its entries are dropped (contract 3). Real cursors
 * are >= 0. */
#define MR_CURSOR_DROP (-1)

void mr_cpu_sort_count(const mr_config* cfg, const int32_t* topk_ids, int32_t* expert_count) {
  const int64_t entries = cfg->num_tokens * (int64_t)cfg->top_k;
  const uint32_t num_experts = (uint32_t)cfg->num_experts;
  int64_t n;
  memset(expert_count, 0, (size_t)num_experts * sizeof *expert_count);
  for (n = 0; n < entries; ++n) {
    /* one unsigned compare drops both negative ids and ids >= E */
    uint32_t e = (uint32_t)topk_ids[n];
    if (e < num_experts) expert_count[e]++;
  }
}

static inline int64_t round_up(int64_t n, int32_t unit) { return (n + unit - 1) / unit * unit; }

void mr_cpu_sort_place(const mr_config* cfg, const int32_t* topk_ids, const float* topk_weights,
                       const int32_t* expert_mask, int32_t* expert_cursor, const moeroute_buffers* buffers) {
  const int64_t num_tokens = cfg->num_tokens;
  const int32_t k = cfg->top_k, unit = cfg->unit_size, num_experts = cfg->num_experts;
  const int ck = (cfg->layouts & MOEROUTE_LAYOUT_CK) != 0;
  const int vllm = (cfg->layouts & MOEROUTE_LAYOUT_VLLM) != 0;
  int32_t* sorted_ids = ck ? buffers->sorted_ids : NULL;
  float* sorted_weights = ck ? buffers->sorted_weights : NULL;
  int32_t* sorted_token_ids = vllm ? buffers->sorted_token_ids : NULL;
  /* sentinels: CK (k << 24) | T (k <= 32 and T < 2^24, so it fits an int32);
   * vLLM T*k (< 2^31) */
  const int32_t ck_sentinel = (int32_t)(((uint32_t)k << 24) | (uint32_t)num_tokens);
  const int32_t vllm_sentinel = (int32_t)(num_tokens * k);
  int64_t start = 0, t;
  int32_t e, slot, local_id = 0;

  /* 2. Padded exclusive prefix sum in increasing global id. pad_e is 0 for an
   * expert without entries (no block) and for a masked one. total <= T*k +
   * E*(U-1) = vllm_sorted_len <= INT32_MAX (mr_validate_params), so every start
   * fits the int32 cursor. */
  for (e = 0; e < num_experts; ++e) {
    int32_t count = expert_cursor[e];
    if (expert_mask && expert_mask[e] == 0) {
      expert_cursor[e] = MR_CURSOR_DROP;
      continue;
    }
    expert_cursor[e] = (int32_t)start;
    start += round_up(count, unit);
  }
  const int64_t total = start;

  /* 3. Place the entries, (t, slot) ascending: within an expert they come out in
   * token order, then slot order, as the contract asks. Only the valid range is
   * written. The weight is copied as bits with memcpy (contract: bit-exact, also
   * for a signalling NaN the caller may have passed to sort, which a float
   * load/store could quieten on some targets). */
  for (t = 0; t < num_tokens; ++t) {
    const int32_t* ids = topk_ids + t * k;
    for (slot = 0; slot < k; ++slot) {
      uint32_t expert = (uint32_t)ids[slot];
      int32_t pos;
      if (expert >= (uint32_t)num_experts) continue; /* id outside [0, E): dropped */
      pos = expert_cursor[expert];
      if (pos < 0) continue; /* masked expert: dropped */
      expert_cursor[expert] = pos + 1;
      if (sorted_ids) {
        sorted_ids[pos] = (int32_t)(((uint32_t)slot << 24) | (uint32_t)t);
        if (sorted_weights) memcpy(&sorted_weights[pos], &topk_weights[t * k + slot], sizeof(float));
      }
      if (sorted_token_ids) sorted_token_ids[pos] = (int32_t)(t * k + slot);
    }
  }

  /* 4. Padding and block ids, expert by expert. start_e is recovered as a running
   * sum; cursor_e now is start_e + cnt_e. local_id counts the enabled experts
   * below e (= e without a mask). Both layouts share the same blocks. */
  start = 0;
  for (e = 0; e < num_experts; ++e) {
    int64_t end_of_entries, end, pos, block;
    if (expert_cursor[e] == MR_CURSOR_DROP) continue;
    end_of_entries = expert_cursor[e];
    end = start + round_up(end_of_entries - start, unit);
    for (pos = end_of_entries; pos < end; ++pos) {
      if (sorted_ids) {
        sorted_ids[pos] = ck_sentinel;
        if (sorted_weights) sorted_weights[pos] = 0.0f;
      }
      if (sorted_token_ids) sorted_token_ids[pos] = vllm_sentinel;
    }
    for (block = start / unit; block < end / unit; ++block) {
      if (ck) buffers->sorted_expert_ids[block] = local_id;
      if (vllm) buffers->expert_ids[block] = local_id;
    }
    start = end;
    local_id++;
  }

  if (ck) {
    buffers->num_valid_ids[0] = (int32_t)total;
    buffers->num_valid_ids[1] = (int32_t)num_tokens;
  }
  if (vllm) buffers->num_tokens_post_pad[0] = (int32_t)total;
}
