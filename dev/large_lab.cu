/*
 * large_lab.cu - lab file for the large path (src/cuda/large.cu; not built by
 * default). One device call checks and times every knob variant of
 * dev/large-notes.md.
 *
 * 1. Check (every variant, several shapes, T around the thresholds and large):
 *    route: sorted layouts (CK + vLLM, weights) bit-identical to
 *           moeroute_cpu_sort of the route's own top-k, whole arrays compared
 *           (poisoned 0xAB before the call: past `total` must stay poison);
 *           moe_buf (odd size, odd address) all zero, guard bytes untouched;
 *           workspace poisoned; run twice: bit-identical. Rows whose top-k
 *           differ from moeroute_cpu_gate are counted (near ties are allowed
 *           by the contract; the gate itself is test_cuda's business).
 *    sort:  CPU top-k with ids out of range and duplicates, with and without
 *           an expert mask: bit-identical to moeroute_cpu_sort.
 * 2. Time (kernel metric: 50 calls in one graph, events around one replay,
 *    / 50, median of 9): route and sort, with and without moe_buf [T, hidden]
 *    bf16, every variant, against a cudaMemsetAsync of the same buffer.
 *
 * Build (after cmake --build BUILD):
 *   nvcc -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/common dev/large_lab.cu \
 *        BUILD/libmoeroute.a -o BUILD/large_lab
 * 3. --gtm (v16): the grid token-mask sort (gtm.cu): its checks (every shape, T = 1 ..
 *    262144, hot-expert / all-masked / duplicate-free inputs, U = 1 .. 1024, PDL on and
 *    off), then its timing table against the default paths (outputs compared after timing).
 * Run: BUILD/large_lab [--no-time] [--no-check] [--quick] [--variant N] [--gtm]
 * Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA error.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/common.cuh" /* mr_cuda_tune (hidden symbol, reachable through the static library) */
