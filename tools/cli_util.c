/*
 * cli_util.c - messages, option parsing, names, clocks, random numbers and
 * dtype conversion for the moeroute command.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "internal.h" /* mr_float_to_bf16 & co: round exactly as the library does */

/* ---- messages ------------------------------------------------------------ */

void cli_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("moeroute: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_note(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("moeroute: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_lib_error(const char* fn, moeroute_status st) {
  const char* msg = moeroute_last_error();
  /* the library's message names its entry point already */
  if (msg && msg[0]) cli_error("%s [%s]", msg, moeroute_status_string(st));
  else cli_error("%s: %s", fn, moeroute_status_string(st));
}

/* ---- option parsing ------------------------------------------------------- */

int cli_opt(int argc, char** argv, int* i, const char* name, const char** value) {
  const char* arg = argv[*i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    /* nothing has been written yet when options are parsed: leaving is safe */
    cli_error("%s needs a value", name);
    exit(CLI_EXIT_USAGE);
  }
  *i += 1;
  *value = argv[*i];
  return 1;
}

int cli_flag(const char* arg, const char* name) { return strcmp(arg, name) == 0; }

int cli_is_help(const char* arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int cli_parse_i64(const char* opt, const char* s, int64_t lo, int64_t hi, int64_t* out) {
  char* end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (s[0] == '\0' || *end != '\0' || errno == ERANGE) {
    cli_error("%s: '%s' is not an integer", opt, s);
    return -1;
  }
  if (v < lo || v > hi) {
    cli_error("%s: %lld is out of range [%lld, %lld]", opt, v, (long long)lo, (long long)hi);
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

int cli_parse_float(const char* opt, const char* s, float* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (s[0] == '\0' || *end != '\0') {
    cli_error("%s: '%s' is not a number", opt, s);
    return -1;
  }
  if (!isfinite(v) || fabs(v) > 3.4028234663852886e38) {
    cli_error("%s: '%s' is not a finite float", opt, s);
    return -1;
  }
  *out = (float)v;
  return 0;
}

int cli_parse_i64_list(const char* opt, const char* s, int64_t lo, int64_t hi, int64_t** out, int* count) {
  int n = 1;
  for (const char* q = s; *q; q++) n += *q == ',';
  int64_t* v = (int64_t*)malloc((size_t)n * sizeof *v);
  char* copy = (char*)malloc(strlen(s) + 1);
  if (!v || !copy) {
    free(v);
    free(copy);
    cli_error("out of memory");
    return -1;
  }
  strcpy(copy, s);
  int m = 0;
  char* p = copy;
  for (;;) {
    char* comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (cli_parse_i64(opt, p, lo, hi, &v[m]) != 0) {
      free(v);
      free(copy);
      return -1;
    }
    m++;
    if (!comma) break;
    p = comma + 1;
  }
  free(copy);
  *out = v;
  *count = m;
  return 0;
}

int cli_parse_score(const char* s, moeroute_score* out) {
  if (!strcmp(s, "softmax")) *out = MOEROUTE_SCORE_SOFTMAX;
  else if (!strcmp(s, "sigmoid")) *out = MOEROUTE_SCORE_SIGMOID;
  else if (!strcmp(s, "sqrt_softplus")) *out = MOEROUTE_SCORE_SQRT_SOFTPLUS;
  else return -1;
  return 0;
}

int cli_parse_group_score(const char* s, moeroute_group_score* out) {
  if (!strcmp(s, "top2_sum")) *out = MOEROUTE_GROUP_SCORE_TOP2_SUM;
  else if (!strcmp(s, "max")) *out = MOEROUTE_GROUP_SCORE_MAX;
  else return -1;
  return 0;
}

int cli_parse_dtype(const char* s, moeroute_dtype* out) {
  if (!strcmp(s, "bf16")) *out = MOEROUTE_DTYPE_BF16;
  else if (!strcmp(s, "fp16")) *out = MOEROUTE_DTYPE_FP16;
  else if (!strcmp(s, "fp32")) *out = MOEROUTE_DTYPE_FP32;
  else return -1;
  return 0;
}

int cli_parse_layout(const char* s, uint32_t* out) {
  if (!strcmp(s, "ck")) *out = MOEROUTE_LAYOUT_CK;
  else if (!strcmp(s, "vllm")) *out = MOEROUTE_LAYOUT_VLLM;
  else if (!strcmp(s, "both")) *out = MOEROUTE_LAYOUT_BOTH;
  else return -1;
  return 0;
}

int cli_parse_backend(const char* s, cli_backend* out) {
  if (!strcmp(s, "auto")) *out = CLI_BACKEND_AUTO;
  else if (!strcmp(s, "cpu")) *out = CLI_BACKEND_CPU;
  else if (!strcmp(s, "cuda")) *out = CLI_BACKEND_CUDA;
  else return -1;
  return 0;
}

const char* cli_score_name(moeroute_score s) {
  switch (s) {
    case MOEROUTE_SCORE_SOFTMAX: return "softmax";
    case MOEROUTE_SCORE_SIGMOID: return "sigmoid";
    case MOEROUTE_SCORE_SQRT_SOFTPLUS: return "sqrt_softplus";
  }
  return "?";
}

const char* cli_group_score_name(moeroute_group_score g) {
  switch (g) {
    case MOEROUTE_GROUP_SCORE_TOP2_SUM: return "top2_sum";
    case MOEROUTE_GROUP_SCORE_MAX: return "max";
  }
  return "?";
}

const char* cli_dtype_name(moeroute_dtype d) {
  switch (d) {
    case MOEROUTE_DTYPE_FP32: return "fp32";
    case MOEROUTE_DTYPE_BF16: return "bf16";
    case MOEROUTE_DTYPE_FP16: return "fp16";
  }
  return "?";
}

const char* cli_layout_name(uint32_t layouts) {
  switch (layouts) {
    case MOEROUTE_LAYOUT_CK: return "ck";
    case MOEROUTE_LAYOUT_VLLM: return "vllm";
    case MOEROUTE_LAYOUT_BOTH: return "both";
  }
  return "?";
}

size_t cli_dtype_size(moeroute_dtype d) { return d == MOEROUTE_DTYPE_FP32 ? 4 : 2; }

/* ---- misc ------------------------------------------------------------------ */

double cli_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

double cli_median(double* v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void* cli_malloc(size_t bytes) { return malloc(bytes ? bytes : 1); }

int cli_cuda_built(void) {
#ifdef MOEROUTE_WITH_CUDA
  return 1;
#else
  return 0;
#endif
}

uint64_t cli_rng_next(cli_rng* r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double cli_rng_uniform(cli_rng* r) { return (double)(cli_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

int64_t cli_rng_range(cli_rng* r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + (int64_t)(cli_rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* ---- dtype conversion ------------------------------------------------------------ */

void cli_encode(moeroute_dtype d, const float* src, void* dst, size_t n) {
  if (d == MOEROUTE_DTYPE_FP32) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  uint16_t* out = (uint16_t*)dst;
  for (size_t i = 0; i < n; i++)
    out[i] = d == MOEROUTE_DTYPE_BF16 ? mr_float_to_bf16(src[i]) : mr_float_to_fp16(src[i]);
}

float cli_decode1(moeroute_dtype d, const void* base, size_t index) {
  if (d == MOEROUTE_DTYPE_FP32) return ((const float*)base)[index];
  uint16_t h = ((const uint16_t*)base)[index];
  return d == MOEROUTE_DTYPE_BF16 ? mr_bf16_to_float(h) : mr_fp16_to_float(h);
}
