/*
 * cuda_stub.c - the CUDA entry points of a build without CUDA: the same
 * validation as the real backend (so a bad request gets the same status
 * everywhere), then MOEROUTE_ERR_NOT_SUPPORTED.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "internal.h"

int moeroute_cuda_device_count(void) { return 0; }

int moeroute_cuda_supports(moeroute_op op, const moeroute_params* params) {
  (void)op;
  (void)params;
  return 0;
}

moeroute_status moeroute_cuda_workspace_size(moeroute_op op, const moeroute_params* params, size_t* bytes) {
  mr_clear_error();
  const char* fn = "moeroute_cuda_workspace_size";
  if (!bytes) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: bytes is NULL", fn);
  mr_config cfg;
  moeroute_status st = mr_validate_params(op, params, MR_BACKEND_CUDA, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  *bytes = 0;
  return MOEROUTE_OK;
}

static moeroute_status mr_stub_call(moeroute_op op, const moeroute_params* params, const moeroute_buffers* buffers,
                                    const char* fn) {
  mr_clear_error();
  mr_config cfg;
  moeroute_status st = mr_validate_params(op, params, MR_BACKEND_CUDA, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  st = mr_validate_buffers(op, &cfg, buffers, 0, fn);
  if (st != MOEROUTE_OK) return st;
  return mr_fail(MOEROUTE_ERR_NOT_SUPPORTED, "%s: this build of moeroute has no CUDA backend (built with MOEROUTE_CUDA=OFF or without nvcc)", fn);
}

moeroute_status moeroute_cuda_route(const moeroute_params* params, const moeroute_buffers* buffers, void* stream) {
  (void)stream;
  return mr_stub_call(MOEROUTE_OP_ROUTE, params, buffers, "moeroute_cuda_route");
}
moeroute_status moeroute_cuda_gate(const moeroute_params* params, const moeroute_buffers* buffers, void* stream) {
  (void)stream;
  return mr_stub_call(MOEROUTE_OP_GATE, params, buffers, "moeroute_cuda_gate");
}
moeroute_status moeroute_cuda_sort(const moeroute_params* params, const moeroute_buffers* buffers, void* stream) {
  (void)stream;
  return mr_stub_call(MOEROUTE_OP_SORT, params, buffers, "moeroute_cuda_sort");
}
