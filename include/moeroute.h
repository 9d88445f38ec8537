/*
 * moeroute.h - routing for mixture-of-experts (MoE) inference.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 *
 * This header is the manual. It is C11, has no CUDA types, and every symbol
 * starts with moeroute_ / MOEROUTE_.
 *
 * What moeroute computes (docs/routing-contract.md is the full contract):
 *
 *   logits [T, E]  --gate-->  topk_ids [T, k], topk_weights [T, k]
 *                  --sort-->  token slots grouped by expert, each expert padded
 *                             to the unit (block) size U of the grouped GEMM,
 *                             in the CK/aiter layout, the vLLM/SGLang layout,
 *                             or both; optionally the MoE output buffer cleared.
 *
 *   route = gate + sort in one call (on CUDA: one launch at decode sizes).
 *
 * Conventions (NCCL / CUB style):
 *   - every call returns a moeroute_status; on failure nothing is written and
 *     moeroute_last_error() says which argument or limit was wrong;
 *   - the caller owns all memory: ask moeroute_*_workspace_size() and pass a
 *     workspace; the library never allocates or synchronises inside a routing
 *     call, and every CUDA entry point can be captured in a CUDA graph;
 *   - the CUDA stream is an opaque pointer (cudaStream_t), always the last
 *     argument; NULL is the legacy default stream;
 *   - T = num_tokens, E = num_experts, k = top_k, U = unit_size.
 *
 * Minimal use (CPU):
 *
 *   moeroute_params p;
 *   moeroute_params_init(&p);
 *   p.num_tokens = T; p.num_experts = 256; p.top_k = 8;
 *   p.logits_dtype = MOEROUTE_DTYPE_BF16; p.layouts = MOEROUTE_LAYOUT_CK;
 *   moeroute_sizes sz; moeroute_get_sizes(&p, &sz);      // allocate outputs
 *   size_t ws; moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, &p, &ws);
 *   moeroute_buffers b; moeroute_buffers_init(&b);
 *   b.logits = logits; b.sorted_ids = ...; ...; b.workspace = w; b.workspace_bytes = ws;
 *   if (moeroute_cpu_route(&p, &b) != MOEROUTE_OK) puts(moeroute_last_error());
 */
#ifndef MOEROUTE_H
#define MOEROUTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(MOEROUTE_BUILDING_SHARED)
#define MOEROUTE_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MOEROUTE_API __attribute__((visibility("default")))
#else
#define MOEROUTE_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

#define MOEROUTE_VERSION_MAJOR 0
#define MOEROUTE_VERSION_MINOR 1
#define MOEROUTE_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define MOEROUTE_VERSION_NUMBER \
  (MOEROUTE_VERSION_MAJOR * 10000 + MOEROUTE_VERSION_MINOR * 100 + MOEROUTE_VERSION_PATCH)

/* The library's MOEROUTE_VERSION_NUMBER at run time (may differ from the header's). */
MOEROUTE_API unsigned moeroute_version_number(void);
/* "MAJOR.MINOR.PATCH" of the library at run time. Static storage. */
MOEROUTE_API const char* moeroute_version_string(void);
/* Build options of the library, e.g. "cuda=on cuda_arch=90 build=Release". Static storage. */
MOEROUTE_API const char* moeroute_build_info(void);

/* ------------------------------------------------------------------------ */
/* Status                                                                    */
/* ------------------------------------------------------------------------ */

/* Fixed forever: values are never renumbered, new ones are appended. */
typedef enum moeroute_status {
  MOEROUTE_OK = 0,
  MOEROUTE_ERR_NULL_POINTER = 1,        /* a required pointer (params, buffers, an output the layout needs) is NULL */
  MOEROUTE_ERR_PARAMS_SIZE = 2,         /* params/sizes struct_size is not one this library knows */
  MOEROUTE_ERR_BAD_ENUM = 3,            /* dtype, score, group_score, layouts or op out of range */
  MOEROUTE_ERR_BAD_SHAPE = 4,           /* T, E, k or U outside the contract's limits, T*k >= 2^31, or a sorted length
                                           (T*k + E*U - k) that does not fit in int32 */
  MOEROUTE_ERR_BAD_STRIDE = 5,          /* logits_row_stride < E */
  MOEROUTE_ERR_BAD_GROUPS = 6,          /* G does not divide E, topk_groups out of [1,G], topk_groups*E/G < k, TOP2_SUM with one expert per group */
  MOEROUTE_ERR_BAD_VALUE = 7,           /* renormalize not 0/1, a non-finite scale, a non-finite bias value (CPU),
                                           an expert_mask value not 0/1 (CPU), a CUDA workspace not 16-byte aligned */
  MOEROUTE_ERR_WORKSPACE_TOO_SMALL = 8, /* workspace_bytes below what *_workspace_size() asked for */
  MOEROUTE_ERR_MOE_BUF = 9,             /* moe_buf NULL with moe_buf_bytes > 0 */
  MOEROUTE_ERR_NOT_SUPPORTED = 10,      /* a valid request this backend/build has no path for */
  MOEROUTE_ERR_NO_DEVICE = 11,          /* the CUDA backend was asked for and no usable GPU is present */
  MOEROUTE_ERR_CUDA = 12,               /* a CUDA runtime call or a launch failed (message has file:line) */
  MOEROUTE_ERR_INTERNAL = 13            /* a bug: please report with the message */
} moeroute_status;

