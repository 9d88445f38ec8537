/*
 * test_cuda.c - every CUDA entry point judged against the CPU reference backend.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 *
 * The CPU backend is the executable form of docs/routing-contract.md, so the
 * CUDA backend is right when it agrees with it:
 *
 *   route  = moeroute_cuda_route                  vs moeroute_cpu_route
 *   gate   = moeroute_cuda_gate                   vs the CPU's top-k
 *   sort   = moeroute_cuda_sort(CPU top-k)        vs the CPU's sorted layouts (bit-identical)
 *   chain  = moeroute_cuda_gate -> moeroute_cuda_sort on the device
 *            vs the fused route (bit-identical: fused against its unfused chain)
 *
 * Comparison rules (contract section 4):
 *   - sorted layouts (ids, weights, block expert ids, totals; CK and vLLM) are
 *     bit-identical to the CPU's for the same top-k;
 *   - topk_ids are identical, except in a row where the ids that differ have
 *     selection keys that agree to ~1e-6 relative (recomputed here in double
 *     precision; never for SOFTMAX without bias, whose key is the logit itself,
 *     and never for keys that are exactly equal: those follow the tie rule).
 *     When ids or weight bits differ, the GPU's sorted layouts are compared with
 *     the CPU sort of the GPU's own top-k instead;
 *   - topk_weights agree within 1e-5 relative.
 *
 * Memory checks: every output buffer and the workspace sit between 256-byte
 * canaries; before each call the buffer and its canaries are filled with 0xAB.
 * Afterwards the canaries must be intact, the valid range (T*k top-k entries,
 * the first `total` sorted entries, `total/U` blocks) must hold no poison word,
 * everything past it must still be poison (design.md 10), moe_buf must be all
 * zero (route, sort) or untouched (gate), and the inputs unchanged. Logits are
 * surrounded by +inf (which would win any selection if it were read).
 *
 * Groups: graph (capture on a non-default stream, replay on new inputs; runs
 * first so the library's lazy set-up happens under capture), bad_input
 * (validation status, nothing enqueued), random (>= 3000 configurations over
 * every option), engine (serving shapes x expert-mask ratios), special (ties,
 * NaN, inf, rows without a finite logit, a hot expert, all experts masked,
 * extremes), sort_ids (the sort entry point on arbitrary ids: out of range,
 * duplicates, odd weight bit patterns), misaligned (logits base pointer off by
 * one element), nonfinite_bias (a bias with NaN / +-inf entries, which the CPU
 * refuses: route's ids valid and distinct, its sorted layouts those of the CPU
 * sort of its own top-k), large (--large: T = 65536 and 262144). A subset of
 * cases runs twice and must give bit-identical outputs.
 *
 * Usage: test_cuda [--quick] [--large] [--seed N] [--configs N] [--group NAME]
 *                  [--max-tokens N] [--exact-allocs] [--ws-uninit]
 *                  [--allow-unsupported] [--no-misaligned] [--max-print N] [-v]
 * Exit status: 0 all passed, 1 a failure, 77 no usable GPU (ctest: skipped).
 * The same source also builds as test_cuda_selftest against selftest/ (a host-memory
 * stand-in of the CUDA runtime whose "CUDA backend" is the CPU backend): that checks
 * the harness itself where there is no GPU. Keep to the runtime calls it provides.
 *
 *   --quick         a reduced run for compute-sanitizer (a few hundred calls)
 *   --exact-allocs  every buffer its own cudaMalloc of exactly its size (no
 *                   canaries; memcheck then sees any out-of-bounds access)
 *   --ws-uninit     fresh, never-written workspace per call (for initcheck)
 *   --max-tokens N  skip cases with more than N tokens (shorter sanitizer runs)
 *   --group NAME    one group only; --seed N changes every generated input
 *   --no-cluster    route never takes the fused cluster kernel
 *                   (MOEROUTE_CUDA_NO_CLUSTER=1; for racecheck, bench/sanitize.sh)
 *   --no-pdl        no programmatic dependent launch (MOEROUTE_PDL=0); route then
 *                   takes the cluster kernel where the pair would run
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif
#include <cuda_runtime_api.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "moeroute.h"

/* Built as test_cuda_selftest: the stand-in runtime (selftest/cuda_runtime_api.h) is
 * included, and its "CUDA backend" is the CPU backend, which refuses what only the
 * CUDA backend accepts (group nonfinite_bias). */
#ifdef MOEROUTE_SELFTEST_CUDA_RUNTIME_API_H
#define TEST_SELFTEST 1
#else
#define TEST_SELFTEST 0
#endif

#if defined(__GNUC__)
#define TEST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TEST_PRINTF(f, a)
#endif

/* ======================================================================== */
/* Tables: extend here                                                       */
/* ======================================================================== */

/* Token counts of the engine sweep (decode, odd sizes, prefill). */
static const int64_t ENGINE_T[] = {1, 4, 7, 8, 13, 16, 31, 32, 64, 128, 1024, 2048, 16384};
/* Added by --large. */
static const int64_t LARGE_T[] = {65536, 262144};
/* Token counts that also get every expert-mask ratio. */
static const int64_t MASK_SWEEP_T[] = {1, 16, 128, 2048};
/* Fraction of experts disabled by the expert mask (the mask array is present). */
static const double MASK_RATIOS[] = {0.0, 0.3, 0.5, 0.7, 1.0};

/* (E, k) of the engine sweep with the router each model family uses. */
typedef struct engine_shape {
  int32_t num_experts, top_k;
  moeroute_score score;
  int32_t has_bias, renormalize;
  int32_t num_groups, topk_groups;
  moeroute_group_score group_score;
  float scale;
  moeroute_dtype dtype;
  int32_t model_dim; /* moe_buf width (bf16 elements) */
  const char* name;
} engine_shape;

/* E, k, score, bias, renormalize, G, topk_groups, group_score, scale, dtype, moe_buf width, name */
static const engine_shape ENGINE_SHAPES[] = {
    {8, 2, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 4096,
     "mixtral"},
    {32, 5, MOEROUTE_SCORE_SIGMOID, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_FP32, 2048,
     "sigmoid-e32"},
    {60, 4, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2048,
     "qwen1.5"},
    {64, 6, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_FP32, 2048,
     "deepseek-v2-lite"},
    {128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2880,
     "gpt-oss-120b"},
    {128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 4096,
     "qwen3"},
    {160, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.5f, MOEROUTE_DTYPE_FP32, 5120,
     "glm-4.5"},
    {256, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 8, 4, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.5f, MOEROUTE_DTYPE_FP32, 7168,
     "deepseek-r1"},
    {257, 9, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.5f, MOEROUTE_DTYPE_FP16, 4096,
     "odd-257"},
    {384, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.827f, MOEROUTE_DTYPE_FP32, 7168,
     "kimi-k2"},
    {512, 10, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2048,
     "qwen3-next"},
    {513, 9, MOEROUTE_SCORE_SIGMOID, 0, 0, 3, 2, MOEROUTE_GROUP_SCORE_MAX, 1.0f, MOEROUTE_DTYPE_FP16, 2048, "odd-513"},
    {1024, 8, MOEROUTE_SCORE_SOFTMAX, 1, 1, 16, 8, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 4096,
     "e1024"},
};

/* Shapes (names in ENGINE_SHAPES) and token counts used by --quick. */
static const char* const QUICK_SHAPES[] = {"mixtral", "gpt-oss-120b", "deepseek-r1", "kimi-k2", "odd-513"};
static const int64_t QUICK_T[] = {1, 16, 128, 2048};

/* Unit sizes the engine sweep rotates through. */
static const int32_t ENGINE_U[] = {32, 64, 16, 128, 1, 256};

#define NUM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ======================================================================== */
/* Small utilities                                                           */
/* ======================================================================== */

#define MARGIN 256 /* canary bytes on each side of every buffer */
#define POISON_BYTE 0xAB
#define POISON_WORD 0xABABABABu
#define MAX_MOE_BUF_BYTES ((size_t)16 << 20)

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static void rng_seed(rng* r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}
static uint64_t rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
static uint64_t rng_next(rng* r) {
  uint64_t* s = r->s;
  uint64_t result = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}
/* uniform in [0, n), n > 0 */
static uint64_t rng_below(rng* r, uint64_t n) {
  return rng_next(r) % n;
} /* bias < 2^-40: irrelevant here */
static double rng_unit(rng* r) {
  return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
static double rng_range(rng* r, double a, double b) {
  return a + (b - a) * rng_unit(r);
}
static int rng_chance(rng* r, double p) {
  return rng_unit(r) < p;
}
static double rng_gauss(rng* r) {
  double u = rng_unit(r), v = rng_unit(r);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float bf16_to_float(uint16_t h) {
  return bits_to_float((uint32_t)h << 16);
}
static uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float fp16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (e == 0x1fu) return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (e == 0) {
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((e + 112u) << 23) | (man << 13));
}
/* Round to nearest even through double: exact for the values we generate. */
static uint16_t float_to_fp16(float f) {
  if (isnan(f)) return 0x7e00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00);
  if (a < 6.103515625e-05) { /* subnormal: units of 2^-24 */
    double q = nearbyint(a * 16777216.0);
    return (uint16_t)(sign | (uint16_t)q);
  }
  int e;
  double m = frexp(a, &e);          /* a = m * 2^e, m in [0.5, 1) */
  double q = nearbyint(m * 2048.0); /* 11 significant bits */
  if (q >= 2048.0) {
    q /= 2;
    e++;
  }
  uint32_t biased = (uint32_t)(e - 1 + 15);
  if (biased >= 31) return (uint16_t)(sign | 0x7c00);
  return (uint16_t)(sign | (biased << 10) | ((uint32_t)q & 0x3ffu));
}

static size_t dtype_size(moeroute_dtype d) {
  return d == MOEROUTE_DTYPE_FP32 ? 4 : 2;
}
static const char* dtype_name(moeroute_dtype d) {
  return d == MOEROUTE_DTYPE_FP32 ? "fp32" : d == MOEROUTE_DTYPE_BF16 ? "bf16" : "fp16";
}
static const char* score_name(moeroute_score s) {
  return s == MOEROUTE_SCORE_SOFTMAX ? "softmax" : s == MOEROUTE_SCORE_SIGMOID ? "sigmoid" : "sqrt_softplus";
}
static size_t align_up(size_t x, size_t a) {
  return (x + a - 1) / a * a;
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "FATAL: out of host memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC); /* C11; wall clock is fine for progress figures */
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ======================================================================== */
/* Options, statistics, failure reporting                                    */
/* ======================================================================== */

static struct {
  int quick, large, verbose, exact_allocs, ws_uninit, allow_unsupported, no_misaligned;
  int configs;        /* random configurations */
  int64_t max_tokens; /* skip cases with more tokens (0 = no limit) */
  uint64_t seed;
  const char* only_group;
  int max_print;
  cudaStream_t stream; /* a non-blocking stream; some cases use the legacy default stream instead */
} g_opt;

#define MAX_GROUPS 16
typedef struct group_stat {
  const char* name;
  long cases, failed, tie_rows, allowed_rows, unsupported, calls;
  double seconds;
} group_stat;
static group_stat g_groups[MAX_GROUPS];
static int g_ngroups;
static long g_total_pass, g_total_fail, g_printed_fail;

/* The case in progress */
static struct {
  group_stat* group;
  char desc[600];
  int failures; /* checks failed in this case */
  int printed;  /* lines printed for this case */
} g_case;

static group_stat* group_get(const char* name) {
  for (int i = 0; i < g_ngroups; i++)
    if (strcmp(g_groups[i].name, name) == 0) return &g_groups[i];
  if (g_ngroups == MAX_GROUPS) {
    fprintf(stderr, "FATAL: too many groups\n");
    exit(1);
  }
  g_groups[g_ngroups].name = name;
  return &g_groups[g_ngroups++];
}

static void case_begin(const char* group, const char* fmt, ...) TEST_PRINTF(2, 3);
static void case_begin(const char* group, const char* fmt, ...) {
  g_case.group = group_get(group);
  g_case.failures = 0;
  g_case.printed = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case.desc, sizeof g_case.desc, fmt, ap);
  va_end(ap);
  if (g_opt.verbose) printf("  [%s] %s\n", group, g_case.desc);
}

