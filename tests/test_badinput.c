/*
 * test_badinput.c - the API surface: every invalid parameter or buffer gets its
 * own status (the comments of moeroute_status), a non-empty last error, and
 * writes nothing (every output is surrounded by canaries and prefilled with a
 * pattern; inputs are compared with pristine copies). The CUDA entry points get
 * the same bad inputs and must give the same validation statuses (a build
 * without CUDA then answers a valid request with NOT_SUPPORTED; a CUDA build
 * on a machine without GPU with NO_DEVICE or NOT_SUPPORTED). Also: status
 * strings, version calls, params/buffers init defaults, get_sizes and
 * workspace-size queries, presets against data/models.tsv.
 *
 * Links the shared library, so it also proves that the API is exported.
 *
 * usage: test_badinput [MODELS_TSV]
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__STDC_NO_THREADS__)
#include <threads.h>
#endif

#include "harness.h"
#include "moeroute.h"
#include "testutil.h"

#define OP_R 1u
#define OP_G 2u
#define OP_S 4u
#define OP_ALL 7u
#define B_CPU 1u
#define B_CUDA 2u
#define B_BOTH 3u

/* The valid base request: T = 5, E = 8, k = 2, U = 4, both layouts, fp32 logits,
 * a bias, a mask, 64 bytes of moe_buf. */
enum { BASE_T = 5, BASE_E = 8, BASE_K = 2, BASE_U = 4 };

typedef struct fixture {
  moeroute_params p;
  hx_outputs o; /* outputs at the base capacity (plus a workspace large enough for every op) */
  tu_guard logits, bias, mask, in_ids, in_w;
  unsigned char *logits_copy, *bias_copy, *mask_copy, *in_ids_copy, *in_w_copy;
  size_t ws_cpu[3];
  size_t ws_cuda[3];
  int ws_cuda_ok[3];
  tu_guard ws_all; /* max of every workspace */
} fixture;

static unsigned char* copy_of(const tu_guard* g) {
  unsigned char* c = (unsigned char*)malloc(g->bytes + 1);
  memcpy(c, g->ptr, g->bytes);
  return c;
}