/* A constant name for a status: "MOEROUTE_ERR_BAD_SHAPE". Never NULL. */
MOEROUTE_API const char* moeroute_status_string(moeroute_status status);
/* The message of the last failing call on this thread ("" when the last call
 * succeeded or none failed yet), e.g. "top_k=40 exceeds min(num_experts, 32)=32".
 * Thread-local, valid until the next moeroute call on this thread. */
MOEROUTE_API const char* moeroute_last_error(void);

/* ------------------------------------------------------------------------ */
/* Parameters                                                                */
/* ------------------------------------------------------------------------ */

typedef enum moeroute_dtype {
  MOEROUTE_DTYPE_FP32 = 0,
  MOEROUTE_DTYPE_BF16 = 1,
  MOEROUTE_DTYPE_FP16 = 2
} moeroute_dtype;

typedef enum moeroute_score {
  MOEROUTE_SCORE_SOFTMAX = 0,       /* exp(x_i - max) / sum_j exp(x_j - max) */
  MOEROUTE_SCORE_SIGMOID = 1,       /* 1 / (1 + exp(-x_i)) */
  MOEROUTE_SCORE_SQRT_SOFTPLUS = 2  /* sqrt(log(1 + exp(x_i))), overflow-free */
} moeroute_score;

typedef enum moeroute_group_score {
  MOEROUTE_GROUP_SCORE_TOP2_SUM = 0, /* sum of a group's two largest (score + bias): DeepSeek-V3 */
  MOEROUTE_GROUP_SCORE_MAX = 1       /* a group's largest (score + bias): DeepSeek-V2 */
} moeroute_group_score;

/* Output layouts, a bit mask. */
#define MOEROUTE_LAYOUT_CK 1u   /* CK / aiter: sorted_ids, sorted_weights, sorted_expert_ids, num_valid_ids */
#define MOEROUTE_LAYOUT_VLLM 2u /* vLLM / SGLang: sorted_token_ids, expert_ids, num_tokens_post_pad */
#define MOEROUTE_LAYOUT_BOTH 3u

typedef enum moeroute_op {
  MOEROUTE_OP_ROUTE = 0, /* logits -> top-k and sorted layout(s) */
  MOEROUTE_OP_GATE = 1,  /* logits -> topk_ids, topk_weights */
  MOEROUTE_OP_SORT = 2   /* topk_ids, topk_weights -> sorted layout(s) */
} moeroute_op;

/* Limits every backend accepts (the CPU backend also accepts larger E). */
#define MOEROUTE_MAX_EXPERTS 1024
#define MOEROUTE_CPU_MAX_EXPERTS (1 << 20)
#define MOEROUTE_MAX_TOPK 32
#define MOEROUTE_MAX_UNIT_SIZE 1024
#define MOEROUTE_CK_MAX_TOKENS ((1 << 24) - 1) /* CK packs the token into 24 bits */

/* Everything that describes one routing call. Always fill with
 * moeroute_params_init() first, then set the fields you need: struct_size lets
 * later versions append fields without breaking callers built against this one. */