/* Record a failed check; print it while under the print limit. */
static void failf(const char* fmt, ...) TEST_PRINTF(1, 2);
static void failf(const char* fmt, ...) {
  g_case.failures++;
  if (g_printed_fail >= g_opt.max_print) return;
  if (g_case.printed == 0) printf("FAIL [%s] %s\n", g_case.group->name, g_case.desc);
  if (g_case.printed < 8) {
    va_list ap;
    va_start(ap, fmt);
    printf("    ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
  } else if (g_case.printed == 8) {
    printf("    ... (more failures in this case)\n");
  }
  g_case.printed++;
}

static void case_end(void) {
  g_case.group->cases++;
  if (g_case.failures) {
    g_case.group->failed++;
    g_total_fail++;
    if (g_case.printed) g_printed_fail++;
  } else {
    g_total_pass++;
  }
}

/* A CUDA runtime failure outside the library under test ends the run: after a
 * device fault the context is unusable and every later result would be noise. */
#define CK(call)                                                      \
  do {                                                                \
    cudaError_t e_ = (call);                                          \
    if (e_ != cudaSuccess) fatal_cuda(e_, #call, __FILE__, __LINE__); \
  } while (0)

static void print_summary(void);

static void fatal_cuda(cudaError_t e, const char* what, const char* file, int line) {
  printf("FATAL: %s failed: %s (%s) at %s:%d\n", what, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
  if (g_case.group) printf("FATAL: during [%s] %s\n", g_case.group->name, g_case.desc);
  g_total_fail++;
  print_summary();
  exit(1);
}

/* ======================================================================== */
/* Device memory: an arena of canary-guarded blocks, or exact allocations     */
/* ======================================================================== */

#define MAX_CHUNKS 64
static struct {
  unsigned char* chunk[MAX_CHUNKS];
  size_t cap[MAX_CHUNKS], used[MAX_CHUNKS];
  int n;
  size_t high; /* bytes used by the largest case so far */
  void* exact[4096];
  int nexact;
} g_arena;

static void* dev_alloc(size_t bytes) {
  if (g_opt.exact_allocs) {
    void* p = NULL;
    if (g_arena.nexact == NUM(g_arena.exact)) {
      fprintf(stderr, "FATAL: too many exact allocations\n");
      exit(1);
    }
    CK(cudaMalloc(&p, bytes ? bytes : 4));
    g_arena.exact[g_arena.nexact++] = p;
    return p;
  }
  bytes = align_up(bytes ? bytes : 1, 256);
  int c = g_arena.n - 1;
  if (c < 0 || g_arena.used[c] + bytes > g_arena.cap[c]) {
    if (g_arena.n == MAX_CHUNKS) {
      fprintf(stderr, "FATAL: arena chunk limit\n");
      exit(1);
    }
    size_t cap = bytes > ((size_t)64 << 20) ? bytes : ((size_t)64 << 20);
    c = g_arena.n++;
    CK(cudaMalloc((void**)&g_arena.chunk[c], cap));
    g_arena.cap[c] = cap;
    g_arena.used[c] = 0;
  }
  void* p = g_arena.chunk[c] + g_arena.used[c];
  g_arena.used[c] += bytes;
  return p;
}

/* Free what the case allocated; merge the arena into one chunk if it grew. */
static void dev_reset(void) {
  if (g_opt.exact_allocs) {
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < g_arena.nexact; i++) CK(cudaFree(g_arena.exact[i]));
    g_arena.nexact = 0;
    return;
  }
  size_t total = 0;
  for (int i = 0; i < g_arena.n; i++) total += g_arena.used[i];
  if (total > g_arena.high) g_arena.high = total;
  if (g_arena.n > 1) {
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < g_arena.n; i++) CK(cudaFree(g_arena.chunk[i]));
    g_arena.n = 1;
    g_arena.cap[0] = align_up(g_arena.high + g_arena.high / 4, 1 << 20);
    CK(cudaMalloc((void**)&g_arena.chunk[0], g_arena.cap[0]));
  }
  for (int i = 0; i < g_arena.n; i++) g_arena.used[i] = 0;
}

static void dev_release_all(void) {
  dev_reset();
  for (int i = 0; i < g_arena.n; i++) CK(cudaFree(g_arena.chunk[i]));
  g_arena.n = 0;
}

/* One buffer: a host mirror [MARGIN | payload padded to 256 | MARGIN] and,
 * for device buffers, the same block on the device (arena mode) or an exact
 * allocation of the payload (--exact-allocs). */
typedef struct buf {
  size_t bytes;         /* payload bytes */
  size_t span;          /* MARGIN + padded payload + MARGIN */
  unsigned char* hbase; /* host block */
  unsigned char* dbase; /* device block (arena) or payload (exact); NULL for host-only */
  int used;
} buf;

static void buf_host(buf* b, size_t bytes, int fill) {
  b->bytes = bytes;
  b->span = MARGIN + align_up(bytes, 256) + MARGIN;
  b->hbase = (unsigned char*)xmalloc(b->span);
  memset(b->hbase, fill, b->span);
  b->dbase = NULL;
  b->used = 1;
}
static void buf_dev(buf* b, size_t bytes) {
  buf_host(b, bytes, POISON_BYTE);
  b->dbase = (unsigned char*)dev_alloc(g_opt.exact_allocs ? bytes : b->span);
}
static void buf_free(buf* b) {
  free(b->hbase);
  memset(b, 0, sizeof *b);
}
static unsigned char* buf_h(const buf* b) {
  return b->used ? b->hbase + MARGIN : NULL;
}
static void* buf_d(const buf* b) {
  if (!b->used) return NULL;
  return g_opt.exact_allocs ? b->dbase : b->dbase + MARGIN;
}
/* The pointer a call gets: device payload, or host payload for a host-only buffer. */
static void* buf_p(const buf* b) {
  return !b->used ? NULL : b->dbase ? buf_d(b) : (void*)buf_h(b);
}

static void buf_poison(buf* b, cudaStream_t st) {
  if (!b->used) return;
  memset(b->hbase, POISON_BYTE, b->span);
  if (!b->dbase) return;
  if (g_opt.exact_allocs)
    CK(cudaMemsetAsync(b->dbase, POISON_BYTE, b->bytes ? b->bytes : 4, st));
  else
    CK(cudaMemsetAsync(b->dbase, POISON_BYTE, b->span, st));
}
/* Host block to device (margins included in arena mode). */
static void buf_upload(buf* b, cudaStream_t st) {
  if (!b->used || !b->dbase) return;
  if (g_opt.exact_allocs) {
    if (b->bytes) CK(cudaMemcpyAsync(b->dbase, buf_h(b), b->bytes, cudaMemcpyHostToDevice, st));
  } else {
    CK(cudaMemcpyAsync(b->dbase, b->hbase, b->span, cudaMemcpyHostToDevice, st));
  }
}
static void buf_download(buf* b, cudaStream_t st) {
  if (!b->used || !b->dbase) return;
  if (g_opt.exact_allocs) {
    if (b->bytes) CK(cudaMemcpyAsync(buf_h(b), b->dbase, b->bytes, cudaMemcpyDeviceToHost, st));
  } else {
    CK(cudaMemcpyAsync(b->hbase, b->dbase, b->span, cudaMemcpyDeviceToHost, st));
  }
}

/* ======================================================================== */
/* Output sets                                                               */
/* ======================================================================== */

enum {
  B_TOPK_IDS,
  B_TOPK_W,
  B_SORTED_IDS,
  B_SORTED_W,
  B_SORTED_EIDS,
  B_NUM_VALID,
  B_SORTED_TOKEN_IDS,
  B_EXPERT_IDS,
  B_NUM_POST_PAD,
  B_MOE_BUF,
  B_WS,
  B_COUNT
};
static const char* BUF_NAME[B_COUNT] = {
    "topk_ids",         "topk_weights", "sorted_ids",          "sorted_weights", "sorted_expert_ids", "num_valid_ids",
    "sorted_token_ids", "expert_ids",   "num_tokens_post_pad", "moe_buf",        "workspace"};

typedef enum run_kind { RUN_ROUTE, RUN_GATE, RUN_SORT } run_kind;

typedef struct outset {
  buf b[B_COUNT];
  void* ws_fresh; /* --ws-uninit: a fresh cudaMalloc per call */
  size_t ws_bytes;
  int device;
} outset;

static int32_t* o_i32(const outset* o, int id) {
  return (int32_t*)buf_h(&o->b[id]);
}
static float* o_f32(const outset* o, int id) {
  return (float*)buf_h(&o->b[id]);
}

/* What one call writes. */
typedef struct want {
  int topk, ck, ck_weights, vllm, moe_buf;
} want;

static void outset_make(outset* o, int device, const moeroute_params* p, const moeroute_sizes* sz, want w,
                        size_t ws_bytes) {
  memset(o, 0, sizeof *o);
  o->device = device;
  void (*mk)(buf*, size_t) = device ? buf_dev : NULL;
#define MK(id, n)                            \
  do {                                       \
    if (mk)                                  \
      mk(&o->b[id], (n));                    \
    else                                     \
      buf_host(&o->b[id], (n), POISON_BYTE); \
  } while (0)
  if (w.topk) {
    MK(B_TOPK_IDS, (size_t)sz->topk_len * 4);
    MK(B_TOPK_W, (size_t)sz->topk_len * 4);
  }
  if (w.ck) {
    MK(B_SORTED_IDS, (size_t)sz->ck_sorted_len * 4);
    if (w.ck_weights) MK(B_SORTED_W, (size_t)sz->ck_sorted_len * 4);
    MK(B_SORTED_EIDS, (size_t)sz->ck_blocks_len * 4);
    MK(B_NUM_VALID, 8);
  }
  if (w.vllm) {
    MK(B_SORTED_TOKEN_IDS, (size_t)sz->vllm_sorted_len * 4);
    MK(B_EXPERT_IDS, (size_t)sz->vllm_blocks_len * 4);
    MK(B_NUM_POST_PAD, 4);
  }
  if (w.moe_buf && p->moe_buf_bytes) MK(B_MOE_BUF, p->moe_buf_bytes);
  o->ws_bytes = ws_bytes;
  if (ws_bytes && !(device && g_opt.ws_uninit)) MK(B_WS, ws_bytes);
#undef MK
}

static void outset_free(outset* o) {
  for (int i = 0; i < B_COUNT; i++)
    if (o->b[i].used) buf_free(&o->b[i]);
}

static void outset_poison(outset* o, cudaStream_t st) {
  for (int i = 0; i < B_COUNT; i++) buf_poison(&o->b[i], st);
  if (o->device && g_opt.ws_uninit && o->ws_bytes) CK(cudaMalloc(&o->ws_fresh, o->ws_bytes));
}
static void outset_download(outset* o, cudaStream_t st) {
  for (int i = 0; i < B_COUNT; i++) buf_download(&o->b[i], st);
}
static void outset_release_ws(outset* o) {
  if (o->ws_fresh) {
    CK(cudaFree(o->ws_fresh));
    o->ws_fresh = NULL;
  }
}

/* Output pointers of an outset into a buffers struct (inputs are set by the caller). */
static void outset_bind(const outset* o, moeroute_buffers* bu) {
  bu->topk_ids = (int32_t*)buf_p(&o->b[B_TOPK_IDS]);
  bu->topk_weights = (float*)buf_p(&o->b[B_TOPK_W]);
  bu->sorted_ids = (int32_t*)buf_p(&o->b[B_SORTED_IDS]);
  bu->sorted_weights = (float*)buf_p(&o->b[B_SORTED_W]);
  bu->sorted_expert_ids = (int32_t*)buf_p(&o->b[B_SORTED_EIDS]);
  bu->num_valid_ids = (int32_t*)buf_p(&o->b[B_NUM_VALID]);
  bu->sorted_token_ids = (int32_t*)buf_p(&o->b[B_SORTED_TOKEN_IDS]);
  bu->expert_ids = (int32_t*)buf_p(&o->b[B_EXPERT_IDS]);
  bu->num_tokens_post_pad = (int32_t*)buf_p(&o->b[B_NUM_POST_PAD]);
  bu->moe_buf = buf_p(&o->b[B_MOE_BUF]);
  if (o->ws_fresh) {
    bu->workspace = o->ws_fresh;
  } else {
    bu->workspace = buf_p(&o->b[B_WS]);
  }
  bu->workspace_bytes = o->ws_bytes;
}

/* Bytes of buffer id that a call of kind rk must write (from the CPU's total). */
static size_t expect_written(int id, run_kind rk, const moeroute_params* p, int64_t total) {
  int64_t U = p->unit_size;
  switch (id) {
    case B_TOPK_IDS:
    case B_TOPK_W:
      return rk == RUN_SORT ? 0 : (size_t)(p->num_tokens * p->top_k) * 4;
    case B_SORTED_IDS:
    case B_SORTED_W:
    case B_SORTED_TOKEN_IDS:
      return (size_t)total * 4;
    case B_SORTED_EIDS:
    case B_EXPERT_IDS:
      return (size_t)(total / U) * 4;
    case B_NUM_VALID:
      return 8;
    case B_NUM_POST_PAD:
      return 4;
    default:
      return 0;
  }
}

/* Canaries intact, valid range free of poison, the rest untouched, moe_buf zero
 * (route/sort) or untouched (gate). who: "cuda route", "cpu route", ... */
static void outset_check_memory(const outset* o, run_kind rk, const moeroute_params* p, int64_t total,
                                const char* who) {
  for (int id = 0; id < B_COUNT; id++) {
    const buf* b = &o->b[id];
    if (!b->used) continue;
    const unsigned char* h = b->hbase;
    size_t pay_end = MARGIN + b->bytes;
    /* canaries (in exact mode the host margins are never downloaded: trivially intact) */
    for (size_t i = 0; i < b->span; i++) {
      if (i >= MARGIN && i < pay_end) {
        i = pay_end - 1;
        continue;
      }
      if (h[i] != POISON_BYTE) {
        long off = i < MARGIN ? -(long)(MARGIN - i) : (long)(i - pay_end);
        failf("%s: %s canary overwritten at %s%ld bytes (0x%02x)", who, BUF_NAME[id], off < 0 ? "" : "end+", off, h[i]);
        break;
      }
    }
    const unsigned char* pay = h + MARGIN;
    if (id == B_WS) continue; /* scratch: any content */
    if (id == B_MOE_BUF) {
      if (rk == RUN_GATE) {
        for (size_t i = 0; i < b->bytes; i++)
          if (pay[i] != POISON_BYTE) {
            failf("%s: moe_buf written by gate at byte %zu", who, i);
            break;
          }
      } else {
        for (size_t i = 0; i < b->bytes; i++)
          if (pay[i] != 0) {
            failf("%s: moe_buf not cleared at byte %zu of %zu (0x%02x)", who, i, b->bytes, pay[i]);
            break;
          }
      }
      continue;
    }
    size_t w = expect_written(id, rk, p, total);
    if (w > b->bytes) {
      failf("%s: %s: valid range %zu bytes exceeds capacity %zu (total=%" PRId64 ")", who, BUF_NAME[id], w, b->bytes,
            total);
      w = b->bytes;
    }
    for (size_t i = 0; i + 4 <= w; i += 4) {
      uint32_t v;
      memcpy(&v, pay + i, 4);
      if (v == POISON_WORD) {
        failf("%s: %s[%zu] not written (poison left in the valid range of %zu entries)", who, BUF_NAME[id], i / 4,
              w / 4);
        break;
      }
    }
    for (size_t i = w; i < b->bytes; i++)
      if (pay[i] != POISON_BYTE) {
        failf("%s: %s[%zu] written past the valid range (%zu entries)", who, BUF_NAME[id], i / 4, w / 4);
        break;
      }
  }
}

/* ======================================================================== */
/* Test cases                                                                */
/* ======================================================================== */

typedef enum logits_kind {
  LG_DISTINCT,  /* per-row distinct values, well spread: exact id comparison valid */
  LG_UNIFORM,   /* uniform [-2, 2) rounded to the dtype (the benchmark inputs; bf16 gives exact ties) */
  LG_GAUSS,     /* normal with a random sigma */
  LG_TIES,      /* a few distinct values: many exact ties */
  LG_NONFINITE, /* NaN, +inf, -inf sprinkled; some rows with no finite logit */
  LG_HOT,       /* one column much larger: every token picks that expert */
  LG_EXTREME,   /* huge magnitudes, dtype max, +inf rows */
  LG_COUNT
} logits_kind;
static const char* LG_NAME[LG_COUNT] = {"distinct", "uniform", "gauss", "ties", "nonfinite", "hot", "extreme"};

typedef struct tcase {
  moeroute_params p;
  logits_kind lk;
  int has_bias;
  int bias_ties; /* bias drawn from a few values */
  int has_mask;
  double mask_ratio;     /* fraction of experts disabled */
  int mask_gpu_value;    /* value written for enabled experts in the GPU's mask (1, or 2 to test "non-zero") */
  int route_topk;        /* route gets topk outputs */
  int sorted_weights;    /* CK sorted_weights requested */
  int sort_null_weights; /* sort gets topk_weights NULL (only without sorted_weights) */
  int legacy_stream;     /* 0: a created non-blocking stream; 1: NULL (legacy default); 2: cudaStreamPerThread */
  int logits_offset;     /* elements the logits pointer is moved past a 256-byte boundary */
  int logits_null;       /* T = 0 with logits NULL */
  int repeat;            /* run twice, outputs must be bit-identical */
  int hot_expert;
  uint64_t seed;
} tcase;

static void tcase_init(tcase* tc) {
  memset(tc, 0, sizeof *tc);
  moeroute_params_init(&tc->p);
  tc->route_topk = 1;
  tc->sorted_weights = 1;
  tc->mask_gpu_value = 1;
  tc->hot_expert = -1;
}

static void describe(const tcase* tc, char* s, size_t n) {
  const moeroute_params* p = &tc->p;
  int len = snprintf(s, n, "T=%" PRId64 " E=%d k=%d U=%d %s %s stride=%" PRId64 " renorm=%d scale=%g", p->num_tokens,
                     p->num_experts, p->top_k, p->unit_size, dtype_name(p->logits_dtype), score_name(p->score),
                     p->logits_row_stride ? p->logits_row_stride : p->num_experts, p->renormalize, (double)p->scale);
  if (len < 0 || (size_t)len >= n) return;
  len += snprintf(s + len, n - (size_t)len, "%s", tc->has_bias ? (tc->bias_ties ? " bias(ties)" : " bias") : "");
  if (p->num_groups > 1)
    len += snprintf(s + len, n - (size_t)len, " groups=%d/%d/%s", p->num_groups, p->topk_groups,
                    p->group_score == MOEROUTE_GROUP_SCORE_MAX ? "max" : "top2_sum");
  if (tc->has_mask) len += snprintf(s + len, n - (size_t)len, " mask=%.2f", tc->mask_ratio);
  if (tc->mask_gpu_value != 1) len += snprintf(s + len, n - (size_t)len, " gpu_mask_value=%d", tc->mask_gpu_value);
  snprintf(s + len, n - (size_t)len, " layouts=%s moe_buf=%zu logits=%s%s%s%s%s%s seed=%" PRIu64,
           p->layouts == MOEROUTE_LAYOUT_CK     ? "ck"
           : p->layouts == MOEROUTE_LAYOUT_VLLM ? "vllm"
                                                : "both",
           p->moe_buf_bytes, LG_NAME[tc->lk], tc->route_topk ? "" : " route-no-topk",
           tc->sorted_weights ? "" : " no-sorted-weights",
           tc->legacy_stream == 1   ? " null-stream"
           : tc->legacy_stream == 2 ? " per-thread-stream"
                                    : "",
           tc->logits_offset ? " misaligned" : "", tc->repeat ? " x2" : "", tc->seed);
}

static cudaStream_t case_stream(const tcase* tc) {
  return tc->legacy_stream == 1 ? (cudaStream_t)0 : tc->legacy_stream == 2 ? cudaStreamPerThread : g_opt.stream;
}

/* ---- inputs ------------------------------------------------------------- */

typedef struct inputs {
  buf logits; /* [pre | (T-1)*stride + E] elements, padding/margins +inf */
  size_t pre; /* elements before the first row */
  buf bias, mask_gpu;
  float* bias_h;     /* host bias (NULL = none) */
  int32_t* mask_cpu; /* host mask for the CPU (NULL = none) */
} inputs;

static uint32_t pos_inf_bits(moeroute_dtype d) {
  return d == MOEROUTE_DTYPE_FP32 ? 0x7f800000u : d == MOEROUTE_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
}
static void store_raw(void* base, moeroute_dtype d, size_t i, uint32_t bits) {
  if (d == MOEROUTE_DTYPE_FP32)
    ((uint32_t*)base)[i] = bits;
  else
    ((uint16_t*)base)[i] = (uint16_t)bits;
}
static void store_val(void* base, moeroute_dtype d, size_t i, float v) {
  if (d == MOEROUTE_DTYPE_FP32)
    ((float*)base)[i] = v;
  else if (d == MOEROUTE_DTYPE_BF16)
    ((uint16_t*)base)[i] = float_to_bf16(v);
  else
    ((uint16_t*)base)[i] = float_to_fp16(v);
}
static float load_val(const void* base, moeroute_dtype d, size_t i) {
  if (d == MOEROUTE_DTYPE_FP32) return ((const float*)base)[i];
  if (d == MOEROUTE_DTYPE_BF16) return bf16_to_float(((const uint16_t*)base)[i]);
  return fp16_to_float(((const uint16_t*)base)[i]);
}

/* A spread value exactly representable in d: +-(1 + f) * 2^e, e in [-6, 2],
 * so |x| in [1/64, 8): sigmoid/softplus keys stay >= ~1e-5 apart relative. */
static uint32_t spread_bits(rng* r, moeroute_dtype d) {
  int e = (int)rng_below(r, 9) - 6;
  uint32_t sign = (uint32_t)rng_below(r, 2);
  if (d == MOEROUTE_DTYPE_BF16) return (sign << 15) | ((uint32_t)(e + 127) << 7) | (uint32_t)rng_below(r, 128);
  if (d == MOEROUTE_DTYPE_FP16) return (sign << 15) | ((uint32_t)(e + 15) << 10) | (uint32_t)rng_below(r, 1024);
  return (sign << 31) | ((uint32_t)(e + 127) << 23) | (uint32_t)rng_below(r, 1u << 23);
}

static float dtype_max(moeroute_dtype d) {
  return d == MOEROUTE_DTYPE_FP32 ? FLT_MAX : d == MOEROUTE_DTYPE_BF16 ? 3.3895313892515355e38f : 65504.0f;
}

static void gen_row(rng* r, const tcase* tc, void* row, unsigned char* seen) {
  const moeroute_params* p = &tc->p;
  moeroute_dtype d = p->logits_dtype;
  int32_t E = p->num_experts;
  switch (tc->lk) {
    case LG_DISTINCT: {
      /* distinct bit patterns per row (the pattern space is at least 2304 wide) */
      for (int32_t i = 0; i < E; i++) {
        uint32_t b;
        for (;;) {
          b = spread_bits(r, d);
          if (d == MOEROUTE_DTYPE_FP32) break; /* collisions in 2^27 patterns: negligible */
          if (!(seen[b >> 3] & (1u << (b & 7)))) break;
        }
        if (d != MOEROUTE_DTYPE_FP32) seen[b >> 3] |= (unsigned char)(1u << (b & 7));
        store_raw(row, d, (size_t)i, b);
      }
      if (d != MOEROUTE_DTYPE_FP32)
        for (int32_t i = 0; i < E; i++) {
          uint32_t b = ((uint16_t*)row)[i];
          seen[b >> 3] = 0;
        }
      break;
    }
    case LG_UNIFORM:
      for (int32_t i = 0; i < E; i++) store_val(row, d, (size_t)i, (float)rng_range(r, -2.0, 2.0));
      break;
    case LG_GAUSS: {
      double sigma = (double[]){0.25, 1.0, 3.0, 8.0}[rng_below(r, 4)];
      for (int32_t i = 0; i < E; i++) store_val(row, d, (size_t)i, (float)(sigma * rng_gauss(r)));
      break;
    }
    case LG_TIES: {
      static const float vals[] = {-1.0f, 0.0f, 0.5f, 1.0f, 1.0f, 2.0f};
      for (int32_t i = 0; i < E; i++) store_val(row, d, (size_t)i, vals[rng_below(r, NUM(vals))]);
      break;
    }
    case LG_NONFINITE: {
      int mode = (int)rng_below(r, 8); /* 0: no finite logit; 1: few finite; else sprinkled */
      for (int32_t i = 0; i < E; i++) {
        double u = rng_unit(r);
        float v = (float)rng_range(r, -2.0, 2.0);
        int nonfinite = mode == 0 ? 1 : mode == 1 ? (u < 0.9) : (u < 0.15);
        if (nonfinite) {
          int which = (int)rng_below(r, mode == 0 ? 2 : 3); /* no +inf in "no finite" rows: +inf counts as finite */
          v = which == 0 ? NAN : which == 1 ? -INFINITY : INFINITY;
        }
        store_val(row, d, (size_t)i, v);
      }
      break;
    }
    case LG_HOT:
      for (int32_t i = 0; i < E; i++) store_val(row, d, (size_t)i, (float)rng_range(r, -2.0, 2.0));
      if (tc->hot_expert >= 0) store_val(row, d, (size_t)tc->hot_expert, 8.0f);
      break;
    case LG_EXTREME: {
      int mode = (int)rng_below(r, 4);
      float m = dtype_max(d);
      for (int32_t i = 0; i < E; i++) {
        float v;
        if (mode == 0)
          v = INFINITY; /* every logit +inf: all tie at FLT_MAX */
        else if (mode == 1)
          v = (float)rng_range(r, -1.0, 1.0) * m; /* huge spread */
        else if (mode == 2)
          v = rng_chance(r, 0.2) ? m : (float)rng_range(r, -1e3, 1e3);
        else
          v = rng_chance(r, 0.1) ? INFINITY : (rng_chance(r, 0.1) ? -m : (float)rng_range(r, -60.0, 60.0));
        store_val(row, d, (size_t)i, v);
      }
      break;
    }
    default:
      break;
  }
}

static void inputs_make(inputs* in, const tcase* tc, rng* r) {
  const moeroute_params* p = &tc->p;
  memset(in, 0, sizeof *in);
  moeroute_dtype d = p->logits_dtype;
  size_t es = dtype_size(d);
  int64_t T = p->num_tokens, E = p->num_experts;
  int64_t S = p->logits_row_stride ? p->logits_row_stride : E;
  in->pre = (size_t)tc->logits_offset;
  size_t elems = in->pre + (T > 0 ? (size_t)((T - 1) * S + E) : 0);
  buf_dev(&in->logits, elems * es);
  /* margins and padding: +inf, which would win a selection if it were ever read */
  {
    uint32_t ib = pos_inf_bits(d);
    size_t n = in->logits.span / es;
    for (size_t i = 0; i < n; i++) store_raw(in->logits.hbase, d, i, ib);
  }
  unsigned char* seen = (unsigned char*)calloc(8192, 1);
  unsigned char* base = buf_h(&in->logits) + in->pre * es;
  for (int64_t t = 0; t < T; t++) gen_row(r, tc, base + (size_t)(t * S) * es, seen);
  free(seen);

  if (tc->has_bias) {
    in->bias_h = (float*)xmalloc((size_t)E * 4);
    static const float bvals[] = {-0.25f, 0.0f, 0.0f, 0.125f, 0.25f};
    double amp = (double[]){0.01, 0.1, 0.5, 2.0}[rng_below(r, 4)];
    for (int64_t i = 0; i < E; i++)
      in->bias_h[i] = tc->bias_ties ? bvals[rng_below(r, NUM(bvals))] : (float)rng_range(r, -amp, amp);
    buf_dev(&in->bias, (size_t)E * 4);
    memcpy(buf_h(&in->bias), in->bias_h, (size_t)E * 4);
  }
  if (tc->has_mask) {
    in->mask_cpu = (int32_t*)xmalloc((size_t)E * 4);
    int64_t off = (int64_t)llround(tc->mask_ratio * (double)E);
    for (int64_t i = 0; i < E; i++) in->mask_cpu[i] = 1;
    /* disable `off` distinct experts chosen at random (partial Fisher-Yates) */
    int32_t* perm = (int32_t*)xmalloc((size_t)E * 4);
    for (int64_t i = 0; i < E; i++) perm[i] = (int32_t)i;
    for (int64_t i = 0; i < off; i++) {
      int64_t j = i + (int64_t)rng_below(r, (uint64_t)(E - i));
      int32_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
      in->mask_cpu[perm[i]] = 0;
    }
    free(perm);
    buf_dev(&in->mask_gpu, (size_t)E * 4);
    int32_t* mg = (int32_t*)buf_h(&in->mask_gpu);
    for (int64_t i = 0; i < E; i++) mg[i] = in->mask_cpu[i] ? tc->mask_gpu_value : 0;
  }
}

static void inputs_free(inputs* in) {
  buf_free(&in->logits);
  if (in->bias.used) buf_free(&in->bias);
  if (in->mask_gpu.used) buf_free(&in->mask_gpu);
  free(in->bias_h);
  free(in->mask_cpu);
}

/* ======================================================================== */
/* Reference keys in double precision (only to judge rows whose ids differ)  */
/* ======================================================================== */

typedef struct rowref {
  double* key;   /* selection key after group masking; -inf = never ahead of a finite key */
  double* score; /* unbiased score s_i (0 for non-finite logits) */
  double* gs;    /* group scores */
  int group_near_tie;
} rowref;

static void ref_row(const tcase* tc, const inputs* in, int64_t t, rowref* rr) {
  const moeroute_params* p = &tc->p;
  int32_t E = p->num_experts;
  int64_t S = p->logits_row_stride ? p->logits_row_stride : E;
  const unsigned char* base = buf_h(&in->logits) + in->pre * dtype_size(p->logits_dtype);
  size_t off = (size_t)(t * S);
  double mx = -INFINITY, sum = 0;
  for (int32_t i = 0; i < E; i++) {
    double x = load_val(base, p->logits_dtype, off + (size_t)i);
    int fin = !(isnan(x) || x == -INFINITY);
    if (x == INFINITY) x = FLT_MAX;
    rr->key[i] = fin ? x : -INFINITY; /* temporarily the clamped logit */
    if (fin && x > mx) mx = x;
  }
  if (p->score == MOEROUTE_SCORE_SOFTMAX)
    for (int32_t i = 0; i < E; i++)
      if (rr->key[i] != -INFINITY) sum += exp(rr->key[i] - mx);
  for (int32_t i = 0; i < E; i++) {
    double x = rr->key[i], s;
    if (x == -INFINITY) {
      rr->score[i] = 0;
      continue;
    }
    if (p->score == MOEROUTE_SCORE_SOFTMAX)
      s = exp(x - mx) / sum;
    else if (p->score == MOEROUTE_SCORE_SIGMOID)
      s = 1.0 / (1.0 + exp(-x));
    else
      s = sqrt(fmax(x, 0.0) + log1p(exp(-fabs(x))));
    rr->score[i] = s;
  }
  int logit_key = p->score == MOEROUTE_SCORE_SOFTMAX && !tc->has_bias;
  /* group scores on s + bias (never the logit) */
  rr->group_near_tie = 0;
  if (p->num_groups > 1) {
    int32_t G = p->num_groups, per = E / G;
    for (int32_t gi = 0; gi < G; gi++) {
      double a = -INFINITY, b = -INFINITY;
      for (int32_t i = gi * per; i < (gi + 1) * per; i++) {
        if (rr->key[i] == -INFINITY) continue;
        double v = rr->score[i] + (tc->has_bias ? in->bias_h[i] : 0.0);
        if (v > a) {
          b = a;
          a = v;
        } else if (v > b) {
          b = v;
        }
      }
      rr->gs[gi] = p->group_score == MOEROUTE_GROUP_SCORE_MAX ? a : (b == -INFINITY ? -INFINITY : a + b);
    }
    /* keep the topk_groups best (ties: lower index); note a near tie at the boundary */
    unsigned char* keep = (unsigned char*)calloc((size_t)G, 1);
    double last_kept = 0, first_dropped = -INFINITY;
    for (int32_t n = 0; n < p->topk_groups; n++) {
      int32_t best = -1;
      for (int32_t gi = 0; gi < G; gi++)
        if (!keep[gi] && (best < 0 || rr->gs[gi] > rr->gs[best])) best = gi;
      keep[best] = 1;
      last_kept = rr->gs[best];
    }
    for (int32_t gi = 0; gi < G; gi++)
      if (!keep[gi] && rr->gs[gi] > first_dropped) first_dropped = rr->gs[gi];
    if (p->topk_groups < G && isfinite(last_kept) && isfinite(first_dropped) &&
        fabs(last_kept - first_dropped) <= 1e-5 * fmax(fabs(last_kept), fabs(first_dropped)) + 1e-30)
      rr->group_near_tie = 1;
    for (int32_t i = 0; i < E; i++)
      if (!keep[i / per]) rr->key[i] = -INFINITY;
    free(keep);
  }
  for (int32_t i = 0; i < E; i++)
    if (rr->key[i] != -INFINITY && !logit_key) rr->key[i] = rr->score[i] + (tc->has_bias ? in->bias_h[i] : 0.0);
}

/* Judge a gate output (ids, weights from the GPU) against the CPU's. Returns
 * 1 when ids and weights are bit-identical to the CPU's. */
static int judge_topk(const tcase* tc, const inputs* in, const int32_t* gid, const float* gw, const int32_t* cid,
                      const float* cw, const char* who) {
  const moeroute_params* p = &tc->p;
  int64_t T = p->num_tokens;
  int32_t k = p->top_k, E = p->num_experts;
  int identical = 1;
  rowref rr = {NULL, NULL, NULL, 0};
  int logit_key = p->score == MOEROUTE_SCORE_SOFTMAX && !tc->has_bias;
  /* sums of exp over a row round differently on each backend: a wider margin */
  double key_tol = p->score == MOEROUTE_SCORE_SOFTMAX ? 1e-5 : 2e-6;
  for (int64_t t = 0; t < T; t++) {
    const int32_t* g = gid + t * k;
    const int32_t* c = cid + t * k;
    const float* gwr = gw + t * k;
    const float* cwr = cw + t * k;
    if (memcmp(g, c, (size_t)k * 4) == 0) {
      if (memcmp(gwr, cwr, (size_t)k * 4) != 0) identical = 0;
      for (int32_t j = 0; j < k; j++) {
        double a = gwr[j], b = cwr[j];
        if (!(fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b)) + 1e-30)) {
          failf("%s: token %" PRId64 " slot %d (expert %d): weight %.9g, cpu %.9g (rel %.3g)", who, t, j, c[j], a, b,
                fabs(a - b) / fmax(fabs(a), fabs(b)));
          break;
        }
      }
      continue;
    }
    identical = 0;
    /* ids differ: legitimate only for near-equal keys */
    int ok = 1;
    for (int32_t j = 0; j < k && ok; j++) {
      if (g[j] < 0 || g[j] >= E) ok = 0;
      for (int32_t q = 0; q < j && ok; q++)
        if (g[q] == g[j]) ok = 0;
    }
    if (!ok) {
      failf("%s: token %" PRId64 ": invalid ids (out of range or repeated)", who, t);
      continue;
    }
    if (!rr.key) {
      rr.key = (double*)xmalloc((size_t)E * 8);
      rr.score = (double*)xmalloc((size_t)E * 8);
      rr.gs = (double*)xmalloc((size_t)(p->num_groups > 0 ? p->num_groups : 1) * 8);
    }
    ref_row(tc, in, t, &rr);
    int bad_j = -1;
    for (int32_t j = 0; j < k && bad_j < 0; j++) {
      if (g[j] == c[j]) continue;
      double a = rr.key[g[j]], b = rr.key[c[j]];
      double tol = key_tol * (fmax(fabs(a), fabs(b)) + fmax(rr.score[g[j]], rr.score[c[j]])) + 1e-37;
      if (a == b || logit_key || !isfinite(a) || !isfinite(b) || fabs(a - b) > tol) bad_j = j;
    }
    int group_tie = bad_j >= 0 && rr.group_near_tie;
    if (bad_j >= 0 && !group_tie) {
      failf("%s: token %" PRId64 " slot %d: expert %d (key %.9g), cpu expert %d (key %.9g)", who, t, bad_j, g[bad_j],
            rr.key[g[bad_j]], c[bad_j], rr.key[c[bad_j]]);
      continue;
    }
    g_case.group->allowed_rows++;
    if (group_tie) continue; /* group selection itself near-tied: weights not judged */
    /* weights of the GPU's own picks, from the double-precision scores */
    double w[MOEROUTE_MAX_TOPK], sum = 0;
    for (int32_t j = 0; j < k; j++) {
      w[j] = rr.key[g[j]] == -INFINITY ? 0.0 : rr.score[g[j]];
      sum += w[j];
    }
    for (int32_t j = 0; j < k; j++) {
      if (p->renormalize) w[j] /= fmax(sum, 1e-20);
      w[j] *= p->scale;
      double a = gwr[j];
      if (!(fabs(a - w[j]) <= 2e-5 * fmax(fabs(a), fabs(w[j])) + 1e-30)) {
        failf("%s: token %" PRId64 " slot %d (expert %d, near-tie row): weight %.9g, reference %.9g", who, t, j, g[j],
              a, w[j]);
        break;
      }
    }
  }
  free(rr.key);
  free(rr.score);
  free(rr.gs);
  return identical;
}

