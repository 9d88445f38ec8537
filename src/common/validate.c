/*
 * validate.c - every limit of the routing contract, checked on the host
 * before any work starts. Backends call these first; on failure nothing has
 * been written and the message names the argument and the limit.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>

#include "internal.h"

static const char* mr_op_name(moeroute_op op) {
  switch (op) {
    case MOEROUTE_OP_ROUTE: return "route";
    case MOEROUTE_OP_GATE: return "gate";
    case MOEROUTE_OP_SORT: return "sort";
  }
  return "?";
}

void mr_compute_sizes(const mr_config* cfg, moeroute_sizes* s) {
  const int64_t T = cfg->num_tokens, E = cfg->num_experts, k = cfg->top_k, U = cfg->unit_size;
  s->struct_size = sizeof *s;
  s->topk_len = T * k;
  /* CK reserves E*U - k beyond T*k (each expert can add at most U-1 padding rows,
     and CK's own allocation formula is this one: keep it so buffers are interchangeable). */
  s->ck_sorted_len = T * k + E * U - k;
  s->ck_blocks_len = (s->ck_sorted_len + U - 1) / U;
  s->vllm_sorted_len = T * k + E * (U - 1);
  s->vllm_blocks_len = (s->vllm_sorted_len + U - 1) / U;
}