typedef struct moeroute_params {
  size_t struct_size;            /* = sizeof(moeroute_params); set by init */
  int64_t num_tokens;            /* T >= 0; T < 2^24 when the CK layout is requested; T*k < 2^31 and
                                    T*k + E*U - k < 2^31 (int32 positions). Default 0 */
  int32_t num_experts;           /* E, 1..1024 (CPU: up to 2^20). Default 0 (must be set) */
  int32_t top_k;                 /* k, 1..min(E, 32). Default 0 (must be set) */
  int32_t unit_size;             /* U, 1..1024, the grouped GEMM's block size M. Default 32 */
  int64_t logits_row_stride;     /* elements between rows of logits, >= E; 0 means E. Default 0 */
  moeroute_dtype logits_dtype;   /* Default MOEROUTE_DTYPE_BF16 */
  moeroute_score score;          /* Default MOEROUTE_SCORE_SOFTMAX */
  int32_t renormalize;           /* 0/1: divide the k weights by their sum (>= 1e-20). Default 1 */
  float scale;                   /* routed scaling factor, finite, applied last. Default 1.0f */
  int32_t num_groups;            /* G; 1 = no grouped selection; G > 1 needs E % G == 0. Default 1 */
  int32_t topk_groups;           /* groups kept, 1..G, with topk_groups * E / G >= k; ignored when G = 1. Default 1 */
  moeroute_group_score group_score; /* Default MOEROUTE_GROUP_SCORE_TOP2_SUM */
  uint32_t layouts;              /* MOEROUTE_LAYOUT_* mask; route/sort need at least one. Default BOTH */
  size_t moe_buf_bytes;          /* bytes of buffers.moe_buf to zero (route and sort). Default 0 */
} moeroute_params;

/* Fill *params with the defaults documented above. Returns NULL_POINTER for NULL. */
MOEROUTE_API moeroute_status moeroute_params_init(moeroute_params* params);

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

/* The arrays of one call. For the CPU entry points every pointer is host
 * memory; for the CUDA ones every pointer is device memory (or managed memory)
 * on the current device. All arrays are C-contiguous, int32 means int32_t,
 * fp32 means float. "len" values come from moeroute_get_sizes().
 *
 * Outputs that the chosen op and layouts need are required (NULL gives
 * MOEROUTE_ERR_NULL_POINTER); every other output may be NULL (not written).
 * Only the valid range of a sorted array (the first `total` entries, `total/U`
 * blocks) is written; the rest is left untouched. */
typedef struct moeroute_buffers {
  /* --- inputs --- */
  const void* logits;            /* in, route/gate: [T, logits_row_stride] of logits_dtype. Required when T > 0 */
  const float* bias;             /* in, optional: fp32 [E] selection bias (DeepSeek-V3 "noaux_tc"), finite. NULL = none */
  const int32_t* expert_mask;    /* in, optional: int32 [E], 1 = expert lives on this rank, 0 = drop its entries.
                                    Block expert ids become local ids. NULL = every expert enabled */

  /* --- top-k: outputs of route/gate, inputs of sort --- */
  int32_t* topk_ids;             /* gate: out, required; route: out, optional; sort: in, required. int32 [T, k], global ids */
  float* topk_weights;           /* gate: out, required; route: out, optional; sort: in, required when
                                    sorted_weights is requested. fp32 [T, k] */

  /* --- CK / aiter layout (layouts & MOEROUTE_LAYOUT_CK) --- */
  int32_t* sorted_ids;           /* out, required: int32 [ck_sorted_len]; (slot << 24) | t, sentinel (k << 24) | T */
  float* sorted_weights;         /* out, optional: fp32 [ck_sorted_len]; 0.0 at sentinels */
  int32_t* sorted_expert_ids;    /* out, required: int32 [ck_blocks_len]; local expert id per block of U rows */
  int32_t* num_valid_ids;        /* out, required: int32 [2] = {total, T} */

  /* --- vLLM / SGLang layout (layouts & MOEROUTE_LAYOUT_VLLM) --- */
  int32_t* sorted_token_ids;     /* out, required: int32 [vllm_sorted_len]; t * k + slot, padding T * k */
  int32_t* expert_ids;           /* out, required: int32 [vllm_blocks_len]; local expert id per block */
  int32_t* num_tokens_post_pad;  /* out, required: int32 [1] = total */

  /* --- extras --- */
  void* moe_buf;                 /* out, optional (route/sort): params.moe_buf_bytes bytes set to zero. NULL = not cleared
                                    (then moe_buf_bytes must be 0) */
  void* workspace;               /* scratch of workspace_bytes; may be NULL when the size query said 0. CUDA: 16-byte
                                    aligned (cudaMalloc gives 256), else MOEROUTE_ERR_BAD_VALUE; CPU: any alignment */
  size_t workspace_bytes;
} moeroute_buffers;

/* Set every pointer to NULL and workspace_bytes to 0. */
MOEROUTE_API moeroute_status moeroute_buffers_init(moeroute_buffers* buffers);

