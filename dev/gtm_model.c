/*
 * gtm_model.c - a host (C99) model of the grid token-mask sort (src/cuda/gtm.cu, gtm.cuh),
 * line by line: mr_gtm_plan (gate = 0, the sort's K1: NB raised to 32 bytes, or
 * 4 max_swr; gate = 1, route's K1g: NB as before, 1 or 2 bytes possible), K1 (mr_gtm_mask_kernel:
 * per CTA, shared masks, mr_gtm_k1_mark with the duplicate row set from the atomicOr's old value,
 * mr_gtm_k1_publish's write-out of the (2 + P) E rows and the last CTA's words [W, Wp), the
 * zeroed status words) and K2 (mr_gtm_place_kernel<NT>: per CTA, per thread, between the
 * barriers: mask, duplicate and plane words, mr_gtm_count with the multiplicities of the
 * duplicated tokens, the batch path or the one-at-a-time path per thread), checked bit for bit
 * against the CPU backend (moeroute_cpu_sort) on random cases. With the gate plan, K1g's gating
 * is not modelled, only its masks (the same mark and publish code) from the case's topk_ids.
 *
 * This model found a bug in 2edbcba (fixed in the next commit): K1 read its enabled flags at
 * sm + (1 + P) E swr, the duplicate rows, which are zero, so every entry was dropped
 * (--bug 7 models it).
 *
 * The workspace (status: E lines of 128 bytes | masks [(2 + P) E][Wp]) starts as 0xAB garbage;
 * every workspace byte K1 writes is counted, and every mask byte must be written exactly once
 * by K1 (words < W by their owner CTA, [W, Wp) by the last) and every word K2 loads (16 bytes,
 * [W, Wp) included) before K2 reads it; status words must be K1's zeros when K2 starts and
 * carry the flag when a higher CTA reads them (K2's CTAs run in index order, each to its end:
 * the in-order dispatch the spin relies on). Every output position is bounds-checked and must
 * be written exactly once below total, never at or beyond it. moe_buf (random size and
 * alignment) is cleared by the model of K2's clear CTAs (first in the grid).
 *
 * Build (CPU-only library: cmake -S . -B /tmp/gm -DMOEROUTE_CUDA=OFF && cmake --build /tmp/gm):
 *   gcc -O2 -std=c99 -Wall -Wextra -pedantic -Iinclude dev/gtm_model.c /tmp/gm/libmoeroute.a -lm -o /tmp/gtm_model
 * Run:
 *   /tmp/gtm_model [cases=3000] [seed=1] [--gate 0|1] [--bug N]   (no --gate: 1 case in 4 the gate plan)
 *   /tmp/gtm_model --plan SMS GATE < lines of "T E k U" (the plans, to diff against the library's mr_gtm_plan)
 *   --bug 1: slot plane p read as bit p + 1 of j (off by one in the planes' j), K1
 *   --bug 2: start sums the statuses of x <= e - 2 only (off by one in the start sum), K2
 *   --bug 3: the write-out guard w <= nw (one word too many), K1
 *   --bug 4: words [W, Wp) neither zeroed by K1's last CTA nor masked by mr_gtm_load4 (K2)
 *   --bug 5: K1's CTA 0 does not zero the status words
 *   --bug 6: K1 does not set the duplicate row (mr_gtm_k1_mark)
 *   --bug 7: K1 reads the enabled flags at sm + (1 + P) E swr (2edbcba's gtm.cu:82, gtm_gate.cu:38, 62)
 * Exit status 0 when every case matched.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "moeroute.h"

/* ---- constants of gtm.cu / gtm.cuh ---------------------------------------------------- */
#define K1_THREADS 256u            /* MR_GTM_K1_THREADS */
#define MAX_PLANES 5               /* k <= 32: P <= 5 */
#define GV 4                       /* MR_GTM_V */
#define SMEM_WORDS (48u * 1024u / 4u)
#define MAX_MASK_BYTES ((size_t)64 << 20)
#define FLAG (1ull << 63)
#define EN_SHIFT 40
#define NONE 0xffffffffu
#define BATCH 8
#define GARBAGE 0xABu

static int g_bug = 0;
static int g_gate = -1;       /* the plan's gate: -1 = random per case (1 in 4: the K1g plan) */
static long g_dup_threads;    /* K2 thread-rounds on the one-at-a-time (duplicate) path */

/* ---- failure reporting ---------------------------------------------------------------- */
static char g_why[512];
static int g_fail; /* this case failed */
static void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char* fmt, ...) {
  if (!g_fail) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_why, sizeof g_why, fmt, ap);
    va_end(ap);
  }
  g_fail = 1;
}

/* ---- device helpers ------------------------------------------------------------------- */
static uint32_t mr_magic(uint32_t d) { return d <= 1u ? 0u : (uint32_t)((((uint64_t)1 << 32) + d - 1u) / d); }
static uint32_t mr_udiv(uint32_t x, uint32_t d, uint32_t m) {
  uint32_t r;
  if (m == 0u) r = x;
  else r = x < (1u << 22) ? (uint32_t)(((uint64_t)x * m) >> 32) : x / d;
  if (d == 0u || r != x / d) fail("mr_udiv(%u, %u) = %u, not %u", x, d, r, d ? x / d : 0u);
  return r;
}
static uint32_t popc(uint32_t x) { return (uint32_t)__builtin_popcount(x); }
static uint32_t ffs1(uint32_t x) { return x ? (uint32_t)__builtin_ctz(x) + 1u : 0u; } /* __ffs */
static uint32_t umin(uint32_t a, uint32_t b) { return a < b ? a : b; }

typedef struct { uint32_t x, y, z, w; } u4;
static u4 mk4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { u4 v; v.x = a; v.y = b; v.z = c; v.w = d; return v; }
static uint32_t word4(const u4* v, int q) { return q == 0 ? v->x : q == 1 ? v->y : q == 2 ? v->z : v->w; }

/* ---- the plan (mr_gtm_plan) ------------------------------------------------------------ */
typedef struct {
  uint32_t T, E, k, U, W, Wp, NB, swr, swr_magic, G1, planes, rounds;
  unsigned nt;
  int gate; /* mr_gtm_plan's gate: 0 = K1 (the sort), 1 = K1g (route) */
  size_t smem, off[2], bytes, mask_bytes;
} gplan;

static uint32_t gtm_planes(uint32_t k) {
  uint32_t p = 0u;
  while ((1u << p) < k) ++p;
  return p;
}
#define ALIGN256(x) (((x) + 255u) & ~(size_t)255u)
static uint32_t gtm_rows(const gplan* g) { return (2u + g->planes) * g->E; } /* mr_gtm_rows */
static uint32_t k1_words(const gplan* g) { return gtm_rows(g) * g->swr + g->E; }