/* Count rows of exact key ties among the CPU's picks and the first runner-up
 * (statistics only: how much the tie rule was exercised). */
static long count_tie_rows(const tcase* tc, const inputs* in, const int32_t* cid) {
  const moeroute_params* p = &tc->p;
  if (p->score != MOEROUTE_SCORE_SOFTMAX || tc->has_bias || p->num_tokens > 4096) return 0;
  int32_t E = p->num_experts, k = p->top_k;
  int64_t S = p->logits_row_stride ? p->logits_row_stride : E;
  const unsigned char* base = buf_h(&in->logits) + in->pre * dtype_size(p->logits_dtype);
  long rows = 0;
  for (int64_t t = 0; t < p->num_tokens; t++) {
    float last = load_val(base, p->logits_dtype, (size_t)(t * S) + (size_t)cid[t * k + k - 1]);
    int n = 0;
    for (int32_t i = 0; i < E; i++)
      if (load_val(base, p->logits_dtype, (size_t)(t * S) + (size_t)i) == last) n++;
    if (n > 1) rows++;
  }
  return rows;
}

/* Sorted layouts of a call against a reference outset: bit-identical. */
static void compare_sorted(const outset* got, const outset* ref, const moeroute_params* p, int64_t total,
                           const char* who) {
  int64_t U = p->unit_size, nb = total / U;
  struct {
    int id;
    int64_t n;
  } items[] = {{B_NUM_VALID, 2},    {B_SORTED_IDS, total},       {B_SORTED_W, total}, {B_SORTED_EIDS, nb},
               {B_NUM_POST_PAD, 1}, {B_SORTED_TOKEN_IDS, total}, {B_EXPERT_IDS, nb}};
  for (int i = 0; i < NUM(items); i++) {
    int id = items[i].id;
    if (!got->b[id].used || !ref->b[id].used) continue;
    const uint32_t* a = (const uint32_t*)buf_h(&got->b[id]);
    const uint32_t* b = (const uint32_t*)buf_h(&ref->b[id]);
    int64_t n = items[i].n;
    if ((size_t)n * 4 > got->b[id].bytes || (size_t)n * 4 > ref->b[id].bytes)
      continue; /* reported by the memory check */
    for (int64_t j = 0; j < n; j++)
      if (a[j] != b[j]) {
        int64_t bad = 0;
        for (int64_t q = j; q < n; q++) bad += a[q] != b[q];
        if (id == B_SORTED_W)
          failf("%s: %s[%" PRId64 "] = %.9g (0x%08x), expected %.9g (0x%08x); %" PRId64 " of %" PRId64 " differ", who,
                BUF_NAME[id], j, (double)bits_to_float(a[j]), a[j], (double)bits_to_float(b[j]), b[j], bad, n);
        else
          failf("%s: %s[%" PRId64 "] = %d (0x%08x), expected %d (0x%08x); %" PRId64 " of %" PRId64 " differ", who,
                BUF_NAME[id], j, (int32_t)a[j], a[j], (int32_t)b[j], b[j], bad, n);
        break;
      }
  }
}

/* Two device runs of the same call: every payload byte identical (workspace excepted). */
static void compare_bitwise(const outset* a, const outset* b, const char* who) {
  for (int id = 0; id < B_COUNT; id++) {
    if (id == B_WS || !a->b[id].used) continue;
    if (memcmp(buf_h(&a->b[id]), buf_h(&b->b[id]), a->b[id].bytes) != 0) {
      const unsigned char* x = buf_h(&a->b[id]);
      const unsigned char* y = buf_h(&b->b[id]);
      size_t i = 0;
      while (x[i] == y[i]) i++;
      failf("%s: %s differs at byte %zu between two identical calls", who, BUF_NAME[id], i);
    }
  }
}

/* ======================================================================== */
/* Calling the library                                                       */
/* ======================================================================== */

typedef moeroute_status (*cuda_fn)(const moeroute_params*, const moeroute_buffers*, void*);

static const char* op_name(moeroute_op op) {
  return op == MOEROUTE_OP_ROUTE ? "route" : op == MOEROUTE_OP_GATE ? "gate" : "sort";
}

/* Returns 1 when the call succeeded (and was waited for). A device fault while
 * waiting ends the run (fatal_cuda) with the case that caused it. */
static int cuda_call(moeroute_op op, const moeroute_params* p, const moeroute_buffers* bu, cudaStream_t st,
                     const char* who) {
  cuda_fn fn = op == MOEROUTE_OP_ROUTE  ? moeroute_cuda_route
               : op == MOEROUTE_OP_GATE ? moeroute_cuda_gate
                                        : moeroute_cuda_sort;
  int sup = moeroute_cuda_supports(op, p);
  moeroute_status s = fn(p, bu, (void*)st);
  g_case.group->calls++;
  cudaError_t le = cudaGetLastError(); /* the library should leave no launch error pending */
  if (le != cudaSuccess)
    failf("%s: returned %s and left a CUDA error pending: %s", who, moeroute_status_string(s), cudaGetErrorName(le));
  if (s == MOEROUTE_ERR_NOT_SUPPORTED) {
    g_case.group->unsupported++;
    if (sup)
      failf("%s: NOT_SUPPORTED although moeroute_cuda_supports() said 1: %s", who, moeroute_last_error());
    else if (!g_opt.allow_unsupported)
      failf("%s: NOT_SUPPORTED for a request inside the contract's limits: %s", who, moeroute_last_error());
    return 0;
  }
  if (s != MOEROUTE_OK) {
    failf("%s: returned %s: %s", who, moeroute_status_string(s), moeroute_last_error());
    CK(cudaStreamSynchronize(st)); /* is the context still usable? */
    return 0;
  }
  if (!sup) failf("%s: succeeded although moeroute_cuda_supports() said 0", who);
  if (moeroute_last_error()[0]) failf("%s: OK but moeroute_last_error() = \"%s\"", who, moeroute_last_error());
  CK(cudaStreamSynchronize(st));
  return 1;
}

static size_t cuda_ws(moeroute_op op, const moeroute_params* p) {
  size_t ws = 0;
  moeroute_status s = moeroute_cuda_workspace_size(op, p, &ws);
  if (s != MOEROUTE_OK) {
    failf("moeroute_cuda_workspace_size(%s): %s: %s", op_name(op), moeroute_status_string(s), moeroute_last_error());
    return 0;
  }
  return ws;
}

static void* cpu_ws_alloc(moeroute_op op, const moeroute_params* p, size_t* bytes) {
  *bytes = 0;
  moeroute_status s = moeroute_cpu_workspace_size(op, p, bytes);
  if (s != MOEROUTE_OK) {
    failf("moeroute_cpu_workspace_size(%s): %s: %s", op_name(op), moeroute_status_string(s), moeroute_last_error());
    return NULL;
  }
  return *bytes ? xmalloc(*bytes) : NULL;
}

static int64_t outset_total(const outset* o, const moeroute_params* p) {
  if (p->layouts & MOEROUTE_LAYOUT_CK) return o_i32(o, B_NUM_VALID)[0];
  return o_i32(o, B_NUM_POST_PAD)[0];
}

/* CPU sort of a given top-k (host arrays) into a fresh host outset. */
static int cpu_sort_ref(const tcase* tc, const inputs* in, const moeroute_sizes* sz, const int32_t* ids, const float* w,
                        outset* out) {
  want wa = {0, (tc->p.layouts & MOEROUTE_LAYOUT_CK) != 0, 1, (tc->p.layouts & MOEROUTE_LAYOUT_VLLM) != 0, 1};
  size_t wsb;
  void* ws = cpu_ws_alloc(MOEROUTE_OP_SORT, &tc->p, &wsb);
  outset_make(out, 0, &tc->p, sz, wa, 0);
  moeroute_buffers bu;
  moeroute_buffers_init(&bu);
  outset_bind(out, &bu);
  bu.topk_ids = (int32_t*)ids;
  bu.topk_weights = (float*)w;
  bu.expert_mask = in->mask_cpu;
  bu.workspace = ws;
  bu.workspace_bytes = wsb;
  moeroute_status s = moeroute_cpu_sort(&tc->p, &bu);
  free(ws);
  if (s != MOEROUTE_OK) {
    failf("cpu sort refused: %s: %s", moeroute_status_string(s), moeroute_last_error());
    outset_free(out);
    return 0;
  }
  return 1;
}

/* ======================================================================== */
/* One logits case: CPU route, then route, gate, sort(CPU top-k), chain      */
/* ======================================================================== */

static void run_logits_case(tcase* tc) {
  moeroute_params* p = &tc->p;
  rng r;
  rng_seed(&r, tc->seed);
  cudaStream_t st = case_stream(tc);

  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  moeroute_status s = moeroute_get_sizes(p, &sz);
  if (s != MOEROUTE_OK) {
    failf("moeroute_get_sizes: %s: %s", moeroute_status_string(s), moeroute_last_error());
    return;
  }
  inputs in;
  inputs_make(&in, tc, &r);
  int64_t T = p->num_tokens;
  int ck = (p->layouts & MOEROUTE_LAYOUT_CK) != 0, vl = (p->layouts & MOEROUTE_LAYOUT_VLLM) != 0;
  const void* logits_d =
      tc->logits_null ? NULL : (const void*)((unsigned char*)buf_d(&in.logits) + in.pre * dtype_size(p->logits_dtype));

  /* ---- CPU reference ---- */
  outset cr;
  {
    want wa = {1, ck, 1, vl, 1};
    size_t wsb;
    void* ws = cpu_ws_alloc(MOEROUTE_OP_ROUTE, p, &wsb);
    outset_make(&cr, 0, p, &sz, wa, 0);
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    outset_bind(&cr, &bu);
    bu.logits = tc->logits_null ? NULL : buf_h(&in.logits) + in.pre * dtype_size(p->logits_dtype);
    bu.bias = in.bias_h;
    bu.expert_mask = in.mask_cpu;
    bu.workspace = ws;
    bu.workspace_bytes = wsb;
    s = moeroute_cpu_route(p, &bu);
    free(ws);
    if (s != MOEROUTE_OK) {
      failf("cpu route refused a valid request: %s: %s", moeroute_status_string(s), moeroute_last_error());
      outset_free(&cr);
      inputs_free(&in);
      return;
    }
  }
  int64_t total = outset_total(&cr, p);
  outset_check_memory(&cr, RUN_ROUTE, p, total, "cpu route");
  if (ck && (o_i32(&cr, B_NUM_VALID)[1] != T))
    failf("cpu route: num_valid_ids[1] = %d, T = %" PRId64, o_i32(&cr, B_NUM_VALID)[1], T);
  if (total < 0 || total % p->unit_size != 0 || (ck && total > sz.ck_sorted_len) ||
      (vl && total > sz.vllm_sorted_len)) {
    failf("cpu route: total %" PRId64 " impossible (U=%d); skipping the GPU comparison", total, p->unit_size);
    outset_free(&cr);
    inputs_free(&in);
    return;
  }
  if (g_case.failures) { /* the reference itself is broken: GPU comparisons would mislead */
    outset_free(&cr);
    inputs_free(&in);
    return;
  }
  g_case.group->tie_rows += count_tie_rows(tc, &in, o_i32(&cr, B_TOPK_IDS));

  /* ---- inputs to the device ---- */
  buf_upload(&in.logits, st);
  buf_upload(&in.bias, st);
  buf_upload(&in.mask_gpu, st);
  buf cpu_ids, cpu_w; /* the CPU's top-k, input of the sort path */
  buf_dev(&cpu_ids, (size_t)sz.topk_len * 4);
  buf_dev(&cpu_w, (size_t)sz.topk_len * 4);
  memcpy(buf_h(&cpu_ids), o_i32(&cr, B_TOPK_IDS), (size_t)sz.topk_len * 4);
  memcpy(buf_h(&cpu_w), o_f32(&cr, B_TOPK_W), (size_t)sz.topk_len * 4);
  buf_upload(&cpu_ids, st);
  buf_upload(&cpu_w, st);

  moeroute_buffers base;
  moeroute_buffers_init(&base);
  base.logits = logits_d;
  base.bias = (const float*)buf_d(&in.bias);
  base.expert_mask = (const int32_t*)buf_d(&in.mask_gpu);

  /* ---- gate ---- */
  outset gb;
  int gate_ok;
  {
    want wa = {1, 0, 0, 0, 1};
    outset_make(&gb, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_GATE, p));
    outset_poison(&gb, st);
    moeroute_buffers bu = base;
    outset_bind(&gb, &bu);
    bu.moe_buf = buf_d(&gb.b[B_MOE_BUF]); /* present but never cleared by gate */
    gate_ok = cuda_call(MOEROUTE_OP_GATE, p, &bu, st, "cuda gate");
    outset_download(&gb, st);
    CK(cudaStreamSynchronize(st));
    outset_release_ws(&gb);
  }
  /* R: the reference for every sort output computed from the GPU's top-k: the
   * CPU route when the GPU's top-k is bit-identical to the CPU's, else the CPU
   * sort of the GPU's own top-k. */
  outset rs;
  memset(&rs, 0, sizeof rs);
  const outset* R = &cr;
  if (gate_ok) {
    outset_check_memory(&gb, RUN_GATE, p, total, "cuda gate");
    int ident = judge_topk(tc, &in, o_i32(&gb, B_TOPK_IDS), o_f32(&gb, B_TOPK_W), o_i32(&cr, B_TOPK_IDS),
                           o_f32(&cr, B_TOPK_W), "cuda gate");
    if (!ident && cpu_sort_ref(tc, &in, &sz, o_i32(&gb, B_TOPK_IDS), o_f32(&gb, B_TOPK_W), &rs)) R = &rs;
  }

  /* ---- route ---- */
  outset ra;
  int route_ok;
  {
    want wa = {tc->route_topk, ck, tc->sorted_weights, vl, 1};
    outset_make(&ra, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_ROUTE, p));
    outset_poison(&ra, st);
    moeroute_buffers bu = base;
    outset_bind(&ra, &bu);
    route_ok = cuda_call(MOEROUTE_OP_ROUTE, p, &bu, st, "cuda route");
    outset_download(&ra, st);
    CK(cudaStreamSynchronize(st));
    outset_release_ws(&ra);
  }
  if (route_ok) {
    if (tc->route_topk) {
      if (gate_ok) {
        if (memcmp(o_i32(&ra, B_TOPK_IDS), o_i32(&gb, B_TOPK_IDS), (size_t)sz.topk_len * 4) ||
            memcmp(o_f32(&ra, B_TOPK_W), o_f32(&gb, B_TOPK_W), (size_t)sz.topk_len * 4))
          failf("cuda route: top-k not bit-identical to cuda gate's (fused vs unfused)");
      } else { /* no gate output to lean on: judge the route's own top-k */
        int ident = judge_topk(tc, &in, o_i32(&ra, B_TOPK_IDS), o_f32(&ra, B_TOPK_W), o_i32(&cr, B_TOPK_IDS),
                               o_f32(&cr, B_TOPK_W), "cuda route");
        if (!ident && cpu_sort_ref(tc, &in, &sz, o_i32(&ra, B_TOPK_IDS), o_f32(&ra, B_TOPK_W), &rs)) R = &rs;
      }
    }
    int64_t tr = outset_total(R, p);
    outset_check_memory(&ra, RUN_ROUTE, p, tr, "cuda route");
    compare_sorted(&ra, R, p, tr, R == &cr ? "cuda route vs cpu" : "cuda route vs cpu sort of gpu top-k");
  }
  int64_t total_r = outset_total(R, p);

  /* ---- sort of the CPU's top-k ---- */
  outset sc;
  {
    want wa = {0, ck, tc->sorted_weights, vl, 1};
    outset_make(&sc, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_SORT, p));
    outset_poison(&sc, st);
    moeroute_buffers bu = base;
    bu.logits = NULL;
    outset_bind(&sc, &bu);
    bu.topk_ids = (int32_t*)buf_d(&cpu_ids);
    bu.topk_weights = (tc->sort_null_weights && !tc->sorted_weights) ? NULL : (float*)buf_d(&cpu_w);
    if (tc->logits_null) bu.topk_ids = NULL, bu.topk_weights = NULL; /* T = 0: empty tensors may be NULL */
    if (cuda_call(MOEROUTE_OP_SORT, p, &bu, st, "cuda sort(cpu top-k)")) {
      outset_download(&sc, st);
      buf_download(&cpu_ids, st);
      buf_download(&cpu_w, st);
      CK(cudaStreamSynchronize(st));
      outset_check_memory(&sc, RUN_SORT, p, total, "cuda sort(cpu top-k)");
      compare_sorted(&sc, &cr, p, total, "cuda sort(cpu top-k) vs cpu");
      if (memcmp(buf_h(&cpu_ids), o_i32(&cr, B_TOPK_IDS), (size_t)sz.topk_len * 4) ||
          memcmp(buf_h(&cpu_w), o_f32(&cr, B_TOPK_W), (size_t)sz.topk_len * 4))
        failf("cuda sort: modified its top-k input");
    }
    outset_release_ws(&sc);
  }

  /* ---- chain: sort of the GPU gate's top-k, on the device ---- */
  outset sd;
  memset(&sd, 0, sizeof sd);
  if (gate_ok) {
    want wa = {0, ck, tc->sorted_weights, vl, 1};
    outset_make(&sd, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_SORT, p));
    outset_poison(&sd, st);
    moeroute_buffers bu = base;
    bu.logits = NULL;
    outset_bind(&sd, &bu);
    bu.topk_ids = (int32_t*)buf_d(&gb.b[B_TOPK_IDS]);
    bu.topk_weights = (float*)buf_d(&gb.b[B_TOPK_W]);
    if (cuda_call(MOEROUTE_OP_SORT, p, &bu, st, "cuda chain gate->sort")) {
      outset_download(&sd, st);
      CK(cudaStreamSynchronize(st));
      outset_check_memory(&sd, RUN_SORT, p, total_r, "cuda chain gate->sort");
      compare_sorted(&sd, R, p, total_r, "cuda chain vs reference");
      if (route_ok) compare_sorted(&ra, &sd, p, total_r, "cuda route vs chain gate->sort (fused vs unfused)");
    }
    outset_release_ws(&sd);
  }

  /* ---- determinism: the same calls again ---- */
  if (tc->repeat) {
    if (route_ok) {
      outset r2;
      want wa = {tc->route_topk, ck, tc->sorted_weights, vl, 1};
      outset_make(&r2, 1, p, &sz, wa, ra.ws_bytes);
      outset_poison(&r2, st);
      moeroute_buffers bu = base;
      outset_bind(&r2, &bu);
      if (cuda_call(MOEROUTE_OP_ROUTE, p, &bu, st, "cuda route (again)")) {
        outset_download(&r2, st);
        CK(cudaStreamSynchronize(st));
        compare_bitwise(&ra, &r2, "cuda route determinism");
      }
      outset_release_ws(&r2);
      outset_free(&r2);
    }
    if (gate_ok) {
      outset g2;
      want wa = {1, 0, 0, 0, 1};
      outset_make(&g2, 1, p, &sz, wa, gb.ws_bytes);
      outset_poison(&g2, st);
      moeroute_buffers bu = base;
      outset_bind(&g2, &bu);
      if (cuda_call(MOEROUTE_OP_GATE, p, &bu, st, "cuda gate (again)")) {
        outset_download(&g2, st);
        CK(cudaStreamSynchronize(st));
        compare_bitwise(&gb, &g2, "cuda gate determinism");
      }
      outset_release_ws(&g2);
      outset_free(&g2);
    }
  }

  /* ---- inputs untouched ---- */
  {
    buf chk = in.logits;
    chk.hbase = (unsigned char*)xmalloc(chk.span);
    memcpy(chk.hbase, in.logits.hbase, chk.span);
    buf_download(&chk, st);
    CK(cudaStreamSynchronize(st));
    if (memcmp(chk.hbase, in.logits.hbase, chk.span) != 0) failf("logits (or the +inf guard around them) modified");
    free(chk.hbase);
  }

  outset_free(&cr);
  outset_free(&gb);
  outset_free(&ra);
  outset_free(&sc);
  outset_free(&sd);
  outset_free(&rs);
  buf_free(&cpu_ids);
  buf_free(&cpu_w);
  inputs_free(&in);
}