static void fixture_init(fixture* f) {
  memset(f, 0, sizeof *f);
  moeroute_params_init(&f->p);
  f->p.num_tokens = BASE_T;
  f->p.num_experts = BASE_E;
  f->p.top_k = BASE_K;
  f->p.unit_size = BASE_U;
  f->p.logits_dtype = MOEROUTE_DTYPE_FP32;
  f->p.layouts = MOEROUTE_LAYOUT_BOTH;
  f->p.moe_buf_bytes = 64;

  float* x = (float*)tu_galloc(&f->logits, sizeof(float) * BASE_T * BASE_E, 0);
  for (int i = 0; i < BASE_T * BASE_E; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
  float* b = (float*)tu_galloc(&f->bias, sizeof(float) * BASE_E, 0);
  int32_t* m = (int32_t*)tu_galloc(&f->mask, sizeof(int32_t) * BASE_E, 0);
  for (int i = 0; i < BASE_E; i++) {
    b[i] = 0.01f * (float)i;
    m[i] = i % 3 != 1;
  }
  int32_t* ids = (int32_t*)tu_galloc(&f->in_ids, sizeof(int32_t) * BASE_T * BASE_K, 0);
  float* w = (float*)tu_galloc(&f->in_w, sizeof(float) * BASE_T * BASE_K, 0);
  for (int i = 0; i < BASE_T * BASE_K; i++) {
    ids[i] = (i * 5) % BASE_E;
    w[i] = 0.5f;
  }
  f->logits_copy = copy_of(&f->logits);
  f->bias_copy = copy_of(&f->bias);
  f->mask_copy = copy_of(&f->mask);
  f->in_ids_copy = copy_of(&f->in_ids);
  f->in_w_copy = copy_of(&f->in_w);

  hx_alloc(&f->o, &f->p, MOEROUTE_OP_ROUTE, "fixture");
  size_t wmax = 0;
  for (int op = 0; op < 3; op++) {
    moeroute_status st = moeroute_cpu_workspace_size((moeroute_op)op, &f->p, &f->ws_cpu[op]);
    CHECK(st == MOEROUTE_OK, "cpu_workspace_size(op %d) of the valid base: %s", op, moeroute_last_error());
    f->ws_cuda_ok[op] = moeroute_cuda_workspace_size((moeroute_op)op, &f->p, &f->ws_cuda[op]) == MOEROUTE_OK;
    if (f->ws_cpu[op] > wmax) wmax = f->ws_cpu[op];
    if (f->ws_cuda_ok[op] && f->ws_cuda[op] > wmax) wmax = f->ws_cuda[op];
  }
  tu_galloc(&f->ws_all, 4 * wmax + 4096, 0xEE); /* room for the valid variants' larger needs */
}

static void fixture_free(fixture* f) {
  hx_free(&f->o);
  tu_gfree(&f->logits);
  tu_gfree(&f->bias);
  tu_gfree(&f->mask);
  tu_gfree(&f->in_ids);
  tu_gfree(&f->in_w);
  tu_gfree(&f->ws_all);
  free(f->logits_copy);
  free(f->bias_copy);
  free(f->mask_copy);
  free(f->in_ids_copy);
  free(f->in_w_copy);
}

/* The valid buffers of op (every output of the layouts, top-k, moe_buf). */
static void base_buffers(fixture* f, moeroute_op op, int cuda, moeroute_buffers* b) {
  hx_buffers(&f->o, op == MOEROUTE_OP_SORT ? (HX_SORTED_WEIGHTS | HX_MOE_BUF) : (HX_TOPK | HX_SORTED_WEIGHTS | HX_MOE_BUF), b);
  if (op == MOEROUTE_OP_GATE) { /* gate: top-k only (moe_buf given: it must stay untouched) */
    b->sorted_ids = NULL;
    b->sorted_weights = NULL;
    b->sorted_expert_ids = NULL;
    b->num_valid_ids = NULL;
    b->sorted_token_ids = NULL;
    b->expert_ids = NULL;
    b->num_tokens_post_pad = NULL;
  }
  if (op != MOEROUTE_OP_SORT) {
    b->logits = f->logits.ptr;
    b->bias = (const float*)f->bias.ptr;
  } else {
    b->topk_ids = (int32_t*)f->in_ids.ptr;
    b->topk_weights = (float*)f->in_w.ptr;
  }
  b->expert_mask = (const int32_t*)f->mask.ptr;
  b->workspace = f->ws_all.ptr;
  b->workspace_bytes = cuda ? (f->ws_cuda_ok[op] ? f->ws_cuda[op] : 0) : f->ws_cpu[op];
}

static int inputs_intact(const fixture* f) {
  return !memcmp(f->logits.ptr, f->logits_copy, f->logits.bytes) && !memcmp(f->bias.ptr, f->bias_copy, f->bias.bytes) &&
         !memcmp(f->mask.ptr, f->mask_copy, f->mask.bytes) && !memcmp(f->in_ids.ptr, f->in_ids_copy, f->in_ids.bytes) &&
         !memcmp(f->in_w.ptr, f->in_w_copy, f->in_w.bytes) && tu_gcanary_ok(&f->logits) && tu_gcanary_ok(&f->bias) &&
         tu_gcanary_ok(&f->mask) && tu_gcanary_ok(&f->in_ids) && tu_gcanary_ok(&f->in_w) && tu_gcanary_ok(&f->ws_all);
}

static moeroute_status call(moeroute_op op, int cuda, const moeroute_params* p, const moeroute_buffers* b) {
  if (cuda)
    return op == MOEROUTE_OP_ROUTE  ? moeroute_cuda_route(p, b, NULL)
           : op == MOEROUTE_OP_GATE ? moeroute_cuda_gate(p, b, NULL)
                                    : moeroute_cuda_sort(p, b, NULL);
  return op == MOEROUTE_OP_ROUTE  ? moeroute_cpu_route(p, b)
         : op == MOEROUTE_OP_GATE ? moeroute_cpu_gate(p, b)
                                  : moeroute_cpu_sort(p, b);
}

/* ---- the table of bad inputs ---------------------------------------------------- */

typedef enum case_id {
  C_PARAMS_NULL,
  C_BUFFERS_NULL,
  C_LOGITS_NULL,
  C_TOPK_IDS_NULL,
  C_TOPK_W_NULL,
  C_SORTED_IDS_NULL,
  C_SORTED_EXPERT_IDS_NULL,
  C_NUM_VALID_IDS_NULL,
  C_SORTED_TOKEN_IDS_NULL,
  C_EXPERT_IDS_NULL,
  C_NUM_TOKENS_POST_PAD_NULL,
  C_CK_ONLY_SORTED_IDS_NULL,
  C_VLLM_ONLY_EXPERT_IDS_NULL,
  C_STRUCT_SIZE_0,
  C_STRUCT_SIZE_SMALL,
  C_STRUCT_SIZE_BIG,
  C_DTYPE_3,
  C_DTYPE_NEG,
  C_SCORE_3,
  C_GROUP_SCORE_2,
  C_RENORMALIZE_2,
  C_LAYOUTS_0,
  C_LAYOUTS_4,
  C_LAYOUTS_ALL_BITS,
  C_E_0,
  C_E_NEG,
  C_E_CPU_LIMIT,
  C_E_1025,
  C_K_0,
  C_K_NEG,
  C_K_GT_E,
  C_K_33,
  C_U_0,
  C_U_1025,
  C_U_NEG,
  C_T_NEG,
  C_T_CK_LIMIT,
  C_T_CK_LIMIT_BOTH,
  C_TK_2_31,
  C_TK_2_31_K32,
  C_STRIDE_LT_E,
  C_STRIDE_NEG,
  C_G_NOT_DIVIDING,
  C_G_0,
  C_G_NEG,
  C_TOPK_GROUPS_0,
  C_TOPK_GROUPS_GT_G,
  C_TOPK_GROUPS_TOO_FEW,
  C_TOP2_ONE_PER_GROUP,
  C_SCALE_NAN,
  C_SCALE_INF,
  C_SCALE_NEG_INF,
  C_BIAS_NAN,
  C_BIAS_INF,
  C_MASK_2,
  C_MASK_NEG,
  C_WORKSPACE_SMALL,
  C_WORKSPACE_ZERO,
  C_MOE_BUF_NULL,
  C_COUNT
} case_id;

typedef struct bad_case {
  case_id id;
  const char* name;
  unsigned ops;
  unsigned backends;
  moeroute_status want;
} bad_case;

static const bad_case cases[] = {
    {C_PARAMS_NULL, "params NULL", OP_ALL, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_BUFFERS_NULL, "buffers NULL", OP_ALL, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_LOGITS_NULL, "logits NULL with T > 0", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_TOPK_IDS_NULL, "topk_ids NULL (gate output / sort input)", OP_G | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_TOPK_W_NULL, "topk_weights NULL (gate / sort with sorted_weights)", OP_G | OP_S, B_BOTH,
     MOEROUTE_ERR_NULL_POINTER},
    {C_SORTED_IDS_NULL, "sorted_ids NULL (CK)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_SORTED_EXPERT_IDS_NULL, "sorted_expert_ids NULL (CK)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_NUM_VALID_IDS_NULL, "num_valid_ids NULL (CK)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_SORTED_TOKEN_IDS_NULL, "sorted_token_ids NULL (vLLM)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_EXPERT_IDS_NULL, "expert_ids NULL (vLLM)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_NUM_TOKENS_POST_PAD_NULL, "num_tokens_post_pad NULL (vLLM)", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_CK_ONLY_SORTED_IDS_NULL, "layouts=CK, sorted_ids NULL", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_VLLM_ONLY_EXPERT_IDS_NULL, "layouts=VLLM, expert_ids NULL", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_NULL_POINTER},
    {C_STRUCT_SIZE_0, "struct_size 0", OP_ALL, B_BOTH, MOEROUTE_ERR_PARAMS_SIZE},
    {C_STRUCT_SIZE_SMALL, "struct_size sizeof - 4", OP_ALL, B_BOTH, MOEROUTE_ERR_PARAMS_SIZE},
    {C_STRUCT_SIZE_BIG, "struct_size sizeof + 8", OP_ALL, B_BOTH, MOEROUTE_ERR_PARAMS_SIZE},
    {C_DTYPE_3, "logits_dtype 3", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_DTYPE_NEG, "logits_dtype -1", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_SCORE_3, "score 3", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_GROUP_SCORE_2, "group_score 2 (G = 2)", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_RENORMALIZE_2, "renormalize 2", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_VALUE},
    {C_LAYOUTS_0, "layouts 0", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_LAYOUTS_4, "layouts 4", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_LAYOUTS_ALL_BITS, "layouts 0xffffffff", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_ENUM},
    {C_E_0, "num_experts 0", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_E_NEG, "num_experts -8", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_E_CPU_LIMIT, "num_experts 2^20 + 1 (CPU limit)", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_E_1025, "num_experts 1025 (CUDA limit)", OP_ALL, B_CUDA, MOEROUTE_ERR_BAD_SHAPE},
    {C_K_0, "top_k 0", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_K_NEG, "top_k -1", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_K_GT_E, "top_k 9 > E = 8", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_K_33, "top_k 33 > 32 (E = 64)", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_U_0, "unit_size 0", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_U_1025, "unit_size 1025", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_U_NEG, "unit_size -4", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_T_NEG, "num_tokens -1", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_T_CK_LIMIT, "num_tokens 2^24 with layouts=CK", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_T_CK_LIMIT_BOTH, "num_tokens 2^24 with layouts=BOTH", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_TK_2_31, "T*k = 2^31 (T = 2^30, k = 2, vLLM)", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_TK_2_31_K32, "T*k = 2^31 (T = 2^26, k = 32, vLLM)", OP_ALL, B_BOTH, MOEROUTE_ERR_BAD_SHAPE},
    {C_STRIDE_LT_E, "logits_row_stride E - 1", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_STRIDE},
    {C_STRIDE_NEG, "logits_row_stride -8", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_STRIDE},
    {C_G_NOT_DIVIDING, "num_groups 3 does not divide E = 8", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_G_0, "num_groups 0", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_G_NEG, "num_groups -2", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_TOPK_GROUPS_0, "topk_groups 0 (G = 2)", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_TOPK_GROUPS_GT_G, "topk_groups 3 > G = 2", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_TOPK_GROUPS_TOO_FEW, "topk_groups * E / G = 1 * 2 < k = 3", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_TOP2_ONE_PER_GROUP, "TOP2_SUM with one expert per group", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_GROUPS},
    {C_SCALE_NAN, "scale NaN", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_VALUE},
    {C_SCALE_INF, "scale +inf", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_VALUE},
    {C_SCALE_NEG_INF, "scale -inf", OP_R | OP_G, B_BOTH, MOEROUTE_ERR_BAD_VALUE},
    {C_BIAS_NAN, "bias[3] NaN", OP_R | OP_G, B_CPU, MOEROUTE_ERR_BAD_VALUE},
    {C_BIAS_INF, "bias[7] +inf", OP_R | OP_G, B_CPU, MOEROUTE_ERR_BAD_VALUE},
    {C_MASK_2, "expert_mask[2] = 2", OP_R | OP_S, B_CPU, MOEROUTE_ERR_BAD_VALUE},
    {C_MASK_NEG, "expert_mask[7] = -1", OP_R | OP_S, B_CPU, MOEROUTE_ERR_BAD_VALUE},
    {C_WORKSPACE_SMALL, "workspace_bytes one below the query", OP_ALL, B_BOTH, MOEROUTE_ERR_WORKSPACE_TOO_SMALL},
    {C_WORKSPACE_ZERO, "workspace NULL, workspace_bytes 0", OP_ALL, B_BOTH, MOEROUTE_ERR_WORKSPACE_TOO_SMALL},
    {C_MOE_BUF_NULL, "moe_buf NULL with moe_buf_bytes 64", OP_R | OP_S, B_BOTH, MOEROUTE_ERR_MOE_BUF},
};

/* Apply a case to a copy of the valid request. Returns 0 when it does not apply
 * here (a workspace case when the query says 0 bytes). */
static int apply(case_id id, fixture* f, moeroute_op op, int cuda, moeroute_params* p, moeroute_buffers* b,
                 int* null_params, int* null_buffers) {
  *null_params = *null_buffers = 0;
  switch (id) {
    case C_PARAMS_NULL: *null_params = 1; break;
    case C_BUFFERS_NULL: *null_buffers = 1; break;
    case C_LOGITS_NULL: b->logits = NULL; break;
    case C_TOPK_IDS_NULL: b->topk_ids = NULL; break;
    case C_TOPK_W_NULL: b->topk_weights = NULL; break; /* sort: sorted_weights is requested in the base */
    case C_SORTED_IDS_NULL: b->sorted_ids = NULL; break;
    case C_SORTED_EXPERT_IDS_NULL: b->sorted_expert_ids = NULL; break;
    case C_NUM_VALID_IDS_NULL: b->num_valid_ids = NULL; break;
    case C_SORTED_TOKEN_IDS_NULL: b->sorted_token_ids = NULL; break;
    case C_EXPERT_IDS_NULL: b->expert_ids = NULL; break;
    case C_NUM_TOKENS_POST_PAD_NULL: b->num_tokens_post_pad = NULL; break;
    case C_CK_ONLY_SORTED_IDS_NULL:
      p->layouts = MOEROUTE_LAYOUT_CK;
      b->sorted_ids = NULL;
      break;
    case C_VLLM_ONLY_EXPERT_IDS_NULL:
      p->layouts = MOEROUTE_LAYOUT_VLLM;
      b->expert_ids = NULL;
      break;
    case C_STRUCT_SIZE_0: p->struct_size = 0; break;
    case C_STRUCT_SIZE_SMALL: p->struct_size = sizeof(moeroute_params) - 4; break;
    case C_STRUCT_SIZE_BIG: p->struct_size = sizeof(moeroute_params) + 8; break;
    case C_DTYPE_3: p->logits_dtype = (moeroute_dtype)3; break;
    case C_DTYPE_NEG: p->logits_dtype = (moeroute_dtype)-1; break;
    case C_SCORE_3: p->score = (moeroute_score)3; break;
    case C_GROUP_SCORE_2:
      p->num_groups = 2;
      p->topk_groups = 1;
      p->group_score = (moeroute_group_score)2;
      break;
    case C_RENORMALIZE_2: p->renormalize = 2; break;
    case C_LAYOUTS_0: p->layouts = 0; break;
    case C_LAYOUTS_4: p->layouts = 4; break;
    case C_LAYOUTS_ALL_BITS: p->layouts = 0xffffffffu; break;
    case C_E_0: p->num_experts = 0; break;
    case C_E_NEG: p->num_experts = -8; break;
    case C_E_CPU_LIMIT: p->num_experts = MOEROUTE_CPU_MAX_EXPERTS + 1; break;
    case C_E_1025: p->num_experts = 1025; break;
    case C_K_0: p->top_k = 0; break;
    case C_K_NEG: p->top_k = -1; break;
    case C_K_GT_E: p->top_k = BASE_E + 1; break;
    case C_K_33:
      p->num_experts = 64;
      p->top_k = 33;
      break;
    case C_U_0: p->unit_size = 0; break;
    case C_U_1025: p->unit_size = 1025; break;
    case C_U_NEG: p->unit_size = -4; break;
    case C_T_NEG: p->num_tokens = -1; break;
    case C_T_CK_LIMIT:
      p->num_tokens = (int64_t)1 << 24;
      p->layouts = MOEROUTE_LAYOUT_CK;
      break;
    case C_T_CK_LIMIT_BOTH: p->num_tokens = (int64_t)1 << 24; break;
    case C_TK_2_31:
      p->num_tokens = (int64_t)1 << 30;
      p->layouts = MOEROUTE_LAYOUT_VLLM;
      break;
    case C_TK_2_31_K32:
      p->num_experts = 64;
      p->top_k = 32;
      p->num_tokens = (int64_t)1 << 26;
      p->layouts = MOEROUTE_LAYOUT_VLLM;
      break;
    case C_STRIDE_LT_E: p->logits_row_stride = BASE_E - 1; break;
    case C_STRIDE_NEG: p->logits_row_stride = -BASE_E; break;
    case C_G_NOT_DIVIDING:
      p->num_groups = 3;
      p->topk_groups = 1;
      break;
    case C_G_0: p->num_groups = 0; break;
    case C_G_NEG: p->num_groups = -2; break;
    case C_TOPK_GROUPS_0:
      p->num_groups = 2;
      p->topk_groups = 0;
      break;
    case C_TOPK_GROUPS_GT_G:
      p->num_groups = 2;
      p->topk_groups = 3;
      break;
    case C_TOPK_GROUPS_TOO_FEW:
      p->num_groups = 4;
      p->topk_groups = 1;
      p->top_k = 3;
      break;
    case C_TOP2_ONE_PER_GROUP:
      p->num_groups = BASE_E;
      p->topk_groups = BASE_E;
      p->group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
      break;
    case C_SCALE_NAN: p->scale = NAN; break;
    case C_SCALE_INF: p->scale = INFINITY; break;
    case C_SCALE_NEG_INF: p->scale = -INFINITY; break;
    case C_BIAS_NAN: ((float*)f->bias.ptr)[3] = NAN; break;
    case C_BIAS_INF: ((float*)f->bias.ptr)[7] = INFINITY; break;
    case C_MASK_2: ((int32_t*)f->mask.ptr)[2] = 2; break;
    case C_MASK_NEG: ((int32_t*)f->mask.ptr)[7] = -1; break;
    case C_WORKSPACE_SMALL:
      if (b->workspace_bytes == 0) return 0;
      b->workspace_bytes -= 1;
      break;
    case C_WORKSPACE_ZERO:
      if (b->workspace_bytes == 0) return 0;
      b->workspace = NULL;
      b->workspace_bytes = 0;
      break;
    case C_MOE_BUF_NULL: b->moe_buf = NULL; break;
    case C_COUNT: break;
  }
  (void)op;
  (void)cuda;
  return 1;
}

/* Undo the input edits of a case. */
static void restore_inputs(fixture* f) {
  memcpy(f->bias.ptr, f->bias_copy, f->bias.bytes);
  memcpy(f->mask.ptr, f->mask_copy, f->mask.bytes);
}

static const char* op_name(moeroute_op op) {
  return op == MOEROUTE_OP_ROUTE ? "route" : op == MOEROUTE_OP_GATE ? "gate" : "sort";
}

static long skipped = 0;

/* Run every bad case on op / backend. Returns the number of failing cases. */
static void run_bad_cases(fixture* f, long* passed, long* failed) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bad_case* c = &cases[i];
    for (int cuda = 0; cuda < 2; cuda++) {
      if (!(c->backends & (cuda ? B_CUDA : B_CPU))) continue;
      for (int op = 0; op < 3; op++) {
        if (!(c->ops & (1u << op))) continue;
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s %s: %s", cuda ? "cuda" : "cpu", op_name((moeroute_op)op), c->name);
        moeroute_params p = f->p;
        moeroute_buffers b;
        base_buffers(f, (moeroute_op)op, cuda, &b);
        int null_params, null_buffers;
        if (!apply(c->id, f, (moeroute_op)op, cuda, &p, &b, &null_params, &null_buffers)) {
          skipped++;
          restore_inputs(f);
          continue;
        }
        hx_refill(&f->o);
        const long before = tu_failures;
        moeroute_status st = call((moeroute_op)op, cuda, null_params ? NULL : &p, null_buffers ? NULL : &b);
        const char* msg = moeroute_last_error();
        CHECK(st == c->want, "%s: status %s, want %s (%s)", ctx, moeroute_status_string(st),
              moeroute_status_string(c->want), msg ? msg : "(null)");
        CHECK(msg != NULL && msg[0] != 0, "%s: empty last error", ctx);
        hx_untouched(&f->o, ctx);
        restore_inputs(f);
        CHECK(inputs_intact(f), "%s: an input (or the workspace canary) was written", ctx);
        if (tu_failures == before)
          (*passed)++;
        else
          (*failed)++;
      }
    }
  }
}