static int gtm_plan(int64_t T, int64_t E, int64_t k, int32_t U, uint32_t sm_count, int gate, gplan* g) {
  if (T < 1 || E < 1 || E > 1024 || k < 1 || k > 32 || T * k >= ((int64_t)1 << 31)) return 0;
  memset(g, 0, sizeof *g);
  g->T = (uint32_t)T;
  g->E = (uint32_t)E;
  g->k = (uint32_t)k;
  g->U = (uint32_t)U;
  g->gate = gate;
  g->planes = gtm_planes(g->k);
  g->W = (uint32_t)((T + 31) / 32);
  g->Wp = (g->W + 3u) & ~3u;
  const uint32_t rows = gtm_rows(g);
  const size_t mask_bytes = (size_t)rows * g->Wp * 4u;
  if (mask_bytes > MAX_MASK_BYTES) return 0;
  const uint32_t max_swr = (SMEM_WORDS - g->E) / rows;
  if (max_swr < 1u) return 0;
  const uint32_t b4 = 4u * g->W, target = 2u * sm_count;
  uint32_t NB = (b4 + target - 1u) / target;
  if (!gate && NB < 32u) NB = max_swr >= 8u ? 32u : 4u * max_swr; /* K1: whole 32-byte sectors */
  if (NB > 2u) {
    uint32_t swr = (NB + 3u) / 4u;
    if (swr > max_swr) swr = max_swr;
    NB = 4u * swr;
  }
  g->NB = NB;
  g->swr = (NB + 3u) / 4u;
  g->swr_magic = mr_magic(g->swr);
  g->G1 = (b4 + NB - 1u) / NB;
  g->smem = (size_t)k1_words(g) * 4u;
  g->nt = g->W <= 256u ? 64u : 256u;
  g->rounds = (g->W + g->nt * GV - 1u) / (g->nt * GV);
  g->off[0] = 0;
  g->off[1] = ALIGN256((size_t)g->E * 128u); /* masks (status: a 128-byte line each, MR_GTM_SSTRIDE) */
  g->bytes = g->off[1] + ALIGN256(mask_bytes);
  g->mask_bytes = mask_bytes;
  return 1;
}

/* ---- the workspace: garbage, bounds, write counts ------------------------------------- */
static unsigned char* ws;    /* [bytes] */
static unsigned char* wcnt;  /* writes per byte (saturating) */
static size_t ws_bytes;

static void ws_write(size_t off, const void* v, size_t n, const char* what) {
  if (off + n > ws_bytes || off + n < off) {
    fail("%s: workspace write [%zu, +%zu) beyond %zu bytes", what, off, n, ws_bytes);
    return;
  }
  memcpy(ws + off, v, n);
  for (size_t i = 0; i < n; ++i)
    if (wcnt[off + i] < 255u) ++wcnt[off + i];
}
static void ws_read(size_t off, void* v, size_t n, const char* what) {
  if (off + n > ws_bytes || off + n < off) {
    fail("%s: workspace read [%zu, +%zu) beyond %zu bytes", what, off, n, ws_bytes);
    memset(v, 0, n);
    return;
  }
  memcpy(v, ws + off, n);
}
static int ws_written(size_t off, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (off + i >= ws_bytes || wcnt[off + i] == 0u) return 0;
  return 1;
}

/* ---- the kernel arguments (mr_sort_out) and the outputs with write counts -------------- */
typedef struct {
  int32_t *sorted_ids, *sorted_expert_ids, *num_valid_ids, *sorted_token_ids, *expert_ids, *num_tokens_post_pad;
  float* sorted_weights;
  const int32_t* expert_mask;
  int64_t num_tokens;
  int32_t num_experts, top_k, unit_size;
  unsigned char* moe_buf;
  size_t moe_buf_bytes;
  uint32_t u_magic, k_magic;
  /* capacities and write counts (model only) */
  int64_t ck_len, ck_blocks, vl_len, vl_blocks;
  uint8_t *wc_ck, *wc_vl, *wc_ckb, *wc_vlb, *wc_tot;
} sort_out;

static void cnt_inc(uint8_t* c, size_t i) {
  if (c[i] < 255u) ++c[i];
}
static void emit_entry_at(const sort_out* o, uint32_t pos, uint32_t i, uint32_t t, uint32_t slot, uint32_t wb) {
  if (o->sorted_ids) {
    if ((int64_t)pos >= o->ck_len) {
      fail("entry position %u beyond sorted_ids (%lld)", pos, (long long)o->ck_len);
      return;
    }
    o->sorted_ids[pos] = (int32_t)((slot << 24) | t);
    if (o->sorted_weights) memcpy(&o->sorted_weights[pos], &wb, 4);
    cnt_inc(o->wc_ck, pos);
  }
  if (o->sorted_token_ids) {
    if ((int64_t)pos >= o->vl_len) {
      fail("entry position %u beyond sorted_token_ids (%lld)", pos, (long long)o->vl_len);
      return;
    }
    o->sorted_token_ids[pos] = (int32_t)i;
    cnt_inc(o->wc_vl, pos);
  }
}
static void emit_pad_slot(const sort_out* o, uint32_t pos) {
  const uint32_t T = (uint32_t)o->num_tokens, k = (uint32_t)o->top_k;
  if (o->sorted_ids) {
    if ((int64_t)pos >= o->ck_len) {
      fail("pad position %u beyond sorted_ids (%lld)", pos, (long long)o->ck_len);
      return;
    }
    o->sorted_ids[pos] = (int32_t)((k << 24) | T);
    if (o->sorted_weights) o->sorted_weights[pos] = 0.0f;
    cnt_inc(o->wc_ck, pos);
  }
  if (o->sorted_token_ids) {
    if ((int64_t)pos >= o->vl_len) {
      fail("pad position %u beyond sorted_token_ids (%lld)", pos, (long long)o->vl_len);
      return;
    }
    o->sorted_token_ids[pos] = (int32_t)(T * k);
    cnt_inc(o->wc_vl, pos);
  }
}
static void emit_block_id(const sort_out* o, uint32_t b, int32_t local) {
  if (o->sorted_expert_ids) {
    if ((int64_t)b >= o->ck_blocks) {
      fail("block %u beyond sorted_expert_ids (%lld)", b, (long long)o->ck_blocks);
      return;
    }
    o->sorted_expert_ids[b] = local;
    cnt_inc(o->wc_ckb, b);
  }
  if (o->expert_ids) {
    if ((int64_t)b >= o->vl_blocks) {
      fail("block %u beyond expert_ids (%lld)", b, (long long)o->vl_blocks);
      return;
    }
    o->expert_ids[b] = local;
    cnt_inc(o->wc_vlb, b);
  }
}
static void emit_totals(const sort_out* o, uint32_t total) {
  if (o->num_valid_ids) {
    o->num_valid_ids[0] = (int32_t)total;
    o->num_valid_ids[1] = (int32_t)o->num_tokens;
  }
  if (o->num_tokens_post_pad) o->num_tokens_post_pad[0] = (int32_t)total;
  cnt_inc(o->wc_tot, 0);
}

/* mr_clear_bytes: part of parts threads */
static void clear_bytes(unsigned char* p, size_t n, size_t part, size_t parts) {
  if (n == 0) return;
  size_t head = (size_t)((16u - ((uintptr_t)p & 15u)) & 15u);
  if (head > n) head = n;
  const size_t body = (n - head) / 16;
  const size_t tail = n - head - body * 16;
  unsigned char* q = p + head;
  size_t i = part;
  for (; i + 3 * parts < body; i += 4 * parts) {
    memset(q + 16 * i, 0, 16);
    memset(q + 16 * (i + parts), 0, 16);
    memset(q + 16 * (i + 2 * parts), 0, 16);
    memset(q + 16 * (i + 3 * parts), 0, 16);
  }
  for (; i < body; i += parts) memset(q + 16 * i, 0, 16);
  if (part < head) p[part] = 0;
  if (part < tail) p[head + body * 16 + part] = 0;
}
/* mr_cuda_clear_ctas */
static int clear_ctas(size_t bytes, int threads, uint32_t sm_count) {
  if (bytes == 0) return 0;
  const size_t per_cta = (size_t)threads * 16u * 4u;
  size_t n = (bytes + per_cta - 1) / per_cta;
  const size_t cap = (size_t)sm_count * 4u;
  if (n > cap) n = cap;
  return (int)n;
}

/* ---- K1: mr_gtm_mask_kernel, CTA c -------------------------------------------------- */
static uint32_t* smem;    /* [SMEM_WORDS] of the CTA */
static uint32_t smem_n;   /* words of the launch's dynamic shared memory */