/* ======================================================================== */
/* Sort on arbitrary ids (out of range, duplicates, odd weight bits)          */
/* ======================================================================== */

static void run_sort_ids_case(tcase* tc, int flavour) {
  moeroute_params* p = &tc->p;
  rng r;
  rng_seed(&r, tc->seed);
  cudaStream_t st = case_stream(tc);
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(p, &sz) != MOEROUTE_OK) {
    failf("moeroute_get_sizes: %s", moeroute_last_error());
    return;
  }
  int64_t n = sz.topk_len;
  int32_t E = p->num_experts, k = p->top_k;
  int32_t* ids = (int32_t*)xmalloc((size_t)n * 4);
  uint32_t* wb = (uint32_t*)xmalloc((size_t)n * 4);
  static const uint32_t odd_bits[] = {0x80000000u, 0x00000001u, 0x007fffffu, 0x7f800000u, 0xff800000u,
                                      0x7fc00001u, 0x7f7fffffu, 0x3f800000u, 0xbf800000u, 0x00000000u};
  static const int32_t bad_ids[] = {-1, -5, INT32_MIN, INT32_MAX, 1 << 24};
  int32_t same = (int32_t)rng_below(&r, (uint64_t)E);
  for (int64_t i = 0; i < n; i++) {
    double u = rng_unit(&r);
    int32_t id;
    if (flavour == 1)
      id = same; /* every slot the same expert */
    else if (u < 0.05)
      id = bad_ids[rng_below(&r, NUM(bad_ids))];
    else if (u < 0.08)
      id = E + (int32_t)rng_below(&r, 4);
    else if (u < 0.18 && i % k)
      id = ids[i - 1]; /* a duplicate inside the row */
    else
      id = (int32_t)rng_below(&r, (uint64_t)E);
    ids[i] = id;
    wb[i] = rng_chance(&r, 0.1) ? odd_bits[rng_below(&r, NUM(odd_bits))] : float_to_bits((float)rng_unit(&r));
  }
  inputs in;
  memset(&in, 0, sizeof in);
  if (tc->has_mask) {
    in.mask_cpu = (int32_t*)xmalloc((size_t)E * 4);
    buf_dev(&in.mask_gpu, (size_t)E * 4);
    for (int32_t i = 0; i < E; i++) {
      in.mask_cpu[i] = rng_chance(&r, tc->mask_ratio) ? 0 : 1;
      ((int32_t*)buf_h(&in.mask_gpu))[i] = in.mask_cpu[i] ? tc->mask_gpu_value : 0;
    }
    buf_upload(&in.mask_gpu, st);
  }
  outset ref;
  int null_w = tc->sort_null_weights && !tc->sorted_weights;
  if (!cpu_sort_ref(tc, &in, &sz, ids, (const float*)wb, &ref)) goto out_free;
  int64_t total = outset_total(&ref, p);
  outset_check_memory(&ref, RUN_SORT, p, total, "cpu sort");

  buf di, dw;
  buf_dev(&di, (size_t)n * 4);
  buf_dev(&dw, (size_t)n * 4);
  memcpy(buf_h(&di), ids, (size_t)n * 4);
  memcpy(buf_h(&dw), wb, (size_t)n * 4);
  buf_upload(&di, st);
  buf_upload(&dw, st);
  int reps = tc->repeat ? 2 : 1;
  outset first;
  memset(&first, 0, sizeof first);
  for (int rep = 0; rep < reps; rep++) {
    outset o;
    want wa = {0, (p->layouts & MOEROUTE_LAYOUT_CK) != 0, tc->sorted_weights, (p->layouts & MOEROUTE_LAYOUT_VLLM) != 0,
               1};
    outset_make(&o, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_SORT, p));
    outset_poison(&o, st);
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    outset_bind(&o, &bu);
    bu.topk_ids = (int32_t*)buf_d(&di);
    bu.topk_weights = null_w ? NULL : (float*)buf_d(&dw);
    bu.expert_mask = (const int32_t*)buf_d(&in.mask_gpu);
    if (cuda_call(MOEROUTE_OP_SORT, p, &bu, st, "cuda sort")) {
      outset_download(&o, st);
      CK(cudaStreamSynchronize(st));
      outset_check_memory(&o, RUN_SORT, p, total, "cuda sort");
      compare_sorted(&o, &ref, p, total, "cuda sort vs cpu");
      if (rep == 1) compare_bitwise(&first, &o, "cuda sort determinism");
    }
    outset_release_ws(&o);
    if (rep == 0 && reps == 2)
      first = o;
    else
      outset_free(&o);
  }
  if (reps == 2) outset_free(&first);
  buf_free(&di);
  buf_free(&dw);
  outset_free(&ref);
out_free:
  free(ids);
  free(wb);
  inputs_free(&in);
}

/* ======================================================================== */
/* Case generators                                                           */
/* ======================================================================== */

static uint64_t case_seed(uint64_t group_tag, uint64_t i) {
  uint64_t x = g_opt.seed ^ (group_tag * 0x9e3779b97f4a7c15ull) ^ (i * 0xd1b54a32d192ed03ull);
  return splitmix64(&x);
}

static int32_t pick_groups(rng* r, tcase* tc) {
  moeroute_params* p = &tc->p;
  int32_t E = p->num_experts, k = p->top_k;
  int32_t divs[64], nd = 0;
  for (int32_t G = 2; G <= E && G <= 64 && nd < 64; G++)
    if (E % G == 0) divs[nd++] = G;
  if (nd == 0) return 0;
  int32_t G = divs[rng_below(r, (uint64_t)nd)];
  int32_t per = E / G;
  p->num_groups = G;
  p->group_score = (per >= 2 && rng_chance(r, 0.6)) ? MOEROUTE_GROUP_SCORE_TOP2_SUM : MOEROUTE_GROUP_SCORE_MAX;
  int32_t min_tg = (k + per - 1) / per;
  p->topk_groups = min_tg + (int32_t)rng_below(r, (uint64_t)(G - min_tg + 1));
  return 1;
}

static void random_config(tcase* tc, uint64_t seed, int quick) {
  rng r;
  rng_seed(&r, seed);
  tcase_init(tc);
  tc->seed = splitmix64(&seed);
  moeroute_params* p = &tc->p;
  static const int32_t E_list[] = {1, 2, 3, 4, 8, 16, 32, 60, 64, 128, 160, 256, 257, 384, 512, 513, 1000, 1024};
  int32_t E;
  if (rng_chance(&r, 0.4))
    E = E_list[rng_below(&r, NUM(E_list))];
  else
    E = (int32_t)llround(exp(rng_range(&r, 0.0, log(1024.0))));
  if (E < 1) E = 1;
  if (E > 1024) E = 1024;
  int32_t kmax = E < 32 ? E : 32;
  int32_t k = rng_chance(&r, 0.1) ? kmax : 1 + (int32_t)rng_below(&r, (uint64_t)kmax);
  static const int32_t U_list[] = {1, 2, 3, 4, 5, 7, 8, 16, 32, 32, 32, 64, 64, 128, 256, 512, 1024};
  int32_t U = rng_chance(&r, 0.1) ? 1 + (int32_t)rng_below(&r, 1024) : U_list[rng_below(&r, NUM(U_list))];
  int64_t T;
  uint64_t tr = rng_below(&r, 100);
  if (tr < 3)
    T = 0;
  else if (tr < 45)
    T = 1 + (int64_t)rng_below(&r, 16);
  else if (tr < 80)
    T = 17 + (int64_t)rng_below(&r, 240);
  else if (tr < 97)
    T = 257 + (int64_t)rng_below(&r, 3840);
  else
    T = 4097 + (int64_t)rng_below(&r, 12288);
  int64_t cap = quick ? (int64_t)1 << 16 : (int64_t)1 << 22;
  while (T > 1 && T * E > cap) T /= 2;
  if (quick && T > 256) T = 256;
  p->num_tokens = T;
  p->num_experts = E;
  p->top_k = k;
  p->unit_size = U;
  p->logits_dtype = (moeroute_dtype)rng_below(&r, 3);
  p->score = (moeroute_score)rng_below(&r, 3);
  tc->has_bias = rng_chance(&r, 0.4);
  tc->bias_ties = tc->has_bias && rng_chance(&r, 0.1);
  if (rng_chance(&r, 0.25)) pick_groups(&r, tc);
  p->renormalize = (int32_t)rng_below(&r, 2);
  static const float scales[] = {1.0f, 1.0f, 1.0f, 2.5f, 0.5f, 16.0f, 2.827f};
  p->scale = rng_chance(&r, 0.1) ? (float)rng_range(&r, 0.01, 10.0) : scales[rng_below(&r, NUM(scales))];
  if (rng_chance(&r, 0.3)) p->logits_row_stride = E + 1 + (int64_t)rng_below(&r, 40);
  uint64_t lr = rng_below(&r, 4);
  p->layouts = lr == 0 ? MOEROUTE_LAYOUT_CK : lr == 1 ? MOEROUTE_LAYOUT_VLLM : MOEROUTE_LAYOUT_BOTH;
  if (rng_chance(&r, 0.6)) {
    size_t mb = (size_t)(T > 0 ? T : 1) * 7168 * 2;
    if (mb > ((size_t)4 << 20)) mb = (size_t)4 << 20;
    p->moe_buf_bytes = 1 + (size_t)rng_below(&r, mb);
  }
  if (rng_chance(&r, 0.4)) {
    tc->has_mask = 1;
    static const double ratios[] = {0.0, 0.3, 0.5, 0.7, 1.0};
    tc->mask_ratio = rng_chance(&r, 0.3) ? rng_unit(&r) : ratios[rng_below(&r, NUM(ratios))];
  }
  tc->route_topk = rng_chance(&r, 0.8);
  tc->sorted_weights = rng_chance(&r, 0.8);
  tc->sort_null_weights = !tc->sorted_weights && rng_chance(&r, 0.5);
  tc->legacy_stream = rng_chance(&r, 0.2) ? 1 + (int)rng_below(&r, 2) : 0;
  tc->logits_null = T == 0 && rng_chance(&r, 0.5);
  tc->repeat = rng_chance(&r, 0.1);
  double u = rng_unit(&r);
  tc->lk = u < 0.6    ? LG_DISTINCT
           : u < 0.75 ? LG_UNIFORM
           : u < 0.85 ? LG_GAUSS
           : u < 0.9  ? LG_TIES
           : u < 0.95 ? LG_NONFINITE
           : u < 0.98 ? LG_HOT
                      : LG_EXTREME;
  if (tc->lk == LG_HOT) tc->hot_expert = (int)rng_below(&r, (uint64_t)E);
}

static void engine_config(tcase* tc, const engine_shape* sh, int64_t T, int variant, int mask_choice, uint64_t seed) {
  tcase_init(tc);
  tc->seed = seed;
  moeroute_params* p = &tc->p;
  p->num_tokens = T;
  p->num_experts = sh->num_experts;
  p->top_k = sh->top_k;
  p->score = sh->score;
  p->renormalize = sh->renormalize;
  p->num_groups = sh->num_groups;
  p->topk_groups = sh->topk_groups;
  p->group_score = sh->group_score;
  p->scale = sh->scale;
  p->logits_dtype = sh->dtype;
  tc->has_bias = sh->has_bias;
  p->unit_size = ENGINE_U[variant % NUM(ENGINE_U)];
  p->layouts = variant % 4 == 1 ? MOEROUTE_LAYOUT_CK : variant % 4 == 3 ? MOEROUTE_LAYOUT_VLLM : MOEROUTE_LAYOUT_BOTH;
  size_t mb = (size_t)T * (size_t)sh->model_dim * 2;
  if (mb > MAX_MOE_BUF_BYTES) mb = MAX_MOE_BUF_BYTES;
  p->moe_buf_bytes = mb + (variant % 3 == 2 ? 7 : 0);
  if (variant % 5 == 4) p->logits_row_stride = sh->num_experts + 8;
  tc->lk = variant % 2 ? LG_UNIFORM : LG_DISTINCT;
  /* mask_choice: -1 = no mask array, else index into MASK_RATIOS */
  if (mask_choice >= 0) {
    tc->has_mask = 1;
    tc->mask_ratio = MASK_RATIOS[mask_choice];
  }
  tc->repeat = (T == 1 || T == 16 || T == 2048 || T >= 16384) && variant % 2 == 0;
}

static int too_large(int64_t T) {
  return g_opt.max_tokens > 0 && T > g_opt.max_tokens;
}

static void run_case_timed(tcase* tc, const char* group, int kind) {
  if (too_large(tc->p.num_tokens)) return;
  char d[560];
  describe(tc, d, sizeof d);
  case_begin(group, "%s", d);
  double t0 = now_s();
  if (kind == 0)
    run_logits_case(tc);
  else
    run_sort_ids_case(tc, kind - 1);
  g_case.group->seconds += now_s() - t0;
  case_end();
  dev_reset();
}

static int want_group(const char* name) {
  return !g_opt.only_group || strcmp(g_opt.only_group, name) == 0;
}

/* The shape called name in tab[0..n), else in ENGINE_SHAPES (tab may be NULL). */
static const engine_shape* shape_in(const engine_shape* tab, int n, const char* name) {
  for (int i = 0; i < n; i++)
    if (strcmp(tab[i].name, name) == 0) return &tab[i];
  for (int i = 0; i < NUM(ENGINE_SHAPES); i++)
    if (strcmp(ENGINE_SHAPES[i].name, name) == 0) return &ENGINE_SHAPES[i];
  fprintf(stderr, "FATAL: no engine shape %s\n", name);
  exit(1);
}
static const engine_shape* shape_by_name(const char* name) { return shape_in(NULL, 0, name); }

static void group_random(void) {
  int n = g_opt.configs;
  for (int i = 0; i < n; i++) {
    tcase tc;
    random_config(&tc, case_seed(1, (uint64_t)i), g_opt.quick);
    run_case_timed(&tc, "random", 0);
  }
}

static void group_engine(void) {
  int ns = NUM(ENGINE_SHAPES);
  uint64_t idx = 0;
  if (g_opt.quick) {
    for (int a = 0; a < NUM(QUICK_SHAPES); a++)
      for (int b = 0; b < NUM(QUICK_T); b++) {
        tcase tc;
        int v = a + b;
        engine_config(&tc, shape_by_name(QUICK_SHAPES[a]), QUICK_T[b], v, (v % 6) - 1, case_seed(2, idx++));
        run_case_timed(&tc, "engine", 0);
      }
    return;
  }
  /* every T x shape, the mask rotating through none and the ratios */
  for (int s = 0; s < ns; s++)
    for (int ti = 0; ti < NUM(ENGINE_T); ti++) {
      tcase tc;
      int v = s + ti;
      engine_config(&tc, &ENGINE_SHAPES[s], ENGINE_T[ti], v, (v % (NUM(MASK_RATIOS) + 1)) - 1, case_seed(2, idx++));
      run_case_timed(&tc, "engine", 0);
    }
  /* every mask ratio at a few T */
  for (int s = 0; s < ns; s++)
    for (int ti = 0; ti < NUM(MASK_SWEEP_T); ti++)
      for (int m = 0; m < NUM(MASK_RATIOS); m++) {
        tcase tc;
        engine_config(&tc, &ENGINE_SHAPES[s], MASK_SWEEP_T[ti], s + ti + m, m, case_seed(3, idx++));
        run_case_timed(&tc, "engine_mask", 0);
      }
}

/* group_thresholds' shapes (group_nonfinite_bias takes three of them too): shapes only
 * these switches need (not in ENGINE_SHAPES, whose other groups keep their case lists):
 * DeepSeek-R1 sizes with softmax (bench's deepseek-r1-softmax), and wide gate rows at
 * EPL = 32, at the E <= 384 split of the bound, and with other group layouts (32 lanes per
 * group; five groups) */
