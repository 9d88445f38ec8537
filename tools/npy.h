/*
 * npy.h - a small reader/writer for NumPy's .npy format (v1.0 written; v1.0,
 * v2.0 and v3.0 read). Plain C11 + libc, no dependency on the rest of moeroute,
 * so the command line tool and the tests can both link it.
 *
 * Only little-endian, C-order arrays of fixed-size numeric types are handled
 * (what the routing data is: float32/float16/uint16 logits, int32 ids, ...).
 * Structured dtypes, strings, objects, Fortran order and big-endian data are
 * refused with a message, never a crash.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_TOOLS_NPY_H
#define MOEROUTE_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MR_NPY_MAX_DIMS 8

typedef struct mr_npy {
  char dtype[8];   /* "<f4", "<f2", "<u2", "<i4", "<f8", "<i8", "<u1", "<b1", ... as in the header,
                      normalised: the '|' and '=' (native, little-endian) forms read as '<' */
  int ndim;        /* 0..MR_NPY_MAX_DIMS (0 = a scalar, one element) */
  int64_t shape[MR_NPY_MAX_DIMS];
  void* data;      /* nbytes of C-order data; never NULL after a successful load (even when empty) */
  size_t nbytes;   /* itemsize * prod(shape) */
} mr_npy;

/* Read path into *out (which is overwritten, not freed first). 0 on success;
 * else -1, *out left empty (data NULL) and a one-line reason, prefixed with the
 * path, in err (err may be NULL or errlen 0). Refuses: a bad magic or header,
 * big-endian or unsupported dtypes, fortran_order True, more than
 * MR_NPY_MAX_DIMS dimensions, sizes that overflow, truncated data. Bytes after
 * the data are ignored, as numpy does. */
int mr_npy_load(const char* path, mr_npy* out, char* err, size_t errlen);

/* Write a C-order array as a v1.0 .npy file. dtype as in mr_npy ("<f4"; the
 * '|' and '=' forms are accepted, one-byte types are written with '|' like
 * numpy does). data may be NULL only when the array is empty. On failure
 * returns -1, removes the partly written file and fills err. */
int mr_npy_save(const char* path, const char* dtype, int ndim, const int64_t* shape, const void* data, char* err,
                size_t errlen);

/* Free the data of a loaded array and reset it (safe on a zeroed or freed one). */
void mr_npy_free(mr_npy* a);

/* Bytes per element of a dtype string ("<f4" -> 4), or 0 when it is not one
 * mr_npy handles. */
size_t mr_npy_itemsize(const char* dtype);

/* prod(shape) of a loaded array (1 for a scalar). */
int64_t mr_npy_count(const mr_npy* a);

#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_TOOLS_NPY_H */
