/*
 * npy.c - see npy.h. The format (numpy/lib/format.py):
 *
 *   "\x93NUMPY" major minor  header_len (u16 LE for v1, u32 LE for v2/v3)
 *   header: a Python dict literal in ASCII (UTF-8 for v3), e.g.
 *           {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 *           padded with spaces and a final '\n' so the data starts 64-aligned
 *   data:   prod(shape) * itemsize bytes
 *
 * The header is parsed by a tiny recursive-descent reader of exactly that
 * grammar (strings, True/False, tuples of integers), bounded everywhere, so a
 * hostile file gives an error message instead of a crash.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Headers larger than this are refused (numpy's own default limit is 10000). */
#define NPY_MAX_HEADER (1u << 20)

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char* err, size_t errlen, const char* fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* Parse a dtype string into its normalised '<' form and item size.
 * Returns 0, or -1 with a reason in why. */
static int parse_dtype(const char* s, size_t len, char norm[8], size_t* itemsize, const char** why) {
  size_t i = 0;
  char order = '=';
  if (len > 0 && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) order = s[i++];
  if (i >= len) {
    *why = "empty dtype";
    return -1;
  }
  char kind = s[i++];
  if (i >= len || i + 2 < len) { /* one or two digits follow */
    *why = "unsupported dtype (bool, int, uint, float and complex are handled)";
    return -1;
  }
  size_t size = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') {
      *why = "unsupported dtype (bool, int, uint, float and complex are handled)";
      return -1;
    }
    size = size * 10 + (size_t)(s[i] - '0');
  }
  int ok = 0;
  switch (kind) {
    case 'b': ok = size == 1; break;
    case 'i':
    case 'u': ok = size == 1 || size == 2 || size == 4 || size == 8; break;
    case 'f': ok = size == 2 || size == 4 || size == 8; break;
    case 'c': ok = size == 8 || size == 16; break;
    default: ok = 0;
  }
  if (!ok) {
    *why = "unsupported dtype (bool, int, uint, float and complex are handled)";
    return -1;
  }
  if (order == '>' && size > 1) {
    *why = "big-endian data is not supported";
    return -1;
  }
  /* '=' and a missing order mean native; we only run on little-endian hosts. */
  snprintf(norm, 8, "<%c%u", kind, (unsigned)size);
  *itemsize = size;
  return 0;
}

size_t mr_npy_itemsize(const char* dtype) {
  char norm[8];
  size_t size = 0;
  const char* why = NULL;
  if (!dtype || parse_dtype(dtype, strlen(dtype), norm, &size, &why) != 0) return 0;
  return size;
}

int64_t mr_npy_count(const mr_npy* a) {
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  return n;
}

/* ---- header parser ------------------------------------------------------- */

typedef struct cursor {
  const char* p;
  const char* end;
} cursor;

static void skip_ws(cursor* c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int eat(cursor* c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes (numpy never writes any in these keys/values). */
static int parse_string(cursor* c, const char** s, size_t* len) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
  char q = *c->p++;
  const char* start = c->p;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\') return -1;
    c->p++;
  }
  if (c->p >= c->end) return -1;
  *s = start;
  *len = (size_t)(c->p - start);
  c->p++;
  return 0;
}

static int parse_bool(cursor* c, int* v) {
  skip_ws(c);
  size_t left = (size_t)(c->end - c->p);
  if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
    c->p += 4;
    *v = 1;
    return 0;
  }
  if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
    c->p += 5;
    *v = 0;
    return 0;
  }
  return -1;
}

/* "(3, 4)", "(3,)", "()"; Python 2 era files may carry an 'L' suffix. */
static int parse_shape(cursor* c, int* ndim, int64_t shape[MR_NPY_MAX_DIMS], const char** why) {
  *why = "malformed 'shape'";
  if (!eat(c, '(')) return -1;
  int n = 0;
  for (;;) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ')') {
      c->p++;
      break;
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      int digit = *c->p - '0';
      if (v > (INT64_MAX - digit) / 10) {
        *why = "a dimension in 'shape' is too large";
        return -1;
      }
      v = v * 10 + digit;
      c->p++;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;
    if (n == MR_NPY_MAX_DIMS) {
      *why = "more than 8 dimensions";
      return -1;
    }
    shape[n++] = v;
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    if (c->p < c->end && *c->p == ')') {
      c->p++;
      break;
    }
    return -1;
  }
  *ndim = n;
  return 0;
}