static const engine_shape THRESHOLD_SHAPES[] = {
    {256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 7168,
     "ds-softmax"},
    /* without renormalize: the weights carry the softmax denominator (one summation order in every row form since v44) */
    {256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 7168,
     "ds-softmax-raw"},
    {128, 1, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2048, "k1-raw"},
    {1024, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2048,
     "sig-e1024"},
    {512, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.0f, MOEROUTE_DTYPE_FP32, 2048,
     "sig-e512"},
    {256, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 4, 2, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.5f, MOEROUTE_DTYPE_FP32, 4096,
     "sig-e256-g4"},
    {160, 6, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 1, 5, 3, MOEROUTE_GROUP_SCORE_MAX, 1.0f, MOEROUTE_DTYPE_FP16, 2048,
     "ssp-e160-g5"},
    /* tiny.cu's bounds by E bucket (16-bit softmax rows, no groups) */
    {64, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2048,
     "olmoe"},
    {160, 6, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_FP16, 5120,
     "sm-e160"},
    /* gx's smallest E under v45b's lab form (E >= 16): DBRX's and GPT-OSS-20B's routers */
    {16, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 6144, "dbrx"},
    {32, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 2880,
     "gpt-oss-20b"},
    {1024, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_BF16, 4096,
     "sm-e1024"},
    /* sigmoid rows by segments of 16 lanes (v33b): E = 256 with fp32 logits, 16 per segment lane */
    {256, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 1.0f, MOEROUTE_DTYPE_FP32, 3072,
     "sig-e256"},
    {160, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.5f, MOEROUTE_DTYPE_FP16, 5120,
     "sig-e160-h"},
    /* grouped sigmoid rows by segments (v35), shapes besides DeepSeek-R1's that its rule admits (session 33's
       review): E = 128 (8 per segment lane, groups of two lanes), E = 160 in ten groups by their maximum, fp16 */
    {128, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 8, 4, MOEROUTE_GROUP_SCORE_TOP2_SUM, 2.5f, MOEROUTE_DTYPE_BF16, 2048,
     "sig-e128-g8"},
    {160, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 10, 3, MOEROUTE_GROUP_SCORE_MAX, 1.0f, MOEROUTE_DTYPE_FP16, 2048,
     "sig-e160-g10"},
};

/* T just below and above each switch of the CUDA dispatch (src/cuda/entry.cu,
 * tiny.cu, large.cu), the two sides of a pair with the same options (variant,
 * mask, moe_buf): tiny.cu's bounds (T = 1 for any E; its one-pass finish at 2 <= T <= 8 with
 * U >= T, E >= 16 (Mixtral's E = 8 keeps tiny.cu's own sorts: the engine shapes cover it) and
 * T*k <= 40, or 64 for E <= 256, its layout by 4 CTAs up to T*k = 32, else 8; else its own sorts within the T*k bound of the E
 * bucket: 48 for E <= 64, 32 for E <= 128, 24 for E <= 256, none for E <= 512, 32 above; its
 * wide form for sigmoid / sqrt_softplus rows: T = 1), the pair / one-launch sort (T*k <= 1024; E * ceil(T*k/32) <= 5120;
 * the decode sort: tiny.cu's one-pass sort for T <= 32, T*k <= 256, U >= T; the token-mask sort for
 * T*k >= 192, up to 1536 for E <= 384, 1024 for E <= 512, 768 above), ctm's sort without moe_buf
 * (sort entry and route's second launch: 4096 <= T*k <= 24576 for E <= 256, from 8192 for E <= 384,
 * 16384 <= T*k <= 32768 for E <= 512), the mid sort's
 * CTA count (64 CTAs from T*k = 4096; 32 with moe_buf above 12288), the chain for route
 * without moe_buf (T >= 16384 or T*k >= 81920), its split clear with moe_buf (>= 40 MB), and the wide gate rows of sigmoid / sqrt_softplus (T <= 256;
 * 512 without groups, k <= 8, E <= 384), the gate kernel's gating warps per CTA for 16-bit softmax rows with
 * 8 <= E <= 512 (1 up to T = 32, 3 up to 128, 4 above: v42, v42b), and the cluster form's rule (design.md 34). */
static void group_thresholds(void) {
  static const struct {
    const char* shape;
    int64_t T; /* the lower side; the upper is T + 1 */
    int nobuf;    /* 1: no moe_buf; 2: moe_buf [T, model_dim] bf16 without the 16 MB cap */
    int32_t unit; /* > 0: this U instead of the variant's */
  } C[] = {
      {"mixtral", 8, 0, 0},          /* T <= 8 (E = 8: at most 8 experts either way) */
      {"qwen3", 2, 1, 0},            /* (one-pass on both sides, U = 64; was the distinct-expert bound) */
      {"gpt-oss-120b", 4, 0, 0},     /* (one-pass on both sides, U = 16; was the T*E bound) */
      {"qwen3", 128, 1, 0},          /* T*k 1024 -> 1032 */
      {"e1024", 20, 0, 0},           /* E * ceil(T*k/32) 5120 -> 6144 (the cluster kernel keeps 6144) */
      {"kimi-k2", 52, 1, 0},         /* (4992 -> 5376: the mid pair from T = 53) */
      {"olmoe", 6, 0, 1},         /* tiny.cu's own sorts (U = 1 < T), E <= 64: T*k 48 -> 56 */
      {"olmoe", 8, 0, 0},            /* the one-pass finish (U >= T), E <= 128: T*k 64, T = 8 -> 9 (16 warps, v14) */
      {"qwen3", 4, 0, 1},         /* own sorts, E <= 128: 32 -> 40 */
      {"qwen3", 8, 0, 0},            /* one-pass T*k 64 -> T = 9 (16 warps) */
      {"gpt-oss-120b", 8, 1, 32},    /* one-pass T = 8 -> 9 (16 warps) */
      {"gpt-oss-120b", 2, 1, 2},  /* U = 2: one-pass at T = 2, own sorts at T = 3 (U < T) */
      {"sm-e160", 4, 1, 1},       /* own sorts, E <= 256: T*k 24 -> 30 (the pair) */
      {"sm-e160", 8, 0, 0},          /* one-pass T*k 48 -> T = 9 (16 warps) */
      {"ds-softmax", 8, 1, 0},       /* one-pass T*k 64 -> T = 9 (16 warps, a row each: mr_tiny_cta16, v14) */
      {"ds-softmax", 12, 0, 0},      /* 16 warps up to T*k = 96 -> the pair (104) */
      {"qwen3", 12, 1, 0},           /* (E = 128, k = 8) */
      {"gpt-oss-120b", 16, 0, 0},    /* 16 warps up to T = 16 (k = 4: T*k 64) -> the pair at T = 17 */
      {"ds-softmax", 4, 0, 0},       /* the one-pass layout by 4 CTAs up to T*k = 32, 8 above */
      {"sm-e1024", 4, 0, 1},      /* own sorts, E > 512: T*k 32 -> 40 */
      {"sm-e1024", 5, 0, 32},        /* one-pass 40 -> 48 (the pair), E > 256 */
      {"qwen3-next", 4, 1, 0},       /* one-pass 40 -> 50 (the pair) */
      {"qwen3-next", 25, 1, 32},     /* the decode sort: tiny.cu's one-pass sort up to T*k = 256 (250 -> 260) */
      {"qwen3", 47, 1, 0},           /* (the token-mask sort's old bounds: T*k 376 -> 384 ... */
      {"qwen3", 128, 0, 16},         /* ... 1024 -> 1032 (U = 16) */
      {"kimi-k2", 64, 1, 0},         /* (E = 384) */
      {"ds-softmax", 96, 1, 0},      /* ... 768 -> 776; v12: the sort entry's token-mask sort on both sides;
                                        route without moe_buf: the pair with it -> the mid pair) */
      {"gpt-oss-120b", 47, 1, 0},    /* the token-mask sort (v12): T*k 188 -> 192 (the mask-table sort below) */
      {"ds-softmax", 32, 0, 0},      /* T*k 256 -> 264: tiny.cu's one-pass sort (T <= 32) -> the token-mask sort;
                                        v42: the gate kernel's 16-bit softmax rows, 1 -> 3 gating warps per CTA */
      {"gpt-oss-120b", 32, 1, 0},    /* (v42, E = 128, k = 4) */
      {"ds-softmax", 128, 1, 0},     /* v42: 3 gating warps per CTA up to T = 128, 4 from 129 (L5's point) */
      {"qwen3-next", 32, 1, 0},      /* v42b: the same for 8 <= E <= 512 (E = 512, k = 10) */
      {"olmoe", 32, 1, 0},           /* (E = 64) */
      {"sm-e1024", 32, 1, 0},        /* (E = 1024 > 512: one gating warp per CTA on both sides) */
      {"ds-softmax", 192, 1, 0},     /* E <= 384: T*k 1536 -> 1544 (the mask-table sort above) */
      {"kimi-k2", 192, 0, 0},        /* (E = 384) */
      {"qwen3-next", 102, 1, 0},     /* E <= 512: 1020 -> 1030 */
      {"sm-e1024", 96, 0, 0},        /* E > 512: 768 -> 776 */
      {"ds-softmax", 511, 1, 0},     /* ctm's sort without moe_buf (v12): T*k 4088 -> 4096 ... */
      {"ds-softmax", 3072, 1, 0},    /* ... 24576 -> 24584 (route: gate + ctm's sort -> the chain / large path) */
      {"ds-softmax", 3072, 0, 0},    /* (with moe_buf: not ctm on either side) */
      {"kimi-k2", 1023, 1, 0},       /* E = 384: 8184 -> 8192 ... */
      {"kimi-k2", 3072, 1, 0},       /* ... 24576 -> 24584 */
      {"qwen3-next", 1638, 1, 0},    /* E = 512: 16380 -> 16390 (the sort: mid -> ctm's; route: the mid pair ->
                                        large.cu, E > 384) ... */
      {"qwen3-next", 3072, 1, 0},    /* ... ctm's plan fits up to T = 3072 (48 KB of shared memory) */
      {"qwen3", 256, 1, 0},          /* (its fit, T = 256 and T*k = 2048, under its knob) */
      {"olmoe", 12, 0, 8},           /* (U = 8 < T) */
      {"kimi-k2", 16, 0, 0},         /* (the pair with it: T*k 128 -> 136, the route kernel's bound) */
      {"mixtral", 32, 1, 32},        /* (T <= 32; U = 32) */
      {"deepseek-r1", 2, 0, 2},      /* (U >= T: U = 2, T = 2 -> 3) */
      {"gpt-oss-120b", 1024, 1, 0},  /* the mid sort: 64 entries per CTA up to T*k = 4096, then 64 CTAs (the cap) */
      {"ds-softmax", 1536, 0, 0},    /* with moe_buf: 64 -> 32 routing CTAs above T*k = 12288 */
      {"qwen3", 2047, 1, 0},         /* the segment gate kernel (E <= 256, k <= 8 softmax): 16 lanes from 2048, */
      {"qwen3", 4095, 0, 0},         /* 8 from 4096 (k <= 4: 16 from 1024, 8 from 4096, 4 from 8192) */
      {"gpt-oss-120b", 1023, 0, 0},
      {"gpt-oss-120b", 8191, 1, 0},
      {"qwen3", 2048, 1, 0},         /* T*k 16384 -> 16392: the mid pair -> the chain / large path (v12, no moe_buf:
                                        gate + ctm's sort on both sides, the mid pair's second launch -> its own) */
      {"gpt-oss-120b", 4096, 0, 0},
      {"kimi-k2", 2048, 1, 0},       /* fp32 keys, the same bound: the mid pair -> large.cu's gate+rank route (v12:
                                        gate + ctm's sort on both sides) */
      {"deepseek-r1", 16383, 1, 0},  /* route without moe_buf: large.cu -> the chain from T = 16384 */
      {"ds-softmax", 4095, 1, 0},    /* v13, route without moe_buf: large.cu's L1 by segments, 16 -> 8 lanes per row */
      {"gpt-oss-120b", 6145, 1, 0},  /* (L1 by segments, 8 lanes, on both sides: v30 moved its bound below) */
      {"ds-softmax", 8192, 1, 0},    /* (L1 by segments, 8 warps up to T*k = 65536, then 16 (v14): 65536 -> 65544) */
      {"ds-softmax", 255, 1, 0},     /* gx (v22; its rule on since results run 35; v43: from T = 256; v45b's lab form
                                        (gx.cu MR_GX_PAIR_RULE): where no one-launch decode sort fits, i.e. not the
                                        pair; the pairs below hold both rules' bounds): from T = 256 ... */
      {"ds-softmax", 1023, 1, 0},    /* (gx on both sides since v43) */
      {"ds-softmax", 4096, 1, 0},    /* ... to 4096 (then large.cu's L1 by segments) */
      {"gpt-oss-120b", 256, 1, 0},   /* (E = 128, k = 4: T*k 1024 -> 1028, the pair -> gx under v45b) */
      {"gpt-oss-120b", 287, 1, 0},   /* (T*k 1148 -> 1152: v45's bound, 1280 under v43b) */
      {"gpt-oss-120b", 255, 1, 0},   /* (T = 255 / 256: the pair on both sides) */
      {"gpt-oss-120b", 4096, 1, 0},  /* (4097: large.cu's L1 by segments since v30, below) */
      {"sm-e160", 2047, 1, 0},       /* (gx: E = 160, fp16, k = 6) */
      {"sm-e160", 256, 1, 0},        /* (k = 6: T*k 1536 -> 1542, the token-mask sort's pair -> gx under v45b) */
      {"sm-e160", 255, 1, 0},        /* (T = 255 / 256: the pair -> gx under v45, the pair on both sides under v45b) */
      {"olmoe", 255, 1, 0},          /* (E = 64, k = 8: the mid pair -> gx at T = 256 under v45b) */
      {"olmoe", 383, 1, 0},          /* (v45: from T = 384 for 60 <= E < 128, 512 under v43b; OLMoE and Qwen1.5 do
                                        not renormalize) */
      {"olmoe", 4096, 1, 0},         /* (gx -> the paths after it) */
      {"olmoe", 511, 1, 0},
      {"olmoe", 2048, 1, 0},
      {"qwen1.5", 256, 1, 0},        /* (E = 60, k = 4, no renormalize: the pair -> gx at T = 257 under v45b; results
                                        run 66 failed its T = 512 under v43b with the order before v44) */
      {"qwen1.5", 383, 1, 0},
      {"qwen1.5", 4096, 1, 0},
      {"qwen1.5", 511, 1, 0},
      {"qwen1.5", 2048, 1, 0},
      {"dbrx", 256, 1, 0},           /* (E = 16: the pair -> gx under v45b; not gx under v45, E < 60) */
      {"dbrx", 4096, 1, 0},          /* (gx -> the paths after it under v45b) */
      {"gpt-oss-20b", 256, 1, 0},    /* (E = 32) */
      {"gpt-oss-20b", 4096, 1, 0},
      {"mixtral", 1023, 1, 0},       /* (E = 8 < 16: not gx under either rule) */
      /* rows without renormalize: route by gx against the gate kernel's rows of 32, 16 and 8 lanes per row (the
         denominator's order: v44, gate.cuh MR_SUM_OFF and mr_gate_packed_seg; before it, gx took such rows only where the gate's
         rows had its 16 lanes, and route's weights differed from the gate's by 1 ulp otherwise, session 38) */
      {"ds-softmax-raw", 255, 1, 0},  /* (gx from 256: the gate kernel a warp per row) */
      {"ds-softmax-raw", 1023, 1, 0}, /* (gx on both sides; the gate kernel a warp per row) */
      {"ds-softmax-raw", 2047, 1, 0}, /* (the gate kernel 32 -> 16 lanes per row) */
      {"ds-softmax-raw", 4095, 1, 0}, /* (gx on both sides; the gate kernel 16 -> 8 lanes per row) */
      {"ds-softmax-raw", 4096, 1, 0}, /* (gx -> large.cu's L1 by segments, 8 lanes) */
      {"qwen1.5", 1023, 1, 0},        /* (k = 4: the gate kernel 16 lanes from 1024) */
      {"k1-raw", 1023, 1, 0},         /* (k = 1: the gate kernel's rows 16 lanes from T = 1024; route with PDL off
                                         (test_cuda_nopdl) may take a warp-per-row form: the same words since v44) */
      {"ds-softmax", 16384, 1, 0},   /* the wide L1 by segments up to T*k = 131072 (v22), then the chain (-> 131080) */
      {"ds-softmax", 32768, 1, 0},   /* (its bound before v22: 262144 -> 262152, the chain on both sides now) */
      {"gpt-oss-120b", 16384, 1, 0}, /* (65536 -> 65540) */
      {"qwen3-next", 16384, 1, 0},   /* the large sort's rank launch: 1 CTA per SM up to T*k = 163840, then 2 */
      {"qwen3-next", 8191, 1, 0},    /* ... and from T*k = 81920 (81910 -> 81920) */
      {"ds-softmax", 2048, 0, 0},    /* with moe_buf, T*k 16384 -> 16392: the mid pair -> P (zero, the capped
                                        segment gate, P; design.md 29) */
      {"kimi-k2", 2048, 0, 0},       /* (fp32 keys: the mid pair -> gate, zero, P) */
      {"kimi-k2", 2925, 2, 0},       /* a 40 MB moe_buf (nobuf = 2: [T, 7168] bf16 uncapped, 41.93 -> 41.95 MB):
                                        the run-1 chain's 5/8 split there before P; now gate, zero, P */
      {"kimi-k2", 512, 0, 0},        /* sigmoid rows over four warps (gate.cu, wide): FULL, k <= 8, E <= 384 up to 512 */
      {"deepseek-r1", 256, 1, 0},    /* grouped selection: up to T = 256 */
      {"odd-257", 256, 1, 0},        /* sqrt_softplus, k = 9 > 8: up to T = 256 */
      {"ds-softmax", 1, 0, 0},       /* tiny.cu: the solo path at T = 1, the one-pass finish at T = 2 */
      {"qwen3-next", 1, 1, 0},       /* (E = 512, k = 10) */
      {"e1024", 1, 0, 0},            /* (E = 1024) */
      {"sig-e1024", 256, 0, 0},      /* wide, EPL = 32, E > 384: up to T = 256 */
      {"sig-e512", 256, 1, 0},       /* wide, E = 512 > 384: up to 256 (not 512) */
      {"sig-e256-g4", 256, 0, 0},    /* wide grouped, 32 lanes per group */
      {"ssp-e160-g5", 256, 1, 0},    /* wide grouped, five groups of 32 (E = 160: 2 elements per lane and warp) */
      {"kimi-k2", 1, 0, 0},          /* tiny.cu's wide form (sigmoid / sqrt_softplus rows): T = 1 */
      {"deepseek-r1", 1, 1, 0},      /* (grouped) */
      {"sig-e1024", 1, 1, 0},        /* (EPL = 32) */
      {"ssp-e160-g5", 1, 0, 0},      /* (grouped, five groups; fp16) */
      /* tiny.cu's cluster form (design.md 34, mr_tiny_cluster_auto; U = 32 >= T on both sides): */
      {"deepseek-r1", 16, 0, 32},    /* wide rows, E <= 256: C = 16 up to T = 16 (T*k 128), the pair at 17 */
      {"glm-4.5", 16, 1, 32},        /* (E = 160, no groups) */
      {"deepseek-r1", 8, 0, 32},     /* wide rows, E <= 256: C = 8 at T = 8, C = 16 (a non-portable cluster) from 9 */
      {"glm-4.5", 8, 1, 32},         /* (session 33, lab call 98) */
      {"kimi-k2", 8, 0, 32},         /* wide rows, E = 384: up to T = 8, the pair at 9 */
      {"sig-e1024", 6, 1, 32},       /* wide rows, E >= 1024: up to T = 6 */
      {"qwen3", 5, 0, 32},           /* 16-bit softmax rows, k >= 8, E <= 128: the one-CTA route at T = 5, C = 8 at 6 */
      {"olmoe", 5, 1, 32},           /* (E = 64) */
      {"ds-softmax", 5, 0, 32},      /* (E = 256: the one-CTA route on both sides) */
      {"qwen3-next", 5, 0, 32},      /* (E = 512: C = 8 from T = 6) */
      {"deepseek-v2-lite", 21, 0, 32}, /* fp32-key rows a warp per row, every T: up to T*k = 128 (126 -> 132) */
      /* the gate kernel's packed rows (v21, gate.cuh mr_seg_gate_form): the filter from T*k = 65536 */
      {"ds-softmax", 8191, 1, 0},    /* 8 lanes per row: form 3 (ranks) from T = 8192; route by gxs (below) too */
      {"gpt-oss-120b", 16383, 1, 0}, /* 4 lanes per row: form 2 (lists) from T = 16384 */
      /* gxs (v24, gx.cu mr_gxs_auto; no moe_buf), for 4 <= k <= 10 and E >= 128, where it fits in 48 KB of
         shared memory on 132 SMs; its place form (v24) where that fits too (gx.cu mr_gxs_plan). v30 (session 29):
         the sort entry point from T*k = 49152 for E <= 256, 16384 for 256 < E <= 384, 20480 above; route's sort
         after the gate kernel for rows not segmented from 16384 (30720 for E > 384), for segmented rows from 65536
         where E > 128, else 98304 (the pair at DeepSeek-R1 softmax T = 8191 / 8192 is the filter's above) */
      {"ds-softmax", 6143, 1, 0},    /* sort: 49144 -> 49152 */
      {"gpt-oss-120b", 12287, 1, 0}, /* sort: 49148 -> 49152 (k = 4) */
      {"qwen3-next", 2047, 1, 0},    /* sort: 20470 -> 20480 (E = 512, k = 10) */
      {"qwen3-next", 3071, 1, 0},    /* (route, rows not segmented, E = 512: v30's bound 30710 -> 30720; since
                                        session 30 the sort's, 20470 -> 20480 at T = 2047 / 2048 above) */
      {"gpt-oss-120b", 24575, 1, 0}, /* route: 98300 -> 98304 */
      {"kimi-k2", 2047, 1, 0},       /* route, rows not segmented (sigmoid with bias), and the sort (E = 384):
                                        16376 -> 16384 */
      {"deepseek-r1", 2047, 1, 0},   /* (grouped sigmoid rows; the sort: E = 256, the paths before gxs) */
      {"glm-4.5", 2047, 1, 0},       /* (E = 160) */
      {"odd-257", 1820, 1, 0},       /* (E = 257, k = 9: 16380 -> 16389; the sort too) */
      {"qwen3", 12287, 1, 0},        /* route, segmented rows, E = 128 k = 8: 98296 -> 98304 */
      /* route, segmented rows with E >= 128 past T*k = 16384 up to ctm's 24576 (ctm.cu mr_cuda_ctm_route_sort_takes,
         v30): large.cu's L1 by segments instead of the gate kernel + ctm's sort: GPT-OSS-120B T = 4096 / 4097 (gx ->
         the L1) is gx's pair above; the L1 on both sides of T = 6144 / 6145 */
      {"gpt-oss-120b", 6144, 1, 0},
      {"olmoe", 12287, 1, 0},        /* (E = 64 < 128: the paths before it on both sides) */
      {"qwen3-next", 29568, 1, 0},   /* E = 512: place with the entries in shared memory up to T = 29568, ... */
      {"qwen3-next", 42240, 1, 0},   /* ... place up to 42240 (the entries re-read from topk_ids), ... */
      {"qwen3-next", 50688, 1, 0},   /* ... gxs up to 50688, then the paths before it */
      {"kimi-k2", 59136, 1, 0},      /* E = 384: place up to T = 59136, ... */
      {"kimi-k2", 76032, 1, 0},      /* ... gxs up to 76032 */
      {"ds-softmax", 59136, 1, 0},   /* E = 256: place with the entries kept up to T = 59136, ... */
      {"ds-softmax", 88704, 1, 0},   /* ... place up to 88704, ... */
      {"ds-softmax", 118272, 1, 0},  /* ... gxs up to 118272 */
      /* with a moe_buf (v25, knob clear_tail, gx.cu MR_CLEAR_TAIL_MIN_N): route's clear by a launch of its own
         after gxs from T*k = 262144 (where the call without the moe_buf takes gx or gxs: entry.cu
         mr_clear_tail_takes); the random configurations draw no knobs, dev/cuda_check draws clear_tail */
      {"ds-softmax", 32767, 2, 0},   /* 262136 -> 262144 */
      {"gpt-oss-120b", 65535, 2, 0}, /* (k = 4) */
      {"qwen3-next", 26214, 2, 0},   /* (k = 10: 262140 -> 262150) */
      {"qwen3-next", 50688, 2, 0},   /* gxs up to 50688 (E = 512), then the paths before it */
      /* route with a moe_buf by P, rows the gate kernel segments (v27, large.cu mr_l_p_seg_chain): the capped gate
         beside P's clear below the bound, the chain's order (gate kernel, zeroing launch, P) from it */
      {"ds-softmax", 8191, 0, 0},    /* E > 128: 65528 -> 65536 */
      {"gpt-oss-120b", 32767, 0, 0}, /* E = 128: 131068 -> 131072 */
      {"qwen3", 16383, 0, 0},        /* (E = 128, k = 8: 131064 -> 131072) */
      /* the warp-per-row gate kernel's fp32-key rows by the filter (v31, gate.cu mr_gate_filt_on, k <= 16): sigmoid
         rows without groups on approximate keys first from T = 1024 (v31b), with groups in whole lanes from 4096 (v31c);
         other rows from 4096, or 1024 where 256 < E <= 512 (the gate case of each; kimi-k2 1023 is above) */
      {"deepseek-r1", 4095, 0, 0},   /* grouped sigmoid, 8 groups in whole lanes: approximate keys from 4096 */
      {"glm-4.5", 1023, 1, 0},       /* sigmoid, E = 160, EPL = 8: approximate keys */
      {"sig-e1024", 1023, 1, 0},     /* sigmoid, EPL = 32: approximate keys */
      {"sig-e256-g4", 4095, 0, 0},   /* grouped sigmoid, 8 lanes per group: approximate keys from 4096 */
      {"ssp-e160-g5", 4095, 0, 0},   /* grouped through shared memory (five groups), sqrt_softplus, fp16: exact keys */
      {"odd-257", 1023, 1, 0},       /* sqrt_softplus, k = 9, E = 257 (EPL = 16): exact keys from 1024 */
      /* route with a moe_buf at gx's bounds (gx takes the call without it; v32's head clear there measured slower and
         was removed, perf-log v32): the paths with a moe_buf on both sides, but where v47 takes it (below) */
      {"ds-softmax", 1023, 2, 0},    /* moe_buf [T, model_dim]; since v47 (session 42, gx.cu mr_cuda_gx_clear_mode: k >= 8,
                                        E >= 128, T >= 1024) gx with the clear inside its launch from 1024 */
      {"ds-softmax", 2032, 2, 0},    /* v47 to 2032 (127 CTAs of 16 rows on 132 SMs), not from 2033 (128: gx.cu
                                        MR_GX_CLEAR_FULL_G, E > 128) ... */
      {"ds-softmax", 2048, 2, 0},    /* ... to 2048 (T*k <= 16384: mid.cu's sort), again from 2049 (session 43) */
      {"ds-softmax", 2112, 2, 0},    /* (v47 on both sides since session 43: 16 and 32 rows per CTA) */
      {"ds-softmax", 4096, 2, 0},    /* v47 up to gx's 4096, the paths with a moe_buf from 4097 */
      {"qwen3", 1023, 2, 0},         /* v47 at E = 128, k = 8 from 1024 */
      {"gpt-oss-120b", 4096, 0, 0},  /* (the engine's moe_buf; 4097: the paths with a moe_buf) */
      {"sm-e160", 2047, 0, 0},       /* (fp16, E = 160, k = 6: gx on both sides) */
      /* sigmoid rows without groups by segments of 16 lanes (v33, gate.cu mr_gate_sigseg_on): 144 < E <= 384 from
         T = 16384 since v33b, E > 256 from 8192 (route: the gate kernel, then gxs) */
      {"kimi-k2", 8191, 1, 0},       /* 24 elements per segment lane, E > 256: from T = 8192 (v33b) */
      {"kimi-k2", 16383, 1, 0},      /* (segments on both sides since v33b) */
      {"glm-4.5", 16383, 1, 0},      /* E = 160: 12 per segment lane (v33b) */
      {"sig-e256", 16383, 1, 0},     /* E = 256, fp32 logits: 16 per segment lane (v33b) */
      {"sig-e160-h", 16383, 1, 0},   /* E = 160, fp16 logits: 12 per segment lane in 8-byte vectors (v33b) */
      /* grouped sigmoid rows by segments (v35, session 33): 128 <= E <= 256, k <= 8, groups of whole segment lanes,
         from T = 16384 (deepseek-r1's pair at 16383 / 16384 is above: route without moe_buf) */
      {"sig-e256-g4", 16383, 1, 0},  /* (four groups of 64: four segment lanes per group) */
      {"sig-e128-g8", 16383, 1, 0},  /* (E = 128: groups of 16 = two segment lanes of 8) */
      {"sig-e160-g10", 16383, 1, 0}, /* (E = 160, fp16, groups by their maximum: two segment lanes each) */
      {"deepseek-r1", 16383, 0, 0},  /* (with a moe_buf: the gate kernel clears it, no segment form on either side) */
      /* 16-bit softmax rows with 16 elements per lane by the filter (v34, gate.cu mr_gate_filt_packed_on): from
         T = 1024 in the gate kernel (the chain; route with a moe_buf) */
      {"qwen3-next", 1023, 1, 0},
      {"qwen3-next", 1023, 0, 0},
  };
  uint64_t idx = 0;
  for (int i = 0; i < NUM(C); i++)
    for (int side = 0; side < 2; side++) {
      const int64_t T = C[i].T + side;
      if (too_large(T)) continue;
      tcase tc;
      const engine_shape* sh = shape_in(THRESHOLD_SHAPES, NUM(THRESHOLD_SHAPES), C[i].shape);
      engine_config(&tc, sh, T, i, i % 3 == 2 ? 1 : -1, case_seed(12, idx++));
      if (C[i].nobuf == 1) tc.p.moe_buf_bytes = 0;
      if (C[i].nobuf == 2) tc.p.moe_buf_bytes = (size_t)T * (size_t)sh->model_dim * 2;
      if (C[i].unit > 0) tc.p.unit_size = C[i].unit;
      run_case_timed(&tc, "thresholds", 0);
    }
}