/* The size queries refuse the same parameters (and write nothing). */
static void run_query_cases(fixture* f, long* passed, long* failed) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bad_case* c = &cases[i];
    /* parameter-only cases, with the CPU's limits */
    if (c->id == C_BUFFERS_NULL || (c->id >= C_LOGITS_NULL && c->id <= C_VLLM_ONLY_EXPERT_IDS_NULL) ||
        c->id >= C_BIAS_NAN || !(c->backends & B_CPU))
      continue;
    for (int op = 0; op < 3; op++) {
      if (!(c->ops & (1u << op))) continue;
      char ctx[256];
      moeroute_params p = f->p;
      moeroute_buffers b;
      base_buffers(f, (moeroute_op)op, 0, &b);
      int null_params, null_buffers;
      apply(c->id, f, (moeroute_op)op, 0, &p, &b, &null_params, &null_buffers);
      const long before = tu_failures;
      size_t bytes = 12345;
      snprintf(ctx, sizeof ctx, "cpu_workspace_size(%s): %s", op_name((moeroute_op)op), c->name);
      moeroute_status st = moeroute_cpu_workspace_size((moeroute_op)op, null_params ? NULL : &p, &bytes);
      CHECK(st == c->want, "%s: status %s, want %s", ctx, moeroute_status_string(st), moeroute_status_string(c->want));
      CHECK(bytes == 12345, "%s: bytes written on failure", ctx);
      CHECK(moeroute_last_error()[0] != 0, "%s: empty last error", ctx);
      bytes = 12345;
      snprintf(ctx, sizeof ctx, "cuda_workspace_size(%s): %s", op_name((moeroute_op)op), c->name);
      st = moeroute_cuda_workspace_size((moeroute_op)op, null_params ? NULL : &p, &bytes);
      CHECK(st == c->want, "%s: status %s, want %s", ctx, moeroute_status_string(st), moeroute_status_string(c->want));
      CHECK(bytes == 12345, "%s: bytes written on failure", ctx);
      snprintf(ctx, sizeof ctx, "cuda_supports(%s): %s", op_name((moeroute_op)op), c->name);
      CHECK(moeroute_cuda_supports((moeroute_op)op, null_params ? NULL : &p) == 0, "%s: supports invalid params", ctx);
      /* get_sizes: validated like a routing call (moeroute.h) */
      if (op == MOEROUTE_OP_ROUTE) {
        moeroute_sizes s;
        memset(&s, 0x5a, sizeof s);
        s.struct_size = sizeof s;
        snprintf(ctx, sizeof ctx, "get_sizes: %s", c->name);
        st = moeroute_get_sizes(null_params ? NULL : &p, &s);
        CHECK(st == c->want, "%s: status %s, want %s", ctx, moeroute_status_string(st),
              moeroute_status_string(c->want));
        CHECK(s.topk_len == (int64_t)0x5a5a5a5a5a5a5a5all && s.vllm_blocks_len == (int64_t)0x5a5a5a5a5a5a5a5all,
              "%s: sizes written on failure", ctx);
      }
      if (tu_failures == before)
        (*passed)++;
      else
        (*failed)++;
    }
  }
}