static uint32_t sm_ld(uint32_t q) {
  if (q >= smem_n) {
    fail("K1 shared read [%u] beyond %u words", q, smem_n);
    return 0u;
  }
  return smem[q];
}
static void sm_st(uint32_t q, uint32_t v) {
  if (q >= smem_n) {
    fail("K1 shared write [%u] beyond %u words", q, smem_n);
    return;
  }
  smem[q] = v;
}
static uint32_t sm_atomic_or(uint32_t q, uint32_t v) {
  const uint32_t old = sm_ld(q);
  sm_st(q, old | v);
  return old;
}

/* mr_gtm_k1_mark: a bit already set (the atomic's old value) sets the token's bit in the
 * duplicate row (1 + P) E + e */
static void k1_mark(const gplan* g, uint32_t e, uint32_t lt, uint32_t j) {
  const uint32_t w = lt >> 5, bit = 1u << (lt & 31u), swr = g->swr;
  if (w >= swr) fail("K1 mark: word %u of the CTA's %u (lt = %u)", w, swr, lt);
  if (sm_atomic_or(e * swr + w, bit) & bit) {
    if (g_bug != 6) (void)sm_atomic_or(((1u + g->planes) * g->E + e) * swr + w, bit);
  }
  for (uint32_t p = 0; p < g->planes; ++p) {
    const uint32_t pb = g_bug == 1 ? p + 1u : p;
    if ((j >> pb) & 1u) (void)sm_atomic_or(((1u + p) * g->E + e) * swr + w, bit);
  }
}

/* mr_gtm_mask_kernel (gtm.cu), CTA c; K1g (gtm_gate.cu) shares mr_gtm_k1_begin, mr_gtm_k1_mark
 * and mr_gtm_k1_publish with it: with g->gate its plan's NB, the marks still from topk_ids */
static void k1_cta(const gplan* g, const sort_out* o, const int32_t* topk_ids, uint32_t c) {
  const uint32_t E = g->E, k = g->k;
  smem_n = k1_words(g);
  if ((size_t)smem_n * 4u != g->smem || g->smem > 48u * 1024u) fail("K1 smem %zu bytes (words %u)", g->smem, smem_n);
  memset(smem, GARBAGE, (size_t)SMEM_WORDS * 4u);
  /* const uint32_t* en = sm + rows * swr: where mr_gtm_k1_begin writes the flags (2edbcba read
   * them at (1 + P) E swr, the duplicate rows: --bug 7) */
  const uint32_t en_off = g_bug == 7 ? (1u + g->planes) * g->E * g->swr : gtm_rows(g) * g->swr;
  /* mr_gtm_k1_begin */
  const uint32_t masks = gtm_rows(g) * g->swr;
  for (uint32_t tid = 0; tid < K1_THREADS; ++tid)
    for (uint32_t q = tid; q < masks; q += K1_THREADS) sm_st(q, 0u);
  /* mr_pdl_enter */
  for (uint32_t tid = 0; tid < K1_THREADS; ++tid) {
    for (uint32_t e = tid; e < E; e += K1_THREADS)
      sm_st(masks + e, o->expert_mask == NULL || o->expert_mask[e] != 0 ? 1u : 0u);
    if (c == 0u && g_bug != 5)
      for (uint32_t e = tid; e < E; e += K1_THREADS) {
        const uint64_t z = 0ull;
        ws_write(g->off[0] + (size_t)e * 128u, &z, 8, "K1 status zero");
      }
  }
  /* __syncthreads */
  const uint32_t t0 = c * g->NB * 8u;
  const uint32_t t1 = umin(g->T, t0 + g->NB * 8u);
  const uint32_t i1 = t0 < t1 ? t1 * k : 0u;
  for (uint32_t tid = 0; tid < K1_THREADS; ++tid) {
    for (uint32_t i = t0 * k + tid; i < i1; i += 4u * K1_THREADS) {
      int32_t x[4];
      for (int u = 0; u < 4; ++u) {
        const uint32_t iu = i + (uint32_t)u * K1_THREADS;
        x[u] = iu < i1 ? topk_ids[iu] : -1;
      }
      for (int u = 0; u < 4; ++u) {
        const uint32_t e = (uint32_t)x[u];
        if (e >= E || sm_ld(en_off + e) == 0u) continue;
        const uint32_t iu = i + (uint32_t)u * K1_THREADS;
        const uint32_t t = mr_udiv(iu, k, o->k_magic);
        if (t < t0 || t >= t1) fail("K1 CTA %u: token %u outside [%u, %u)", c, t, t0, t1);
        k1_mark(g, e, t - t0, iu - t * k);
      }
    }
  }
  /* mr_gtm_k1_publish: __syncthreads, then the CTA's bytes of every row */
  const uint32_t rows = gtm_rows(g);
  for (uint32_t tid = 0; tid < K1_THREADS; ++tid) {
    if ((g->NB & 3u) == 0u) {
      const uint32_t wbase = c * g->swr, nw = umin(g->swr, g->W - wbase);
      for (uint32_t q = tid; q < rows * g->swr; q += K1_THREADS) {
        const uint32_t r = mr_udiv(q, g->swr, g->swr_magic), w = q - r * g->swr;
        if (g_bug == 3 ? w <= nw : w < nw) {
          const uint32_t v = sm_ld(q);
          ws_write(g->off[1] + ((size_t)r * g->Wp + wbase + w) * 4u, &v, 4, "K1 mask word");
        }
      }
    } else {
      if (!g->gate || g->swr != 1u || g->NB > 2u) fail("K1 byte path with NB = %u, swr = %u, gate %d", g->NB, g->swr, g->gate);
      const uint32_t bbase = c * g->NB, nb = umin(g->NB, 4u * g->W - bbase);
      for (uint32_t q = tid; q < rows * g->NB; q += K1_THREADS) {
        const uint32_t r = g->NB == 1u ? q : q >> 1, b = q - r * g->NB;
        if (b < nb) {
          const unsigned char v = (unsigned char)(sm_ld(r) >> (8u * b));
          ws_write(g->off[1] + ((size_t)r * g->Wp) * 4u + bbase + b, &v, 1, "K1 mask byte");
        }
      }
    }
    if (c == g->G1 - 1u && g_bug != 4) { /* the last CTA zeroes words [W, Wp) of every row */
      const uint32_t pw = g->Wp - g->W;
      for (uint32_t q = tid; q < rows * pw; q += K1_THREADS) {
        const uint32_t r = q / pw, v = 0u;
        ws_write(g->off[1] + ((size_t)r * g->Wp + g->W + (q - r * pw)) * 4u, &v, 4, "K1 tail word");
      }
    }
  }
}

/* ---- K2: mr_gtm_place_kernel<NT>, CTA e ---------------------------------------------- */

/* mr_gtm_load4: __ldcg of a uint4, words >= W zeroed; words < W must have been written */
static u4 load4(const gplan* g, uint32_t r, uint32_t base) {
  u4 v = mk4(0u, 0u, 0u, 0u);
  if (base < g->W) {
    const size_t off = g->off[1] + ((size_t)r * g->Wp + base) * 4u;
    if (off % 16u != 0u) fail("K2 uint4 load at workspace offset %zu (not 16-byte aligned)", off);
    if ((size_t)r * g->Wp + base + 4u > (size_t)gtm_rows(g) * g->Wp)
      fail("K2 uint4 load of row %u word %u beyond the masks", r, base);
    uint32_t tmp[4];
    ws_read(off, tmp, 16, "K2 mask load");
    for (uint32_t q = 0; q < 4u; ++q) /* every word of the 16-byte load (initcheck's view) */
      if (!ws_written(off + 4u * q, 4)) fail("K2 reads mask row %u word %u before K1 wrote it", r, base + q);
    v = mk4(tmp[0], tmp[1], tmp[2], tmp[3]);
    if (g_bug != 4) {
      if (base + 1u >= g->W) v.y = 0u;
      if (base + 2u >= g->W) v.z = 0u;
      if (base + 3u >= g->W) v.w = 0u;
    }
  }
  return v;
}