#include "moeroute.h"
#include "lab_util.h"

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) { return lab_splitmix(&g_rng); }
static double urand(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* ---- knob variants ----------------------------------------------------------------- */

typedef struct Variant {
  const char* name;
  int general_v1, no_pdl, ctas_per_sm, engine, clear_per_sm, first_kb, persist, persist_per_sm, force, gate_tpsm;
  int large_seg; /* v13: route's L1 by segments, -1 = off (the chain for segmented rows) */
  int scan_carry; /* v13: L2's scan form, 1 = carry everywhere, -1 = lane blocks everywhere */
  int seg_warps;  /* v13: the L1 by segments' warps per CTA (16: the wide form) */
  int gtm;        /* v16: the grid token-mask sort (1: sort and route's sort, 2: the sort entry point only) */
} Variant;
/* general_v1: 0 = automatic, 1 = the run-1 chain, 2 = large.cu (mr_cuda_tuning); persist: the
 * persistent launch P (v11): 0 = automatic, 1 = on, -1 = off; force: the large path also
 * below the mid sort's bound */
static const Variant VARIANTS[] = {
    {"auto", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},            {"old auto (no P)", 0, 0, 0, 0, 0, 0, -1, 0, 0, 0},
    {"P gate uncapped", 0, 0, 0, 0, 0, 0, 0, 0, 0, -1}, {"P gate 256/SM", 0, 0, 0, 0, 0, 0, 0, 0, 0, 256},
    {"P 1/SM", 0, 0, 0, 0, 0, 0, 0, 1, 0, 0},          {"P 1/SM gate 1024", 0, 0, 0, 0, 0, 0, 0, 1, 0, 1024},
    {"P no PDL", 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},        {"P always", 0, 0, 0, 0, 0, 0, 1, 0, 0, 0},
    {"P forced", 0, 0, 0, 0, 0, 0, 1, 0, 1, 0},        {"large.cu", 2, 0, 0, 0, 0, 0, -1, 0, 0, 0},
    {"v1 (fallback)", 1, 0, 0, 0, 0, 0, -1, 0, 0, 0},
    {"seg L1 off", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1}, {"seg L1 always", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    {"L1 2/SM", 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0},   {"seg L1 always 2/SM", 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1},
    {"large.cu warp rows", 2, 0, 0, 0, 0, 0, -1, 0, 0, 0, -1}, /* the warp-per-row L1 for every shape */
    {"L2 carry scan", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {"L2 lane blocks", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1},
    {"seg L1 wide", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16}, {"seg L1 always wide", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 16},
    {"gtm", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, /* v16: gate kernel + the grid token-mask sort */
    {"gtm no PDL", 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, /* the same, every launch in plain stream order */
    {"gtm fused", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, /* route: gating and masks in one launch (K1g), K2 */
};
#define VAR_GTM 20
#define NVAR ((int)(sizeof VARIANTS / sizeof *VARIANTS))
static int g_gate_lpr = 0; /* the segment gate's lanes per row for the next checks (0: auto) */
static void set_variant(int v) {
  memset(&mr_cuda_tune, 0, sizeof mr_cuda_tune);
  const Variant* x = &VARIANTS[v];
  mr_cuda_tune.general_v1 = x->general_v1;
  mr_cuda_tune.large_no_pdl = x->no_pdl;
  mr_cuda_tune.large_ctas_per_sm = x->ctas_per_sm;
  mr_cuda_tune.clear_engine = x->engine;
  mr_cuda_tune.clear_ctas_per_sm = x->clear_per_sm;
  mr_cuda_tune.first_clear_kb = x->first_kb;
  mr_cuda_tune.persist = x->persist;
  mr_cuda_tune.persist_ctas_per_sm = x->persist_per_sm;
  mr_cuda_tune.force_general = x->force;
  mr_cuda_tune.persist_gate_tpsm = x->gate_tpsm;
  mr_cuda_tune.large_seg = x->large_seg;
  mr_cuda_tune.large_scan_carry = x->scan_carry;
  mr_cuda_tune.large_seg_warps = x->seg_warps;
  mr_cuda_tune.gate_lpr = g_gate_lpr;
  mr_cuda_tune.gtm = x->gtm;
  if (x->gtm && x->no_pdl) mr_cuda_tune.decode_pdl = -1;
}

/* ---- shapes ------------------------------------------------------------------------- */

typedef struct Shape {
  const char* name;
  int E, k;
  moeroute_score score;
  int renorm, bias, G, tg;
  float scale;
  int hidden;
  moeroute_dtype dt;
} Shape;
static const Shape SHAPES[] = {
    {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16},
    {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16},
    {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32},
    {"kimi-k2", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 1, 2.827f, 7168, MOEROUTE_DTYPE_FP32},
    {"qwen3-next", 512, 10, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"e1024-fp16-sqrt", 1024, 6, MOEROUTE_SCORE_SQRT_SOFTPLUS, 0, 1, 1, 1, 1.0f, 64, MOEROUTE_DTYPE_FP16},
    {"e768-grouped", 768, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 8, 4, 1.0f, 64, MOEROUTE_DTYPE_FP32},   /* L1: 48 KB */
    {"e1024-grouped", 1024, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 8, 4, 1.0f, 64, MOEROUTE_DTYPE_BF16}, /* fallback */
};
#define NSHAPE ((int)(sizeof SHAPES / sizeof *SHAPES))
/* Shapes only --v6-shapes names (session 37: v42's question for the 16-bit softmax rows outside 128 <= E <= 256;
 * the presets of models.tsv, not in SHAPES because the other modes loop over every shape there) */
static const Shape EXTRA_SHAPES[] = {
    {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16},
    {"olmoe", 64, 8, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"qwen1.5-moe", 60, 4, MOEROUTE_SCORE_SOFTMAX, 0, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16},
    {"gpt-oss-20b", 32, 4, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16},
    {"dbrx", 16, 4, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 6144, MOEROUTE_DTYPE_BF16},
    {"mixtral-8x7b", 8, 2, MOEROUTE_SCORE_SOFTMAX, 1, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16},
};
#define NEXTRA ((int)(sizeof EXTRA_SHAPES / sizeof *EXTRA_SHAPES))
static_assert(sizeof SHAPES / sizeof *SHAPES + sizeof EXTRA_SHAPES / sizeof *EXTRA_SHAPES <= 32,
              "--v6-shapes keeps the shapes in a 32-bit mask");

static int g_unit = 32; /* U of the next checks and timings */
/* inputs of the next checks: random; every row on experts 0 .. k-1 (route: their logits
 * raised; sort: rows 0 .. k-1 shuffled); every expert masked (the mask is then passed);
 * sort rows of distinct ids with ids out of range (no duplicates: gtm's bit-plane path) */
enum { KIND_RANDOM, KIND_HOT, KIND_ALL_MASKED, KIND_DISTINCT };
static int g_kind = KIND_RANDOM;
static const char* KIND_NAME[] = {"random", "hot", "all-masked", "distinct"};
static void fill_params(const Shape* sh, int64_t T, uint32_t layouts, size_t moe_bytes, moeroute_params* p) {
  moeroute_params_init(p);
  p->num_tokens = T;
  p->num_experts = sh->E;
  p->top_k = sh->k;
  p->unit_size = g_unit;
  p->logits_dtype = sh->dt;
  p->score = sh->score;
  p->renormalize = sh->renorm;
  p->scale = sh->scale;
  p->num_groups = sh->G;
  p->topk_groups = sh->tg;
  p->layouts = layouts;
  p->moe_buf_bytes = moe_bytes;
}

/* ---- buffers -------------------------------------------------------------------------- */

enum { B_TOPK_IDS, B_TOPK_W, B_SIDS, B_SW, B_SEIDS, B_NVALID, B_STIDS, B_EIDS, B_NTPP, NB };
typedef struct Bufs {
  void* d[NB];
  size_t bytes[NB];
  unsigned char* moe_base; /* moe_buf with 64 guard bytes each side */
  size_t moe_bytes;
  int moe_off;
  void* ws;
  size_t ws_bytes;
  void *logits, *bias, *mask;
} Bufs;

static void bufs_alloc(const moeroute_params* p, int moe_off, Bufs* b) {
  memset(b, 0, sizeof *b);
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(p, &sz) != MOEROUTE_OK) {
    printf("get_sizes: %s\n", moeroute_last_error());
    exit(2);
  }
  b->bytes[B_TOPK_IDS] = b->bytes[B_TOPK_W] = (size_t)sz.topk_len * 4;
  b->bytes[B_SIDS] = b->bytes[B_SW] = (size_t)sz.ck_sorted_len * 4;
  b->bytes[B_SEIDS] = (size_t)sz.ck_blocks_len * 4;
  b->bytes[B_NVALID] = 8;
  b->bytes[B_STIDS] = (size_t)sz.vllm_sorted_len * 4;
  b->bytes[B_EIDS] = (size_t)sz.vllm_blocks_len * 4;
  b->bytes[B_NTPP] = 4;
  for (int i = 0; i < NB; ++i) CK(cudaMalloc(&b->d[i], b->bytes[i] ? b->bytes[i] : 4));
  b->moe_bytes = p->moe_buf_bytes;
  b->moe_off = moe_off;
  CK(cudaMalloc((void**)&b->moe_base, b->moe_bytes + 128));
  size_t w1 = 0, w2 = 0;
  moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, p, &w1);
  moeroute_cuda_workspace_size(MOEROUTE_OP_SORT, p, &w2);
  b->ws_bytes = w1 > w2 ? w1 : w2;
  CK(cudaMalloc(&b->ws, b->ws_bytes ? b->ws_bytes : 4));
  const size_t es = p->logits_dtype == MOEROUTE_DTYPE_FP32 ? 4 : 2;
  CK(cudaMalloc(&b->logits, (size_t)p->num_tokens * p->num_experts * es + 16));
  CK(cudaMalloc(&b->bias, (size_t)p->num_experts * 4));
  CK(cudaMalloc(&b->mask, (size_t)p->num_experts * 4));
}
static void bufs_free(Bufs* b) {
  for (int i = 0; i < NB; ++i) cudaFree(b->d[i]);
  cudaFree(b->moe_base);
  cudaFree(b->ws);
  cudaFree(b->logits);
  cudaFree(b->bias);
  cudaFree(b->mask);
}
static void poison(Bufs* b) {
  for (int i = 0; i < NB; ++i) CK(cudaMemset(b->d[i], 0xAB, b->bytes[i]));
  CK(cudaMemset(b->moe_base, 0xAB, b->moe_bytes + 128));
  CK(cudaMemset(b->ws, 0xAB, b->ws_bytes));
  CK(cudaDeviceSynchronize()); /* the memsets run on the legacy stream; the calls on a non-blocking one */
}
static void bind(const moeroute_params* p, Bufs* b, int with_topk, int with_mask, moeroute_buffers* bu) {
  moeroute_buffers_init(bu);
  bu->logits = b->logits;
  bu->bias = (const float*)b->bias;
  bu->expert_mask = with_mask ? (const int32_t*)b->mask : NULL;
  bu->topk_ids = with_topk ? (int32_t*)b->d[B_TOPK_IDS] : NULL;
  bu->topk_weights = with_topk ? (float*)b->d[B_TOPK_W] : NULL;
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    bu->sorted_ids = (int32_t*)b->d[B_SIDS];
    bu->sorted_weights = (float*)b->d[B_SW];
    bu->sorted_expert_ids = (int32_t*)b->d[B_SEIDS];
    bu->num_valid_ids = (int32_t*)b->d[B_NVALID];
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
    bu->sorted_token_ids = (int32_t*)b->d[B_STIDS];
    bu->expert_ids = (int32_t*)b->d[B_EIDS];
    bu->num_tokens_post_pad = (int32_t*)b->d[B_NTPP];
  }
  bu->moe_buf = p->moe_buf_bytes ? (void*)(b->moe_base + 64 + b->moe_off) : NULL;
  bu->workspace = b->ws;
  bu->workspace_bytes = b->ws_bytes;
}
/* host copies of the device outputs */
typedef struct HostOut {
  unsigned char* h[NB];
  unsigned char* moe;
} HostOut;
static void download(const Bufs* b, HostOut* o) {
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < NB; ++i) {
    o->h[i] = (unsigned char*)malloc(b->bytes[i] ? b->bytes[i] : 4);
    CK(cudaMemcpy(o->h[i], b->d[i], b->bytes[i], cudaMemcpyDeviceToHost));
  }
  o->moe = (unsigned char*)malloc(b->moe_bytes + 128);
  CK(cudaMemcpy(o->moe, b->moe_base, b->moe_bytes + 128, cudaMemcpyDeviceToHost));
}
static void hostout_free(HostOut* o) {
  for (int i = 0; i < NB; ++i) free(o->h[i]);
  free(o->moe);
}

/* ---- inputs ----------------------------------------------------------------------------- */

static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static uint16_t f2h(float f) { /* |f| < 4, normal range: simple RNE through the fp32 bits */
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a < 0x38800000u) return (uint16_t)sign; /* tiny -> 0 (fine for a lab) */
  const uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | (((r >> 13) - (112u << 10)) & 0x7fffu));
}
static void upload_inputs(const moeroute_params* p, Bufs* b, float* h_bias, int32_t* h_mask, void** h_logits_out) {
  const int64_t T = p->num_tokens, E = p->num_experts;
  const size_t es = p->logits_dtype == MOEROUTE_DTYPE_FP32 ? 4 : 2;
  unsigned char* lg = (unsigned char*)malloc((size_t)T * E * es + 16);
  for (int64_t i = 0; i < T * E; ++i) {
    const float v = (float)(urand() * 4.0 - 2.0);
    if (es == 4)
      memcpy(lg + i * 4, &v, 4);
    else {
      const uint16_t h = p->logits_dtype == MOEROUTE_DTYPE_BF16 ? f2bf(v) : f2h(v);
      memcpy(lg + i * 2, &h, 2);
    }
  }
  if (g_kind == KIND_HOT) /* every row's top-k: experts 0 .. k-1 */
    for (int64_t t = 0; t < T; ++t)
      for (int e = 0; e < p->top_k; ++e) {
        const float v = (float)(3.0 + urand() * 0.5);
        const int64_t i = t * E + e;
        if (es == 4)
          memcpy(lg + i * 4, &v, 4);
        else {
          const uint16_t h = p->logits_dtype == MOEROUTE_DTYPE_BF16 ? f2bf(v) : f2h(v);
          memcpy(lg + i * 2, &h, 2);
        }
      }
  for (int e = 0; e < E; ++e) {
    h_bias[e] = (float)(urand() * 0.2 - 0.1);
    h_mask[e] = g_kind == KIND_ALL_MASKED ? 0 : urand() < 0.6 ? 1 : 0;
  }
  CK(cudaMemcpy(b->logits, lg, (size_t)T * E * es, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b->bias, h_bias, (size_t)E * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b->mask, h_mask, (size_t)E * 4, cudaMemcpyHostToDevice));
  *h_logits_out = lg;
}