/* Valid requests: the CPU says OK with an empty last error; valid variants
 * (optional outputs NULL, one layout without the other's pointers, T = 0 with
 * NULL logits) too. CUDA: NOT_SUPPORTED without CUDA, NO_DEVICE or
 * NOT_SUPPORTED without a GPU; nothing written either way. */
static void run_valid_cases(fixture* f, long* passed, long* failed) {
  const int gpus = moeroute_cuda_device_count();
  const int cuda_built = strstr(moeroute_build_info(), "cuda=ON") != NULL || strstr(moeroute_build_info(), "cuda=on") != NULL;
  CHECK(gpus >= 0, "device count %d", gpus);
  if (!cuda_built) CHECK(gpus == 0, "device count %d without CUDA", gpus);
  for (int variant = 0; variant < 6; variant++) {
    for (int op = 0; op < 3; op++) {
      for (int cuda = 0; cuda < 2; cuda++) {
        if (cuda && gpus > 0) continue; /* host pointers: only the no-GPU answers are tested here */
        char ctx[200];
        moeroute_params p = f->p;
        moeroute_buffers b;
        base_buffers(f, (moeroute_op)op, cuda, &b);
        const char* vname = "base";
        switch (variant) {
          case 1:
            vname = "optional outputs NULL (route top-k, sorted_weights, bias, mask, moe_buf with 0 bytes)";
            if (op == MOEROUTE_OP_ROUTE) b.topk_ids = NULL, b.topk_weights = NULL;
            if (op == MOEROUTE_OP_SORT) b.topk_weights = NULL;
            b.sorted_weights = NULL;
            b.bias = NULL;
            b.expert_mask = NULL;
            b.moe_buf = NULL;
            p.moe_buf_bytes = 0;
            break;
          case 2:
            vname = "layouts=CK, vLLM pointers NULL";
            p.layouts = MOEROUTE_LAYOUT_CK;
            b.sorted_token_ids = b.expert_ids = b.num_tokens_post_pad = NULL;
            break;
          case 3:
            vname = "layouts=VLLM, CK pointers NULL";
            p.layouts = MOEROUTE_LAYOUT_VLLM;
            b.sorted_ids = b.sorted_expert_ids = b.num_valid_ids = NULL;
            b.sorted_weights = NULL;
            break;
          case 4:
            vname = "T = 0, logits NULL";
            p.num_tokens = 0;
            b.logits = NULL;
            break;
          case 5:
            vname = "groups, stride > E, bf16, sigmoid";
            p.num_groups = 4;
            p.topk_groups = 2;
            p.logits_row_stride = BASE_E; /* explicit = E */
            p.score = MOEROUTE_SCORE_SIGMOID;
            p.logits_dtype = MOEROUTE_DTYPE_BF16; /* reads half of the fp32 buffer: fine */
            break;
          default: break;
        }
        snprintf(ctx, sizeof ctx, "%s %s valid: %s", cuda ? "cuda" : "cpu", op_name((moeroute_op)op), vname);
        { /* the variant may need another workspace size */
          size_t ws = 0;
          moeroute_status wst = cuda ? moeroute_cuda_workspace_size((moeroute_op)op, &p, &ws)
                                     : moeroute_cpu_workspace_size((moeroute_op)op, &p, &ws);
          if (wst == MOEROUTE_OK) {
            CHECK(ws <= f->ws_all.bytes, "%s: workspace %zu larger than the fixture's", ctx, ws);
            b.workspace_bytes = ws;
          }
        }
        hx_refill(&f->o);
        const long before = tu_failures;
        moeroute_status st = call((moeroute_op)op, cuda, &p, &b);
        if (!cuda) {
          CHECK(st == MOEROUTE_OK, "%s: %s (%s)", ctx, moeroute_status_string(st), moeroute_last_error());
          CHECK(moeroute_last_error()[0] == 0, "%s: last error not empty after success: %s", ctx,
                moeroute_last_error());
          hx_canaries_ok(&f->o, ctx);
        } else {
          if (!cuda_built)
            CHECK(st == MOEROUTE_ERR_NOT_SUPPORTED, "%s: %s, want NOT_SUPPORTED without CUDA", ctx,
                  moeroute_status_string(st));
          else
            CHECK(st == MOEROUTE_ERR_NO_DEVICE || st == MOEROUTE_ERR_NOT_SUPPORTED,
                  "%s: %s, want NO_DEVICE or NOT_SUPPORTED without a GPU", ctx, moeroute_status_string(st));
          CHECK(moeroute_last_error()[0] != 0, "%s: empty last error", ctx);
          hx_untouched(&f->o, ctx);
        }
        CHECK(inputs_intact(f), "%s: an input was written", ctx);
        if (tu_failures == before)
          (*passed)++;
        else
          (*failed)++;
      }
    }
  }
  /* supports: never for invalid params, never without CUDA */
  if (!cuda_built)
    for (int op = 0; op < 3; op++)
      CHECK(moeroute_cuda_supports((moeroute_op)op, &f->p) == 0, "cuda_supports(op %d) = 1 without CUDA", op);
  CHECK(moeroute_cuda_supports((moeroute_op)7, &f->p) == 0, "cuda_supports(bad op)");
}