static uint32_t gtm_mult(const int32_t* ids, uint32_t t, uint32_t k, uint32_t e) {
  uint32_t n = 0u;
  for (uint32_t j = 0; j < k; ++j) n += (uint32_t)ids[(size_t)t * k + j] == e ? 1u : 0u;
  return n;
}
/* mr_gtm_count: popcounts of the tokens not in the duplicate words dm, multiplicities of those in them */
static uint32_t gtm_count(const u4* m, const u4* dm, uint32_t base, const int32_t* ids, uint32_t k, uint32_t e) {
  uint32_t c = 0u;
  for (int q = 0; q < GV; ++q) {
    uint32_t bits = word4(dm, q);
    if ((bits & ~word4(m, q)) != 0u) fail("duplicate bits %#x outside the mask word %#x", bits, word4(m, q));
    c += popc(word4(m, q) & ~bits);
    while (bits) {
      const uint32_t b = ffs1(bits) - 1u;
      bits &= bits - 1u;
      c += gtm_mult(ids, (base + (uint32_t)q) * 32u + b, k, e);
    }
  }
  return c;
}
static uint32_t gtm_next(const u4* m, uint32_t* q, uint32_t* bits) {
  while (*bits == 0u && *q < (uint32_t)GV - 1u) *bits = word4(m, (int)++*q);
  if (*bits == 0u) return NONE;
  const uint32_t b = ffs1(*bits) - 1u;
  *bits &= *bits - 1u;
  return *q * 32u + b;
}
static uint32_t gtm_slot(const u4* pl, uint32_t l) {
  const int q = (int)(l >> 5);
  const uint32_t b = l & 31u;
  uint32_t j = 0u;
  for (int p = 0; p < MAX_PLANES; ++p) j |= ((word4(&pl[p], q) >> b) & 1u) << p;
  return j;
}

typedef struct {
  const int32_t* ids;
  const float* weights; /* topk_weights or NULL */
  int64_t n;            /* T*k */
} k2_in;

static uint32_t ld_weight_bits(const k2_in* in, uint32_t idx) {
  if (in->weights == NULL || (int64_t)idx >= in->n) {
    fail("K2 weight load [%u] outside topk_weights (%lld)", idx, (long long)in->n);
    return 0u;
  }
  uint32_t v;
  memcpy(&v, &in->weights[idx], 4);
  return v;
}
static void gtm_batch(const u4* m, const u4* pl, uint32_t* q, uint32_t* bits, uint32_t base, uint32_t k, int want_w,
                      const k2_in* in, uint32_t* li, uint32_t* wb) {
  for (int u = 0; u < BATCH; ++u) li[u] = gtm_next(m, q, bits);
  for (int u = 0; u < BATCH; ++u) {
    wb[u] = 0u;
    if (li[u] != NONE && want_w) {
      const uint32_t j = gtm_slot(pl, li[u]);
      if (j < k) wb[u] = ld_weight_bits(in, (base * 32u + li[u]) * k + j);
    }
  }
}

/* per-thread state of one CTA */
typedef struct {
  u4 m0, dm0, pl0[MAX_PLANES];
  uint32_t cq, cbits, li[BATCH], wb[BATCH], cnt, c, pos;
  uint64_t acc;
} k2_thread;
static k2_thread th[256];

/* the warp inclusive scan, s_warp, and the exclusive result (mr_gtm_block_scan) */
static void block_scan(unsigned NT, const uint32_t* v, uint32_t* out, uint32_t* total) {
  uint32_t s_warp[8], inc[256];
  for (unsigned w = 0; w < NT / 32u; ++w) {
    uint32_t x[32];
    for (unsigned l = 0; l < 32u; ++l) x[l] = v[w * 32u + l];
    for (unsigned off = 1; off < 32u; off <<= 1) { /* __shfl_up_sync, all lanes read first */
      uint32_t y[32];
      for (unsigned l = 0; l < 32u; ++l) y[l] = x[l >= off ? l - off : l];
      for (unsigned l = 0; l < 32u; ++l) x[l] += l >= off ? y[l] : 0u;
    }
    for (unsigned l = 0; l < 32u; ++l) inc[w * 32u + l] = x[l];
    s_warp[w] = x[31];
  }
  for (unsigned tid = 0; tid < NT; ++tid) {
    const uint32_t warp = tid >> 5;
    uint32_t before = 0u, sum = 0u;
    for (unsigned q = 0; q < NT / 32u; ++q) {
      before += q < warp ? s_warp[q] : 0u;
      sum += s_warp[q];
    }
    out[tid] = before + inc[tid] - v[tid];
    *total = sum; /* every thread the same */
  }
}
static uint64_t block_sum64(unsigned NT, const uint64_t* v) {
  uint64_t s_warp[8], sum = 0ull;
  for (unsigned w = 0; w < NT / 32u; ++w) {
    uint64_t x[32];
    for (unsigned l = 0; l < 32u; ++l) x[l] = v[w * 32u + l];
    for (unsigned off = 16; off > 0; off >>= 1) { /* __shfl_xor_sync */
      uint64_t y[32];
      for (unsigned l = 0; l < 32u; ++l) y[l] = x[l ^ off];
      for (unsigned l = 0; l < 32u; ++l) x[l] += y[l];
    }
    s_warp[w] = x[0];
  }
  for (unsigned q = 0; q < NT / 32u; ++q) sum += s_warp[q];
  return sum;
}