static int parse_header(const char* text, size_t len, mr_npy* out, size_t* itemsize, const char** why,
                        char* whybuf, size_t whylen) {
  cursor c = {text, text + len};
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  *why = "malformed header (not a dict literal)";
  if (!eat(&c, '{')) return -1;
  for (;;) {
    if (eat(&c, '}')) break;
    const char* key;
    size_t klen;
    if (parse_string(&c, &key, &klen) != 0) return -1;
    if (!eat(&c, ':')) return -1;
    if (klen == 5 && memcmp(key, "descr", 5) == 0) {
      const char* s;
      size_t slen;
      skip_ws(&c);
      if (c.p < c.end && *c.p == '[') {
        *why = "structured dtypes are not supported";
        return -1;
      }
      if (parse_string(&c, &s, &slen) != 0) {
        *why = "malformed 'descr'";
        return -1;
      }
      if (parse_dtype(s, slen, out->dtype, itemsize, why) != 0) {
        char shown[17]; /* echo at most 16 printable characters of a hostile string */
        size_t m = slen < 16 ? slen : 16;
        for (size_t i = 0; i < m; i++) shown[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
        shown[m] = '\0';
        snprintf(whybuf, whylen, "dtype '%s': %s", shown, *why);
        *why = whybuf;
        return -1;
      }
      have_descr = 1;
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
      if (parse_bool(&c, &fortran) != 0) {
        *why = "malformed 'fortran_order'";
        return -1;
      }
      have_order = 1;
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
      if (parse_shape(&c, &out->ndim, out->shape, why) != 0) return -1;
      have_shape = 1;
    } else {
      *why = "unknown key in header";
      return -1;
    }
    if (eat(&c, ',')) continue;
    if (eat(&c, '}')) break;
    *why = "malformed header (expected ',' or '}')";
    return -1;
  }
  skip_ws(&c);
  if (c.p != c.end) {
    *why = "trailing characters after the header dict";
    return -1;
  }
  if (!have_descr || !have_order || !have_shape) {
    *why = "header lacks 'descr', 'fortran_order' or 'shape'";
    return -1;
  }
  if (fortran) {
    *why = "fortran_order True is not supported (save a C-contiguous array)";
    return -1;
  }
  return 0;
}

/* itemsize * prod(shape) without overflow; -1 on overflow. */
static int array_bytes(size_t itemsize, int ndim, const int64_t* shape, size_t* nbytes) {
  size_t n = itemsize;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return -1;
    uint64_t s = (uint64_t)shape[d];
    if (s != 0 && n > SIZE_MAX / s) {
      /* an overflow only matters if no later dimension is 0 */
      for (int e = d + 1; e < ndim; e++)
        if (shape[e] == 0) {
          *nbytes = 0;
          return 0;
        }
      return -1;
    }
    n *= (size_t)s;
  }
  *nbytes = n;
  return 0;
}

/* ---- load ----------------------------------------------------------------- */