/* CPU sort of (ids, weights) into poisoned host arrays laid out like HostOut */
static int cpu_sort(const moeroute_params* p, const int32_t* ids, const float* w, const int32_t* mask, const Bufs* b,
                    HostOut* ref) {
  for (int i = 0; i < NB; ++i) {
    ref->h[i] = (unsigned char*)malloc(b->bytes[i] ? b->bytes[i] : 4);
    memset(ref->h[i], 0xAB, b->bytes[i]);
  }
  ref->moe = NULL;
  moeroute_params q = *p;
  q.moe_buf_bytes = 0;
  moeroute_buffers bu;
  moeroute_buffers_init(&bu);
  bu.topk_ids = (int32_t*)ids;
  bu.topk_weights = (float*)w;
  bu.expert_mask = mask;
  if (p->layouts & MOEROUTE_LAYOUT_CK) {
    bu.sorted_ids = (int32_t*)ref->h[B_SIDS];
    bu.sorted_weights = (float*)ref->h[B_SW];
    bu.sorted_expert_ids = (int32_t*)ref->h[B_SEIDS];
    bu.num_valid_ids = (int32_t*)ref->h[B_NVALID];
  }
  if (p->layouts & MOEROUTE_LAYOUT_VLLM) {
    bu.sorted_token_ids = (int32_t*)ref->h[B_STIDS];
    bu.expert_ids = (int32_t*)ref->h[B_EIDS];
    bu.num_tokens_post_pad = (int32_t*)ref->h[B_NTPP];
  }
  size_t wsb = 0;
  moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &q, &wsb);
  void* ws = malloc(wsb ? wsb : 1);
  bu.workspace = ws;
  bu.workspace_bytes = wsb;
  const moeroute_status st = moeroute_cpu_sort(&q, &bu);
  free(ws);
  if (st != MOEROUTE_OK) printf("cpu sort: %s\n", moeroute_last_error());
  return st == MOEROUTE_OK ? 0 : -1;
}

static int g_fail = 0;
static const char* BNAME[NB] = {"topk_ids", "topk_weights", "sorted_ids", "sorted_weights", "sorted_expert_ids",
                                "num_valid_ids", "sorted_token_ids", "expert_ids", "num_tokens_post_pad"};

/* sorted outputs equal (whole arrays), moe_buf zero with guards intact */
static int compare(const char* what, const HostOut* got, const HostOut* ref, const Bufs* b) {
  int bad = 0;
  for (int i = B_SIDS; i < NB; ++i) {
    if (memcmp(got->h[i], ref->h[i], b->bytes[i]) != 0) {
      size_t j = 0;
      while (j < b->bytes[i] && got->h[i][j] == ref->h[i][j]) ++j;
      printf("  FAIL %s: %s differs at byte %zu of %zu\n", what, BNAME[i], j, b->bytes[i]);
      bad++;
    }
  }
  if (b->moe_bytes) {
    const unsigned char* m = got->moe;
    const size_t lo = 64 + (size_t)b->moe_off, hi = lo + b->moe_bytes;
    for (size_t j = 0; j < b->moe_bytes + 128; ++j) {
      const int in = j >= lo && j < hi;
      if ((in && m[j] != 0) || (!in && m[j] != 0xAB)) {
        printf("  FAIL %s: moe_buf byte %lld %s (0x%02x)\n", what, (long long)j - (long long)lo,
               in ? "not cleared" : "guard written", m[j]);
        bad++;
        break;
      }
    }
  }
  return bad;
}

/* route check: sorted layouts vs the CPU sort of the route's own top-k; twice, identical */
static void check_route(const Shape* sh, int64_t T, int with_mask, int variant, int force) {
  moeroute_params p;
  if (g_kind == KIND_ALL_MASKED) with_mask = 1;
  size_t mb = (size_t)T * sh->hidden * 2;
  if (mb > ((size_t)64 << 20)) mb = (size_t)64 << 20; /* host copies stay small */
  mb += 5;                                              /* odd size ... */
  fill_params(sh, T, MOEROUTE_LAYOUT_BOTH, mb, &p);
  /* the knobs first: the workspace size depends on the path they select */
  set_variant(variant);
  mr_cuda_tune.force_general |= force; /* 1: the large path also below the one-launch bound */
  Bufs b;
  bufs_alloc(&p, 3, &b); /* ... at an odd address */
  float* hb = (float*)malloc((size_t)sh->E * 4);
  int32_t* hm = (int32_t*)malloc((size_t)sh->E * 4);
  void* hl;
  upload_inputs(&p, &b, hb, hm, &hl);
  if (!sh->bias) {
    CK(cudaFree(b.bias));
    b.bias = NULL;
  }
  moeroute_buffers bu;
  HostOut run[2], ref;
  for (int r = 0; r < 2; ++r) { /* run 1 without top-k outputs: the weights go through the workspace */
    poison(&b);
    bind(&p, &b, r == 0, with_mask, &bu);
    if (moeroute_cuda_route(&p, &bu, 0) != MOEROUTE_OK) {
      printf("route: %s\n", moeroute_last_error());
      exit(2);
    }
    CK(cudaGetLastError());
    download(&b, &run[r]);
  }
  char what[160];
  snprintf(what, sizeof what, "route %s T=%lld mask=%d U=%d %s [%s%s]", sh->name, (long long)T, with_mask,
           g_unit, KIND_NAME[g_kind], VARIANTS[variant].name, force ? ", forced" : "");
  int bad = 0;
  if (cpu_sort(&p, (const int32_t*)run[0].h[B_TOPK_IDS], (const float*)run[0].h[B_TOPK_W], with_mask ? hm : NULL,
               &b, &ref) != 0)
    bad++;
  else
    bad += compare(what, &run[0], &ref, &b);
  for (int i = B_SIDS; i < NB; ++i)
    if (memcmp(run[0].h[i], run[1].h[i], b.bytes[i]) != 0) {
      printf("  FAIL %s: %s differs between two runs (the second without top-k outputs)\n", what, BNAME[i]);
      bad++;
    }
  for (int i = B_TOPK_IDS; i <= B_TOPK_W; ++i)
    for (size_t j = 0; j < b.bytes[i]; ++j)
      if (run[1].h[i][j] != 0xAB) {
        printf("  FAIL %s: %s written although not asked for\n", what, BNAME[i]);
        bad++;
        break;
      }
  /* top-k against the CPU gate (near ties may differ) */
  {
    moeroute_params q = p;
    q.moe_buf_bytes = 0;
    moeroute_buffers cb;
    moeroute_buffers_init(&cb);
    int32_t* ci = (int32_t*)malloc(b.bytes[B_TOPK_IDS] + 4);
    float* cw = (float*)malloc(b.bytes[B_TOPK_W] + 4);
    cb.logits = hl;
    cb.bias = sh->bias ? hb : NULL;
    cb.topk_ids = ci;
    cb.topk_weights = cw;
    size_t wsb = 0;
    moeroute_cpu_workspace_size(MOEROUTE_OP_GATE, &q, &wsb);
    void* ws = malloc(wsb ? wsb : 1);
    cb.workspace = ws;
    cb.workspace_bytes = wsb;
    long rows = 0;
    if (moeroute_cpu_gate(&q, &cb) == MOEROUTE_OK) {
      const int32_t* gi = (const int32_t*)run[0].h[B_TOPK_IDS];
      for (int64_t t = 0; t < T; ++t)
        if (memcmp(gi + t * sh->k, ci + t * sh->k, (size_t)sh->k * 4) != 0) rows++;
    }
    if (rows > T / 100 + 2) { /* near ties may differ (contract 4); many rows: a real gate problem */
      printf("  FAIL %s: %ld rows of top-k differ from the CPU gate\n", what, rows);
      bad++;
    }
    free(ci);
    free(cw);
    free(ws);
  }
  printf("%s %s\n", bad ? "FAIL" : "ok  ", what);
  g_fail += bad;
  hostout_free(&run[0]);
  hostout_free(&run[1]);
  for (int i = 0; i < NB; ++i) free(ref.h[i]);
  free(hb);
  free(hm);
  free(hl);
  bufs_free(&b);
}