static void group_large(void) {
  int ns = NUM(ENGINE_SHAPES);
  uint64_t idx = 0;
  for (int s = 0; s < ns; s++)
    for (int ti = 0; ti < NUM(LARGE_T); ti++) {
      tcase tc;
      int v = s + ti;
      engine_config(&tc, &ENGINE_SHAPES[s], LARGE_T[ti], v, (v % (NUM(MASK_RATIOS) + 1)) - 1, case_seed(4, idx++));
      tc.p.logits_dtype = MOEROUTE_DTYPE_BF16; /* keep host and device memory moderate */
      tc.repeat = ti == 0 && s % 4 == 0;
      run_case_timed(&tc, "large", 0);
    }
  /* a hot expert at the largest T: one expert holds every token */
  tcase tc;
  engine_config(&tc, shape_by_name("deepseek-r1"), LARGE_T[NUM(LARGE_T) - 1], 0, -1, case_seed(4, idx++));
  tc.lk = LG_HOT;
  tc.hot_expert = 3;
  tc.p.logits_dtype = MOEROUTE_DTYPE_BF16;
  run_case_timed(&tc, "large", 0);
}

static void special_base(tcase* tc, int32_t E, int32_t k, int64_t T, moeroute_score sc, moeroute_dtype d,
                         logits_kind lk, uint64_t seed) {
  tcase_init(tc);
  tc->seed = seed;
  tc->p.num_experts = E;
  tc->p.top_k = k;
  tc->p.num_tokens = T;
  tc->p.score = sc;
  tc->p.logits_dtype = d;
  tc->p.unit_size = 32;
  tc->lk = lk;
  tc->repeat = 1;
}

static void group_special(void) {
  uint64_t idx = 0;
  static const struct { int32_t E, k; } shapes[] = {{8, 2}, {64, 6}, {256, 8}, {384, 8}, {1024, 32}};
  static const int64_t Ts[] = {1, 16, 300};
  int q = g_opt.quick;
  /* ties, NaN/inf, extremes over every score, dtype, with and without bias / groups */
  static const logits_kind kinds[] = {LG_TIES, LG_NONFINITE, LG_EXTREME, LG_GAUSS};
  for (int ki = 0; ki < NUM(kinds); ki++)
    for (int si = 0; si < NUM(shapes); si++)
      for (int sc = 0; sc < 3; sc++)
        for (int ti = 0; ti < NUM(Ts); ti++) {
          if (q && (si + sc + ti) % 5) continue;
          tcase tc;
          moeroute_dtype d = kinds[ki] == LG_TIES ? MOEROUTE_DTYPE_BF16 : (moeroute_dtype)((si + ti) % 3);
          special_base(&tc, shapes[si].E, shapes[si].k, Ts[ti], (moeroute_score)sc, d, kinds[ki], case_seed(5, idx++));
          tc.has_bias = (si + ti) % 2;
          tc.bias_ties = kinds[ki] == LG_TIES;
          tc.p.renormalize = (sc + ti) % 2;
          if (shapes[si].E >= 64 && ti == 1) {
            tc.p.num_groups = 8;
            tc.p.topk_groups = shapes[si].k > 8 ? 8 : 4;
            tc.p.group_score = sc == 1 ? MOEROUTE_GROUP_SCORE_MAX : MOEROUTE_GROUP_SCORE_TOP2_SUM;
          }
          if (ti == 2) tc.p.logits_row_stride = shapes[si].E + 3;
          tc.p.moe_buf_bytes = (size_t)Ts[ti] * 100 + 3;
          run_case_timed(&tc, "special", 0);
        }
  /* the segment gate kernel (16-bit softmax, no bias or groups, E <= 256, k <= 8,
   * from T = 1024 (k <= 4) or 2048; gate.cu) and the mid sort (T*k up to 16384, mid.cu) on
   * ties, NaN/inf and extremes, fp16 and bf16, with and without renormalize */
  static const struct { int32_t E, k; } seg[] = {{8, 2}, {60, 4}, {128, 4}, {200, 7}, {256, 8}, {160, 4}, {256, 2}, {128, 8}};
  /* LG_UNIFORM and LG_GAUSS: rows where gate.cuh's filter (v20) keeps a few candidates per lane
   * (bf16's exact ties among them); LG_TIES: many candidates, the network's fallback */
  static const logits_kind seg_kinds[] = {LG_TIES, LG_NONFINITE, LG_EXTREME, LG_UNIFORM, LG_GAUSS};
  for (int ki = 0; ki < NUM(seg_kinds); ki++)
    for (int si = 0; si < NUM(seg); si++)
      for (int v = 0; v < 4; v++) {
        if (q && (ki + si + v) % 3) continue;
        tcase tc;
        special_base(&tc, seg[si].E, seg[si].k, v == 3 ? 4100 : v == 2 ? 8192 : 2048, MOEROUTE_SCORE_SOFTMAX,
                     v % 2 ? MOEROUTE_DTYPE_FP16 : MOEROUTE_DTYPE_BF16, seg_kinds[ki], case_seed(8, idx++));
        tc.p.renormalize = v < 2;
        tc.p.scale = v == 2 ? 2.5f : 1.0f;
        if (v == 3 || (v == 1 && si % 2)) tc.p.logits_row_stride = seg[si].E + 5; /* unaligned rows: scalar loads */
        tc.p.moe_buf_bytes = (size_t)tc.p.num_tokens * 64 + 5;
        run_case_timed(&tc, "special", 0);
      }
  /* the gate kernel's filter forms at large T on ties and NaN / inf rows (session 32's review): 16-bit softmax rows
   * with 16 elements per lane by the packed filter (v34: 256 < E <= 512 from T = 1024; k = 10, 2, 16; its merge
   * fallback where more than 32 candidates pass), and sigmoid rows by segments of 16 lanes (v33b: E = 160 with 12
   * elements per segment lane, 256 with 16, 384 with 24; their warp-per-row fallback), bf16 and fp16, some rows at an
   * unaligned stride (scalar loads) */
  static const struct {
    int32_t E, k;
    moeroute_score sc;
    int bias;
    int64_t T;
  } flt[] = {{512, 10, MOEROUTE_SCORE_SOFTMAX, 0, 1024}, {512, 2, MOEROUTE_SCORE_SOFTMAX, 0, 1024},
             {300, 16, MOEROUTE_SCORE_SOFTMAX, 0, 2048}, {160, 8, MOEROUTE_SCORE_SIGMOID, 1, 16384},
             {256, 8, MOEROUTE_SCORE_SIGMOID, 1, 16384}, {384, 8, MOEROUTE_SCORE_SIGMOID, 1, 8192}};
  static const logits_kind flt_kinds[] = {LG_TIES, LG_NONFINITE};
  for (int ki = 0; ki < NUM(flt_kinds); ki++)
    for (int fi = 0; fi < NUM(flt); fi++)
      for (int v = 0; v < 2; v++) {
        if (q && (ki + fi + v) % 3) continue;
        tcase tc;
        special_base(&tc, flt[fi].E, flt[fi].k, flt[fi].T, flt[fi].sc, v ? MOEROUTE_DTYPE_FP16 : MOEROUTE_DTYPE_BF16,
                     flt_kinds[ki], case_seed(13, idx++));
        tc.has_bias = flt[fi].bias;
        tc.bias_ties = flt_kinds[ki] == LG_TIES;
        tc.p.renormalize = flt[fi].sc == MOEROUTE_SCORE_SIGMOID || (fi + v) % 2;
        if (v == 1 && fi % 2) tc.p.logits_row_stride = flt[fi].E + 3;
        tc.p.moe_buf_bytes = (size_t)flt[fi].T * 64 + 5;
        run_case_timed(&tc, "special", 0);
      }
  /* a hot expert every token picks, at decode and prefill sizes, several U */
  static const int64_t hotT[] = {1, 16, 2048, 16384};
  static const int32_t hotU[] = {32, 1, 1024, 128};
  static const struct {
    int32_t E, k;
    moeroute_score sc;
    int bias;
  } hs[] = {{256, 8, MOEROUTE_SCORE_SOFTMAX, 0},
            {128, 4, MOEROUTE_SCORE_SOFTMAX, 0},
            {384, 8, MOEROUTE_SCORE_SIGMOID, 1},
            {1024, 32, MOEROUTE_SCORE_SQRT_SOFTPLUS, 0}};
  for (int a = 0; a < NUM(hs); a++)
    for (int b = 0; b < NUM(hotT); b++) {
      if (q && (b == 3 || (a + b) % 2)) continue;
      if (hotT[b] == 16384 && a % 2) continue;
      tcase tc;
      special_base(&tc, hs[a].E, hs[a].k, hotT[b], hs[a].sc, MOEROUTE_DTYPE_BF16, LG_HOT, case_seed(6, idx++));
      tc.has_bias = hs[a].bias;
      tc.hot_expert = (a * 37 + 5) % hs[a].E;
      tc.p.unit_size = hotU[(a + b) % NUM(hotU)];
      tc.p.moe_buf_bytes = (size_t)hotT[b] * 256;
      run_case_timed(&tc, "special", 0);
    }
  /* every expert masked; a single expert enabled; mask values 2 on the GPU (non-zero = enabled) */
  for (int v = 0; v < 6; v++) {
    if (q && v % 2) continue;
    tcase tc;
    special_base(&tc, v < 3 ? 256 : 60, v < 3 ? 8 : 4,
                 v % 3 == 0   ? 1
                 : v % 3 == 1 ? 64
                              : 2048,
                 MOEROUTE_SCORE_SOFTMAX, MOEROUTE_DTYPE_BF16, LG_DISTINCT, case_seed(7, idx++));
    tc.has_mask = 1;
    tc.mask_ratio = 1.0;
    tc.p.moe_buf_bytes = 1001;
    run_case_timed(&tc, "special", 0);
    tc.mask_ratio = 1.0 - 1.0 / tc.p.num_experts; /* one expert left */
    tc.seed = case_seed(7, idx++);
    run_case_timed(&tc, "special", 0);
    tc.mask_ratio = 0.5;
    tc.mask_gpu_value = 2;
    tc.seed = case_seed(7, idx++);
    run_case_timed(&tc, "special", 0);
  }
  /* T = 1, one launch of tiny.cu (design.md 25): without a mask no sort at all (slot j
   * is padding iff j % U != 0), with a mask the one-warp sort from registers; 16-bit
   * softmax rows of every E, and the wide form of sigmoid / sqrt_softplus rows (E > 128,
   * k <= 16, grouped when each group is whole lanes). Odd U (the reciprocal division),
   * U = 1 (no padding) and U = 1024, each layout alone and both, ties / NaN / inf. */
  {
    static const struct {
      int32_t E, k;
      moeroute_score sc;
      int bias, G, tg;
    } t1[] = {{8, 2, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},     {60, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},
              {128, 32, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},  {256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},
              {512, 10, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},  {513, 9, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1},
              {1024, 32, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1}, {160, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1},
              {256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4},   {384, 16, MOEROUTE_SCORE_SIGMOID, 1, 1, 1},
              {512, 1, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 1, 1}, {1024, 4, MOEROUTE_SCORE_SIGMOID, 0, 32, 8},
              {160, 6, MOEROUTE_SCORE_SQRT_SOFTPLUS, 1, 5, 3}};
    static const int32_t t1U[] = {32, 3, 1, 1024, 64};
    static const logits_kind t1K[] = {LG_DISTINCT, LG_TIES, LG_NONFINITE};
    for (int i = 0; i < NUM(t1); i++)
      for (int v = 0; v < 6; v++) {
        if (q && (i + v) % 3) continue;
        tcase tc;
        const moeroute_dtype d = t1[i].sc == MOEROUTE_SCORE_SOFTMAX ? (v % 2 ? MOEROUTE_DTYPE_FP16 : MOEROUTE_DTYPE_BF16)
                                                                   : (moeroute_dtype)(v % 3);
        special_base(&tc, t1[i].E, t1[i].k, 1, t1[i].sc, d, t1K[(i + v) % NUM(t1K)], case_seed(13, idx++));
        tc.has_bias = t1[i].bias;
        tc.p.num_groups = t1[i].G;
        tc.p.topk_groups = t1[i].tg;
        tc.p.unit_size = t1U[(i + v) % NUM(t1U)];
        tc.p.layouts = v % 3 == 0 ? MOEROUTE_LAYOUT_BOTH : v % 3 == 1 ? MOEROUTE_LAYOUT_CK : MOEROUTE_LAYOUT_VLLM;
        tc.p.renormalize = v % 2 == 0;
        if (v >= 4) { /* with a mask: the sort from registers */
          tc.has_mask = 1;
          tc.mask_ratio = v == 4 ? 0.3 : 0.7;
        }
        tc.p.moe_buf_bytes = v == 3 ? 0 : (size_t)(7168 * 2 + v);
        run_case_timed(&tc, "special", 0);
      }
  }
  /* boundaries: T = 0 (logits NULL), E = 1, k = E = 32, U = 1, U = 1024 with E = 1024, k = 32 */
  {
    static const struct {
      int32_t E, k, U;
      int64_t T;
      int null_logits;
    } bd[] = {{1, 1, 1, 5, 0},    {1, 1, 1024, 0, 1}, {32, 32, 1, 17, 0},     {32, 32, 32, 1, 0},
              {256, 8, 32, 0, 1}, {256, 8, 32, 0, 0}, {1024, 32, 1024, 3, 0}, {1024, 32, 1, 64, 0},
              {2, 2, 3, 1000, 0}, {513, 32, 7, 33, 0}};
    for (int i = 0; i < NUM(bd); i++) {
      tcase tc;
      special_base(&tc, bd[i].E, bd[i].k, bd[i].T, (moeroute_score)(i % 3), (moeroute_dtype)(i % 3), LG_DISTINCT,
                   case_seed(8, idx++));
      tc.p.unit_size = bd[i].U;
      tc.logits_null = bd[i].null_logits;
      tc.p.moe_buf_bytes = (size_t)(i * 977 % 5000) + 1;
      run_case_timed(&tc, "special", 0);
    }
  }
}