/* ---- the rest of the API ---------------------------------------------------------- */

static void api_basics(void) {
  static const char* names[] = {"MOEROUTE_OK",
                                "MOEROUTE_ERR_NULL_POINTER",
                                "MOEROUTE_ERR_PARAMS_SIZE",
                                "MOEROUTE_ERR_BAD_ENUM",
                                "MOEROUTE_ERR_BAD_SHAPE",
                                "MOEROUTE_ERR_BAD_STRIDE",
                                "MOEROUTE_ERR_BAD_GROUPS",
                                "MOEROUTE_ERR_BAD_VALUE",
                                "MOEROUTE_ERR_WORKSPACE_TOO_SMALL",
                                "MOEROUTE_ERR_MOE_BUF",
                                "MOEROUTE_ERR_NOT_SUPPORTED",
                                "MOEROUTE_ERR_NO_DEVICE",
                                "MOEROUTE_ERR_CUDA",
                                "MOEROUTE_ERR_INTERNAL"};
  for (int s = 0; s <= (int)MOEROUTE_ERR_INTERNAL; s++) {
    const char* got = moeroute_status_string((moeroute_status)s);
    CHECK(got && !strcmp(got, names[s]), "status_string(%d) = %s, want %s", s, got ? got : "(null)", names[s]);
  }
  static const int unknown[] = {14, 100, -1};
  for (int i = 0; i < 3; i++) {
    const char* got = moeroute_status_string((moeroute_status)unknown[i]);
    CHECK(got && got[0], "status_string(%d) is NULL or empty", unknown[i]);
  }

  CHECK(moeroute_version_number() == MOEROUTE_VERSION_NUMBER, "version_number %u, header %d",
        moeroute_version_number(), MOEROUTE_VERSION_NUMBER);
  char v[64];
  snprintf(v, sizeof v, "%d.%d.%d", MOEROUTE_VERSION_MAJOR, MOEROUTE_VERSION_MINOR, MOEROUTE_VERSION_PATCH);
  CHECK(moeroute_version_string() && !strcmp(moeroute_version_string(), v), "version_string %s, want %s",
        moeroute_version_string() ? moeroute_version_string() : "(null)", v);
  CHECK(moeroute_build_info() && strstr(moeroute_build_info(), "cuda="), "build_info %s",
        moeroute_build_info() ? moeroute_build_info() : "(null)");
  printf("moeroute %s, build: %s, CUDA devices: %d\n", moeroute_version_string(), moeroute_build_info(),
         moeroute_cuda_device_count());

  /* params_init: the documented defaults */
  moeroute_params p;
  memset(&p, 0xa5, sizeof p);
  CHECK(moeroute_params_init(&p) == MOEROUTE_OK, "params_init");
  CHECK(p.struct_size == sizeof p && p.num_tokens == 0 && p.num_experts == 0 && p.top_k == 0 && p.unit_size == 32 &&
            p.logits_row_stride == 0 && p.logits_dtype == MOEROUTE_DTYPE_BF16 &&
            p.score == MOEROUTE_SCORE_SOFTMAX && p.renormalize == 1 && p.scale == 1.0f && p.num_groups == 1 &&
            p.topk_groups == 1 && p.group_score == MOEROUTE_GROUP_SCORE_TOP2_SUM &&
            p.layouts == MOEROUTE_LAYOUT_BOTH && p.moe_buf_bytes == 0,
        "params_init defaults");
  CHECK(moeroute_params_init(NULL) == MOEROUTE_ERR_NULL_POINTER, "params_init(NULL)");
  CHECK(moeroute_last_error()[0] != 0, "params_init(NULL): empty last error");
  moeroute_buffers b;
  memset(&b, 0xa5, sizeof b);
  CHECK(moeroute_buffers_init(&b) == MOEROUTE_OK, "buffers_init");
  CHECK(!b.logits && !b.bias && !b.expert_mask && !b.topk_ids && !b.topk_weights && !b.sorted_ids &&
            !b.sorted_weights && !b.sorted_expert_ids && !b.num_valid_ids && !b.sorted_token_ids && !b.expert_ids &&
            !b.num_tokens_post_pad && !b.moe_buf && !b.workspace && b.workspace_bytes == 0,
        "buffers_init leaves something set");
  CHECK(moeroute_buffers_init(NULL) == MOEROUTE_ERR_NULL_POINTER, "buffers_init(NULL)");

  /* last error: "" after a success */
  CHECK(moeroute_params_init(&p) == MOEROUTE_OK && moeroute_last_error()[0] == 0, "last error after success: %s",
        moeroute_last_error());

  /* get_sizes: the contract's formulas */
  static const struct {
    int64_t T;
    int32_t E, k, U;
  } shapes[] = {{0, 8, 3, 16}, {1, 1, 1, 1}, {5, 8, 2, 4}, {300, 256, 8, 32}, {7, 1024, 32, 1024},
                {((int64_t)1 << 24) - 1, 256, 8, 64}, {1000, 60, 4, 128}, {3, 4, 4, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    moeroute_params_init(&p);
    p.num_tokens = shapes[i].T;
    p.num_experts = shapes[i].E;
    p.top_k = shapes[i].k;
    p.unit_size = shapes[i].U;
    moeroute_sizes s;
    memset(&s, 0, sizeof s); /* struct_size 0: treated as current */
    moeroute_status st = moeroute_get_sizes(&p, &s);
    const int64_t T = shapes[i].T, E = shapes[i].E, k = shapes[i].k, U = shapes[i].U;
    const int64_t ck = T * k + E * U - k, vl = T * k + E * (U - 1);
    CHECK(st == MOEROUTE_OK && s.topk_len == T * k && s.ck_sorted_len == ck && s.ck_blocks_len == (ck + U - 1) / U &&
              s.vllm_sorted_len == vl && s.vllm_blocks_len == (vl + U - 1) / U,
          "get_sizes(T=%lld E=%d k=%d U=%d): %s {%lld %lld %lld %lld %lld}", (long long)T, (int)E, (int)k, (int)U,
          moeroute_status_string(st), (long long)s.topk_len, (long long)s.ck_sorted_len, (long long)s.ck_blocks_len,
          (long long)s.vllm_sorted_len, (long long)s.vllm_blocks_len);
  }
  /* boundaries that are valid: T = 2^24 without CK, T*k = 2^31 - k */
  moeroute_params_init(&p);
  p.num_experts = 64;
  p.top_k = 8;
  p.layouts = MOEROUTE_LAYOUT_VLLM;
  p.num_tokens = (int64_t)1 << 24;
  moeroute_sizes s;
  memset(&s, 0, sizeof s);
  CHECK(moeroute_get_sizes(&p, &s) == MOEROUTE_OK, "get_sizes T = 2^24 vLLM only: %s", moeroute_last_error());
  /* T*k = 2^31 - 8 with E = k = 8, U = 1: every capacity (T*k + E*U - k, T*k + E*(U-1)) is
   * T*k, so no position exceeds int32 either */
  p.num_experts = 8;
  p.unit_size = 1;
  p.num_tokens = ((int64_t)1 << 31) / 8 - 1;
  CHECK(moeroute_get_sizes(&p, &s) == MOEROUTE_OK && s.topk_len == ((int64_t)1 << 31) - 8 &&
            s.vllm_sorted_len == ((int64_t)1 << 31) - 8,
        "get_sizes T*k = 2^31 - 8: %s", moeroute_last_error());
  p.num_experts = 64;
  p.unit_size = 32;
  p.num_tokens = ((int64_t)1 << 24) - 1;
  p.layouts = MOEROUTE_LAYOUT_BOTH;
  CHECK(moeroute_get_sizes(&p, &s) == MOEROUTE_OK, "get_sizes T = 2^24 - 1 with CK: %s", moeroute_last_error());
  /* sizes struct_size */
  s.struct_size = 7;
  CHECK(moeroute_get_sizes(&p, &s) == MOEROUTE_ERR_PARAMS_SIZE, "get_sizes with sizes.struct_size 7");
  s.struct_size = 0;
  CHECK(moeroute_get_sizes(NULL, &s) == MOEROUTE_ERR_NULL_POINTER, "get_sizes(NULL, s)");
  CHECK(moeroute_get_sizes(&p, NULL) == MOEROUTE_ERR_NULL_POINTER, "get_sizes(p, NULL)");

  /* workspace queries */
  size_t bytes = 99;
  CHECK(moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, &p, NULL) == MOEROUTE_ERR_NULL_POINTER, "cpu_ws(NULL bytes)");
  CHECK(moeroute_cpu_workspace_size((moeroute_op)3, &p, &bytes) == MOEROUTE_ERR_BAD_ENUM && bytes == 99,
        "cpu_ws(op 3)");
  CHECK(moeroute_cpu_workspace_size((moeroute_op)-1, &p, &bytes) == MOEROUTE_ERR_BAD_ENUM && bytes == 99,
        "cpu_ws(op -1)");
  CHECK(moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, &p, NULL) == MOEROUTE_ERR_NULL_POINTER,
        "cuda_ws(NULL bytes)");
  CHECK(moeroute_cuda_workspace_size((moeroute_op)3, &p, &bytes) == MOEROUTE_ERR_BAD_ENUM && bytes == 99,
        "cuda_ws(op 3)");
  /* the CPU backend accepts E above 1024 (up to 2^20) */
  moeroute_params_init(&p);
  p.num_experts = 4096;
  p.top_k = 8;
  p.unit_size = 16;
  p.num_tokens = 3;
  CHECK(moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, &p, &bytes) == MOEROUTE_OK, "cpu_ws E = 4096: %s",
        moeroute_last_error());
  CHECK(moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, &p, &bytes) == MOEROUTE_ERR_BAD_SHAPE, "cuda_ws E = 4096");
}