/* sort check on a CPU top-k with ids out of range and duplicated rows */
static void check_sort(const Shape* sh, int64_t T, int with_mask, int variant, int force) {
  moeroute_params p;
  if (g_kind == KIND_ALL_MASKED) with_mask = 1;
  const size_t mb = (size_t)T * 64 + 7;
  fill_params(sh, T, MOEROUTE_LAYOUT_BOTH, mb, &p);
  set_variant(variant); /* before the workspace is sized */
  mr_cuda_tune.force_general |= force;
  Bufs b;
  bufs_alloc(&p, 5, &b);
  float* hb = (float*)malloc((size_t)sh->E * 4);
  int32_t* hm = (int32_t*)malloc((size_t)sh->E * 4);
  void* hl;
  upload_inputs(&p, &b, hb, hm, &hl);
  const int64_t n = T * sh->k;
  int32_t* ids = (int32_t*)malloc((size_t)n * 4);
  float* w = (float*)malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; ++i) {
    int32_t v = (int32_t)(rnd() % (uint64_t)sh->E);
    const double u = urand();
    if (g_kind == KIND_HOT || g_kind == KIND_DISTINCT) {
      /* distinct ids per row: slot j holds (j + off) % E; some out of range (distinct too) */
      const int64_t t = i / sh->k, j = i % sh->k;
      const int32_t off = g_kind == KIND_HOT ? 0 : (int32_t)(((uint64_t)t * 2654435761u) % (uint64_t)sh->E);
      v = (int32_t)((j * 7 + off) % sh->E);
      if (g_kind == KIND_HOT) v = (int32_t)((j + t) % sh->k); /* a rotation of 0 .. k-1 */
      else if (u < 0.03) v = u < 0.015 ? -1 - (int32_t)j : sh->E + (int32_t)j;
    } else if (u < 0.02) v = -1 - (int32_t)(rnd() % 7);
    else if (u < 0.04) v = sh->E + (int32_t)(rnd() % 7);
    else if (u < 0.08 && i % sh->k) v = ids[i - 1];
    else if (u < 0.15) v = (int32_t)(rnd() % 3); /* hot experts */
    ids[i] = v;
    uint32_t bits = (uint32_t)rnd();
    memcpy(&w[i], &bits, 4);
  }
  poison(&b);
  CK(cudaMemcpy(b.d[B_TOPK_IDS], ids, (size_t)n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b.d[B_TOPK_W], w, (size_t)n * 4, cudaMemcpyHostToDevice));
  moeroute_buffers bu;
  bind(&p, &b, 1, with_mask, &bu);
  if (moeroute_cuda_sort(&p, &bu, 0) != MOEROUTE_OK) {
    printf("sort: %s\n", moeroute_last_error());
    exit(2);
  }
  CK(cudaGetLastError());
  HostOut got, ref;
  download(&b, &got);
  char what[160];
  snprintf(what, sizeof what, "sort  %s T=%lld mask=%d U=%d %s [%s%s]", sh->name, (long long)T, with_mask,
           g_unit, KIND_NAME[g_kind], VARIANTS[variant].name, force ? ", forced" : "");
  int bad = 0;
  if (cpu_sort(&p, ids, w, with_mask ? hm : NULL, &b, &ref) != 0)
    bad++;
  else
    bad += compare(what, &got, &ref, &b);
  printf("%s %s\n", bad ? "FAIL" : "ok  ", what);
  g_fail += bad;
  hostout_free(&got);
  for (int i = 0; i < NB; ++i) free(ref.h[i]);
  free(ids);
  free(w);
  free(hb);
  free(hm);
  free(hl);
  bufs_free(&b);
}

/* ---- timing ---------------------------------------------------------------------------- */

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