static void k2_cta(const gplan* g, const sort_out* o, const k2_in* in, uint32_t e) {
  const unsigned NT = g->nt;
  const uint32_t E = g->E, k = g->k, U = g->U;
  uint32_t vtmp[256], stmp[256];
  uint64_t v64[256];
  /* A. (after mr_pdl_enter) */
  const int want_w = o->sorted_ids != NULL && o->sorted_weights != NULL && in->weights != NULL;
  const uint32_t drow = (1u + g->planes) * E + e;
  for (unsigned tid = 0; tid < NT; ++tid) {
    k2_thread* s = &th[tid];
    const uint32_t base0 = tid * GV;
    s->m0 = load4(g, e, base0);
    s->dm0 = load4(g, drow, base0);
    for (int p = 0; p < MAX_PLANES; ++p)
      s->pl0[p] = (uint32_t)p < g->planes ? load4(g, (1u + (uint32_t)p) * E + e, base0) : mk4(0u, 0u, 0u, 0u);
    s->cq = 0u;
    s->cbits = s->m0.x;
    gtm_batch(&s->m0, s->pl0, &s->cq, &s->cbits, base0, k, want_w, in, s->li, s->wb);
  }
  for (unsigned tid = 0; tid < NT; ++tid) {
    k2_thread* s = &th[tid];
    const uint32_t base0 = tid * GV;
    s->cnt = gtm_count(&s->m0, &s->dm0, base0, in->ids, k, e);
    for (uint32_t r = 1; r < g->rounds; ++r) {
      const uint32_t base = (r * NT + tid) * GV;
      const u4 m = load4(g, e, base), dm = load4(g, drow, base);
      s->cnt += gtm_count(&m, &dm, base, in->ids, k, e);
    }
    v64[tid] = s->cnt;
  }
  const uint64_t total64 = block_sum64(NT, v64);
  const uint32_t total = (uint32_t)total64;
  const int en = o->expert_mask == NULL || o->expert_mask[e] != 0;
  const uint32_t pad = mr_udiv(total + U - 1u, U, o->u_magic) * U;
  {
    const uint64_t st = FLAG | ((uint64_t)(en ? 1u : 0u) << EN_SHIFT) | pad;
    ws_write(g->off[0] + (size_t)e * 128u, &st, 8, "K2 status");
  }
  /* B. warp 0 alone, eight loads in flight per lane (x < e, else FLAG), the sum over the block */
  for (unsigned tid = 0; tid < NT; ++tid) {
    uint64_t acc = 0ull;
    const uint32_t xe = g_bug == 2 && e > 0u ? e - 1u : e;
    if (tid < 32u)
      for (uint32_t x0 = tid; x0 < xe; x0 += 8u * 32u) {
        uint64_t v[8];
        for (int u = 0; u < 8; ++u) {
          const uint32_t x = x0 + (uint32_t)u * 32u;
          v[u] = FLAG;
          if (x < xe) ws_read(g->off[0] + (size_t)x * 128u, &v[u], 8, "K2 status load");
        }
        for (int u = 0; u < 8; ++u) {
          if ((v[u] & FLAG) == 0ull) {
            fail("K2 CTA %u: status[%u] has no flag (would spin for ever)", e, x0 + (uint32_t)u * 32u);
            v[u] = FLAG;
          }
          acc += v[u] & ~FLAG;
        }
      }
    v64[tid] = acc;
  }
  const uint64_t acc = block_sum64(NT, v64);
  const uint32_t start = (uint32_t)(acc & ((1ull << EN_SHIFT) - 1ull));
  const uint32_t local = (uint32_t)(acc >> EN_SHIFT);
  /* C. */
  uint32_t done = 0u;
  for (uint32_t r = 0; r < g->rounds; ++r) {
    for (unsigned tid = 0; tid < NT; ++tid) {
      k2_thread* s = &th[tid];
      const uint32_t base = (r * NT + tid) * GV;
      s->c = s->cnt;
      if (g->rounds > 1u) {
        if (r > 0u) {
          s->m0 = load4(g, e, base);
          s->dm0 = load4(g, drow, base);
          for (int p = 0; p < MAX_PLANES; ++p)
            s->pl0[p] = (uint32_t)p < g->planes ? load4(g, (1u + (uint32_t)p) * E + e, base) : mk4(0u, 0u, 0u, 0u);
        }
        s->c = gtm_count(&s->m0, &s->dm0, base, in->ids, k, e);
      }
      vtmp[tid] = s->c;
    }
    uint32_t round_total = 0u;
    block_scan(NT, vtmp, stmp, &round_total);
    for (unsigned tid = 0; tid < NT; ++tid) th[tid].pos = start + done + stmp[tid];
    done += round_total;
    for (unsigned tid = 0; tid < NT; ++tid) {
      k2_thread* s = &th[tid];
      const uint32_t base = (r * NT + tid) * GV;
      uint32_t pos = s->pos;
      if ((s->dm0.x | s->dm0.y | s->dm0.z | s->dm0.w) == 0u) {
        if (r > 0u) {
          s->cq = 0u;
          s->cbits = s->m0.x;
          gtm_batch(&s->m0, s->pl0, &s->cq, &s->cbits, base, k, want_w, in, s->li, s->wb);
        }
        for (;;) {
          for (int u = 0; u < BATCH; ++u) {
            if (s->li[u] == NONE) continue;
            const uint32_t t = base * 32u + s->li[u], j = gtm_slot(s->pl0, s->li[u]);
            emit_entry_at(o, pos++, t * k + j, t, j, s->wb[u]);
          }
          if (s->li[BATCH - 1] == NONE) break;
          gtm_batch(&s->m0, s->pl0, &s->cq, &s->cbits, base, k, want_w, in, s->li, s->wb);
        }
      } else {
        g_dup_threads++;
        for (int q = 0; q < GV; ++q) {
          uint32_t bits = word4(&s->m0, q);
          const uint32_t dbits = word4(&s->dm0, q);
          while (bits) {
            const uint32_t b = ffs1(bits) - 1u;
            bits &= bits - 1u;
            const uint32_t t = (base + (uint32_t)q) * 32u + b;
            if (((dbits >> b) & 1u) == 0u) {
              const uint32_t j = gtm_slot(s->pl0, (uint32_t)q * 32u + b), i = t * k + j;
              emit_entry_at(o, pos++, i, t, j, want_w ? ld_weight_bits(in, i) : 0u);
              continue;
            }
            for (uint32_t j = 0; j < k; ++j) {
              const uint32_t i = t * k + j;
              if ((uint32_t)in->ids[i] != e) continue;
              emit_entry_at(o, pos++, i, t, j, want_w ? ld_weight_bits(in, i) : 0u);
            }
          }
        }
      }
      if (pos != s->pos + s->c) fail("K2 CTA %u thread %u round %u: %u entries emitted, %u counted", e, tid, r,
                                     pos - s->pos, s->c);
    }
  }
  if (done != total) fail("K2 CTA %u: rounds placed %u entries, counted %u", e, done, total);
  /* D. */
  for (unsigned tid = 0; tid < NT; ++tid) {
    for (uint32_t j = total + tid; j < pad; j += NT) emit_pad_slot(o, start + j);
    const uint32_t b1 = mr_udiv(start + pad, U, o->u_magic);
    for (uint32_t b = mr_udiv(start, U, o->u_magic) + tid; b < b1; b += NT) emit_block_id(o, b, (int32_t)local);
    if (e == E - 1u && tid == 0u) emit_totals(o, start + pad);
  }
}