#if !defined(__STDC_NO_THREADS__)
/* A failing call on another thread: its message stays on that thread. */
static int failing_thread(void* arg) {
  char* out = (char*)arg;
  moeroute_sizes s;
  memset(&s, 0, sizeof s);
  moeroute_status st = moeroute_get_sizes(NULL, &s);
  snprintf(out, 256, "%d:%s", (int)st, moeroute_last_error());
  return 0;
}
#endif

/* moeroute_last_error() is thread-local (moeroute.h). */
static void api_last_error_thread_local(void) {
#if !defined(__STDC_NO_THREADS__)
  moeroute_params p;
  moeroute_params_init(&p); /* success here: "" */
  char theirs[256] = "";
  thrd_t th;
  if (!CHECK(thrd_create(&th, failing_thread, theirs) == thrd_success, "thrd_create")) return;
  thrd_join(th, NULL);
  CHECK(theirs[0] == '1' && theirs[1] == ':' && theirs[2] != 0, "the thread's own error: '%s'", theirs);
  CHECK(moeroute_last_error()[0] == 0, "another thread's error leaked here: '%s'", moeroute_last_error());
  /* and the other way round */
  moeroute_params_init(NULL);
  char mine[256];
  snprintf(mine, sizeof mine, "%s", moeroute_last_error());
  theirs[0] = 0;
  if (!CHECK(thrd_create(&th, failing_thread, theirs) == thrd_success, "thrd_create")) return;
  thrd_join(th, NULL);
  CHECK(mine[0] != 0 && !strcmp(mine, moeroute_last_error()), "this thread's error changed: '%s' -> '%s'", mine,
        moeroute_last_error());
#endif
}

