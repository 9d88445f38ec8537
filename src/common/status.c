/*
 * status.c - version, status strings, the thread-local last error, and the
 * init helpers of the public structs.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

#ifndef MOEROUTE_BUILD_INFO
#define MOEROUTE_BUILD_INFO "unknown"
#endif

#define MR_STR2(x) #x
#define MR_STR(x) MR_STR2(x)

/* One message per thread: callers on different threads (one per GPU, say)
 * never see each other's errors. */
static _Thread_local char mr_error_message[512];

unsigned moeroute_version_number(void) { return MOEROUTE_VERSION_NUMBER; }

const char* moeroute_version_string(void) {
  return MR_STR(MOEROUTE_VERSION_MAJOR) "." MR_STR(MOEROUTE_VERSION_MINOR) "." MR_STR(MOEROUTE_VERSION_PATCH);
}

const char* moeroute_build_info(void) { return MOEROUTE_BUILD_INFO; }

const char* moeroute_status_string(moeroute_status status) {
  switch (status) {
    case MOEROUTE_OK: return "MOEROUTE_OK";
    case MOEROUTE_ERR_NULL_POINTER: return "MOEROUTE_ERR_NULL_POINTER";
    case MOEROUTE_ERR_PARAMS_SIZE: return "MOEROUTE_ERR_PARAMS_SIZE";
    case MOEROUTE_ERR_BAD_ENUM: return "MOEROUTE_ERR_BAD_ENUM";
    case MOEROUTE_ERR_BAD_SHAPE: return "MOEROUTE_ERR_BAD_SHAPE";
    case MOEROUTE_ERR_BAD_STRIDE: return "MOEROUTE_ERR_BAD_STRIDE";
    case MOEROUTE_ERR_BAD_GROUPS: return "MOEROUTE_ERR_BAD_GROUPS";
    case MOEROUTE_ERR_BAD_VALUE: return "MOEROUTE_ERR_BAD_VALUE";
    case MOEROUTE_ERR_WORKSPACE_TOO_SMALL: return "MOEROUTE_ERR_WORKSPACE_TOO_SMALL";
    case MOEROUTE_ERR_MOE_BUF: return "MOEROUTE_ERR_MOE_BUF";
    case MOEROUTE_ERR_NOT_SUPPORTED: return "MOEROUTE_ERR_NOT_SUPPORTED";
    case MOEROUTE_ERR_NO_DEVICE: return "MOEROUTE_ERR_NO_DEVICE";
    case MOEROUTE_ERR_CUDA: return "MOEROUTE_ERR_CUDA";
    case MOEROUTE_ERR_INTERNAL: return "MOEROUTE_ERR_INTERNAL";
  }
  return "MOEROUTE_ERR_UNKNOWN_STATUS";
}

const char* moeroute_last_error(void) { return mr_error_message; }

void mr_clear_error(void) { mr_error_message[0] = '\0'; }

moeroute_status mr_fail(moeroute_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mr_error_message, sizeof mr_error_message, fmt, ap);
  va_end(ap);
  return status;
}

moeroute_status moeroute_params_init(moeroute_params* params) {
  mr_clear_error();
  if (!params) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "moeroute_params_init: params is NULL");
  memset(params, 0, sizeof *params);
  params->struct_size = sizeof *params;
  params->num_tokens = 0;
  params->num_experts = 0;
  params->top_k = 0;
  params->unit_size = 32;
  params->logits_row_stride = 0;
  params->logits_dtype = MOEROUTE_DTYPE_BF16;
  params->score = MOEROUTE_SCORE_SOFTMAX;
  params->renormalize = 1;
  params->scale = 1.0f;
  params->num_groups = 1;
  params->topk_groups = 1;
  params->group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
  params->layouts = MOEROUTE_LAYOUT_BOTH;
  params->moe_buf_bytes = 0;
  return MOEROUTE_OK;
}

moeroute_status moeroute_buffers_init(moeroute_buffers* buffers) {
  mr_clear_error();
  if (!buffers) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "moeroute_buffers_init: buffers is NULL");
  memset(buffers, 0, sizeof *buffers);
  return MOEROUTE_OK;
}
