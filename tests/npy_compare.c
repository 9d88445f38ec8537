/*
 * npy_compare.c - compare two .npy files: same dtype, same shape; integers
 * exactly, floats to a relative tolerance (default 1e-5; an expected 0 must be
 * 0 to within 1e-30). Used by test_cli.sh.
 *
 * usage: npy_compare GOT.npy WANT.npy [REL]
 * exit status: 0 equal, 1 different, 2 unreadable
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static int close_enough(double got, double want, double rel) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (want == 0.0) return fabs(got) <= 1e-30;
  if (got == want) return 1;
  return fabs(got - want) <= rel * fmax(fabs(got), fabs(want)) + 1e-30;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: npy_compare GOT.npy WANT.npy [REL]\n");
    return 2;
  }
  const double rel = argc > 3 ? strtod(argv[3], NULL) : 1e-5;
  mr_npy got, want;
  char err[512];
  if (mr_npy_load(argv[1], &got, err, sizeof err) != 0) {
    fprintf(stderr, "npy_compare: %s\n", err);
    return 2;
  }
  if (mr_npy_load(argv[2], &want, err, sizeof err) != 0) {
    fprintf(stderr, "npy_compare: %s\n", err);
    mr_npy_free(&got);
    return 2;
  }
  int rc = 0;
  if (strcmp(got.dtype, want.dtype) != 0) {
    fprintf(stderr, "npy_compare: %s: dtype %s, want %s\n", argv[1], got.dtype, want.dtype);
    rc = 1;
  } else if (got.ndim != want.ndim || memcmp(got.shape, want.shape, sizeof(int64_t) * (size_t)got.ndim) != 0) {
    fprintf(stderr, "npy_compare: %s: shape differs (ndim %d vs %d", argv[1], got.ndim, want.ndim);
    for (int i = 0; i < got.ndim && i < want.ndim; i++)
      fprintf(stderr, ", dim %d: %lld vs %lld", i, (long long)got.shape[i], (long long)want.shape[i]);
    fprintf(stderr, ")\n");
    rc = 1;
  } else {
    const int64_t n = mr_npy_count(&got);
    const int is_f4 = !strcmp(got.dtype, "<f4"), is_f8 = !strcmp(got.dtype, "<f8");
    for (int64_t i = 0; i < n && rc == 0; i++) {
      if (is_f4 || is_f8) {
        double g = is_f4 ? ((const float*)got.data)[i] : ((const double*)got.data)[i];
        double w = is_f4 ? ((const float*)want.data)[i] : ((const double*)want.data)[i];
        if (!close_enough(g, w, rel)) {
          fprintf(stderr, "npy_compare: %s[%lld] = %.9g, want %.9g (rel %g)\n", argv[1], (long long)i, g, w, rel);
          rc = 1;
        }
      } else {
        const size_t sz = mr_npy_itemsize(got.dtype);
        if (memcmp((const char*)got.data + (size_t)i * sz, (const char*)want.data + (size_t)i * sz, sz) != 0) {
          long long g = 0, w = 0;
          if (sz == 4) {
            g = ((const int32_t*)got.data)[i];
            w = ((const int32_t*)want.data)[i];
          }
          fprintf(stderr, "npy_compare: %s[%lld] = %lld, want %lld (exact)\n", argv[1], (long long)i, g, w);
          rc = 1;
        }
      }
    }
  }
  mr_npy_free(&got);
  mr_npy_free(&want);
  return rc;
}