static void group_sort_ids(void) {
  int n = g_opt.quick ? 16 : 200;
  for (int i = 0; i < n; i++) {
    rng r;
    uint64_t sd = case_seed(9, (uint64_t)i);
    rng_seed(&r, sd);
    tcase tc;
    tcase_init(&tc);
    tc.seed = splitmix64(&sd);
    static const int32_t Es[] = {1, 3, 8, 60, 128, 256, 257, 384, 512, 1024};
    tc.p.num_experts = Es[rng_below(&r, NUM(Es))];
    int32_t kmax = tc.p.num_experts < 32 ? tc.p.num_experts : 32;
    tc.p.top_k = 1 + (int32_t)rng_below(&r, (uint64_t)kmax);
    tc.p.unit_size = (int32_t)(1 + rng_below(&r, 4) * 40);
    tc.p.num_tokens = (int64_t)rng_below(&r, g_opt.quick ? 200 : (i % 10 == 0 ? 20000 : 600));
    uint64_t lr = rng_below(&r, 3);
    tc.p.layouts = lr == 0 ? MOEROUTE_LAYOUT_CK : lr == 1 ? MOEROUTE_LAYOUT_VLLM : MOEROUTE_LAYOUT_BOTH;
    tc.p.moe_buf_bytes = rng_chance(&r, 0.5) ? 1 + (size_t)rng_below(&r, 100000) : 0;
    tc.has_mask = rng_chance(&r, 0.4);
    tc.mask_ratio = rng_unit(&r);
    tc.mask_gpu_value = rng_chance(&r, 0.2) ? 2 : 1;
    tc.sorted_weights = rng_chance(&r, 0.8);
    tc.sort_null_weights = !tc.sorted_weights && rng_chance(&r, 0.5);
    tc.legacy_stream = rng_chance(&r, 0.2) ? 1 + (int)rng_below(&r, 2) : 0;
    tc.repeat = rng_chance(&r, 0.2);
    int flavour = i % 13 == 5 ? 1 : 0;
    if (too_large(tc.p.num_tokens)) continue;
    char d[560];
    describe(&tc, d, sizeof d);
    case_begin("sort_ids", "%s ids=%s", d, flavour ? "all-same" : "arbitrary");
    double t0 = now_s();
    run_sort_ids_case(&tc, flavour);
    g_case.group->seconds += now_s() - t0;
    case_end();
    dev_reset();
  }
}

static void group_misaligned(void) {
  static const struct {
    int32_t E, k;
    int64_t T;
    moeroute_dtype d;
  } ms[] = {{256, 8, 1, MOEROUTE_DTYPE_BF16},
            {256, 8, 16, MOEROUTE_DTYPE_FP16},
            {128, 4, 300, MOEROUTE_DTYPE_FP32},
            {60, 4, 2048, MOEROUTE_DTYPE_BF16},
            {384, 8, 7, MOEROUTE_DTYPE_BF16}};
  for (int i = 0; i < NUM(ms); i++) {
    tcase tc;
    special_base(&tc, ms[i].E, ms[i].k, ms[i].T, (moeroute_score)(i % 3), ms[i].d, LG_DISTINCT,
                 case_seed(10, (uint64_t)i));
    tc.logits_offset = 1 + i % 3;
    if (i % 2) tc.p.logits_row_stride = ms[i].E + 1; /* odd stride: every row misaligned differently */
    tc.p.moe_buf_bytes = 333;
    run_case_timed(&tc, "misaligned", 0);
  }
}

/* ======================================================================== */
/* Non-finite bias (design.md 7): valid ids, no reference selection          */
/* ======================================================================== */

/* The CPU backend refuses a bias with NaN or +-inf entries; on CUDA such a bias
 * selects unspecified experts, but every id must lie in [0, E), the k ids of a row
 * must be distinct, and the sorted layouts must be the CPU sort of that top-k, bit
 * for bit (nothing else about the selection or the weights is judged). gate.cuh's
 * filter on approximate keys (mr_sig_filter_row: the gate kernel's sigmoid rows with
 * a bias from T = 1024, or 4096 with groups; mr_sig_seg_row: its segment form, route
 * without a moe_buf, E > 256 from T = 8192, else from 16384) once read unwritten
 * shared memory for such a bias (eps and the bound NaN, fewer than k candidates);
 * it now takes the exact keys then. */
enum { NB_ONE_NAN, NB_ALL_NAN, NB_ONE_INF, NB_K_INF, NB_MIX, NB_COUNT };
static const char* const NB_NAME[NB_COUNT] = {"one-nan", "all-nan", "one-+inf", "k-+inf", "mix-10%"};
/* NaN bit patterns: quiet, negative quiet, signalling, all ones */
static const uint32_t NB_NAN_BITS[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu};

/* Overwrite entries of the finite bias b[0..E) by pattern pat (bit patterns stored with
 * memcpy: a signalling NaN stays one). Returns how many entries it made non-finite;
 * *first: the first expert it chose. */
static int32_t nb_apply(float* b, int32_t E, int32_t k, int pat, rng* r, int32_t* first) {
  int32_t n = pat == NB_ALL_NAN ? E : pat == NB_K_INF ? k : 1;
  if (pat == NB_MIX) { /* ~10 %, at least one NaN, one +inf and one -inf */
    n = (int32_t)llround(0.1 * (double)E);
    if (n < 3) n = 3;
    if (n > E) n = E;
  }
  int32_t* perm = (int32_t*)xmalloc((size_t)E * 4);
  for (int32_t i = 0; i < E; i++) perm[i] = i;
  for (int32_t i = 0; i < n; i++) { /* n distinct experts at random (partial Fisher-Yates) */
    int32_t j = i + (int32_t)rng_below(r, (uint64_t)(E - i));
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int32_t i = 0; i < n; i++) {
    uint32_t bits;
    if (pat == NB_ONE_INF || pat == NB_K_INF || (pat == NB_MIX && i % 3 == 1))
      bits = 0x7f800000u; /* +inf */
    else if (pat == NB_MIX && i % 3 == 2)
      bits = 0xff800000u; /* -inf */
    else
      bits = NB_NAN_BITS[rng_below(r, NUM(NB_NAN_BITS))];
    memcpy(b + perm[i], &bits, 4);
  }
  *first = perm[0];
  free(perm);
  return n;
}

/* Every id of a top-k of T rows in [0, E), the k ids of each row distinct. */
static void nb_check_ids(const int32_t* ids, int64_t T, int32_t k, int32_t E, const char* who) {
  unsigned char* seen = (unsigned char*)xmalloc((size_t)E);
  memset(seen, 0, (size_t)E);
  int64_t bad_rows = 0;
  for (int64_t t = 0; t < T; t++) {
    const int32_t* row = ids + t * k;
    int bad = 0;
    for (int32_t j = 0; j < k; j++) {
      const int32_t id = row[j];
      if (id < 0 || id >= E) {
        if (!bad && bad_rows < 4)
          failf("%s: token %" PRId64 " slot %d: id %d (0x%08x) outside [0, %d)", who, t, j, id, (uint32_t)id, E);
        bad = 1;
      } else if (seen[id]) {
        if (!bad && bad_rows < 4) failf("%s: token %" PRId64 " slot %d: expert %d repeated in the row", who, t, j, id);
        bad = 1;
      } else {
        seen[id] = 1;
      }
    }
    for (int32_t j = 0; j < k; j++)
      if (row[j] >= 0 && row[j] < E) seen[row[j]] = 0;
    bad_rows += bad;
  }
  if (bad_rows)
    failf("%s: %" PRId64 " of %" PRId64 " rows hold an id outside [0, %d) or a repeated one", who, bad_rows, T, E);
  free(seen);
}

/* The device copy of an input (its margins too in arena mode) still equals the host's. */
static void nb_check_input(const buf* b, cudaStream_t st, const char* what) {
  if (!b->used || !b->dbase) return;
  buf chk = *b;
  chk.hbase = (unsigned char*)xmalloc(chk.span);
  memcpy(chk.hbase, b->hbase, chk.span);
  buf_download(&chk, st);
  CK(cudaStreamSynchronize(st));
  if (memcmp(chk.hbase, b->hbase, chk.span) != 0) failf("%s modified by the call", what);
  free(chk.hbase);
}

/* One route call on CUDA with bias pattern pat; both layouts, a moe_buf when with_moe_buf. */
static void nonfinite_bias_case(const engine_shape* sh, int64_t T, int pat, int variant, int with_moe_buf,
                                uint64_t seed) {
  if (too_large(T)) return;
  double t0 = now_s();
  tcase tc;
  engine_config(&tc, sh, T, variant, -1, seed);
  moeroute_params* p = &tc.p;
  p->layouts = MOEROUTE_LAYOUT_BOTH;
  if (!with_moe_buf) p->moe_buf_bytes = 0;
  tc.has_bias = 1;
  tc.repeat = 0;
  const int32_t E = p->num_experts, k = p->top_k;
  rng r;
  rng_seed(&r, tc.seed);
  inputs in;
  inputs_make(&in, &tc, &r); /* a finite bias, in in.bias_h and in the device buffer's mirror */
  /* the pattern into the device's bias; in the self-test (whose "CUDA" route is the CPU's,
   * which refuses it) into the unused host copy only: the checks below still run there */
  int32_t first = 0;
  const int32_t nnf = nb_apply(TEST_SELFTEST ? in.bias_h : (float*)buf_h(&in.bias), E, k, pat, &r, &first);
  char d[560];
  describe(&tc, d, sizeof d);
  case_begin("nonfinite_bias", "%s pattern=%s (%d non-finite, expert %d first)%s", d, NB_NAME[pat], nnf, first,
             TEST_SELFTEST ? " (self-test: finite bias on the device)" : "");
  cudaStream_t st = g_opt.stream;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  moeroute_status s = moeroute_get_sizes(p, &sz);
  if (s != MOEROUTE_OK) {
    failf("moeroute_get_sizes: %s: %s", moeroute_status_string(s), moeroute_last_error());
  } else {
    buf_upload(&in.logits, st);
    buf_upload(&in.bias, st);
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    bu.logits = (const unsigned char*)buf_d(&in.logits) + in.pre * dtype_size(p->logits_dtype);
    bu.bias = (const float*)buf_d(&in.bias);
    outset o;
    want wa = {1, 1, 1, 1, 1};
    outset_make(&o, 1, p, &sz, wa, cuda_ws(MOEROUTE_OP_ROUTE, p));
    outset_poison(&o, st);
    outset_bind(&o, &bu);
    const int ok = cuda_call(MOEROUTE_OP_ROUTE, p, &bu, st, "cuda route"); /* fails the case unless MOEROUTE_OK */
    if (ok) {
      outset_download(&o, st);
      CK(cudaStreamSynchronize(st));
    }
    outset_release_ws(&o);
    if (ok) {
      nb_check_ids(o_i32(&o, B_TOPK_IDS), T, k, E, "cuda route");
      outset ref; /* the CPU sort of the route's own top-k (sort does not read the bias) */
      if (cpu_sort_ref(&tc, &in, &sz, o_i32(&o, B_TOPK_IDS), o_f32(&o, B_TOPK_W), &ref)) {
        const int64_t total = outset_total(&ref, p);
        outset_check_memory(&o, RUN_ROUTE, p, total, "cuda route");
        compare_sorted(&o, &ref, p, total, "cuda route vs cpu sort of its own top-k");
        outset_free(&ref);
      }
      nb_check_input(&in.logits, st, "logits (or the +inf guard around them)");
      nb_check_input(&in.bias, st, "bias");
    }
    outset_free(&o);
  }
  inputs_free(&in);
  g_case.group->seconds += now_s() - t0;
  case_end();
  dev_reset();
}

/* The sigmoid-with-bias engine shapes (and THRESHOLD_SHAPES' sig-e256, MiniMax-M2's sizes,
 * and two 16-bit ones) x T x the five patterns, route with a moe_buf; then route without one
 * where the gate kernel takes its segment form (Kimi-K2 from T = 8192; with --large,
 * T = 16384 for every shape, with and without a moe_buf). */
static void group_nonfinite_bias(void) {
  /* no groups: Kimi-K2 (E = 384), GLM-4.5 (160), sig-e256 (MiniMax-M2's), E = 1024 bf16; grouped: DeepSeek-R1 (8 / 4),
   * E = 128 bf16 (8 / 4) */
  static const char* const SH[] = {"kimi-k2", "deepseek-r1", "glm-4.5", "sig-e256", "sig-e1024", "sig-e128-g8"};
  /* decode (tiny.cu, the cluster forms, the pair), the filter without groups (1024) and with (4096) */
  static const int64_t NB_T[] = {1, 2, 8, 16, 1024, 4096};
  static const int64_t NB_QUICK_T[] = {1, 16, 4096};
  const int64_t* ts = g_opt.quick ? NB_QUICK_T : NB_T;
  const int nt = g_opt.quick ? NUM(NB_QUICK_T) : NUM(NB_T);
  uint64_t idx = 0;
  for (int si = 0; si < NUM(SH); si++)
    for (int ti = 0; ti < nt; ti++)
      for (int pat = 0; pat < NB_COUNT; pat++)
        nonfinite_bias_case(shape_in(THRESHOLD_SHAPES, NUM(THRESHOLD_SHAPES), SH[si]), ts[ti], pat, si + ti + pat, 1,
                            case_seed(14, idx++));
  /* mr_sig_seg_row: route without a moe_buf, Kimi-K2's rows by segments from T = 8192 */
  if (!g_opt.quick)
    for (int pat = 0; pat < NB_COUNT; pat++)
      nonfinite_bias_case(shape_by_name("kimi-k2"), 8192, pat, pat, 0, case_seed(14, idx++));
  if (g_opt.large)
    for (int si = 0; si < NUM(SH); si++)
      for (int pat = 0; pat < NB_COUNT; pat++)
        for (int mb = 1; mb >= 0; mb--)
          nonfinite_bias_case(shape_in(THRESHOLD_SHAPES, NUM(THRESHOLD_SHAPES), SH[si]), 16384, pat, si + pat + mb, mb,
                              case_seed(14, idx++));
}

/* ======================================================================== */
/* Graph capture                                                             */
/* ======================================================================== */

static void graph_case(const engine_shape* sh, int64_t T, int32_t U, int use_mask, uint64_t seed) {
  tcase tc;
  engine_config(&tc, sh, T, 0, use_mask ? 2 : -1, seed);
  tc.p.unit_size = U;
  tc.lk = LG_DISTINCT;
  moeroute_params* p = &tc.p;
  if (too_large(T)) return;
  char d[560];
  describe(&tc, d, sizeof d);
  case_begin("graph", "%s", d);
  double t0 = now_s();
  cudaStream_t st = g_opt.stream;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(p, &sz) != MOEROUTE_OK) {
    failf("get_sizes: %s", moeroute_last_error());
    goto done;
  }
  int ck = (p->layouts & MOEROUTE_LAYOUT_CK) != 0, vl = (p->layouts & MOEROUTE_LAYOUT_VLLM) != 0;
  rng r;
  rng_seed(&r, seed);
  inputs in;
  inputs_make(&in, &tc, &r); /* fixes logits, bias, mask buffers on the device */
  buf_upload(&in.logits, st);
  buf_upload(&in.bias, st);
  buf_upload(&in.mask_gpu, st);
  /* route graph, and a gate -> sort chain graph */
  outset ro, go, so;
  want wr = {1, ck, 1, vl, 1}, wg = {1, 0, 0, 0, 0}, ws = {0, ck, 1, vl, 1};
  outset_make(&ro, 1, p, &sz, wr, cuda_ws(MOEROUTE_OP_ROUTE, p));
  outset_make(&go, 1, p, &sz, wg, cuda_ws(MOEROUTE_OP_GATE, p));
  outset_make(&so, 1, p, &sz, ws, cuda_ws(MOEROUTE_OP_SORT, p));
  if (g_opt.ws_uninit) { /* graphs need fixed pointers: allocate the fresh workspaces once */
    outset_poison(&ro, st);
    outset_poison(&go, st);
    outset_poison(&so, st);
  }
  CK(cudaStreamSynchronize(st));
  moeroute_buffers br, bg, bs;
  moeroute_buffers_init(&br);
  br.logits = buf_d(&in.logits);
  br.bias = (const float*)buf_d(&in.bias);
  br.expert_mask = (const int32_t*)buf_d(&in.mask_gpu);
  bg = br;
  bs = br;
  bs.logits = NULL;
  outset_bind(&ro, &br);
  outset_bind(&go, &bg);
  outset_bind(&so, &bs);
  bs.topk_ids = bg.topk_ids;
  bs.topk_weights = bg.topk_weights;

  cudaGraph_t graph[2] = {NULL, NULL};
  cudaGraphExec_t exec[2] = {NULL, NULL};
  for (int gi = 0; gi < 2; gi++) {
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    moeroute_status s1, s2 = MOEROUTE_OK;
    if (gi == 0) {
      s1 = moeroute_cuda_route(p, &br, (void*)st);
    } else {
      s1 = moeroute_cuda_gate(p, &bg, (void*)st);
      s2 = moeroute_cuda_sort(p, &bs, (void*)st);
    }
    cudaError_t ce = cudaStreamEndCapture(st, &graph[gi]);
    if (s1 != MOEROUTE_OK || s2 != MOEROUTE_OK) {
      failf("%s under capture returned %s / %s: %s", gi == 0 ? "route" : "gate+sort", moeroute_status_string(s1),
            moeroute_status_string(s2), moeroute_last_error());
    }
    if (ce != cudaSuccess) {
      failf("%s: cudaStreamEndCapture: %s (the call synchronised or allocated during capture?)",
            gi == 0 ? "route" : "gate+sort", cudaGetErrorString(ce));
      (void)cudaGetLastError();
      graph[gi] = NULL;
      continue;
    }
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph[gi], NULL, &nodes));
    if (nodes == 0) failf("%s: captured graph has no nodes", gi == 0 ? "route" : "gate+sort");
    CK(cudaGraphInstantiate(&exec[gi], graph[gi], 0));
  }
  /* replays on fresh inputs copied into the same buffers */
  int replays = g_opt.quick ? 2 : 3;
  for (int rep = 0; rep < replays; rep++) {
    tcase t2 = tc;
    t2.seed = splitmix64(&seed);
    t2.lk = rep == 1 ? LG_UNIFORM : LG_DISTINCT;
    rng r2;
    rng_seed(&r2, t2.seed);
    inputs in2;
    /* fresh host inputs (same shapes); copy their payload into the captured buffers */
    inputs_make(&in2, &t2, &r2);
    CK(cudaMemcpyAsync(buf_d(&in.logits), buf_h(&in2.logits), in.logits.bytes, cudaMemcpyHostToDevice, st));
    if (in.bias.used) CK(cudaMemcpyAsync(buf_d(&in.bias), buf_h(&in2.bias), in.bias.bytes, cudaMemcpyHostToDevice, st));
    if (in.mask_gpu.used)
      CK(cudaMemcpyAsync(buf_d(&in.mask_gpu), buf_h(&in2.mask_gpu), in.mask_gpu.bytes, cudaMemcpyHostToDevice, st));
    /* CPU reference on the new inputs */
    outset cr;
    want wa = {1, ck, 1, vl, 1};
    outset_make(&cr, 0, p, &sz, wa, 0);
    size_t wsb;
    void* wsp = cpu_ws_alloc(MOEROUTE_OP_ROUTE, p, &wsb);
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    outset_bind(&cr, &bu);
    bu.logits = buf_h(&in2.logits);
    bu.bias = in2.bias_h;
    bu.expert_mask = in2.mask_cpu;
    bu.workspace = wsp;
    bu.workspace_bytes = wsb;
    moeroute_status s = moeroute_cpu_route(p, &bu);
    free(wsp);
    if (s != MOEROUTE_OK) {
      failf("cpu route refused: %s", moeroute_last_error());
      outset_free(&cr);
      inputs_free(&in2);
      break;
    }
    for (int gi = 0; gi < 2; gi++) {
      if (!exec[gi]) continue;
      outset* o = gi == 0 ? &ro : &so;
      for (int b = 0; b < B_COUNT; b++) buf_poison(&o->b[b], st);
      if (gi == 1)
        for (int b = 0; b < B_COUNT; b++) buf_poison(&go.b[b], st);
      CK(cudaGraphLaunch(exec[gi], st));
      CK(cudaStreamSynchronize(st));
      g_case.group->calls++;
      outset_download(o, st);
      if (gi == 1) outset_download(&go, st);
      CK(cudaStreamSynchronize(st));
      const char* who = gi == 0 ? "graph route replay" : "graph gate->sort replay";
      const outset* tk = gi == 0 ? &ro : &go;
      int ident = judge_topk(&t2, &in2, o_i32(tk, B_TOPK_IDS), o_f32(tk, B_TOPK_W), o_i32(&cr, B_TOPK_IDS),
                             o_f32(&cr, B_TOPK_W), who);
      outset rs;
      const outset* R = &cr;
      int have = 0;
      if (!ident && cpu_sort_ref(&t2, &in2, &sz, o_i32(tk, B_TOPK_IDS), o_f32(tk, B_TOPK_W), &rs)) {
        R = &rs;
        have = 1;
      }
      int64_t tr = outset_total(R, p);
      outset_check_memory(o, gi == 0 ? RUN_ROUTE : RUN_SORT, p, tr, who);
      if (gi == 1) outset_check_memory(&go, RUN_GATE, p, tr, who);
      compare_sorted(o, R, p, tr, who);
      if (have) outset_free(&rs);
    }
    outset_free(&cr);
    inputs_free(&in2);
  }
  for (int gi = 0; gi < 2; gi++) {
    if (exec[gi]) CK(cudaGraphExecDestroy(exec[gi]));
    if (graph[gi]) CK(cudaGraphDestroy(graph[gi]));
  }
  outset_release_ws(&ro);
  outset_release_ws(&go);
  outset_release_ws(&so);
  outset_free(&ro);
  outset_free(&go);
  outset_free(&so);
  inputs_free(&in);