/* Presets against data/models.tsv: same names, same settings. */
static void api_presets(const char* tsv) {
  const int n = moeroute_preset_count();
  CHECK(n > 0, "preset_count %d", n);
  CHECK(moeroute_preset_at(-1) == NULL && moeroute_preset_at(n) == NULL, "preset_at out of range not NULL");
  CHECK(moeroute_preset_find("no-such-model") == NULL, "preset_find(no-such-model) not NULL");
  for (int i = 0; i < n; i++) {
    const moeroute_preset* pr = moeroute_preset_at(i);
    if (!CHECK(pr && pr->name, "preset_at(%d)", i)) continue;
    CHECK(moeroute_preset_find(pr->name) == pr, "preset_find(%s)", pr->name);
    moeroute_params p;
    moeroute_params_init(&p);
    p.num_tokens = 77;
    p.unit_size = 64;
    p.layouts = MOEROUTE_LAYOUT_CK;
    p.moe_buf_bytes = 5;
    CHECK(moeroute_params_from_preset(&p, pr) == MOEROUTE_OK, "params_from_preset(%s)", pr->name);
    CHECK(p.num_experts == pr->num_experts && p.top_k == pr->top_k && p.score == pr->score &&
              p.renormalize == pr->renormalize && p.scale == pr->scale && p.num_groups == pr->num_groups &&
              p.topk_groups == pr->topk_groups && p.logits_dtype == pr->router_dtype &&
              (pr->num_groups <= 1 || p.group_score == pr->group_score),
          "params_from_preset(%s) does not copy the router settings", pr->name);
    CHECK(p.num_tokens == 77 && p.unit_size == 64 && p.layouts == MOEROUTE_LAYOUT_CK && p.moe_buf_bytes == 5,
          "params_from_preset(%s) changed T, U, layouts or moe_buf_bytes", pr->name);
    /* every preset is a valid request */
    size_t ws;
    CHECK(moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, &p, &ws) == MOEROUTE_OK, "preset %s invalid: %s", pr->name,
          moeroute_last_error());
  }
  moeroute_params p;
  moeroute_params_init(&p);
  CHECK(moeroute_params_from_preset(NULL, moeroute_preset_at(0)) == MOEROUTE_ERR_NULL_POINTER, "from_preset(NULL, .)");
  CHECK(moeroute_params_from_preset(&p, NULL) == MOEROUTE_ERR_NULL_POINTER, "from_preset(., NULL)");

  if (!tsv) return;
  FILE* f = fopen(tsv, "r");
  if (!CHECK(f != NULL, "cannot open %s", tsv)) return;
  char line[1024];
  int rows = 0, header_seen = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    if (!header_seen) { /* the column names */
      header_seen = 1;
      continue;
    }
    char name[128], score[32], groups[64], dtype[32];
    int experts, topk, renorm, bias, hidden;
    float scale;
    if (sscanf(line, "%127[^\t]\t%d\t%d\t%31[^\t]\t%d\t%d\t%63[^\t]\t%f\t%d\t%31[^\t\n]", name, &experts, &topk, score,
               &renorm, &bias, groups, &scale, &hidden, dtype) != 10) {
      CHECK(0, "models.tsv: cannot parse: %s", line);
      continue;
    }
    rows++;
    const moeroute_preset* pr = moeroute_preset_find(name);
    if (!CHECK(pr != NULL, "preset %s of models.tsv missing", name)) continue;
    const moeroute_score sc = !strcmp(score, "softmax") ? MOEROUTE_SCORE_SOFTMAX
                              : !strcmp(score, "sigmoid") ? MOEROUTE_SCORE_SIGMOID
                                                          : MOEROUTE_SCORE_SQRT_SOFTPLUS;
    int G = 1, TG = 1;
    moeroute_group_score gs = MOEROUTE_GROUP_SCORE_TOP2_SUM;
    char gsn[32] = "";
    if (strcmp(groups, "-") != 0) {
      if (sscanf(groups, "%d/%d/%31s", &G, &TG, gsn) == 3)
        gs = !strcmp(gsn, "max") ? MOEROUTE_GROUP_SCORE_MAX : MOEROUTE_GROUP_SCORE_TOP2_SUM;
      else
        CHECK(0, "models.tsv: groups %s", groups);
    }
    const moeroute_dtype dt = !strcmp(dtype, "fp32") ? MOEROUTE_DTYPE_FP32
                              : !strcmp(dtype, "fp16") ? MOEROUTE_DTYPE_FP16
                                                       : MOEROUTE_DTYPE_BF16;
    CHECK(pr->num_experts == experts && pr->top_k == topk && pr->score == sc && pr->renormalize == renorm &&
              pr->has_bias == bias && pr->num_groups == G && pr->topk_groups == TG &&
              (G <= 1 || pr->group_score == gs) && fabsf(pr->scale - scale) <= 1e-6f * fabsf(scale) &&
              pr->model_dim == hidden && pr->router_dtype == dt,
          "preset %s differs from models.tsv", name);
  }
  fclose(f);
  CHECK(rows == n, "models.tsv has %d models, the library %d presets", rows, n);
}