int mr_npy_load(const char* path, mr_npy* out, char* err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!out) {
    set_err(err, errlen, "mr_npy_load: out is NULL");
    return -1;
  }
  memset(out, 0, sizeof *out);
  if (!path) {
    set_err(err, errlen, "mr_npy_load: path is NULL");
    return -1;
  }
  if (!host_is_little_endian()) {
    set_err(err, errlen, "%s: .npy reading needs a little-endian host", path);
    return -1;
  }
  FILE* f = fopen(path, "rb");
  if (!f) {
    set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  char* header = NULL;
  const char* why = NULL;
  char whybuf[128];
  unsigned char pre[12];
  size_t got = fread(pre, 1, 10, f);
  if (got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    why = "not a .npy file (bad magic)";
    goto fail;
  }
  unsigned major = pre[6];
  size_t header_len;
  if (major == 1) {
    header_len = (size_t)pre[8] | ((size_t)pre[9] << 8);
  } else if (major == 2 || major == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      why = "truncated header";
      goto fail;
    }
    header_len = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
  } else {
    why = "unsupported .npy format version";
    goto fail;
  }
  if (header_len == 0 || header_len > NPY_MAX_HEADER) {
    why = "header length out of range";
    goto fail;
  }
  header = (char*)malloc(header_len);
  if (!header) {
    why = "out of memory";
    goto fail;
  }
  if (fread(header, 1, header_len, f) != header_len) {
    why = "truncated header";
    goto fail;
  }
  for (size_t i = 0; i < header_len; i++) {
    if (header[i] == '\0') {
      why = "NUL byte in header";
      goto fail;
    }
  }
  size_t itemsize = 0;
  if (parse_header(header, header_len, out, &itemsize, &why, whybuf, sizeof whybuf) != 0) goto fail;
  free(header);
  header = NULL;

  size_t nbytes;
  if (array_bytes(itemsize, out->ndim, out->shape, &nbytes) != 0) {
    why = "array size overflows";
    goto fail;
  }
  /* Check the file is long enough before allocating what a header claims:
   * a 100-byte file declaring 2^40 elements must not trigger a huge malloc. */
  long here = ftell(f);
  if (here >= 0 && fseek(f, 0, SEEK_END) == 0) {
    long end = ftell(f);
    if (end < here || (uint64_t)(end - here) < (uint64_t)nbytes) {
      why = "truncated data (file shorter than the header's shape says)";
      goto fail;
    }
    if (fseek(f, here, SEEK_SET) != 0) {
      why = "cannot seek";
      goto fail;
    }
  }
  out->data = malloc(nbytes ? nbytes : 1);
  if (!out->data) {
    why = "out of memory";
    goto fail;
  }
  if (nbytes && fread(out->data, 1, nbytes, f) != nbytes) {
    why = "truncated data";
    goto fail;
  }
  out->nbytes = nbytes;
  fclose(f);
  return 0;

fail:
  free(header);
  free(out->data);
  memset(out, 0, sizeof *out);
  fclose(f);
  set_err(err, errlen, "%s: %s", path, why ? why : "cannot read");
  return -1;
}

/* ---- save ----------------------------------------------------------------- */

int mr_npy_save(const char* path, const char* dtype, int ndim, const int64_t* shape, const void* data, char* err,
                size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!path || !dtype) {
    set_err(err, errlen, "mr_npy_save: path or dtype is NULL");
    return -1;
  }
  char norm[8];
  size_t itemsize;
  const char* why = NULL;
  if (parse_dtype(dtype, strlen(dtype), norm, &itemsize, &why) != 0) {
    set_err(err, errlen, "%s: dtype '%s': %s", path, dtype, why);
    return -1;
  }
  if (!host_is_little_endian()) {
    set_err(err, errlen, "%s: .npy writing needs a little-endian host", path);
    return -1;
  }
  if (ndim < 0 || ndim > MR_NPY_MAX_DIMS || (ndim > 0 && !shape)) {
    set_err(err, errlen, "%s: bad ndim %d", path, ndim);
    return -1;
  }
  size_t nbytes;
  if (array_bytes(itemsize, ndim, shape, &nbytes) != 0) {
    set_err(err, errlen, "%s: negative or overflowing shape", path);
    return -1;
  }
  if (nbytes > 0 && !data) {
    set_err(err, errlen, "%s: data is NULL for a non-empty array", path);
    return -1;
  }
  if (itemsize == 1) norm[0] = '|'; /* numpy spells one-byte types without an order */

  /* Build the dict, then pad it so magic + header ends on a 64-byte boundary. */
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", norm);
  for (int d = 0; d < ndim; d++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[d], (ndim > 1 && d + 1 < ndim) ? " " : "");
  if (ndim > 1) n--; /* "(3, 4,)" -> "(3, 4)": numpy drops the comma after the last of several */
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  size_t total = 10 + (size_t)n + 1; /* + the final '\n' */
  size_t padded = (total + 63) / 64 * 64;
  size_t header_len = padded - 10;
  unsigned char head[10 + 512 + 64];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(header_len & 0xff);
  head[9] = (unsigned char)(header_len >> 8);
  memcpy(head + 10, dict, (size_t)n);
  memset(head + 10 + n, ' ', header_len - (size_t)n - 1);
  head[padded - 1] = '\n';

  FILE* f = fopen(path, "wb");
  if (!f) {
    set_err(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    return -1;
  }
  int ok = fwrite(head, 1, padded, f) == padded;
  if (ok && nbytes) ok = fwrite(data, 1, nbytes, f) == nbytes;
  int saved_errno = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    saved_errno = errno;
  }
  if (!ok) {
    remove(path);
    set_err(err, errlen, "%s: write failed: %s", path, strerror(saved_errno));
    return -1;
  }
  return 0;
}

void mr_npy_free(mr_npy* a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}