moeroute_status mr_validate_params(moeroute_op op, const moeroute_params* p, mr_backend backend, const char* fn,
                                   mr_config* cfg) {
  if (!p) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: params is NULL", fn);
  if (p->struct_size != sizeof(moeroute_params))
    return mr_fail(MOEROUTE_ERR_PARAMS_SIZE,
                   "%s: params->struct_size=%zu, this library expects %zu (call moeroute_params_init first)", fn,
                   p->struct_size, sizeof(moeroute_params));
  if (op != MOEROUTE_OP_ROUTE && op != MOEROUTE_OP_GATE && op != MOEROUTE_OP_SORT)
    return mr_fail(MOEROUTE_ERR_BAD_ENUM, "%s: op=%d is not a moeroute_op", fn, (int)op);

  const int gating = op != MOEROUTE_OP_SORT;  /* reads logits */
  const int sorting = op != MOEROUTE_OP_GATE; /* writes layouts */

  if (gating) {
    if ((unsigned)p->logits_dtype > (unsigned)MOEROUTE_DTYPE_FP16)
      return mr_fail(MOEROUTE_ERR_BAD_ENUM, "%s: logits_dtype=%d is not a moeroute_dtype", fn, (int)p->logits_dtype);
    if ((unsigned)p->score > (unsigned)MOEROUTE_SCORE_SQRT_SOFTPLUS)
      return mr_fail(MOEROUTE_ERR_BAD_ENUM, "%s: score=%d is not a moeroute_score", fn, (int)p->score);
    if ((unsigned)p->group_score > (unsigned)MOEROUTE_GROUP_SCORE_MAX)
      return mr_fail(MOEROUTE_ERR_BAD_ENUM, "%s: group_score=%d is not a moeroute_group_score", fn,
                     (int)p->group_score);
    if (p->renormalize != 0 && p->renormalize != 1)
      return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s: renormalize=%d must be 0 or 1", fn, (int)p->renormalize);
  }
  if (sorting && (p->layouts == 0 || (p->layouts & ~MOEROUTE_LAYOUT_BOTH) != 0))
    return mr_fail(MOEROUTE_ERR_BAD_ENUM, "%s: layouts=0x%x must be a non-empty mask of MOEROUTE_LAYOUT_CK|VLLM (%s)",
                   fn, (unsigned)p->layouts, mr_op_name(op));

  const int32_t max_experts = backend == MR_BACKEND_CPU ? MOEROUTE_CPU_MAX_EXPERTS : MOEROUTE_MAX_EXPERTS;
  if (p->num_experts < 1 || p->num_experts > max_experts)
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: num_experts=%d outside [1, %d]", fn, (int)p->num_experts,
                   (int)max_experts);
  const int32_t max_k = p->num_experts < MOEROUTE_MAX_TOPK ? p->num_experts : MOEROUTE_MAX_TOPK;
  if (p->top_k < 1 || p->top_k > max_k)
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: top_k=%d outside [1, min(num_experts, %d)] = [1, %d]", fn,
                   (int)p->top_k, MOEROUTE_MAX_TOPK, (int)max_k);
  if (sorting && (p->unit_size < 1 || p->unit_size > MOEROUTE_MAX_UNIT_SIZE))
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: unit_size=%d outside [1, %d]", fn, (int)p->unit_size,
                   MOEROUTE_MAX_UNIT_SIZE);
  if (p->num_tokens < 0)
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: num_tokens=%" PRId64 " is negative", fn, p->num_tokens);
  if (sorting && (p->layouts & MOEROUTE_LAYOUT_CK) && p->num_tokens > MOEROUTE_CK_MAX_TOKENS)
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE,
                   "%s: num_tokens=%" PRId64 " exceeds %d, the CK layout's 24-bit token field", fn, p->num_tokens,
                   MOEROUTE_CK_MAX_TOKENS);
  if (p->num_tokens > (INT64_C(1) << 31) / p->top_k ||
      p->num_tokens * p->top_k >= (INT64_C(1) << 31))
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE, "%s: num_tokens*top_k=%" PRId64 "*%d must be below 2^31", fn,
                   p->num_tokens, (int)p->top_k);

  int64_t stride = p->logits_row_stride == 0 ? p->num_experts : p->logits_row_stride;
  if (gating && stride < p->num_experts)
    return mr_fail(MOEROUTE_ERR_BAD_STRIDE, "%s: logits_row_stride=%" PRId64 " is smaller than num_experts=%d", fn,
                   p->logits_row_stride, (int)p->num_experts);

  int32_t groups = 1, topk_groups = 1;
  if (gating) {
    if (p->num_groups < 1)
      return mr_fail(MOEROUTE_ERR_BAD_GROUPS, "%s: num_groups=%d must be >= 1 (1 = no grouped selection)", fn,
                     (int)p->num_groups);
    if (p->num_groups > 1) {
      groups = p->num_groups;
      topk_groups = p->topk_groups;
      if (p->num_experts % groups != 0)
        return mr_fail(MOEROUTE_ERR_BAD_GROUPS, "%s: num_groups=%d does not divide num_experts=%d", fn, (int)groups,
                       (int)p->num_experts);
      if (topk_groups < 1 || topk_groups > groups)
        return mr_fail(MOEROUTE_ERR_BAD_GROUPS, "%s: topk_groups=%d outside [1, num_groups=%d]", fn,
                       (int)topk_groups, (int)groups);
      const int32_t per_group = p->num_experts / groups;
      if ((int64_t)topk_groups * per_group < p->top_k)
        return mr_fail(MOEROUTE_ERR_BAD_GROUPS,
                       "%s: topk_groups*num_experts/num_groups=%d*%d is below top_k=%d: not enough experts to pick",
                       fn, (int)topk_groups, (int)per_group, (int)p->top_k);
      if (p->group_score == MOEROUTE_GROUP_SCORE_TOP2_SUM && per_group < 2)
        return mr_fail(MOEROUTE_ERR_BAD_GROUPS,
                       "%s: group_score TOP2_SUM needs at least 2 experts per group (num_experts/num_groups=%d)", fn,
                       (int)per_group);
    }
    if (!isfinite(p->scale))
      return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s: scale=%g is not finite", fn, (double)p->scale);
  }

  cfg->num_tokens = p->num_tokens;
  cfg->num_experts = p->num_experts;
  cfg->top_k = p->top_k;
  cfg->unit_size = sorting ? p->unit_size : 1;
  cfg->row_stride = stride;
  cfg->dtype = p->logits_dtype;
  cfg->score = p->score;
  cfg->renormalize = p->renormalize;
  cfg->scale = p->scale;
  cfg->num_groups = groups;
  cfg->topk_groups = topk_groups;
  cfg->group_score = p->group_score;
  cfg->layouts = sorting ? p->layouts : 0u;
  cfg->moe_buf_bytes = sorting ? p->moe_buf_bytes : 0;
  mr_compute_sizes(cfg, &cfg->sizes);
  /* Positions are int32 in every layout: the largest capacity must fit. */
  if (sorting && (cfg->sizes.ck_sorted_len > INT32_MAX || cfg->sizes.vllm_sorted_len > INT32_MAX))
    return mr_fail(MOEROUTE_ERR_BAD_SHAPE,
                   "%s: sorted length T*k + E*U - k = %" PRId64 " does not fit in int32 positions", fn,
                   cfg->sizes.ck_sorted_len);
  return MOEROUTE_OK;
}

