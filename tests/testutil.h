/*
 * testutil.h - what the C tests share: a check macro that counts, a seeded
 * random generator, half-precision conversions written for the tests (not the
 * library's, so a conversion bug cannot hide on both sides), and guarded
 * buffers (canary bytes around a body prefilled with a pattern) to prove that
 * a call wrote nothing outside what it may write.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_TESTUTIL_H
#define MOEROUTE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TU_PRINTF(f, a)
#endif

/* ---- checks -------------------------------------------------------------- */

extern long tu_checks;   /* checks evaluated */
extern long tu_failures; /* checks that failed */
extern int tu_max_reports; /* failing checks printed in full before going quiet (default 50) */

/* CHECK(cond, fmt, ...): count a check; on failure print file:line, the
 * condition and the formatted message. Evaluates to cond (0/1). */
#define CHECK(cond, ...) tu_check((cond) ? 1 : 0, __FILE__, __LINE__, #cond, __VA_ARGS__)
int tu_check(int ok, const char* file, int line, const char* expr, const char* fmt, ...) TU_PRINTF(5, 6);

/* Print "N passed, N failed" for the checks (or for caller-counted cases) and
 * return the process exit status (0 when nothing failed). */
int tu_summary(long passed, long failed);

/* ---- random numbers (splitmix64: tiny, seedable, same on every platform) --- */

typedef struct tu_rng {
  uint64_t state;
} tu_rng;

void tu_seed(tu_rng* r, uint64_t seed);
uint64_t tu_next(tu_rng* r);
uint32_t tu_below(tu_rng* r, uint32_t n); /* uniform in [0, n), n > 0 */
int32_t tu_range(tu_rng* r, int32_t lo, int32_t hi); /* uniform in [lo, hi] */
double tu_uniform(tu_rng* r);             /* uniform in [0, 1) */
int tu_chance(tu_rng* r, double p);       /* 1 with probability p */
/* log-uniform integer in [lo, hi] (lo >= 1): small values as likely per octave as large ones */
int32_t tu_log_range(tu_rng* r, int32_t lo, int32_t hi);

/* ---- half precision (round to nearest even) ------------------------------ */

float tu_bf16_to_float(uint16_t h);
uint16_t tu_float_to_bf16(float f);
float tu_fp16_to_float(uint16_t h);
uint16_t tu_float_to_fp16(float f);

/* ---- guarded buffers ------------------------------------------------------ */

#define TU_CANARY_BYTES 64
#define TU_CANARY 0xCBu

typedef struct tu_guard {
  unsigned char* base; /* canary | body | canary */
  size_t bytes;        /* body bytes */
  void* ptr;           /* the body, never NULL once allocated (even for 0 bytes) */
} tu_guard;

/* Allocate a body of bytes, fill it with fill and surround it with canaries.
 * Aborts the test on allocation failure. Returns g->ptr. */
void* tu_galloc(tu_guard* g, size_t bytes, unsigned char fill);
/* Refill the body with fill (canaries re-laid too). */
void tu_grefill(tu_guard* g, unsigned char fill);
/* 1 when both canaries are intact. */
int tu_gcanary_ok(const tu_guard* g);
/* 1 when body bytes [from, bytes) all equal fill. */
int tu_gbody_is(const tu_guard* g, size_t from, unsigned char fill);
void tu_gfree(tu_guard* g);

/* ---- misc ----------------------------------------------------------------- */

/* |a - b| <= rel * max(|a|, |b|) + abs_tol; both NaN never passes (weights are never NaN). */
int tu_close(float a, float b, float rel, float abs_tol);
/* Bit-identical floats. */
int tu_same_bits(float a, float b);

#endif /* MOEROUTE_TESTUTIL_H */