/* ------------------------------------------------------------------------ */
/* Sizes                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct moeroute_sizes {
  size_t struct_size;      /* = sizeof(moeroute_sizes); set by the caller (or leave 0: treated as current) */
  int64_t topk_len;        /* T * k: entries of topk_ids / topk_weights */
  int64_t ck_sorted_len;   /* T*k + E*U - k: entries of sorted_ids / sorted_weights */
  int64_t ck_blocks_len;   /* ceil(ck_sorted_len / U): entries of sorted_expert_ids */
  int64_t vllm_sorted_len; /* T*k + E*(U-1): entries of sorted_token_ids */
  int64_t vllm_blocks_len; /* ceil(vllm_sorted_len / U): entries of expert_ids */
} moeroute_sizes;

/* Capacities of every output for params. Validated like moeroute_*_route (so layouts must be
 * non-empty and U valid even for a gate-only caller), with the CPU backend's limits on E. */
MOEROUTE_API moeroute_status moeroute_get_sizes(const moeroute_params* params, moeroute_sizes* sizes);

/* Workspace bytes the CPU backend needs for op with params (validated). */
MOEROUTE_API moeroute_status moeroute_cpu_workspace_size(moeroute_op op, const moeroute_params* params,
                                                         size_t* bytes);

/* ------------------------------------------------------------------------ */
/* CPU backend (the reference: the executable form of the contract)          */
/* ------------------------------------------------------------------------ */
/* Single-threaded, reentrant (no global state but the thread-local error). */

MOEROUTE_API moeroute_status moeroute_cpu_route(const moeroute_params* params, const moeroute_buffers* buffers);
MOEROUTE_API moeroute_status moeroute_cpu_gate(const moeroute_params* params, const moeroute_buffers* buffers);
MOEROUTE_API moeroute_status moeroute_cpu_sort(const moeroute_params* params, const moeroute_buffers* buffers);

/* ------------------------------------------------------------------------ */
/* CUDA backend                                                              */
/* ------------------------------------------------------------------------ */
/* stream is a cudaStream_t (NULL = legacy default stream). Asynchronous: the
 * call returns once the work is enqueued; no allocation, no synchronisation,
 * graph-capturable. Built without CUDA, every call validates and then returns
 * MOEROUTE_ERR_NOT_SUPPORTED. */

/* Number of usable CUDA devices (0 without CUDA or without a GPU). Never fails. */
MOEROUTE_API int moeroute_cuda_device_count(void);
/* 1 if the CUDA backend has a path for op with params on this build, else 0
 * (invalid params also give 0). Reads the same list the dispatch uses. */
MOEROUTE_API int moeroute_cuda_supports(moeroute_op op, const moeroute_params* params);
/* Device workspace bytes for op with params (validated). */
MOEROUTE_API moeroute_status moeroute_cuda_workspace_size(moeroute_op op, const moeroute_params* params,
                                                          size_t* bytes);

MOEROUTE_API moeroute_status moeroute_cuda_route(const moeroute_params* params, const moeroute_buffers* buffers,
                                                 void* stream);
MOEROUTE_API moeroute_status moeroute_cuda_gate(const moeroute_params* params, const moeroute_buffers* buffers,
                                                 void* stream);
MOEROUTE_API moeroute_status moeroute_cuda_sort(const moeroute_params* params, const moeroute_buffers* buffers,
                                                void* stream);

/* ------------------------------------------------------------------------ */
/* Model presets (docs: data/models.tsv)                                     */
/* ------------------------------------------------------------------------ */

typedef struct moeroute_preset {
  const char* name;          /* "deepseek-r1" */
  int32_t num_experts;
  int32_t top_k;
  moeroute_score score;
  int32_t renormalize;
  int32_t has_bias;          /* the model has a selection bias (the caller supplies its values) */
  int32_t num_groups;
  int32_t topk_groups;
  moeroute_group_score group_score;
  float scale;
  int32_t model_dim;         /* hidden size: the width of moe_buf */
  moeroute_dtype router_dtype;
  const char* note;
} moeroute_preset;

/* Number of compiled-in presets. */
MOEROUTE_API int moeroute_preset_count(void);
/* Preset i (0-based) or NULL when out of range. Static storage. */
MOEROUTE_API const moeroute_preset* moeroute_preset_at(int index);
/* Preset by name or NULL. */
MOEROUTE_API const moeroute_preset* moeroute_preset_find(const char* name);
/* Copy a preset's router settings into params (E, k, score, renormalize, scale,
 * groups, logits dtype); T, U, layouts and moe_buf_bytes are left as they are. */
MOEROUTE_API moeroute_status moeroute_params_from_preset(moeroute_params* params, const moeroute_preset* preset);

#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_H */
