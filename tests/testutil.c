/*
 * testutil.c - see testutil.h.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long tu_checks = 0;
long tu_failures = 0;
int tu_max_reports = 50;

int tu_check(int ok, const char* file, int line, const char* expr, const char* fmt, ...) {
  tu_checks++;
  if (ok) return 1;
  tu_failures++;
  if (tu_failures <= tu_max_reports) {
    fprintf(stderr, "FAIL %s:%d: %s: ", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  } else if (tu_failures == tu_max_reports + 1) {
    fprintf(stderr, "(further failures not printed)\n");
  }
  return 0;
}

int tu_summary(long passed, long failed) {
  fflush(stderr);
  printf("%ld passed, %ld failed\n", passed, failed);
  fflush(stdout);
  return failed == 0 ? 0 : 1;
}

/* ---- random --------------------------------------------------------------- */

void tu_seed(tu_rng* r, uint64_t seed) { r->state = seed ^ 0x6a09e667f3bcc909ull; }

uint64_t tu_next(tu_rng* r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t tu_below(tu_rng* r, uint32_t n) { return (uint32_t)((tu_next(r) >> 32) * (uint64_t)n >> 32); }

int32_t tu_range(tu_rng* r, int32_t lo, int32_t hi) {
  return lo + (int32_t)tu_below(r, (uint32_t)((int64_t)hi - lo + 1));
}

double tu_uniform(tu_rng* r) { return (double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0); }

int tu_chance(tu_rng* r, double p) { return tu_uniform(r) < p; }

int32_t tu_log_range(tu_rng* r, int32_t lo, int32_t hi) {
  double l = log((double)lo), h = log((double)hi + 1.0);
  int32_t v = (int32_t)floor(exp(l + (h - l) * tu_uniform(r)));
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

/* ---- half precision -------------------------------------------------------- */

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float tu_bf16_to_float(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t tu_float_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even on the dropped 16 bits */
  return (uint16_t)(u >> 16);
}

float tu_fp16_to_float(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int man = h & 0x3ff;
  float v;
  if (exp == 31)
    v = man ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexpf((float)man, -24); /* subnormal: man units of 2^-24 */
  else
    v = ldexpf((float)(man + 1024), exp - 25);
  return (h & 0x8000u) ? -v : v;
}

uint16_t tu_float_to_fp16(float f) {
  uint16_t sign = (uint16_t)((bits_of(f) >> 16) & 0x8000u);
  if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
  float a = fabsf(f);
  /* 65504 is the largest half; 65520 is halfway to 2^16 and ties to even (inf) */
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
  if (a < 6.103515625e-05f) { /* below 2^-14: subnormal units of 2^-24 (exact scaling) */
    float q = rintf(a * 16777216.0f);  /* rintf rounds half to even in the default mode */
    return (uint16_t)(sign | (uint16_t)q); /* q == 1024 is the smallest normal: right bits */
  }
  int e;
  (void)frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  e -= 1;              /* a = (2m) * 2^e */
  float q = rintf(ldexpf(a, 10 - e)); /* significand * 1024, in [1024, 2048] */
  uint32_t mant = (uint32_t)q;
  if (mant == 2048u) {
    mant = 1024u;
    e += 1;
  }
  if (e > 15) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint16_t)(((uint32_t)(e + 15) << 10) | (mant - 1024u)));
}

/* ---- guarded buffers -------------------------------------------------------- */

void* tu_galloc(tu_guard* g, size_t bytes, unsigned char fill) {
  g->bytes = bytes;
  g->base = (unsigned char*)malloc(bytes + 2 * TU_CANARY_BYTES);
  if (!g->base) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  g->ptr = g->base + TU_CANARY_BYTES;
  tu_grefill(g, fill);
  return g->ptr;
}

void tu_grefill(tu_guard* g, unsigned char fill) {
  memset(g->base, TU_CANARY, TU_CANARY_BYTES);
  memset(g->base + TU_CANARY_BYTES, fill, g->bytes);
  memset(g->base + TU_CANARY_BYTES + g->bytes, TU_CANARY, TU_CANARY_BYTES);
}

int tu_gcanary_ok(const tu_guard* g) {
  for (size_t i = 0; i < TU_CANARY_BYTES; i++) {
    if (g->base[i] != TU_CANARY) return 0;
    if (g->base[TU_CANARY_BYTES + g->bytes + i] != TU_CANARY) return 0;
  }
  return 1;
}

int tu_gbody_is(const tu_guard* g, size_t from, unsigned char fill) {
  const unsigned char* p = (const unsigned char*)g->ptr;
  for (size_t i = from; i < g->bytes; i++)
    if (p[i] != fill) return 0;
  return 1;
}

void tu_gfree(tu_guard* g) {
  free(g->base);
  g->base = NULL;
  g->ptr = NULL;
  g->bytes = 0;
}

/* ---- misc ------------------------------------------------------------------ */

int tu_close(float a, float b, float rel, float abs_tol) {
  if (isnan(a) || isnan(b)) return 0;
  if (a == b) return 1; /* also equal infinities */
  double d = fabs((double)a - (double)b);
  double m = fmax(fabs((double)a), fabs((double)b));
  return d <= (double)rel * m + (double)abs_tol;
}

int tu_same_bits(float a, float b) { return bits_of(a) == bits_of(b); }