int main(int argc, char** argv) {
  const char* tsv = argc > 1 ? argv[1] : NULL;
  long passed = 0, failed = 0;

  long before = tu_failures;
  api_basics();
  api_presets(tsv);
  api_last_error_thread_local();
  printf("api basics and presets: %s\n", tu_failures == before ? "ok" : "FAILED");
  if (tu_failures == before)
    passed++;
  else
    failed++;

  fixture f;
  fixture_init(&f);
  long p1 = 0, f1 = 0, p2 = 0, f2 = 0, p3 = 0, f3 = 0;
  run_valid_cases(&f, &p3, &f3);
  run_bad_cases(&f, &p1, &f1);
  run_query_cases(&f, &p2, &f2);
  fixture_free(&f);
  printf("valid requests: %ld ok, %ld failed\n", p3, f3);
  printf("bad inputs (status, message, nothing written): %ld ok, %ld failed, %ld not applicable (0-byte workspace)\n",
         p1, f1, skipped);
  printf("size/workspace/supports queries on bad params: %ld ok, %ld failed\n", p2, f2);
  passed += p1 + p2 + p3;
  failed += f1 + f2 + f3;
  printf("badinput: %ld checks, %ld failed\n", tu_checks, tu_failures);
  return tu_summary(passed, failed);
}