done:
  g_case.group->seconds += now_s() - t0;
  case_end();
  dev_reset();
}

static void group_graph(void) {
  /* decode shapes (the one-launch path), then prefill sizes (the large-T path) */
  graph_case(shape_by_name("deepseek-r1"), 1, 32, 0, case_seed(11, 0));   /* grouped sigmoid + bias */
  graph_case(shape_by_name("gpt-oss-120b"), 16, 32, 1, case_seed(11, 1)); /* expert mask */
  graph_case(shape_by_name("kimi-k2"), 7, 64, 0, case_seed(11, 2));
  graph_case(shape_by_name("qwen3-next"), 2048, 32, 0, case_seed(11, 3));
  if (!g_opt.quick) graph_case(shape_by_name("deepseek-r1"), 16384, 128, 1, case_seed(11, 4));
}

/* ======================================================================== */
/* Bad input: the validation status, nothing enqueued, nothing written       */
/* ======================================================================== */

static void group_bad_input(void) {
  case_begin("bad_input", "validation statuses (captured: nothing may be enqueued)");
  double t0 = now_s();
  cudaStream_t st = g_opt.stream;
  /* a valid baseline: T=16, E=64, k=4, U=32, both layouts, moe_buf */
  moeroute_params good;
  moeroute_params_init(&good);
  good.num_tokens = 16;
  good.num_experts = 64;
  good.top_k = 4;
  good.unit_size = 32;
  good.logits_dtype = MOEROUTE_DTYPE_BF16;
  good.layouts = MOEROUTE_LAYOUT_BOTH;
  good.moe_buf_bytes = 4096;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(&good, &sz) != MOEROUTE_OK) {
    failf("get_sizes(baseline): %s", moeroute_last_error());
    goto done;
  }
  buf lg;
  buf_dev(&lg, (size_t)16 * 64 * 2);
  for (size_t i = 0; i < (size_t)16 * 64; i++) ((uint16_t*)buf_h(&lg))[i] = float_to_bf16((float)(i % 61) * 0.01f);
  buf_upload(&lg, st);
  size_t wsr = cuda_ws(MOEROUTE_OP_ROUTE, &good);
  outset o;
  want wa = {1, 1, 1, 1, 1};
  outset_make(&o, 1, &good, &sz, wa, wsr + 1024);
  outset_poison(&o, st);
  CK(cudaStreamSynchronize(st));

  enum {
    MUT_NONE,
    MUT_NULL_PARAMS,
    MUT_NULL_BUFFERS,
    MUT_NULL_SORTED_IDS,
    MUT_NULL_EXPERT_IDS,
    MUT_NULL_LOGITS,
    MUT_NULL_TOPK_GATE,
    MUT_MOE_BUF_NULL,
    MUT_WS_SMALL,
    MUT_WS_NULL,
    MUT_WS_MISALIGNED,
    MUT_LAYOUTS_0,
    MUT_RENORM_2
  };
  struct bad {
    const char* what;
    moeroute_op op;
    int mut;
    moeroute_status want;
    int64_t T;
    int32_t E, k, U, G, TG;
    int64_t stride;
    int dtype, score, gscore;
    uint32_t layouts;
    float scale;
    size_t struct_size;
  };
#define BAD(what, op, mut, want) what, op, mut, want
  /* fields: T, E, k, U, G, TG, stride, dtype, score, gscore, layouts, scale, struct_size;
     -1 / 0 / NAN-free sentinels mean "keep the baseline" (see below) */
  static const struct bad cases[] = {
      {BAD("k = 0", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, -1, 0, -1, -1, -1, -1, -1, -1, -1, 0, 1,
       0},
      {BAD("k = 33", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, -1, 33, -1, -1, -1, -1, -1, -1, -1, 0, 1,
       0},
      {BAD("k > E", MOEROUTE_OP_GATE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, 4, 5, -1, -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("E = 0", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, 0, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1,
       0},
      {BAD("E = 1025 (CUDA limit)", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, 1025, -1, -1, -1, -1, -1,
       -1, -1, -1, 0, 1, 0},
      {BAD("U = 0", MOEROUTE_OP_SORT, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, -1, -1, 0, -1, -1, -1, -1, -1, -1, 0, 1,
       0},
      {BAD("U = 1025", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -1, -1, -1, 1025, -1, -1, -1, -1, -1, -1,
       0, 1, 0},
      {BAD("T < 0", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), -5, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1,
       0},
      {BAD("T = 2^24 with CK", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), 1 << 24, -1, -1, -1, -1, -1, -1,
       -1, -1, -1, MOEROUTE_LAYOUT_CK, 1, 0},
      {BAD("T*k >= 2^31", MOEROUTE_OP_SORT, MUT_NONE, MOEROUTE_ERR_BAD_SHAPE), (int64_t)1 << 29, -1, 4, -1, -1, -1, -1,
       -1, -1, -1, MOEROUTE_LAYOUT_VLLM, 1, 0},
      {BAD("stride < E", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_STRIDE), -1, -1, -1, -1, -1, -1, 63, -1, -1, -1,
       0, 1, 0},
      {BAD("G does not divide E", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_GROUPS), -1, -1, -1, -1, 3, 1, -1, -1,
       -1, -1, 0, 1, 0},
      {BAD("topk_groups > G", MOEROUTE_OP_GATE, MUT_NONE, MOEROUTE_ERR_BAD_GROUPS), -1, -1, -1, -1, 8, 9, -1, -1, -1,
       -1, 0, 1, 0},
      {BAD("topk_groups * E / G < k", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_GROUPS), -1, -1, 8, -1, 16, 1, -1,
       -1, -1, -1, 0, 1, 0},
      {BAD("TOP2_SUM with one expert per group", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_GROUPS), -1, -1, -1, -1,
       64, 8, -1, -1, -1, MOEROUTE_GROUP_SCORE_TOP2_SUM, 0, 1, 0},
      {BAD("scale = inf", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_VALUE), -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
       0, INFINITY, 0},
      {BAD("dtype out of range", MOEROUTE_OP_GATE, MUT_NONE, MOEROUTE_ERR_BAD_ENUM), -1, -1, -1, -1, -1, -1, -1, 7, -1,
       -1, 0, 1, 0},
      {BAD("score out of range", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_ENUM), -1, -1, -1, -1, -1, -1, -1, -1, 9,
       -1, 0, 1, 0},
      {BAD("layouts = 4", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_BAD_ENUM), -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
       4, 1, 0},
      {BAD("struct_size wrong", MOEROUTE_OP_ROUTE, MUT_NONE, MOEROUTE_ERR_PARAMS_SIZE), -1, -1, -1, -1, -1, -1, -1, -1,
       -1, -1, 0, 1, 12345},
      {BAD("params NULL", MOEROUTE_OP_ROUTE, MUT_NULL_PARAMS, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1, -1, -1, -1,
       -1, -1, -1, 0, 1, 0},
      {BAD("buffers NULL", MOEROUTE_OP_SORT, MUT_NULL_BUFFERS, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1, -1, -1, -1,
       -1, -1, -1, 0, 1, 0},
      {BAD("sorted_ids NULL (CK)", MOEROUTE_OP_ROUTE, MUT_NULL_SORTED_IDS, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1,
       -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("expert_ids NULL (vLLM)", MOEROUTE_OP_SORT, MUT_NULL_EXPERT_IDS, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1,
       -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("logits NULL with T > 0", MOEROUTE_OP_ROUTE, MUT_NULL_LOGITS, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1, -1,
       -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("gate topk_ids NULL", MOEROUTE_OP_GATE, MUT_NULL_TOPK_GATE, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1, -1,
       -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("moe_buf NULL with moe_buf_bytes > 0", MOEROUTE_OP_ROUTE, MUT_MOE_BUF_NULL, MOEROUTE_ERR_MOE_BUF), -1, -1,
       -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("workspace too small", MOEROUTE_OP_ROUTE, MUT_WS_SMALL, MOEROUTE_ERR_WORKSPACE_TOO_SMALL), -1, -1, -1, -1,
       -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("workspace NULL", MOEROUTE_OP_ROUTE, MUT_WS_NULL, MOEROUTE_ERR_NULL_POINTER), -1, -1, -1, -1, -1, -1, -1, -1,
       -1, -1, 0, 1, 0},
      {BAD("workspace not 16-byte aligned", MOEROUTE_OP_ROUTE, MUT_WS_MISALIGNED, MOEROUTE_ERR_BAD_VALUE), -1, -1, -1,
       -1, -1, -1, -1, -1, -1, -1, 0, 1, 0},
      {BAD("layouts = 0", MOEROUTE_OP_SORT, MUT_LAYOUTS_0, MOEROUTE_ERR_BAD_ENUM), -1, -1, -1, -1, -1, -1, -1, -1, -1,
       -1, 0, 1, 0},
      {BAD("renormalize = 2", MOEROUTE_OP_GATE, MUT_RENORM_2, MOEROUTE_ERR_BAD_VALUE), -1, -1, -1, -1, -1, -1, -1, -1,
       -1, -1, 0, 1, 0},
  };
#undef BAD
  for (int i = 0; i < NUM(cases); i++) {
    const struct bad* c = &cases[i];
    moeroute_params p = good;
    if (c->T != -1) p.num_tokens = c->T;
    if (c->E != -1) p.num_experts = c->E;
    if (c->k != -1) p.top_k = c->k;
    if (c->U != -1) p.unit_size = c->U;
    if (c->G != -1) p.num_groups = c->G;
    if (c->TG != -1) p.topk_groups = c->TG;
    if (c->stride != -1) p.logits_row_stride = c->stride;
    if (c->dtype != -1) p.logits_dtype = (moeroute_dtype)c->dtype;
    if (c->score != -1) p.score = (moeroute_score)c->score;
    if (c->gscore != -1) p.group_score = (moeroute_group_score)c->gscore;
    if (c->layouts) p.layouts = c->layouts;
    if (c->scale != 1) p.scale = c->scale;
    if (c->struct_size) p.struct_size = c->struct_size;
    if (c->mut == MUT_LAYOUTS_0) p.layouts = 0;
    if (c->mut == MUT_RENORM_2) p.renormalize = 2;
    moeroute_op op = c->op;
    if (c->mut == MUT_WS_SMALL || c->mut == MUT_WS_NULL || c->mut == MUT_WS_MISALIGNED) { /* needs an op that asks for a workspace at this shape */
      op = MOEROUTE_OP_ROUTE;
      while (cuda_ws(op, &p) == 0 && op != MOEROUTE_OP_SORT) op = (moeroute_op)(op + 1);
      if (cuda_ws(op, &p) == 0) {
        printf("  note: bad_input: no op asks for a workspace at T=16 E=64 k=4; \"%s\" not tested\n", c->what);
        continue;
      }
    }
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    outset_bind(&o, &bu);
    bu.logits = buf_d(&lg);
    bu.workspace_bytes = wsr;
    if (op == MOEROUTE_OP_SORT) {
      bu.logits = NULL;
      bu.topk_ids = (int32_t*)buf_d(&o.b[B_TOPK_IDS]); /* poison ids: must never be read */
    }
    switch (c->mut) {
      case MUT_NULL_SORTED_IDS:
        bu.sorted_ids = NULL;
        break;
      case MUT_NULL_EXPERT_IDS:
        bu.expert_ids = NULL;
        break;
      case MUT_NULL_LOGITS:
        bu.logits = NULL;
        break;
      case MUT_NULL_TOPK_GATE:
        bu.topk_ids = NULL;
        break;
      case MUT_MOE_BUF_NULL:
        bu.moe_buf = NULL;
        break;
      case MUT_WS_SMALL:
        bu.workspace_bytes = cuda_ws(op, &p) - 1;
        break;
      case MUT_WS_NULL:
        bu.workspace = NULL;
        break;
      case MUT_WS_MISALIGNED: /* 4 bytes in: int32-aligned, not 16 (the allocation has 1024 bytes to spare) */
        bu.workspace = (unsigned char*)bu.workspace + 4;
        break;
      default:
        break;
    }
    cuda_fn fn = op == MOEROUTE_OP_ROUTE  ? moeroute_cuda_route
                 : op == MOEROUTE_OP_GATE ? moeroute_cuda_gate
                                          : moeroute_cuda_sort;
    /* under capture: anything enqueued would show up as a node */
    cudaGraph_t gr = NULL;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    moeroute_status s = fn(c->mut == MUT_NULL_PARAMS ? NULL : &p, c->mut == MUT_NULL_BUFFERS ? NULL : &bu, (void*)st);
    cudaError_t ce = cudaStreamEndCapture(st, &gr);
    g_case.group->calls++;
    if (s != c->want)
      failf("%s (%s): returned %s, expected %s (%s)", c->what, op_name(op), moeroute_status_string(s),
            moeroute_status_string(c->want), moeroute_last_error());
    if (s != MOEROUTE_OK && moeroute_last_error()[0] == 0) failf("%s: no message in moeroute_last_error()", c->what);
    if (ce != cudaSuccess) {
      failf("%s: capture broken by the call: %s", c->what, cudaGetErrorString(ce));
      (void)cudaGetLastError();
    } else {
      size_t nodes = 0;
      CK(cudaGraphGetNodes(gr, NULL, &nodes));
      if (nodes) failf("%s: %zu operations enqueued by a refused call", c->what, nodes);
      CK(cudaGraphDestroy(gr));
    }
    /* and once for real: nothing may be written */
    s = fn(c->mut == MUT_NULL_PARAMS ? NULL : &p, c->mut == MUT_NULL_BUFFERS ? NULL : &bu, (void*)st);
    cudaError_t le = cudaPeekAtLastError();
    if (le != cudaSuccess) fatal_cuda(le, c->what, __FILE__, __LINE__);
    CK(cudaStreamSynchronize(st));
    (void)s;
  }
  outset_download(&o, st);
  CK(cudaStreamSynchronize(st));
  for (int b = 0; b < B_COUNT; b++) {
    if (!o.b[b].used || b == B_WS) continue;
    const unsigned char* h = o.b[b].hbase;
    for (size_t i = 0; i < o.b[b].span; i++)
      if (h[i] != POISON_BYTE) {
        failf("a refused call wrote %s (byte %zu)", BUF_NAME[b], i);
        break;
      }
  }
  /* a valid call with the same buffers succeeds (the baseline is sound) */
  {
    moeroute_buffers bu;
    moeroute_buffers_init(&bu);
    outset_bind(&o, &bu);
    bu.logits = buf_d(&lg);
    bu.workspace_bytes = o.ws_bytes;
    cuda_call(MOEROUTE_OP_ROUTE, &good, &bu, st, "baseline route");
  }
  outset_release_ws(&o);
  outset_free(&o);
  buf_free(&lg);
done:
  g_case.group->seconds += now_s() - t0;
  case_end();
  dev_reset();
}

/* ======================================================================== */
/* Main                                                                      */
/* ======================================================================== */

static void print_summary(void) {
  printf("\n%-14s %7s %7s %9s %12s %9s %8s\n", "group", "cases", "failed", "calls", "tie-allowed", "tie-rows",
         "seconds");
  for (int i = 0; i < g_ngroups; i++) {
    const group_stat* gs = &g_groups[i];
    printf("%-14s %7ld %7ld %9ld %12ld %9ld %8.1f%s\n", gs->name, gs->cases, gs->failed, gs->calls, gs->allowed_rows,
           gs->tie_rows, gs->seconds, gs->unsupported ? "  (NOT_SUPPORTED seen)" : "");
  }
  printf(
      "(tie-allowed: rows whose ids differed from the CPU's within the contract's near-tie allowance;\n"
      " tie-rows: rows where exact ties decided the last pick)\n");
  printf("%ld passed, %ld failed\n", g_total_pass, g_total_fail);
  fflush(stdout);
}

static void usage(void) {
  printf(
      "usage: test_cuda [--quick] [--large] [--seed N] [--configs N] [--group NAME] [--max-tokens N]\n"
      "                 [--exact-allocs] [--ws-uninit] [--allow-unsupported] [--no-misaligned] [--no-cluster] [--no-pdl]\n"
      "                 [--max-print N] [-v]\n"
      "groups: graph bad_input special sort_ids engine (with engine_mask) random thresholds nonfinite_bias misaligned\n"
      "        large\n");
}

int main(int argc, char** argv) {
  g_opt.seed = 20260101;
  g_opt.configs = -1;
  g_opt.max_print = 40;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--quick"))
      g_opt.quick = 1;
    else if (!strcmp(a, "--large"))
      g_opt.large = 1;
    else if (!strcmp(a, "--exact-allocs"))
      g_opt.exact_allocs = 1;
    else if (!strcmp(a, "--ws-uninit"))
      g_opt.ws_uninit = 1;
    else if (!strcmp(a, "--allow-unsupported"))
      g_opt.allow_unsupported = 1;
    else if (!strcmp(a, "--no-cluster"))
      setenv("MOEROUTE_CUDA_NO_CLUSTER", "1", 1); /* read by the library at its first route */
    else if (!strcmp(a, "--no-pdl"))
      setenv("MOEROUTE_PDL", "0", 1); /* read by the library at its first launch */
    else if (!strcmp(a, "--no-misaligned"))
      g_opt.no_misaligned = 1;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
      g_opt.verbose = 1;
    else if (!strcmp(a, "--seed") && i + 1 < argc)
      g_opt.seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(a, "--configs") && i + 1 < argc)
      g_opt.configs = atoi(argv[++i]);
    else if (!strcmp(a, "--max-print") && i + 1 < argc)
      g_opt.max_print = atoi(argv[++i]);
    else if (!strcmp(a, "--max-tokens") && i + 1 < argc)
      g_opt.max_tokens = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(a, "--group") && i + 1 < argc)
      g_opt.only_group = argv[++i];
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    } else {
      fprintf(stderr, "unknown argument: %s\n", a);
      usage();
      return 2;
    }
  }
  if (g_opt.configs < 0) g_opt.configs = g_opt.quick ? 40 : 3000;
  setvbuf(stdout, NULL, _IOLBF, 0);

  printf("test_cuda: moeroute %s (%s)\n", moeroute_version_string(), moeroute_build_info());
  int lib_devices = moeroute_cuda_device_count();
  int rt_devices = 0;
  cudaError_t e = cudaGetDeviceCount(&rt_devices);
  if (lib_devices == 0 || e != cudaSuccess || rt_devices == 0) {
    printf("SKIP: no usable CUDA device (moeroute_cuda_device_count() = %d, cudaGetDeviceCount: %s, %d devices)\n",
           lib_devices, e == cudaSuccess ? "ok" : cudaGetErrorString(e), rt_devices);
    return 77;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device 0: %s, cc %d.%d, %d SMs; seed %" PRIu64 "%s%s%s%s\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, g_opt.seed, g_opt.quick ? ", quick" : "", g_opt.large ? ", large" : "",
         g_opt.exact_allocs ? ", exact allocations" : "", g_opt.ws_uninit ? ", uninitialised workspace" : "");
  CK(cudaStreamCreateWithFlags(&g_opt.stream, cudaStreamNonBlocking));

  double t0 = now_s();
  /* graph first: the library's one-time set-up then happens under capture */
  if (want_group("graph")) group_graph();
  if (want_group("bad_input")) group_bad_input();
  if (want_group("special")) group_special();
  if (want_group("sort_ids")) group_sort_ids();
  if (want_group("engine") || want_group("engine_mask")) group_engine();
  if (want_group("random")) group_random();
  if (!g_opt.quick && want_group("thresholds")) group_thresholds();
  if (g_opt.large && want_group("large")) group_large();
  /* late: ids a route did not expect could fault the context, ending the run */
  if (want_group("nonfinite_bias")) group_nonfinite_bias();
  /* last: a fault here (an alignment assumption) must not hide the rest */
  if (!g_opt.no_misaligned && want_group("misaligned")) group_misaligned();

  dev_release_all();
  CK(cudaStreamDestroy(g_opt.stream));
  printf("\ntotal %.1f s\n", now_s() - t0);
  print_summary();
  return g_total_fail ? 1 : 0;
}
