/*
 * cli.h - what the subcommands of the `moeroute` command share: messages and
 * option parsing, random inputs, host output buffers, the independent checks
 * (a reference sort and a contract checker for top-k rows), and the CUDA
 * helpers (only in builds with MOEROUTE_WITH_CUDA).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_TOOLS_CLI_H
#define MOEROUTE_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "moeroute.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* Exit statuses of the command. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* ---- messages ------------------------------------------------------------ */

/* "moeroute: error: ...\n" on stderr. */
void cli_error(const char* fmt, ...) CLI_PRINTF(1, 2);
/* A failed library call: its last-error message and the status name. */
void cli_lib_error(const char* fn, moeroute_status st);
/* "moeroute: ...\n" on stderr (notes, progress). */
void cli_note(const char* fmt, ...) CLI_PRINTF(1, 2);

/* ---- option parsing ------------------------------------------------------- */

/* If argv[*i] is the option `name` ("--name VALUE" or "--name=VALUE"), store the
 * value, advance *i past it and return 1; 0 if it is another option. A missing
 * value prints the error and exits with CLI_EXIT_USAGE (options are parsed
 * before anything is written). */
int cli_opt(int argc, char** argv, int* i, const char* name, const char** value);
/* 1 if arg is exactly the flag `name`. */
int cli_flag(const char* arg, const char* name);
/* 1 if arg is -h or --help. */
int cli_is_help(const char* arg);

/* Strict number parsing: the whole string, within [lo, hi]. 0 ok, -1 after
 * printing "moeroute: error: OPT: ..." naming the option. */
int cli_parse_i64(const char* opt, const char* s, int64_t lo, int64_t hi, int64_t* out);
int cli_parse_float(const char* opt, const char* s, float* out); /* finite */
/* A comma-separated list ("1,2,4") into a malloc'd array, each in [lo, hi]. */
int cli_parse_i64_list(const char* opt, const char* s, int64_t lo, int64_t hi, int64_t** out, int* count);

int cli_parse_score(const char* s, moeroute_score* out);
int cli_parse_group_score(const char* s, moeroute_group_score* out);
int cli_parse_dtype(const char* s, moeroute_dtype* out); /* bf16 | fp16 | fp32 */
int cli_parse_layout(const char* s, uint32_t* out);     /* ck | vllm | both */

const char* cli_score_name(moeroute_score s);
const char* cli_group_score_name(moeroute_group_score g);
const char* cli_dtype_name(moeroute_dtype d);
const char* cli_layout_name(uint32_t layouts);
size_t cli_dtype_size(moeroute_dtype d);

typedef enum cli_backend { CLI_BACKEND_AUTO = 0, CLI_BACKEND_CPU = 1, CLI_BACKEND_CUDA = 2 } cli_backend;
int cli_parse_backend(const char* s, cli_backend* out);

/* ---- misc ------------------------------------------------------------------ */

double cli_now_us(void);                              /* monotonic clock */
double cli_median(double* v, int n);                  /* sorts v */
void* cli_malloc(size_t bytes);                       /* never NULL for 0 bytes; NULL on failure */
int cli_cuda_built(void);                             /* 1 when the command was built with CUDA */

/* splitmix64: small, good enough, and the same sequence everywhere. */
typedef struct cli_rng {
  uint64_t state;
} cli_rng;
uint64_t cli_rng_next(cli_rng* r);
double cli_rng_uniform(cli_rng* r);                   /* [0, 1) */
int64_t cli_rng_range(cli_rng* r, int64_t lo, int64_t hi); /* [lo, hi] */

/* dtype conversion with the library's rounding (round to nearest even). */
void cli_encode(moeroute_dtype d, const float* src, void* dst, size_t n);
float cli_decode1(moeroute_dtype d, const void* base, size_t index);

/* ---- host outputs ----------------------------------------------------------- */

/* Every output array of one call, allocated at the capacities moeroute_get_sizes()
 * reports (both layouts' arrays exist whatever the params ask; bind() only
 * hands the requested ones to the library). */
typedef struct host_route {
  moeroute_sizes sizes;
  int32_t* topk_ids;
  float* topk_weights;
  int32_t* sorted_ids;
  float* sorted_weights;
  int32_t* sorted_expert_ids;
  int32_t* num_valid_ids;     /* [2] */
  int32_t* sorted_token_ids;
  int32_t* expert_ids;
  int32_t* num_tokens_post_pad; /* [1] */
} host_route;

/* 0 ok; -1 with err filled (bad params: moeroute_last_error(), or out of memory). */
int host_route_alloc(host_route* r, const moeroute_params* p, char* err, size_t errlen);
void host_route_free(host_route* r);
/* Fill every output byte with `byte` (a canary, to see what the call wrote). */
void host_route_fill(host_route* r, unsigned char byte);
/* Point the sorted outputs of b at r for the layouts of p; with_topk also the
 * top-k outputs. Inputs are left alone. */
void host_route_bind(const host_route* r, const moeroute_params* p, int with_topk, moeroute_buffers* b);

#define CLI_CANARY 0xA5u

/* ---- checks ------------------------------------------------------------------- */

/* Relative float comparison of the contract: |a - b| <= rel * max(|a|, |b|), plus
 * an absolute floor for values near zero; equal bits always pass. */
int cli_close(float a, float b, double rel);
#define CLI_WEIGHT_REL 1e-5

/* Exact comparison of the sorted outputs of a and b over the valid range (and
 * the counts), for the layouts of p; sorted_weights bit for bit. Returns the
 * number of differing entries, the first described in why. */