/* ---- random cases ------------------------------------------------------------------- */
static uint64_t rng_s;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint32_t rn(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0u; } /* [0, n) */
static double rf(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static uint32_t rlog(uint32_t lo, uint32_t hi) { /* log-uniform in [lo, hi] */
  double a = (double)lo, b = (double)hi + 1.0;
  uint32_t v = (uint32_t)(a * __builtin_exp(rf() * __builtin_log(b / a)));
  return v < lo ? lo : v > hi ? hi : v;
}

typedef struct {
  int64_t T;
  int32_t E, k, U;
  uint32_t layouts;
  int with_w, mask_kind, ids_kind;
  uint32_t sm;
  size_t moe_bytes, moe_mis;
  int gate;
} gcase;

static const char* ids_names[] = {"distinct", "iid+dups", "oob", "hot", "hot+dups", "zipf", "allbad"};
static const char* mask_names[] = {"none", "random", "all-off", "all-on", "one-on"};

static void make_ids(const gcase* c, int32_t* ids, float* w) {
  const int64_t T = c->T;
  const int32_t E = c->E, k = c->k;
  int32_t hot[32];
  { /* k distinct hot experts */
    int n = 0;
    while (n < k) {
      int32_t x = (int32_t)rn((uint32_t)E), ok = 1;
      for (int q = 0; q < n; ++q) ok &= hot[q] != x;
      if (ok) hot[n++] = x;
    }
  }
  uint8_t* seen = (uint8_t*)calloc((size_t)E, 1);
  for (int64_t t = 0; t < T; ++t) {
    int32_t* row = ids + t * k;
    switch (c->ids_kind) {
      case 0: /* distinct */
      default:
        for (int j = 0; j < k; ++j) {
          int32_t x;
          do x = (int32_t)rn((uint32_t)E); while (seen[x]);
          seen[x] = 1;
          row[j] = x;
        }
        for (int j = 0; j < k; ++j) seen[row[j]] = 0;
        break;
      case 1: /* iid: duplicates in a row */
        for (int j = 0; j < k; ++j) row[j] = (int32_t)rn((uint32_t)(E < 4 ? E : (rn(3) ? E : 4)));
        break;
      case 2: /* distinct with ids out of range */
        for (int j = 0; j < k; ++j) {
          int32_t x;
          do x = (int32_t)rn((uint32_t)E); while (seen[x]);
          seen[x] = 1;
          row[j] = x;
        }
        for (int j = 0; j < k; ++j) seen[row[j]] = 0;
        for (int j = 0; j < k; ++j)
          if (rn(4) == 0) {
            const uint32_t z = rn(6);
            row[j] = z == 0 ? -1 : z == 1 ? E : z == 2 ? INT32_MIN : z == 3 ? INT32_MAX : z == 4 ? -(int32_t)rn(100) - 1
                                                                                              : E + (int32_t)rn(5000);
          }
        break;
      case 3: /* hot: every row the same k experts */
        for (int j = 0; j < k; ++j) row[j] = hot[(j + (rn(2) ? 0 : (int)(t % k))) % k];
        break;
      case 4: /* hot with a duplicate now and then */
        for (int j = 0; j < k; ++j) row[j] = hot[j];
        if (k > 1 && rn(16) == 0) row[rn((uint32_t)k)] = row[rn((uint32_t)k)];
        break;
      case 5: { /* skewed, distinct */
        for (int j = 0; j < k; ++j) {
          int32_t x;
          do {
            const double f = rf();
            x = (int32_t)(f * f * f * E);
            if (x >= E) x = E - 1;
          } while (seen[x]);
          seen[x] = 1;
          row[j] = x;
        }
        for (int j = 0; j < k; ++j) seen[row[j]] = 0;
        break;
      }
      case 6: /* everything out of range but a rare id */
        for (int j = 0; j < k; ++j) row[j] = rn(64) ? (rn(2) ? -5 : E + 3) : (int32_t)rn((uint32_t)E);
        break;
    }
    if (w)
      for (int j = 0; j < k; ++j) { /* distinct bit patterns, NaN-free */
        const uint32_t b = (uint32_t)(rnd() & 0x3fffffffu) | (rn(2) ? 0x80000000u : 0u);
        memcpy(&w[t * k + j], &b, 4);
      }
  }
  free(seen);
}

typedef struct {
  long run, fit_skipped, failed, dup_cases, multi_round, nb_byte, nb_word, planes_hist[6], ck, vl, both;
  long masked, wts, entries, gate1;
  int printed;
} stats;

static int run_case(const gcase* c, stats* S, int verbose) {
  gplan g;
  g_fail = 0;
  g_why[0] = 0;
  if (!gtm_plan(c->T, c->E, c->k, c->U, c->sm, c->gate, &g)) {
    S->fit_skipped++;
    return 0;
  }
  const int64_t T = c->T, n = T * c->k;
  const int32_t E = c->E, k = c->k, U = c->U;
  moeroute_params p;
  moeroute_params_init(&p);
  p.num_tokens = T;
  p.num_experts = E;
  p.top_k = k;
  p.unit_size = U;
  p.layouts = c->layouts;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(&p, &sz) != MOEROUTE_OK) {
    S->fit_skipped++;
    return 0;
  }
  int32_t* ids = (int32_t*)malloc((size_t)n * 4u);
  float* w = c->with_w ? (float*)malloc((size_t)n * 4u) : NULL;
  make_ids(c, ids, w);
  int32_t* mask = NULL;
  if (c->mask_kind) {
    mask = (int32_t*)malloc((size_t)E * 4u);
    const uint32_t pk = 1u + rn(99);
    for (int32_t e = 0; e < E; ++e)
      mask[e] = c->mask_kind == 1 ? (rn(100) < pk) : c->mask_kind == 2 ? 0 : c->mask_kind == 3 ? 1 : 0;
    if (c->mask_kind == 4) mask[rn((uint32_t)E)] = 1;
  }
  const int ck = (c->layouts & 1u) != 0, vl = (c->layouts & 2u) != 0;
  /* reference */
  moeroute_buffers rb;
  moeroute_buffers_init(&rb);
  rb.topk_ids = ids;
  rb.topk_weights = w;
  rb.expert_mask = mask;
  int32_t *r_si = NULL, *r_sei = NULL, r_nv[2] = {-7, -7}, *r_sti = NULL, *r_ei = NULL, r_ntp = -7;
  float* r_sw = NULL;
  if (ck) {
    r_si = (int32_t*)malloc((size_t)sz.ck_sorted_len * 4u);
    r_sw = c->with_w ? (float*)malloc((size_t)sz.ck_sorted_len * 4u) : NULL;
    r_sei = (int32_t*)malloc((size_t)sz.ck_blocks_len * 4u);
    rb.sorted_ids = r_si;
    rb.sorted_weights = r_sw;
    rb.sorted_expert_ids = r_sei;
    rb.num_valid_ids = r_nv;
  }
  if (vl) {
    r_sti = (int32_t*)malloc((size_t)sz.vllm_sorted_len * 4u);
    r_ei = (int32_t*)malloc((size_t)sz.vllm_blocks_len * 4u);
    rb.sorted_token_ids = r_sti;
    rb.expert_ids = r_ei;
    rb.num_tokens_post_pad = &r_ntp;
  }
  size_t cws = 0;
  moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &p, &cws);
  void* cw = cws ? malloc(cws) : NULL;
  rb.workspace = cw;
  rb.workspace_bytes = cws;
  const moeroute_status rst = moeroute_cpu_sort(&p, &rb);
  if (rst != MOEROUTE_OK) {
    fprintf(stderr, "reference failed: %s\n", moeroute_last_error());
    exit(2);
  }
  /* the model */
  sort_out o;
  memset(&o, 0, sizeof o);
  o.ck_len = sz.ck_sorted_len;
  o.ck_blocks = sz.ck_blocks_len;
  o.vl_len = sz.vllm_sorted_len;
  o.vl_blocks = sz.vllm_blocks_len;
  int32_t m_nv[2] = {-9, -9}, m_ntp = -9;
  if (ck) {
    o.sorted_ids = (int32_t*)malloc((size_t)o.ck_len * 4u);
    memset(o.sorted_ids, GARBAGE, (size_t)o.ck_len * 4u);
    if (c->with_w) {
      o.sorted_weights = (float*)malloc((size_t)o.ck_len * 4u);
      memset(o.sorted_weights, GARBAGE, (size_t)o.ck_len * 4u);
    }
    o.sorted_expert_ids = (int32_t*)malloc((size_t)o.ck_blocks * 4u);
    memset(o.sorted_expert_ids, GARBAGE, (size_t)o.ck_blocks * 4u);
    o.num_valid_ids = m_nv;
  }
  if (vl) {
    o.sorted_token_ids = (int32_t*)malloc((size_t)o.vl_len * 4u);
    memset(o.sorted_token_ids, GARBAGE, (size_t)o.vl_len * 4u);
    o.expert_ids = (int32_t*)malloc((size_t)o.vl_blocks * 4u);
    memset(o.expert_ids, GARBAGE, (size_t)o.vl_blocks * 4u);
    o.num_tokens_post_pad = &m_ntp;
  }
  o.wc_ck = (uint8_t*)calloc((size_t)o.ck_len + 1u, 1);
  o.wc_vl = (uint8_t*)calloc((size_t)o.vl_len + 1u, 1);
  o.wc_ckb = (uint8_t*)calloc((size_t)o.ck_blocks + 1u, 1);
  o.wc_vlb = (uint8_t*)calloc((size_t)o.vl_blocks + 1u, 1);
  o.wc_tot = (uint8_t*)calloc(1, 1);
  o.expert_mask = mask;
  o.num_tokens = T;
  o.num_experts = E;
  o.top_k = k;
  o.unit_size = U;
  o.u_magic = mr_magic((uint32_t)U);
  o.k_magic = mr_magic((uint32_t)k);
  unsigned char* moe_raw = NULL;
  if (c->moe_bytes) {
    moe_raw = (unsigned char*)malloc(c->moe_bytes + 32u);
    o.moe_buf = (unsigned char*)(((uintptr_t)moe_raw + 15u) & ~(uintptr_t)15u) + c->moe_mis;
    o.moe_buf_bytes = c->moe_bytes;
    memset(o.moe_buf, 0x5A, c->moe_bytes);
  }
  /* entry.cu, sort entry point: wts = so.sorted_weights ? topk_weights : NULL */
  k2_in in;
  in.ids = ids;
  in.weights = o.sorted_weights ? w : NULL;
  in.n = n;
  ws_bytes = g.bytes;
  ws = (unsigned char*)malloc(ws_bytes);
  wcnt = (unsigned char*)calloc(ws_bytes, 1);
  memset(ws, GARBAGE, ws_bytes);
  /* K1 */
  for (uint32_t cta = 0; cta < g.G1 && !g_fail; ++cta) k1_cta(&g, &o, ids, cta);
  /* K1 complete: every mask byte below word W written exactly once; status words zero */
  if (!g_fail) {
    const uint32_t rows = gtm_rows(&g);
    for (uint32_t r = 0; r < rows && !g_fail; ++r)
      for (uint32_t b = 0; b < 4u * g.Wp; ++b) {
        const unsigned char wc = wcnt[g.off[1] + (size_t)r * g.Wp * 4u + b];
        if (wc != 1u) { /* words < W by their owner, words [W, Wp) by the last CTA */
          fail("after K1: mask row %u byte %u written %u times", r, b, wc);
          break;
        }
      }
    for (uint32_t e = 0; e < g.E && !g_fail; ++e) {
      uint64_t v;
      memcpy(&v, ws + g.off[0] + (size_t)e * 128u, 8);
      if (v != 0ull) fail("after K1: status[%u] = %#llx, not zero", e, (unsigned long long)v);
    }
  }
  /* K2: CTAs in index order (the clear CTAs first, at most 256 threads' worth per SM, then the
   * expert CTAs: mr_gtm_launch_place) */
  int clear = clear_ctas(o.moe_buf_bytes, (int)g.nt, c->sm);
  if (clear > (int)(c->sm * (256u / g.nt))) clear = (int)(c->sm * (256u / g.nt));
  for (uint32_t b = 0; b < (uint32_t)clear; ++b)
    for (unsigned tid = 0; tid < g.nt; ++tid)
      clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)b * g.nt + tid, (size_t)clear * g.nt);
  for (uint32_t e = 0; e < g.E && !g_fail; ++e) k2_cta(&g, &o, &in, e);
  for (size_t i = 0; i < o.moe_buf_bytes && !g_fail; ++i)
    if (o.moe_buf[i]) fail("moe_buf byte %zu of %zu not cleared", i, o.moe_buf_bytes);
  /* compare */
  if (!g_fail) {
    const int32_t total = ck ? r_nv[0] : r_ntp;
    const int32_t mtot = ck ? m_nv[0] : m_ntp;
    if (o.wc_tot[0] != 1u) fail("totals written %u times", o.wc_tot[0]);
    else if (mtot != total) fail("total %d, reference %d", mtot, total);
    if (ck && !g_fail && m_nv[1] != r_nv[1]) fail("num_valid_ids[1] %d, reference %d", m_nv[1], r_nv[1]);
    if (vl && ck && !g_fail && m_ntp != r_ntp) fail("num_tokens_post_pad %d, reference %d", m_ntp, r_ntp);
    for (int64_t q = 0; q < o.ck_len && ck && !g_fail; ++q) {
      if (q < total) {
        if (o.wc_ck[q] != 1u) fail("sorted_ids[%lld] written %u times", (long long)q, o.wc_ck[q]);
        else if (o.sorted_ids[q] != r_si[q])
          fail("sorted_ids[%lld] = %#x, reference %#x", (long long)q, (unsigned)o.sorted_ids[q], (unsigned)r_si[q]);
        else if (r_sw && memcmp(&o.sorted_weights[q], &r_sw[q], 4) != 0)
          fail("sorted_weights[%lld] bits differ", (long long)q);
      } else if (o.wc_ck[q]) fail("sorted_ids[%lld] written at or beyond total %d", (long long)q, total);
    }
    for (int64_t q = 0; q < o.vl_len && vl && !g_fail; ++q) {
      if (q < total) {
        if (o.wc_vl[q] != 1u) fail("sorted_token_ids[%lld] written %u times", (long long)q, o.wc_vl[q]);
        else if (o.sorted_token_ids[q] != r_sti[q])
          fail("sorted_token_ids[%lld] = %d, reference %d", (long long)q, o.sorted_token_ids[q], r_sti[q]);
      } else if (o.wc_vl[q]) fail("sorted_token_ids[%lld] written at or beyond total %d", (long long)q, total);
    }
    const int64_t nb = total / U;
    for (int64_t b = 0; b < o.ck_blocks && ck && !g_fail; ++b) {
      if (b < nb) {
        if (o.wc_ckb[b] != 1u) fail("sorted_expert_ids[%lld] written %u times", (long long)b, o.wc_ckb[b]);
        else if (o.sorted_expert_ids[b] != r_sei[b])
          fail("sorted_expert_ids[%lld] = %d, reference %d", (long long)b, o.sorted_expert_ids[b], r_sei[b]);
      } else if (o.wc_ckb[b]) fail("sorted_expert_ids[%lld] written beyond total/U", (long long)b);
    }
    for (int64_t b = 0; b < o.vl_blocks && vl && !g_fail; ++b) {
      if (b < nb) {
        if (o.wc_vlb[b] != 1u) fail("expert_ids[%lld] written %u times", (long long)b, o.wc_vlb[b]);
        else if (o.expert_ids[b] != r_ei[b])
          fail("expert_ids[%lld] = %d, reference %d", (long long)b, o.expert_ids[b], r_ei[b]);
      } else if (o.wc_vlb[b]) fail("expert_ids[%lld] written beyond total/U", (long long)b);
    }
    S->entries += total;
  }
  /* stats */
  S->run++;
  {
    int anydup = 0; /* a bit in a duplicate row (rows (1 + P) E ..) */
    const size_t d0 = g.off[1] + (size_t)(1u + g.planes) * g.E * g.Wp * 4u, d1 = g.off[1] + (size_t)gtm_rows(&g) * g.Wp * 4u;
    for (size_t b = d0; b < d1 && !anydup; ++b) anydup = ws[b] != 0u && wcnt[b];
    S->dup_cases += anydup;
  }
  S->gate1 += g.gate;
  S->multi_round += g.rounds > 1u;
  S->nb_byte += (g.NB & 3u) != 0u;
  S->nb_word += (g.NB & 3u) == 0u;
  S->planes_hist[g.planes]++;
  S->ck += c->layouts == 1u;
  S->vl += c->layouts == 2u;
  S->both += c->layouts == 3u;
  S->masked += c->mask_kind != 0;
  S->wts += c->with_w;
  if (g_fail) {
    S->failed++;
    if (verbose && S->printed < 12) {
      S->printed++;
      printf("FAIL T=%lld E=%d k=%d U=%d layouts=%u w=%d mask=%s ids=%s sm=%u gate=%d (W=%u NB=%u swr=%u G1=%u P=%u "
             "NT=%u rounds=%u): %s\n",
             (long long)T, E, k, U, c->layouts, c->with_w, mask_names[c->mask_kind], ids_names[c->ids_kind], c->sm,
             g.gate, g.W, g.NB, g.swr, g.G1, g.planes, g.nt, g.rounds, g_why);
    }
  }
  free(ws);
  free(wcnt);
  free(ids);
  free(w);
  free(mask);
  free(r_si);
  free(r_sw);
  free(r_sei);
  free(r_sti);
  free(r_ei);
  free(cw);
  free(o.sorted_ids);
  free(o.sorted_weights);
  free(o.sorted_expert_ids);
  free(o.sorted_token_ids);
  free(o.expert_ids);
  free(o.wc_ck);
  free(o.wc_vl);
  free(o.wc_ckb);
  free(o.wc_vlb);
  free(o.wc_tot);
  free(moe_raw);
  return g_fail;
}