typedef enum { OP_ROUTE, OP_SORT, OP_MEMSET, OP_GATE } TOp;
static double time_op(TOp op, const moeroute_params* p, const moeroute_buffers* bu, cudaStream_t s) {
  const int calls = 50, reps = 9;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) {
    moeroute_status st = MOEROUTE_OK;
    if (op == OP_ROUTE) st = moeroute_cuda_route(p, bu, s);
    if (op == OP_SORT) st = moeroute_cuda_sort(p, bu, s);
    if (op == OP_GATE) st = moeroute_cuda_gate(p, bu, s);
    if (op == OP_MEMSET) CK(cudaMemsetAsync(bu->moe_buf, 0, p->moe_buf_bytes, s));
    if (st != MOEROUTE_OK) {
      printf("timing call failed: %s\n", moeroute_last_error());
      exit(2);
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  return lab_graph_us(g, calls, reps, 2, s);
}

/* A timing shape: params with moe_buf [T, hidden] bf16 (p) and without (pn),
 * buffers, random inputs (the bias freed for shapes without one). */
typedef struct LabShape {
  moeroute_params p, pn;
  Bufs b;
  float* hb;
  int32_t* hm;
  void* hl;
} LabShape;
static void lab_shape_init(const Shape* sh, int64_t T, uint32_t layouts, LabShape* x) {
  fill_params(sh, T, layouts, (size_t)T * sh->hidden * 2, &x->p);
  bufs_alloc(&x->p, 0, &x->b);
  x->hb = (float*)malloc((size_t)sh->E * 4);
  x->hm = (int32_t*)malloc((size_t)sh->E * 4);
  upload_inputs(&x->p, &x->b, x->hb, x->hm, &x->hl);
  if (!sh->bias) {
    CK(cudaFree(x->b.bias));
    x->b.bias = NULL;
  }
  x->pn = x->p;
  x->pn.moe_buf_bytes = 0;
}
static void lab_shape_free(LabShape* x) {
  free(x->hb);
  free(x->hm);
  free(x->hl);
  bufs_free(&x->b);
}

static void time_shape(const Shape* sh, int64_t T, int only_variant, cudaStream_t s) {
  LabShape x;
  lab_shape_init(sh, T, MOEROUTE_LAYOUT_CK, &x);
  moeroute_params p = x.p, pn = x.pn;
  Bufs b = x.b;
  moeroute_buffers bu, bn;
  bind(&p, &b, 1, 0, &bu);
  bind(&pn, &b, 1, 0, &bn);
  /* sort's top-k: what one route left (default variant) */
  set_variant(0);
  if (moeroute_cuda_route(&pn, &bn, s) != MOEROUTE_OK) exit(2);
  CK(cudaStreamSynchronize(s));
  spin_kernel<<<264, 128, 0, s>>>(40000000ull); /* ~40 ms of load: clocks up */
  const double ms = time_op(OP_MEMSET, &p, &bu, s);
  for (int v = 0; v < NVAR; ++v) {
    if (only_variant >= 0 && v != only_variant) continue;
    set_variant(v);
    const double rn = time_op(OP_ROUTE, &pn, &bn, s);
    const double rb = time_op(OP_ROUTE, &p, &bu, s);
    const double sn = time_op(OP_SORT, &pn, &bn, s);
    const double sb = time_op(OP_SORT, &p, &bu, s);
    printf("time %-20s T=%6lld %-15s route %8.2f  route+buf %8.2f  sort %7.2f  sort+buf %8.2f  memset %8.2f  "
           "route+buf/memset %5.3f\n",
           sh->name, (long long)T, VARIANTS[v].name, rn, rb, sn, sb, ms, rb / ms);
  }
  set_variant(0);
  lab_shape_free(&x);
}

/* ---- v6: the mid sort (mid.cu) and the segment gate kernel (gate.cu) -------------------
 * Per shape and T: every variant's route (no buf), route + buf, sort, gate, timed side
 * by side (kernel metric), and every variant's outputs compared bit for bit with the
 * first variant's (route's top-k and layouts, sort's layouts): the variants must agree
 * (renormalized softmax: the same weight expressions on every path). */
typedef struct V6 {
  const char* name;
  int mid_max, lpr, share, filt, form, lseg, lsw, pcn, pad, glive;
} V6;
/* nofilt (v20, index 10): the segment rows without the filter, the sorting network alone; filt (11):
 * the filter at every T (its automatic rule: gate.cuh mr_seg_filter_on). v21 (knob gate_seg_form):
 * pk1 (12) the row in packed pairs with v20's filter at every T, pk2 (13) packed with the tight bound at
 * every T, pk2auto (14) packed with the tight bound where the automatic rule runs the filter, pknet
 * (15) packed with the network alone; wide (16): route's wide L1 by segments at any T*k (at T = 65536
 * too, where route is the chain: lab call 43 had it 1.2 us slower there), pk2wide (17) the same with pk2;
 * pk3 (18) packed, the tight bound's candidates ranked in shared memory, at every T, pk3auto (19) the same
 * by the automatic rule, pk3wide (20) pk3 with the wide L1 at any T*k; clr200 / clr500 / clr1000 (21 - 23): P's
 * clearing warps sleep that many ns after each 16 KB piece while their CTA routes, clrbar (24): they pause
 * while their CTA's routing waits at a grid barrier (knob persist_clear_ns; route + buf and sort + buf);
 * pk3l8 (25): pk3 with 8 lanes per row at every T (the packed forms exist for LPR <= 8: the automatic
 * rule takes 16 lanes at T = 2048 - 4095 for k = 8, 1024 - 4095 for k <= 4). From session 23 form 0 is the
 * automatic form (gate.cuh mr_seg_gate_form: the gate kernel packed where it can be, its filter from T*k =
 * 65536 in form 3 / 2), so every variant with form 0 takes it; v20 (26) is the default of lab call 55. */
static const V6 V6S[] = {
    {"auto", 0, 0, 0, 0, 0},       {"old", -1, 32, 0, 0, 0},       {"midoff", -1, 0, 0, 0, 0},
    {"lpr32", 0, 32, 0, 0, 0},     {"share512", 0, 0, 512, 0, 0},  {"share2048", 0, 0, 2048, 0, 0},
    {"share64", 0, 0, 64, 0, 0},   {"share128", 0, 0, 128, 0, 0},  {"share256", 0, 0, 256, 0, 0},
    {"share1024", 0, 0, 1024, 0, 0}, {"nofilt", 0, 0, 0, -1, 0},   {"filt", 0, 0, 0, 1, 0},
    {"pk1", 0, 0, 0, 1, 1},        {"pk2", 0, 0, 0, 1, 2},         {"pk2auto", 0, 0, 0, 0, 2},
    {"pknet", 0, 0, 0, -1, 1},     {"wide", 0, 0, 0, 0, 0, 1, 16}, {"pk2wide", 0, 0, 0, 1, 2, 1, 16},
    {"pk3", 0, 0, 0, 1, 3},        {"pk3auto", 0, 0, 0, 0, 3},     {"pk3wide", 0, 0, 0, 1, 3, 1, 16},
    {"clr200", 0, 0, 0, 0, 0, 0, 0, 200}, {"clr500", 0, 0, 0, 0, 0, 0, 0, 500},
    {"clr1000", 0, 0, 0, 0, 0, 0, 0, 1000}, {"clrbar", 0, 0, 0, 0, 0, 0, 0, -100},
    {"pk3l8", 0, 8, 0, 1, 3},      {"v20", 0, 0, 0, 0, -1},
    /* L5 (session 37, 27 - 31): the mid sort with 32 / 64 routing CTAs, and with 8 / 28 / 64 CTAs that leave at once
     * added to its grid without a moe_buf (knob mid_pad_ctas; with a moe_buf at T = 128 it has 28 clear CTAs) */
    {"share32", 0, 0, 32, 0, 0},   {"share16", 0, 0, 16, 0, 0},
    {"pad8", 0, 0, 0, 0, 0, 0, 0, 0, 8}, {"pad28", 0, 0, 0, 0, 0, 0, 0, 0, 28}, {"pad64", 0, 0, 0, 0, 0, 0, 0, 0, 64},
    /* L5 (session 37, 32 - 33): the warp-per-row gate kernel (gate.cu mr_launch_gate_t) at T <= 128 with 2 / 3 gating
     * warps per CTA (knob gate_live, 1 - 3; auto before v42: 1, i.e. 128 CTAs at T = 128; since v42 3 for 16-bit softmax
     * rows with 128 <= E <= 256 at T > 32). Lab call 110 asked for 4: with the dry-run warp 160 threads, above the
     * kernels' 128-thread bound, and the launch returned cudaErrorInvalidValue as a status; the knob now ignores values
     * above 3. Rows that gate.cu's wide kernel takes at these T (sigmoid / sqrt_softplus rows within its bounds:
     * Kimi-K2, grouped DeepSeek-R1) never read the knob. */
    {"glive2", 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, {"glive3", 0, 0, 0, 0, 0, 0, 0, 0, 0, 3},
    /* (34) one gating warp per CTA: the form before v42 */
    {"glive1", 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
};
#define NV6 ((int)(sizeof V6S / sizeof *V6S))
static_assert(sizeof V6S / sizeof *V6S <= 64, "--v6-variant keeps the variants in a 64-bit mask");
static void set_v6(int v) {
  memset(&mr_cuda_tune, 0, sizeof mr_cuda_tune);
  mr_cuda_tune.mid_max_entries = V6S[v].mid_max;
  mr_cuda_tune.gate_lpr = V6S[v].lpr;
  mr_cuda_tune.mid_share = V6S[v].share;
  mr_cuda_tune.gate_seg_filter = V6S[v].filt;
  mr_cuda_tune.gate_seg_form = V6S[v].form;
  mr_cuda_tune.large_seg = V6S[v].lseg;
  mr_cuda_tune.large_seg_warps = V6S[v].lsw;
  mr_cuda_tune.persist_clear_ns = V6S[v].pcn;
  mr_cuda_tune.mid_pad_ctas = V6S[v].pad;
  mr_cuda_tune.gate_live = V6S[v].glive;
}
static int same_out(const HostOut* a, const HostOut* b, const Bufs* bf) {
  for (int i = 0; i < NB; ++i)
    if (memcmp(a->h[i], b->h[i], bf->bytes[i]) != 0) return 0;
  return 1;
}
/* --v6-variant a,b,...: the variants checked and timed besides auto (bit v of the mask; 0: all) */
static int g_v6_notime = 0;
static unsigned long long g_v6_mask = 0;
static int v6_takes(int v) { return g_v6_mask == 0 || v == 0 || ((g_v6_mask >> v) & 1ull); }
static void v6_shape(const Shape* sh, int64_t T, cudaStream_t s) {
  LabShape x;
  lab_shape_init(sh, T, MOEROUTE_LAYOUT_BOTH, &x);
  moeroute_params p = x.p, pn = x.pn;
  Bufs b = x.b;
  moeroute_buffers bu, bn, bs;
  bind(&p, &b, 1, 0, &bu);
  bind(&pn, &b, 1, 0, &bn);
  bind(&pn, &b, 1, 1, &bs); /* sort with the expert mask */
  HostOut r0, s0, g0, u0;
  int agree = 1;
  for (int v = 0; v < NV6; ++v) {
    if (!v6_takes(v)) continue;
    set_v6(v); /* v = 0 (auto) is the reference of every other variant */
    HostOut r, q, g, u;
    /* route + buf (P with its clear where T is large): the layouts, and moe_buf all zero */
    poison(&b);
    if (moeroute_cuda_route(&p, &bu, s) != MOEROUTE_OK) { printf("route+buf: %s\n", moeroute_last_error()); exit(2); }
    download(&b, &u);
    for (size_t i = 0; i < p.moe_buf_bytes; ++i)
      if (u.moe[64 + b.moe_off + i]) {
        printf("v6 MOE_BUF not cleared %s T=%lld variant %s at %zu\n", sh->name, (long long)T, V6S[v].name, i);
        g_fail++;
        agree = 0;
        break;
      }
    /* the gate kernel alone (its top-k; the layouts stay poisoned alike) */
    poison(&b);
    if (moeroute_cuda_gate(&pn, &bn, s) != MOEROUTE_OK) { printf("gate: %s\n", moeroute_last_error()); exit(2); }
    download(&b, &g);
    poison(&b);
    if (moeroute_cuda_route(&pn, &bn, s) != MOEROUTE_OK) { printf("route: %s\n", moeroute_last_error()); exit(2); }
    download(&b, &r);
    /* sort from the top-k route left (poison the layouts only) */
    for (int i = B_SIDS; i < NB; ++i) CK(cudaMemset(b.d[i], 0xAB, b.bytes[i]));
    CK(cudaDeviceSynchronize());
    if (moeroute_cuda_sort(&pn, &bs, s) != MOEROUTE_OK) { printf("sort: %s\n", moeroute_last_error()); exit(2); }
    download(&b, &q);
    if (v == 0) {
      r0 = r;
      s0 = q;
      g0 = g;
      u0 = u;
    } else {
      if (!same_out(&r, &r0, &b) || !same_out(&q, &s0, &b) || !same_out(&g, &g0, &b) || !same_out(&u, &u0, &b)) {
        printf("v6 MISMATCH %s T=%lld variant %s\n", sh->name, (long long)T, V6S[v].name);
        agree = 0;
        g_fail++;
      }
      hostout_free(&r);
      hostout_free(&q);
      hostout_free(&g);
      hostout_free(&u);
    }
  }
  /* moe_buf cleared by route + buf (auto) */
  set_v6(0);
  CK(cudaMemset(b.moe_base, 0xAB, b.moe_bytes + 128));
  CK(cudaDeviceSynchronize());
  if (moeroute_cuda_route(&p, &bu, s) != MOEROUTE_OK) exit(2);
  {
    CK(cudaDeviceSynchronize());
    unsigned char* m = (unsigned char*)malloc(p.moe_buf_bytes);
    CK(cudaMemcpy(m, bu.moe_buf, p.moe_buf_bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < p.moe_buf_bytes; ++i)
      if (m[i]) {
        printf("v6 MOE_BUF not cleared %s T=%lld at %zu\n", sh->name, (long long)T, i);
        g_fail++;
        break;
      }
    free(m);
  }
  hostout_free(&r0);
  hostout_free(&s0);
  hostout_free(&g0);
  hostout_free(&u0);
  if (g_v6_notime) printf("v6 %-20s T=%6lld checked, agree %d\n", sh->name, (long long)T, agree);
  if (!g_v6_notime) spin_kernel<<<264, 128, 0, s>>>(20000000ull);
  const double ms = g_v6_notime ? 0.0 : time_op(OP_MEMSET, &p, &bu, s);
  for (int v = 0; v < NV6 && !g_v6_notime; ++v) {
    if (!v6_takes(v)) continue; /* --v6-variant: auto and those */
    set_v6(v);
    const double g = time_op(OP_GATE, &pn, &bn, s);
    const double rn = time_op(OP_ROUTE, &pn, &bn, s);
    const double rb = time_op(OP_ROUTE, &p, &bu, s);
    const double sn = time_op(OP_SORT, &pn, &bn, s);
    printf("v6 %-20s T=%6lld %-10s gate %7.2f  route %7.2f  route+buf %8.2f  sort %7.2f  memset %8.2f  agree %d\n",
           sh->name, (long long)T, V6S[v].name, g, rn, rb, sn, ms, agree);
  }
  set_v6(0);
  lab_shape_free(&x);
}

/* ---- v16: the grid token-mask sort (gtm.cu) against the default paths --------------------
 * Per shape and T: route (no buf), route + buf, sort, sort + buf of the default paths, of
 * gtm (route = gate kernel + gtm's two launches) and of gtm = 3 (route's gating inside gtm's
 * first launch for PACKED rows; its sort is gtm's), kernel metric, side by side with the memset
 * of the same moe_buf; then the same calls once more into poisoned buffers, and gtm's
 * layouts compared bit for bit with the default's (route: also the top-k): `agree`. */
static void gtm_time_shape(const Shape* sh, int64_t T, cudaStream_t s) {
  LabShape x;
  set_variant(VAR_GTM); /* the workspace for gtm's call (it covers the default paths' too) */
  lab_shape_init(sh, T, MOEROUTE_LAYOUT_CK, &x);
  moeroute_params p = x.p, pn = x.pn;
  moeroute_buffers bu, bn;
  set_variant(0);
  bind(&p, &x.b, 1, 0, &bu);
  bind(&pn, &x.b, 1, 0, &bn);
  if (moeroute_cuda_route(&pn, &bn, s) != MOEROUTE_OK) exit(2); /* sort's top-k: the default route's */
  CK(cudaStreamSynchronize(s));
  int32_t* ids = (int32_t*)malloc(x.b.bytes[B_TOPK_IDS]);
  float* w = (float*)malloc(x.b.bytes[B_TOPK_W]);
  CK(cudaMemcpy(ids, x.b.d[B_TOPK_IDS], x.b.bytes[B_TOPK_IDS], cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(w, x.b.d[B_TOPK_W], x.b.bytes[B_TOPK_W], cudaMemcpyDeviceToHost));
  spin_kernel<<<264, 128, 0, s>>>(40000000ull);
  const double ms = time_op(OP_MEMSET, &p, &bu, s);
  const int vs[3] = {0, VAR_GTM, VAR_GTM + 2}; /* the default paths, gtm, gtm with route's K1g */
  double t[3][4];
  HostOut out[3][2];
  for (int q = 0; q < 3; ++q) {
    set_variant(vs[q]);
    t[q][0] = time_op(OP_ROUTE, &pn, &bn, s);
    t[q][1] = time_op(OP_ROUTE, &p, &bu, s);
    CK(cudaMemcpy(x.b.d[B_TOPK_IDS], ids, x.b.bytes[B_TOPK_IDS], cudaMemcpyHostToDevice)); /* sort's input */
    CK(cudaMemcpy(x.b.d[B_TOPK_W], w, x.b.bytes[B_TOPK_W], cudaMemcpyHostToDevice));
    t[q][2] = time_op(OP_SORT, &pn, &bn, s);
    t[q][3] = time_op(OP_SORT, &p, &bu, s);
    /* the timed calls once more: route (no buf), then sort on the default route's top-k */
    poison(&x.b);
    if (moeroute_cuda_route(&pn, &bn, s) != MOEROUTE_OK) exit(2);
    download(&x.b, &out[q][0]);
    poison(&x.b);
    CK(cudaMemcpy(x.b.d[B_TOPK_IDS], ids, x.b.bytes[B_TOPK_IDS], cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x.b.d[B_TOPK_W], w, x.b.bytes[B_TOPK_W], cudaMemcpyHostToDevice));
    if (moeroute_cuda_sort(&pn, &bn, s) != MOEROUTE_OK) exit(2);
    download(&x.b, &out[q][1]);
  }
  int agree = 1;
  for (int q = 1; q < 3; ++q)
    agree &= same_out(&out[0][0], &out[q][0], &x.b) && same_out(&out[0][1], &out[q][1], &x.b);
  if (!agree) g_fail++;
  static const char* VN[3] = {"auto", "gtm", "gtm3"};
  for (int q = 0; q < 3; ++q)
    printf("gtm %-20s T=%6lld %-5s route %8.2f  route+buf %8.2f  sort %7.2f  sort+buf %8.2f  memset %8.2f  "
           "route+buf/memset %5.3f  agree %d\n",
           sh->name, (long long)T, VN[q], t[q][0], t[q][1], t[q][2], t[q][3], ms, t[q][1] / ms, agree);
  printf("gtm %-20s T=%6lld ratio gtm/auto: route %5.3f  route+buf %5.3f  sort %5.3f  sort+buf %5.3f  "
         "gtm3/auto: route %5.3f  route+buf %5.3f\n",
         sh->name, (long long)T, t[1][0] / t[0][0], t[1][1] / t[0][1], t[1][2] / t[0][2], t[1][3] / t[0][3],
         t[2][0] / t[0][0], t[2][1] / t[0][1]);
  /* probe 2 (WRONG outputs, timing only): K2's expert CTAs return after their PDL wait, i.e. the
   * two launches with K1's work alone. (Lab calls 50 - 52 also timed a probe without phase B; every
   * expert then wrote from position 0, on the same addresses, which measured that contention.) */
  set_variant(VAR_GTM);
  mr_cuda_tune.gtm_probe = 2;
  const double pr = time_op(OP_SORT, &pn, &bn, s);
  printf("gtm %-20s T=%6lld probe: launches alone %7.2f\n", sh->name, (long long)T, pr);
  fflush(stdout);
  for (int q = 0; q < 3; ++q)
    for (int r = 0; r < 2; ++r) hostout_free(&out[q][r]);
  free(ids);
  free(w);
  set_variant(0);
  lab_shape_free(&x);
}

/* v16: gtm's phases, stamped (gtm_probe 3: %globaltimer at the phase boundaries in the spare words
 * of the status lines; outputs right): one sort call after three warm ones, ns. */
static int g_stamp_graph = 0; /* 1: the stamps of a call inside a graph of back-to-back calls */
static void gtm_stamps(const Shape* sh, int64_t T, cudaStream_t s) {
  LabShape x;
  set_variant(VAR_GTM);
  mr_cuda_tune.gtm_probe = 3;
  lab_shape_init(sh, T, MOEROUTE_LAYOUT_CK, &x);
  moeroute_buffers bn;
  bind(&x.pn, &x.b, 1, 0, &bn);
  set_variant(0);
  if (moeroute_cuda_route(&x.pn, &bn, s) != MOEROUTE_OK) exit(2); /* the top-k */
  set_variant(VAR_GTM);
  mr_cuda_tune.gtm_probe = 3;
  for (int r = 0; r < 4; ++r) {
    if (moeroute_cuda_sort(&x.pn, &bn, s) != MOEROUTE_OK) exit(2);
    CK(cudaStreamSynchronize(s));
  }
  if (g_stamp_graph) { /* the last of 20 calls captured in one graph (back to back, as the kernel metric) */
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int r = 0; r < 20; ++r)
      if (moeroute_cuda_sort(&x.pn, &bn, s) != MOEROUTE_OK) exit(2);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(gr));
  }
  const int E = sh->E;
  unsigned long long* st = (unsigned long long*)malloc((size_t)E * 128);
  CK(cudaMemcpy(st, x.b.ws, (size_t)E * 128, cudaMemcpyDeviceToHost));
  const unsigned long long k0 = st[8];
  printf("stamps %-20s T=%6lld K1 CTA 0: marks %lld ns, publish %lld ns\n", sh->name, (long long)T,
         (long long)(st[9] - k0), (long long)(st[10] - st[9]));
  static const char* PH[7] = {"K1 start -> K2 wait done", "A (to the dup flags)", "A (count, sum)", "B (poll)",
                              "B (sum)", "C (emit)", "D (padding, blocks)"};
  /* word pairs of each phase in the status line: (from, to) */
  static const int FR[7] = {-1, 1, 7, 2, 3, 4, 5}, TO[7] = {1, 7, 2, 3, 4, 5, 6};
  for (int ph = 0; ph < 7; ++ph) {
    long long mn = 1ll << 62, mx = -(1ll << 62), sum = 0;
    for (int e = 0; e < E; ++e) {
      const unsigned long long* l = st + (size_t)e * 16;
      const long long d = ph == 0 ? (long long)(l[1] - k0) : (long long)(l[TO[ph]] - l[FR[ph]]);
      mn = d < mn ? d : mn;
      mx = d > mx ? d : mx;
      sum += d;
    }
    printf("stamps %-20s T=%6lld %-26s min %7lld  mean %7lld  max %7lld ns  (e = 0: %lld, e = E-1: %lld)\n", sh->name,
           (long long)T, PH[ph], mn, sum / E, mx,
           ph == 0 ? (long long)(st[1] - k0) : (long long)(st[TO[ph]] - st[FR[ph]]),
           ph == 0 ? (long long)(st[(size_t)(E - 1) * 16 + 1] - k0)
                   : (long long)(st[(size_t)(E - 1) * 16 + TO[ph]] - st[(size_t)(E - 1) * 16 + FR[ph]]));
  }
  long long last = 0;
  for (int e = 0; e < E; ++e) last = (long long)(st[(size_t)e * 16 + 6] - k0) > last ? (long long)(st[(size_t)e * 16 + 6] - k0) : last;
  printf("stamps %-20s T=%6lld K1 start -> last K2 CTA done %lld ns\n", sh->name, (long long)T, last);
  free(st);
  set_variant(0);
  lab_shape_free(&x);
}

/* v16: gtm's checks: every shape at T across its K1 / K2 bounds (words of 32 tokens, one and
 * several K2 rounds), every input kind, U from 1 to 1024, PDL on and off, T = 262144. */
static void gtm_checks(int quick) {
  const int64_t Ts[] = {1, 2, 31, 32, 33, 127, 1000, 1025, 4097, 8193, 65536};
  const int nT = (int)(sizeof Ts / sizeof *Ts);
  for (int si = 0; si < NSHAPE; ++si)
    for (int ti = 0; ti < nT; ++ti) {
      /* quick (the sanitizers' set): four shapes, T = 1 / 33 / 1025 / 4097 */
      if (quick && (si % 2 == 1 || (Ts[ti] != 1 && Ts[ti] != 33 && Ts[ti] != 1025 && Ts[ti] != 4097))) continue;
      const int v = (si + ti) % 3 == 2 ? VAR_GTM + 1 : VAR_GTM; /* a third without PDL */
      check_route(&SHAPES[si], Ts[ti], (si + ti) % 2, v, 0);
      check_sort(&SHAPES[si], Ts[ti], (si + ti + 1) % 2, v, 0);
      if (SHAPES[si].score == MOEROUTE_SCORE_SOFTMAX && !SHAPES[si].bias && SHAPES[si].G == 1 &&
          SHAPES[si].dt != MOEROUTE_DTYPE_FP32) /* PACKED rows: route's fused first launch (K1g) */
        check_route(&SHAPES[si], Ts[ti], (si + ti + 1) % 2, VAR_GTM + 2, 0);
    }
  const int kshapes[] = {0, 3, 4, 5};
  const int64_t kT[] = {33, 1000, 16384};
  for (int kind = KIND_HOT; kind <= KIND_DISTINCT; ++kind)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 3; ++b) {
        if (quick && (b != 1 || a >= 2)) continue;
        g_kind = kind;
        if (kind != KIND_DISTINCT) check_route(&SHAPES[kshapes[a]], kT[b], b % 2, a % 2 ? VAR_GTM : VAR_GTM + 2, 0);
        check_sort(&SHAPES[kshapes[a]], kT[b], (b + 1) % 2, VAR_GTM, 0);
        g_kind = KIND_RANDOM;
      }
  const int Us[] = {1, 16, 64, 128, 1024};
  for (int ui = 0; ui < 5; ++ui)
    for (int a = 0; a < 2; ++a) {
      if (quick && (ui % 2 == 1 || a == 1)) continue;
      g_unit = Us[ui];
      check_route(&SHAPES[a == 0 ? 0 : 4], 100, ui % 2, VAR_GTM, 0);
      check_sort(&SHAPES[a == 0 ? 0 : 4], 5000, (ui + 1) % 2, VAR_GTM, 0);
      g_kind = KIND_DISTINCT;
      check_sort(&SHAPES[a == 0 ? 1 : 5], 777, ui % 2, VAR_GTM, 0);
      g_kind = KIND_RANDOM;
      g_unit = 32;
    }
  if (!quick) {
    check_route(&SHAPES[0], 262144, 1, VAR_GTM, 0);
    check_route(&SHAPES[1], 262144, 0, VAR_GTM + 2, 0);
    check_sort(&SHAPES[0], 262144, 0, VAR_GTM, 0);
    g_kind = KIND_DISTINCT;
    check_sort(&SHAPES[4], 262144, 1, VAR_GTM, 0);
    g_kind = KIND_RANDOM;
  }
  printf("gtm check: %d failure(s)\n", g_fail);
}

int main(int argc, char** argv) {
  int do_time = 1, do_check = 1, quick = 0, only = -1, v6 = 0, seg_only = 0, gtm = 0;
  long long v6_only = 0;
  unsigned v6_shapes = 3u; /* --v6-only's shapes: bit si of SHAPES, then of EXTRA_SHAPES (default
                              deepseek-r1-softmax and gpt-oss-120b) */
  int64_t v6_ts[16];
  int nv6_ts = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--no-time")) do_time = 0;
    else if (!strcmp(argv[i], "--no-check")) do_check = 0;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--seg-only")) seg_only = 1;
    else if (!strcmp(argv[i], "--variant") && i + 1 < argc) only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--v6")) v6 = 1;
    else if (!strcmp(argv[i], "--v6-only") && i + 1 < argc) v6 = 1, v6_only = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--v6-shapes") && i + 1 < argc) { /* --v6-only's shapes by name (default: the first two;
                                                                    without --v6-only it has no effect) */
      v6_shapes = 0;
      for (const char* q = argv[++i]; *q;) {
        size_t len = strcspn(q, ",");
        int found = -1; /* SHAPES' index, or NSHAPE + EXTRA_SHAPES' */
        for (int si = 0; si < NSHAPE + NEXTRA; ++si) {
          const char* nm = si < NSHAPE ? SHAPES[si].name : EXTRA_SHAPES[si - NSHAPE].name;
          if (strlen(nm) == len && !strncmp(nm, q, len)) found = si;
        }
        if (found < 0) {
          fprintf(stderr, "--v6-shapes: no shape '%.*s'\n", (int)len, q);
          return 2;
        }
        v6_shapes |= 1u << found;
        q += len;
        if (*q == ',') ++q;
      }
    }
    else if (!strcmp(argv[i], "--v6-notime")) g_v6_notime = 1;
    else if (!strcmp(argv[i], "--v6-ts") && i + 1 < argc) { /* the T of DeepSeek-R1 softmax and GPT-OSS-120B */
      for (const char* q = argv[++i]; *q && nv6_ts < 16;) {
        v6_ts[nv6_ts++] = atoll(q);
        while (*q && *q != ',') ++q;
        if (*q == ',') ++q;
      }
    } else if (!strcmp(argv[i], "--v6-variant") && i + 1 < argc) {
      for (const char* q = argv[++i]; *q;) {
        const int v = atoi(q);
        if (v <= 0 || v >= NV6) {
          fprintf(stderr, "--v6-variant: %d is not a variant (1 .. %d; auto, 0, is always the reference)\n", v,
                  NV6 - 1);
          return 2;
        }
        g_v6_mask |= 1ull << v;
        while (*q && *q != ',') ++q;
        if (*q == ',') ++q;
      }
    }
    else if (!strcmp(argv[i], "--share-sweep")) v6 = 2;
    else if (!strcmp(argv[i], "--gtm")) gtm = 1;
    else if (!strcmp(argv[i], "--gtm-stamps")) gtm = 2;
    else {
      printf("usage: large_lab [--no-time] [--no-check] [--quick] [--variant N] [--v6] [--v6-variant a,b,..] "
             "[--v6-ts T1,T2,..] [--v6-only T [--v6-shapes name,..]] [--v6-notime] [--share-sweep] [--gtm]\n");
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  if (gtm == 2) {
    const int64_t Ts[] = {16, 1024, 16384, 65536};
    for (g_stamp_graph = 0; g_stamp_graph < 2; ++g_stamp_graph) {
      printf("stamps: %s\n", g_stamp_graph ? "the last call of a graph of 20 back-to-back calls" : "one eager call");
      for (int ti = 0; ti < 4; ++ti) gtm_stamps(&SHAPES[0], Ts[ti], s);
      gtm_stamps(&SHAPES[4], 16384, s);
    }
    CK(cudaStreamDestroy(s));
    return 0;
  }
  if (gtm) { /* v16: gtm's checks (--no-check skips them), then its timing table (--no-time skips it) */
    if (do_check) gtm_checks(quick);
    if (do_time) {
      const int64_t Ts[] = {16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
      for (int ti = 0; ti < 12; ++ti) gtm_time_shape(&SHAPES[0], Ts[ti], s);
      const int64_t Ts2[] = {128, 1024, 4096, 16384, 65536};
      const int others[] = {1, 3, 4};
      for (int si = 0; si < 3; ++si)
        for (int ti = 0; ti < (quick ? 3 : 5); ++ti) gtm_time_shape(&SHAPES[others[si]], Ts2[ti], s);
      printf("gtm time: %d disagreement(s)\n", g_fail);
    }
    CK(cudaStreamDestroy(s));
    return g_fail ? 1 : 0;
  }
  if (v6 == 2) { /* the mid sort's share at small n (perf-log v8 "Next"): 4 presets, T = 17 .. 2048 */
    const int64_t Ts[] = {17, 24, 32, 48, 64, 128, 256, 512, 1024, 2048};
    const int shapes[] = {0, 1, 3, 4};
    for (int si = 0; si < 4; ++si)
      for (int ti = 0; ti < (int)(sizeof Ts / sizeof *Ts); ++ti) v6_shape(&SHAPES[shapes[si]], Ts[ti], s);
    printf("v6 check: %d failure(s)\n", g_fail);
    CK(cudaStreamDestroy(s));
    return g_fail ? 1 : 0;
  }
  if (v6) {
    const int64_t Tdef[] = {64, 130, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
    const int64_t* Ts = nv6_ts > 0 ? v6_ts : Tdef;
    const int nts = nv6_ts > 0 ? nv6_ts : (int)(sizeof Tdef / sizeof *Tdef);
    if (v6_only > 0) {
      for (int si = 0; si < NSHAPE + NEXTRA; ++si)
        if ((v6_shapes >> si) & 1u) v6_shape(si < NSHAPE ? &SHAPES[si] : &EXTRA_SHAPES[si - NSHAPE], v6_only, s);
    } else {
      for (int si = 0; si < 2; ++si)
        for (int ti = 0; ti < nts; ++ti) v6_shape(&SHAPES[si], Ts[ti], s);
      for (int si = 2; si < 5; ++si) v6_shape(&SHAPES[si], 1024, s);
    }
    printf("v6 check: %d failure(s)\n", g_fail);
    CK(cudaStreamDestroy(s));
    return g_fail ? 1 : 0;
  }
  if (do_check) {
    const int64_t Ts[] = {129, 1000, 4097, 65536};
    for (int v = 0; v < NVAR; ++v) {
      if (only >= 0 && v != only) continue;
      for (int si = 0; si < NSHAPE; ++si) {
        for (int ti = 0; ti < 4; ++ti) {
          if (quick && ti == 3) continue;
          if (Ts[ti] >= 65536 && si >= 2 && v != 0) continue; /* the big ones: default only for the slow shapes */
          check_route(&SHAPES[si], Ts[ti], (si + ti + v) % 2, v, 0);
          check_sort(&SHAPES[si], Ts[ti], (si + ti + v + 1) % 2, v, 0);
        }
      }
    }
    /* the large path forced at tiny T (empty slices, one chunk), default variant; and the wide
     * L1 by segments forced (variant 19) with the segment rows forced too (gate_lpr = 8), whose
     * chunk cap matters at T = 1 */
    const int64_t tiny[] = {1, 2, 7, 33, 128};
    for (int si = 0; si < NSHAPE; ++si)
      for (int ti = 0; ti < 5; ++ti) {
        check_route(&SHAPES[si], tiny[ti], (si + ti) % 2, 0, 1);
        check_sort(&SHAPES[si], tiny[ti], (si + ti + 1) % 2, 0, 1);
        g_gate_lpr = 8;
        check_route(&SHAPES[si], tiny[ti], (si + ti) % 2, 19, 1);
        g_gate_lpr = 0;
      }
    /* T = 262144 (many passes per warp), default variant */
    if (!quick) {
      check_route(&SHAPES[0], 262144, 1, 0, 0);
      check_sort(&SHAPES[0], 262144, 0, 0, 0);
    }
    printf("check: %d failure(s)\n", g_fail);
  }
  if (do_time && seg_only) { /* session 15: the L1 by segments' rule above T*k = 65536 (DeepSeek-R1 softmax, GPT-OSS-120B) */
    const int64_t Ts[] = {8192, 16384, 32768, 65536};
    for (int si = 0; si < 2; ++si)
      for (int ti = si == 0 ? 1 : 0; ti < 4; ++ti) time_shape(&SHAPES[si], Ts[ti], only, s);
  } else if (do_time) {
    const int64_t Ts[] = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
    for (int ti = 0; ti < 7; ++ti) time_shape(&SHAPES[0], Ts[ti], only, s);
    if (!quick)
      for (int si = 1; si < 5; ++si) {
        time_shape(&SHAPES[si], 4096, only, s);
        time_shape(&SHAPES[si], 16384, only, s);
      }
  }
  CK(cudaStreamDestroy(s));
  return g_fail ? 1 : 0;
}
