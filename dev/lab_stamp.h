/*
 * lab_stamp.h - the stamps of the stamp labs (mid_stamp.cu, ctm_stamp.cu; lab code only): thread 0
 * of CTA 0 records clock64 at each MR_STAMP(slot) of a library kernel (empty in the library).
 * Define LAB_STAMP_STRIDE (the markers per pass) and include this before the kernel's .cu; pass
 * p's markers land at slot + LAB_STAMP_STRIDE * p (g_pass, set by the labs' twice-run kernels).
 * Each stamp reads g_pass from global memory before its store, which costs the next stamp a few
 * hundred cycles (lab call 37's README).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_DEV_LAB_STAMP_H
#define MOEROUTE_DEV_LAB_STAMP_H
#ifndef LAB_STAMP_STRIDE
#error "define LAB_STAMP_STRIDE before including lab_stamp.h"
#endif

__device__ unsigned long long g_stamp[32];
__device__ int g_pass;
#define MR_STAMP(slot)                                                                                \
  do {                                                                                                \
    if (threadIdx.x == 0 && blockIdx.x == 0) g_stamp[(slot) + LAB_STAMP_STRIDE * g_pass] = clock64(); \
  } while (0)

#endif /* MOEROUTE_DEV_LAB_STAMP_H */