static void random_case(gcase* c, long idx) {
  static const int32_t Es[] = {1, 2, 3, 8, 16, 60, 64, 128, 160, 256, 384, 512, 1024};
  static const int32_t Us[] = {1, 2, 16, 32, 64, 128, 256, 1024};
  static const uint32_t SMs[] = {132, 132, 132, 132, 1, 7, 66, 78, 114, 144, 170};
  memset(c, 0, sizeof *c);
  c->E = rn(3) ? Es[rn(sizeof Es / sizeof *Es)] : 1 + (int32_t)rn(1024);
  const int32_t kmax = c->E < 32 ? c->E : 32;
  const uint32_t kk = rn(6);
  c->k = kk == 0 ? 1 : kk == 1 ? kmax : kk == 2 ? (kmax >= 8 ? 8 : kmax) : 1 + (int32_t)rn((uint32_t)kmax);
  c->U = rn(2) ? Us[rn(sizeof Us / sizeof *Us)] : 1 + (int32_t)rn(1024);
  const uint32_t tt = rn(100);
  if (idx % 97 == 5 || tt == 0) c->T = rlog(70000, 300000);
  else if (tt < 10) c->T = 1 + rn(64);
  else c->T = rlog(1, 70000);
  if (rn(4) == 0) c->T = (c->T + 31) / 32 * 32 + (rn(2) ? 0 : (int64_t)rn(3) - 1); /* near multiples of 32 */
  if (c->T < 1) c->T = 1;
  c->layouts = 1u + rn(3);
  c->with_w = (c->layouts & 1u) && rn(3) != 0;
  const uint32_t mk = rn(10);
  c->mask_kind = mk < 5 ? 0 : mk < 8 ? 1 : mk == 8 ? (rn(2) ? 2 : 4) : 3;
  const uint32_t ik = rn(20);
  c->ids_kind = ik < 7 ? 0 : ik < 10 ? 1 : ik < 12 ? 2 : ik < 15 ? 3 : ik < 16 ? 4 : ik < 19 ? 5 : 6;
  c->sm = SMs[rn(sizeof SMs / sizeof *SMs)];
  c->moe_bytes = rn(4) == 0 ? 1u + rn(rn(2) ? 100 : 300000) : 0u;
  c->moe_mis = rn(16);
  c->gate = g_gate >= 0 ? g_gate : rn(4) == 0;
  /* keep the work of one case bounded: the contract's int32 positions and CK's 24-bit tokens */
  while ((int64_t)c->T * c->k + (int64_t)c->E * c->U - c->k >= ((int64_t)1 << 31)) c->T /= 2;
  if (c->T < 1) c->T = 1;
}