int64_t cli_cmp_sorted(const host_route* a, const host_route* b, const moeroute_params* p, char* why, size_t n);
/* Entries past the valid range that are not the canary (the header promises
 * that nothing past total is written). */
int64_t cli_check_tail(const host_route* r, const moeroute_params* p, char* why, size_t n);
/* topk_ids exactly, topk_weights within CLI_WEIGHT_REL. Returns the number of
 * differing entries, the first described in why. */
int64_t cli_cmp_topk(const host_route* a, const host_route* b, const moeroute_params* p, char* why, size_t n);

/* The sort of the contract, written independently of the library: from
 * topk_ids/topk_weights (weights may be NULL) into r's sorted arrays. */
void cli_reference_sort(const moeroute_params* p, const int32_t* topk_ids, const float* topk_weights,
                        const int32_t* expert_mask, host_route* r);

/* The inputs of one routing call, on the host. */
typedef struct route_case {
  moeroute_params p;
  void* logits;         /* [T, stride] of p.logits_dtype (stride = p.logits_row_stride or E) */
  float* bias;          /* NULL or [E] */
  int32_t* expert_mask; /* NULL or [E] */
  char desc[192];
} route_case;
void route_case_free(route_case* c);
size_t route_case_logits_bytes(const route_case* c);

/* Is row t of ids/weights a valid gating result for c under the contract,
 * up to the tolerance of near-ties (keys within ~1e-6 relative may swap, group
 * scores likewise) and weights within rel? Recomputes everything in double.
 * Returns 1 valid, 0 not (reason in why). */
int cli_check_gate_row(const route_case* c, int64_t t, const int32_t* ids, const float* weights, double rel,
                       char* why, size_t n);

/* Compare a backend's gate output (ids, weights) with the CPU's: rows that
 * match exactly need weights within CLI_WEIGHT_REL; rows whose ids differ must
 * pass cli_check_gate_row (a near-tie the contract allows). Returns failing rows;
 * *near_ties counts the rows accepted through the near-tie rule. */
int64_t cli_cmp_gate(const route_case* c, const host_route* got, const host_route* ref, int64_t* near_ties,
                     char* why, size_t n);

/* Run a CPU op into out (workspace allocated here). sort reads out->topk_*
 * unless ids/weights are given. moe_buf may be NULL. Returns the status. */
moeroute_status cli_cpu_run(moeroute_op op, const route_case* c, const moeroute_params* p, host_route* out,
                            const int32_t* sort_ids, const float* sort_weights, void* moe_buf);

/* ---- random inputs ----------------------------------------------------------- */

/* Logits uniform in [-2, 2), rounded to the dtype (the benchmark inputs). */
void cli_fill_uniform_logits(cli_rng* r, route_case* c);
/* Tie-free logits: every row holds distinct values of the dtype, so that keys
 * computed by different backends order the same (see cmd_verify.c). */
void cli_fill_tiefree_logits(cli_rng* r, route_case* c, int hot_expert);

/* ---- subcommands ----------------------------------------------------------------- */

int cmd_route(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_models(int argc, char** argv);

/* ---- CUDA (cli_cuda.c; declared always, defined only with MOEROUTE_WITH_CUDA) ---- */

/* Number of CUDA devices the runtime sees (0 without CUDA). */
int cli_cuda_devices(void);

#ifdef MOEROUTE_WITH_CUDA
/* Device copies of one call's arrays. */
typedef struct gpu_route {
  void* logits;
  float* bias;
  int32_t* expert_mask;
  int32_t* topk_ids;
  float* topk_weights;
  int32_t* sorted_ids;
  float* sorted_weights;
  int32_t* sorted_expert_ids;
  int32_t* num_valid_ids;
  int32_t* sorted_token_ids;
  int32_t* expert_ids;
  int32_t* num_tokens_post_pad;
  void* moe_buf;
  size_t moe_buf_bytes;
  void* workspace;
  size_t workspace_bytes;
  moeroute_sizes sizes;
} gpu_route;

/* Allocate device arrays for c (outputs at full capacity, workspace for every op)
 * and upload c's inputs. 0 ok, -1 with err. */
int gpu_route_alloc(gpu_route* g, const route_case* c, size_t moe_buf_bytes, char* err, size_t errlen);
void gpu_route_free(gpu_route* g);
/* Set every output byte (moe_buf included) to byte, synchronously. */
int gpu_route_fill(gpu_route* g, unsigned char byte, char* err, size_t errlen);
/* Copy host top-k arrays to the device top-k arrays. */
int gpu_route_upload_topk(gpu_route* g, const int32_t* ids, const float* weights, int64_t n, char* err,
                          size_t errlen);
/* Copy every output back into h (full capacity). */
int gpu_route_download(const gpu_route* g, host_route* h, char* err, size_t errlen);
/* 1 if the first bytes of moe_buf are all zero (copied back in chunks). -1 on a CUDA error. */
int gpu_moe_buf_is_zero(const gpu_route* g, char* err, size_t errlen);
void gpu_route_bind(const gpu_route* g, const moeroute_params* p, moeroute_op op, int with_topk,
                    moeroute_buffers* b);
/* "cudaMalloc: out of memory" style text for the last CUDA error code. */
const char* gpu_error_string(int code);
#endif

/* The floor kernel (floor_kernel.cu): one block of 32 threads reads and writes
 * one 128-byte line. Returns the cudaError_t of the launch. */
#ifdef MOEROUTE_WITH_CUDA
int mr_floor_kernel_launch(void* line, void* stream);
#endif

#endif /* MOEROUTE_TOOLS_CLI_H */
