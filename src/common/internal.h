/*
 * internal.h - what every backend shares: the thread-local error, parameter
 * validation, output sizes and dtype conversion. Plain C11; also included from
 * CUDA sources (inside extern "C"), so no C-only constructs in the declarations.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_INTERNAL_H
#define MOEROUTE_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "moeroute.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MR_PRINTF(f, a)
#endif

typedef enum mr_backend { MR_BACKEND_CPU = 0, MR_BACKEND_CUDA = 1 } mr_backend;

/* Set the thread-local message and return status. Use as `return mr_fail(...)`. */
moeroute_status mr_fail(moeroute_status status, const char* fmt, ...) MR_PRINTF(2, 3);
/* Every public entry point starts with this: the last error describes the last call. */
void mr_clear_error(void);

/* A validated, normalised copy of the caller's params: stride resolved,
 * everything widened to the types the kernels use. */
typedef struct mr_config {
  int64_t num_tokens;      /* T */
  int32_t num_experts;     /* E */
  int32_t top_k;           /* k */
  int32_t unit_size;       /* U */
  int64_t row_stride;      /* >= E, in elements */
  moeroute_dtype dtype;
  moeroute_score score;
  int32_t renormalize;     /* 0/1 */
  float scale;
  int32_t num_groups;      /* 1 = off */
  int32_t topk_groups;
  moeroute_group_score group_score;
  uint32_t layouts;        /* non-zero for route/sort */
  size_t moe_buf_bytes;
  moeroute_sizes sizes;    /* capacities (struct_size set) */
} mr_config;

/* Validate params for op on backend (every limit of the contract) and fill cfg.
 * fn names the entry point for the message ("moeroute_cpu_route"). */
moeroute_status mr_validate_params(moeroute_op op, const moeroute_params* params, mr_backend backend,
                                   const char* fn, mr_config* cfg);

/* Validate the buffers of op for a validated cfg: required pointers present,
 * moe_buf consistent, workspace at least workspace_needed bytes. */
moeroute_status mr_validate_buffers(moeroute_op op, const mr_config* cfg, const moeroute_buffers* buffers,
                                    size_t workspace_needed, const char* fn);

/* Capacities for a config (no validation). */
void mr_compute_sizes(const mr_config* cfg, moeroute_sizes* sizes);

/* ---- dtype conversion (bit-exact, host and device) ---------------------- */

#if defined(__CUDACC__)
#define MR_HD __host__ __device__ __forceinline__
#else
#define MR_HD static inline
#endif

MR_HD float mr_bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
MR_HD uint32_t mr_float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
MR_HD float mr_bf16_to_float(uint16_t h) { return mr_bits_to_float((uint32_t)h << 16); }

/* IEEE binary16 to binary32, exact (subnormals, inf, NaN included). */
MR_HD float mr_fp16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return mr_bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24, exact in fp32 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return mr_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/* fp32 to bf16, round to nearest even; NaN stays a (quiet) NaN. */
MR_HD uint16_t mr_float_to_bf16(float f) {
  uint32_t u = mr_float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* fp32 to fp16, round to nearest even, overflow to inf, NaN to NaN. */
MR_HD uint16_t mr_float_to_fp16(float f) {
  uint32_t u = mr_float_to_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {                                   /* below 2^-14: subnormal or zero */
    /* value = a_float; subnormal unit is 2^-24; round half to even via fp32 math on the
       integer mantissa: shift the 24-bit significand right with RNE. */
    uint32_t exp = a >> 23;
    if (exp < 102) return (uint16_t)sign; /* < 2^-25: rounds to zero */
    uint32_t man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t half = 1u << (shift - 1);
    uint32_t rest = man & ((1u << shift) - 1u);
    uint32_t q = man >> shift;
    if (rest > half || (rest == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | (((r >> 13) - (112u << 10)) & 0x7fffu));
}

#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_INTERNAL_H */