/* A required output of length n: NULL is only fine when n == 0 (frameworks hand
   out NULL data pointers for empty tensors). */
#define MR_REQUIRE(ptr, n, what)                                                                        \
  do {                                                                                                  \
    if ((n) > 0 && (ptr) == NULL)                                                                       \
      return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: buffers->%s is NULL but %s needs it", fn, what, need); \
  } while (0)

moeroute_status mr_validate_buffers(moeroute_op op, const mr_config* cfg, const moeroute_buffers* b,
                                    size_t workspace_needed, const char* fn) {
  if (!b) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: buffers is NULL", fn);
  const int64_t topk_len = cfg->sizes.topk_len;
  const char* need = mr_op_name(op);
  if (op != MOEROUTE_OP_SORT) MR_REQUIRE(b->logits, topk_len, "logits");
  if (op == MOEROUTE_OP_GATE) {
    MR_REQUIRE(b->topk_ids, topk_len, "topk_ids");
    MR_REQUIRE(b->topk_weights, topk_len, "topk_weights");
  }
  if (op == MOEROUTE_OP_SORT) {
    MR_REQUIRE(b->topk_ids, topk_len, "topk_ids");
    if ((cfg->layouts & MOEROUTE_LAYOUT_CK) && b->sorted_weights) {
      need = "sort with sorted_weights";
      MR_REQUIRE(b->topk_weights, topk_len, "topk_weights");
      need = mr_op_name(op);
    }
  }
  if (cfg->layouts & MOEROUTE_LAYOUT_CK) {
    need = "the CK layout";
    MR_REQUIRE(b->sorted_ids, cfg->sizes.ck_sorted_len, "sorted_ids");
    MR_REQUIRE(b->sorted_expert_ids, cfg->sizes.ck_blocks_len, "sorted_expert_ids");
    MR_REQUIRE(b->num_valid_ids, 2, "num_valid_ids");
  }
  if (cfg->layouts & MOEROUTE_LAYOUT_VLLM) {
    need = "the vLLM layout";
    MR_REQUIRE(b->sorted_token_ids, cfg->sizes.vllm_sorted_len, "sorted_token_ids");
    MR_REQUIRE(b->expert_ids, cfg->sizes.vllm_blocks_len, "expert_ids");
    MR_REQUIRE(b->num_tokens_post_pad, 1, "num_tokens_post_pad");
  }
  if (op != MOEROUTE_OP_GATE && cfg->moe_buf_bytes > 0 && b->moe_buf == NULL)
    return mr_fail(MOEROUTE_ERR_MOE_BUF, "%s: params->moe_buf_bytes=%zu but buffers->moe_buf is NULL", fn,
                   cfg->moe_buf_bytes);
  if (b->workspace_bytes < workspace_needed)
    return mr_fail(MOEROUTE_ERR_WORKSPACE_TOO_SMALL, "%s: workspace_bytes=%zu, this call needs %zu", fn,
                   b->workspace_bytes, workspace_needed);
  if (workspace_needed > 0 && b->workspace == NULL)
    return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: buffers->workspace is NULL but %zu bytes are needed", fn,
                   workspace_needed);
  return MOEROUTE_OK;
}

moeroute_status moeroute_get_sizes(const moeroute_params* params, moeroute_sizes* sizes) {
  mr_clear_error();
  const char* fn = "moeroute_get_sizes";
  if (!sizes) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: sizes is NULL", fn);
  if (sizes->struct_size != 0 && sizes->struct_size != sizeof *sizes)
    return mr_fail(MOEROUTE_ERR_PARAMS_SIZE, "%s: sizes->struct_size=%zu, this library expects %zu (or 0)", fn,
                   sizes->struct_size, sizeof *sizes);
  mr_config cfg;
  /* The widest limits (the CPU backend's): a size query does not pick a backend. */
  moeroute_status st = mr_validate_params(MOEROUTE_OP_ROUTE, params, MR_BACKEND_CPU, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  *sizes = cfg.sizes;
  return MOEROUTE_OK;
}