int main(int argc, char** argv) {
  long cases = 3000;
  uint64_t seed = 1;
  int pos = 0;
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--plan") == 0 && a + 2 < argc) { /* the plans of "T E k U" lines on stdin */
      const uint32_t sm = (uint32_t)atoi(argv[++a]);
      const int gate = atoi(argv[++a]);
      long long T;
      int E, k, U;
      while (scanf("%lld %d %d %d", &T, &E, &k, &U) == 4) {
        gplan g;
        if (!gtm_plan(T, E, k, U, sm, gate, &g)) {
          printf("%lld %d %d %d 0\n", T, E, k, U);
          continue;
        }
        printf("%lld %d %d %d 1 W=%u Wp=%u NB=%u swr=%u G1=%u P=%u rounds=%u nt=%u smem=%zu off=%zu,%zu bytes=%zu\n",
               T, E, k, U, g.W, g.Wp, g.NB, g.swr, g.G1, g.planes, g.rounds, g.nt, g.smem, g.off[0], g.off[1], g.bytes);
      }
      return 0;
    }
    if (strcmp(argv[a], "--bug") == 0 && a + 1 < argc) g_bug = atoi(argv[++a]);
    else if (strcmp(argv[a], "--gate") == 0 && a + 1 < argc) g_gate = atoi(argv[++a]);
    else if (pos == 0) cases = atol(argv[a]), ++pos;
    else seed = strtoull(argv[a], NULL, 10), ++pos;
  }
  rng_s = seed * 0x2545F4914F6CDD1Dull + 7;
  smem = (uint32_t*)malloc((size_t)SMEM_WORDS * 4u);
  stats S;
  memset(&S, 0, sizeof S);
  /* fixed edge cases first */
  static const int32_t fixed[][4] = {
      /* T, E, k, U */
      {1, 1, 1, 1},       {1, 1, 1, 1024},   {31, 1, 1, 32},     {32, 1, 1, 32},      {33, 2, 2, 1},
      {8192, 256, 8, 64}, {8193, 256, 8, 64}, {4224, 256, 8, 32}, {4225, 256, 8, 32}, {1024, 1024, 32, 1024},
      {70000, 8, 2, 128}, {1, 1024, 32, 1}, {300000, 2, 1, 1024}, {16384, 384, 8, 1}, {65536, 64, 6, 256}};
  long nfixed = (long)(sizeof fixed / sizeof *fixed);
  for (long i = 0; i < cases; ++i) {
    gcase c;
    random_case(&c, i);
    if (i < nfixed * 4) { /* each fixed shape with 4 random flavours */
      const int32_t* f = fixed[i / 4];
      c.T = f[0];
      c.E = f[1];
      c.k = f[2];
      c.U = f[3];
      c.ids_kind = (int)(i % 4 == 0 ? 0 : i % 4 == 1 ? 1 : i % 4 == 2 ? 3 : 2);
      if (c.ids_kind == 0 && c.k > c.E) c.ids_kind = 1;
    }
    run_case(&c, &S, 1);
    if ((i + 1) % 500 == 0) {
      printf("  %ld cases, %ld run, %ld failed\n", i + 1, S.run, S.failed);
      fflush(stdout);
    }
  }
  printf("gtm_model%s: %ld cases, %ld run, %ld failed, %ld not planned (mask > 64 MB or shared > 48 KB)\n",
         g_bug ? " (BUG INJECTED)" : "", cases, S.run, S.failed, S.fit_skipped);
  printf("  entries+padding compared: %ld; cases with duplicate rows: %ld (K2 thread-rounds one at a time: %ld); "
         "rounds > 1: %ld; K1g plan: %ld; NB bytes (1, 2): %ld, words: %ld; masked: %ld; weights: %ld; layouts "
         "CK/vLLM/both: %ld/%ld/%ld\n",
         S.entries, S.dup_cases, g_dup_threads, S.multi_round, S.gate1, S.nb_byte, S.nb_word, S.masked, S.wts, S.ck,
         S.vl, S.both);
  printf("  planes 0..5:");
  for (int q = 0; q < 6; ++q) printf(" %ld", S.planes_hist[q]);
  printf("\n");
  free(smem);
  return S.failed ? 1 : 0;
}
