/*
 * large_model.c - host model of the large path (src/cuda/large.cu), for
 * checking its index arithmetic without a GPU: the three kernels' loops step
 * by step (slices, warp ranks with __match_any_sync semantics, publish, the L2
 * scan, L3 placement / padding / totals, the moe_buf clear ranges), compared
 * bit for bit with moeroute_cpu_sort on random configurations. Also checks
 * that every workspace word read was written earlier in the same call, every
 * index is in bounds, and every moe_buf byte (odd sizes, odd addresses) is
 * cleared and nothing around it. Keep it in step with large.cu when the index
 * math changes (mr_l_min_chunks / mr_l_max_chunks / mr_l_chunks, the clear
 * split in mr_l_args_init, the kernels).
 *
 * Build and run (CPU only):
 *   cmake -S . -B build-cpu -DMOEROUTE_CUDA=OFF && cmake --build build-cpu -j2
 *   cc -O2 -std=c11 -Iinclude dev/large_model.c build-cpu/libmoeroute.a -lm -o build-cpu/large_model
 *   build-cpu/large_model [cases]
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moeroute.h"

#define LW 8
#define GCAP 512
#define RANK_MAX (1u << 21)
#define NONE 0xffffffffu
#define POISON 0xABABABABu

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

static int fails = 0;
#define CHECK(c, ...)                   \
  do {                                  \
    if (!(c)) {                         \
      fails++;                          \
      if (fails < 20) {                 \
        printf("FAIL %s:%d: ", __FILE__, __LINE__); \
        printf(__VA_ARGS__);            \
        printf("\n");                   \
      }                                 \
    }                                   \
  } while (0)

/* ---- host plan: mirrors large.cu's host side ---- */
static int64_t min_chunks(int64_t T, int64_t k) {
  const int64_t m = (int64_t)(RANK_MAX / (uint32_t)k);
  const int64_t slices = (T + m - 1) / m;
  const int64_t g = (slices + LW - 1) / LW;
  return g < 1 ? 1 : g;
}
static int64_t max_chunks(int64_t T, int64_t k) {
  int64_t g = T;
  if (g > GCAP) g = GCAP;
  const int64_t lo = min_chunks(T, k);
  return g > lo ? g : lo;
}
static uint32_t chunks(int64_t T, int64_t k, int sms, int per_sm) {
  int64_t g = (int64_t)sms * per_sm;
  if (g > T) g = T;
  const int64_t lo = min_chunks(T, k), hi = max_chunks(T, k);
  if (g < lo) g = lo;
  if (g > hi) g = hi;
  return (uint32_t)(g < 1 ? 1 : g);
}
static int64_t split(int64_t n, uint32_t parts, uint32_t i) {
  return (int64_t)(((uint64_t)n * (uint64_t)i) / (uint64_t)parts);
}

/* workspace words with a written flag */
typedef struct { uint32_t* v; unsigned char* w; size_t n; const char* name; } arr;
static void arr_init(arr* a, size_t n, const char* name) {
  a->v = (uint32_t*)malloc((n ? n : 1) * 4);
  a->w = (unsigned char*)calloc(n ? n : 1, 1);
  a->n = n;
  a->name = name;
  for (size_t i = 0; i < n; ++i) a->v[i] = POISON;
}
static void arr_free(arr* a) { free(a->v); free(a->w); }
static void W(arr* a, size_t i, uint32_t x) {
  CHECK(i < a->n, "%s write %zu >= %zu", a->name, i, a->n);
  if (i < a->n) { a->v[i] = x; a->w[i] = 1; }
}
static uint32_t R(const arr* a, size_t i) {
  CHECK(i < a->n, "%s read %zu >= %zu", a->name, i, a->n);
  if (i >= a->n) return 0;
  CHECK(a->w[i], "%s read of unwritten %zu", a->name, i);
  return a->v[i];
}

/* one warp-wide rank step: e[32] in, r[32] out, counters wc */
static void warp_rank(uint32_t* wc, const uint32_t* e, uint32_t* r) {
  uint32_t peers[32];
  for (int l = 0; l < 32; ++l) {
    peers[l] = 0;
    for (int m = 0; m < 32; ++m)
      if (e[m] == e[l]) peers[l] |= 1u << m;
  }
  uint32_t rd[32];
  for (int l = 0; l < 32; ++l) {
    const uint32_t lt = (1u << l) - 1u;
    const uint32_t below_ = (uint32_t)__builtin_popcount(peers[l] & lt);
    rd[l] = 0;
    if (e[l] != NONE) rd[l] = wc[e[l]] + below_;
  }
  /* __syncwarp */
  for (int l = 0; l < 32; ++l) {
    const uint32_t lt = (1u << l) - 1u;
    const uint32_t below_ = (uint32_t)__builtin_popcount(peers[l] & lt);
    if (e[l] != NONE && below_ == 0) wc[e[l]] = rd[l] + (uint32_t)__builtin_popcount(peers[l]);
  }
  for (int l = 0; l < 32; ++l) r[l] = rd[l];
}

typedef struct { int32_t *sorted_ids, *sorted_expert_ids, *num_valid_ids, *sorted_token_ids, *expert_ids, *ntpp; float* sorted_weights; } outs;

static int run_case(int64_t T, int E, int k, int U, int sms, int per_sm, int mask_mode, int bad_ids, int layouts,
                    int with_w, int route_like, int clear_per_sm, int first_kb, size_t moe_bytes, int moe_off) {
  const int64_t n = T * k;
  moeroute_params p;
  moeroute_params_init(&p);
  p.num_tokens = T;
  p.num_experts = E;
  p.top_k = k;
  p.unit_size = U;
  p.layouts = (uint32_t)layouts;
  moeroute_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.struct_size = sizeof sz;
  if (moeroute_get_sizes(&p, &sz) != MOEROUTE_OK) { printf("sizes: %s\n", moeroute_last_error()); return 1; }

  int32_t* ids = (int32_t*)malloc((size_t)(n ? n : 1) * 4);
  float* wts = (float*)malloc((size_t)(n ? n : 1) * 4);
  for (int64_t t = 0; t < T; ++t) {
    for (int j = 0; j < k; ++j) {
      int32_t v;
      if (route_like) { /* distinct per row */
        for (;;) {
          v = (int32_t)below((uint64_t)E);
          int dup = 0;
          for (int q = 0; q < j; ++q) dup |= ids[t * k + q] == v;
          if (!dup) break;
        }
      } else {
        v = (int32_t)below((uint64_t)E);
        if (bad_ids && below(10) == 0) v = (int32_t)(below(2) ? E + (int)below(100) : -1 - (int)below(100));
        if (bad_ids && below(20) == 0 && j > 0) v = ids[t * k + j - 1]; /* duplicate */
        if (below(50) == 0) v = (int32_t)below(3); /* hot experts */
      }
      ids[t * k + j] = v;
      uint32_t b = (uint32_t)rnd();
      memcpy(&wts[t * k + j], &b, 4); /* any bits */
    }
  }
  int32_t* mask = NULL;
  if (mask_mode) {
    mask = (int32_t*)malloc((size_t)E * 4);
    for (int e = 0; e < E; ++e) mask[e] = mask_mode == 2 ? 0 : (below(3) != 0);
  }

  /* CPU reference */
  outs ref, got;
  memset(&ref, 0, sizeof ref);
  memset(&got, 0, sizeof got);
  const int ck = (layouts & MOEROUTE_LAYOUT_CK) != 0, vl = (layouts & MOEROUTE_LAYOUT_VLLM) != 0;
  outs* both[2] = {&ref, &got};
  for (int b = 0; b < 2; ++b) {
    outs* o = both[b];
    if (ck) {
      o->sorted_ids = (int32_t*)malloc(sz.ck_sorted_len * 4);
      o->sorted_weights = with_w ? (float*)malloc(sz.ck_sorted_len * 4) : NULL;
      o->sorted_expert_ids = (int32_t*)malloc(sz.ck_blocks_len * 4);
      o->num_valid_ids = (int32_t*)malloc(8);
      memset(o->sorted_ids, 0xAB, sz.ck_sorted_len * 4);
      if (with_w) memset(o->sorted_weights, 0xAB, sz.ck_sorted_len * 4);
      memset(o->sorted_expert_ids, 0xAB, sz.ck_blocks_len * 4);
      memset(o->num_valid_ids, 0xAB, 8);
    }
    if (vl) {
      o->sorted_token_ids = (int32_t*)malloc(sz.vllm_sorted_len * 4);
      o->expert_ids = (int32_t*)malloc(sz.vllm_blocks_len * 4);
      o->ntpp = (int32_t*)malloc(4);
      memset(o->sorted_token_ids, 0xAB, sz.vllm_sorted_len * 4);
      memset(o->expert_ids, 0xAB, sz.vllm_blocks_len * 4);
      memset(o->ntpp, 0xAB, 4);
    }
  }
  moeroute_buffers bu;
  moeroute_buffers_init(&bu);
  bu.topk_ids = ids;
  bu.topk_weights = wts;
  bu.expert_mask = mask;
  bu.sorted_ids = ref.sorted_ids;
  bu.sorted_weights = ref.sorted_weights;
  bu.sorted_expert_ids = ref.sorted_expert_ids;
  bu.num_valid_ids = ref.num_valid_ids;
  bu.sorted_token_ids = ref.sorted_token_ids;
  bu.expert_ids = ref.expert_ids;
  bu.num_tokens_post_pad = ref.ntpp;
  size_t wsb = 0;
  moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &p, &wsb);
  void* ws = malloc(wsb ? wsb : 1);
  bu.workspace = ws;
  bu.workspace_bytes = wsb;
  if (moeroute_cpu_sort(&p, &bu) != MOEROUTE_OK) { printf("cpu sort: %s\n", moeroute_last_error()); return 1; }

  /* ---- the model ---- */
  const uint32_t G = chunks(T, k, sms, per_sm), S = G * LW;
  const size_t Gmax = (size_t)max_chunks(T, k);
  CHECK(G <= Gmax, "G %u > Gmax %zu", G, Gmax);
  arr counts, tot, wbase, codes;
  arr_init(&counts, (size_t)E * Gmax, "counts");
  arr_init(&tot, (size_t)E, "tot");
  arr_init(&wbase, Gmax * LW * (size_t)E, "wbase");
  arr_init(&codes, (size_t)n, "codes");

  /* L1 */
  uint32_t* wc = (uint32_t*)malloc((size_t)LW * E * 4);
  for (uint32_t c = 0; c < G; ++c) {
    for (uint32_t w = 0; w < LW; ++w) {
      uint32_t* my = wc + (size_t)w * E;
      for (int e = 0; e < E; ++e) my[e] = 0;
      const uint32_t s = c * LW + w;
      const int64_t t0 = split(T, S, s), t1 = split(T, S, s + 1);
      if (route_like) {
        /* per token: lanes < k hold the picks */
        for (int64_t t = t0; t < t1; ++t) {
          uint32_t e[32], r[32];
          for (int l = 0; l < 32; ++l) {
            const int mine = l < k;
            const uint32_t id = mine ? (uint32_t)ids[t * k + l] : 0;
            e[l] = (mine && id < (uint32_t)E) ? id : NONE;
          }
          warp_rank(my, e, r);
          for (int l = 0; l < k; ++l) {
            CHECK(e[l] == NONE || r[l] < RANK_MAX, "rank overflow");
            W(&codes, (size_t)(t * k + l), e[l] == NONE ? NONE : (r[l] << 11) | e[l]);
          }
        }
      } else {
        const int64_t i0 = t0 * k, i1 = t1 * k;
        for (int64_t base = i0; base < i1; base += 256) {
          uint32_t ev[8][32];
          for (int j = 0; j < 8; ++j)
            for (int l = 0; l < 32; ++l) {
              const int64_t i = base + j * 32 + l;
              const uint32_t v = i < i1 ? (uint32_t)ids[i] : NONE;
              ev[j][l] = v < (uint32_t)E ? v : NONE;
            }
          for (int j = 0; j < 8; ++j) {
            if (base + j * 32 >= i1) break;
            uint32_t r[32];
            warp_rank(my, ev[j], r);
            for (int l = 0; l < 32; ++l) {
              const int64_t i = base + j * 32 + l;
              if (i < i1) {
                CHECK(ev[j][l] == NONE || r[l] < RANK_MAX, "rank overflow");
                W(&codes, (size_t)i, ev[j][l] == NONE ? NONE : (r[l] << 11) | ev[j][l]);
              }
            }
          }
        }
      }
    }
    /* publish */
    for (int e = 0; e < E; ++e) {
      uint32_t run = 0;
      for (int w = 0; w < LW; ++w) {
        const uint32_t v = wc[(size_t)w * E + e];
        if (v != 0) W(&wbase, ((size_t)c * LW + w) * E + e, run);
        run += v;
      }
      W(&counts, (size_t)e * G + c, run);
    }
  }
  /* L2 */
  for (int e = 0; e < E; ++e) {
    uint32_t v[GCAP / 32][32];
    for (int j = 0; j < GCAP / 32; ++j)
      for (int l = 0; l < 32; ++l) {
        const uint32_t c = (uint32_t)j * 32 + l;
        v[j][l] = c < G ? R(&counts, (size_t)e * G + c) : 0;
      }
    uint32_t carry = 0;
    for (int j = 0; j < GCAP / 32; ++j) {
      if ((uint32_t)j * 32 >= G) break;
      uint32_t incl[32], acc = 0;
      for (int l = 0; l < 32; ++l) { acc += v[j][l]; incl[l] = acc; }
      for (int l = 0; l < 32; ++l) {
        const uint32_t c = (uint32_t)j * 32 + l;
        if (c < G) W(&counts, (size_t)e * G + c, carry + incl[l] - v[j][l]);
      }
      carry += incl[31];
    }
    W(&tot, (size_t)e, carry);
  }
  /* L3 routing CTAs */
  for (uint32_t c = 0; c < G; ++c) {
    uint64_t run = 0, total = 0;
    uint32_t *s_start = malloc(E * 4), *s_cnt = malloc(E * 4), *s_loc = malloc(E * 4), *s_pos = malloc(E * 4);
    for (int e = 0; e < E; ++e) {
      const uint32_t en = mask ? (mask[e] != 0) : 1u;
      const uint32_t cn = en ? R(&tot, (size_t)e) : 0u;
      const uint32_t pre = R(&counts, (size_t)e * G + c);
      const uint64_t v = (uint64_t)((cn + U - 1u) / U * U) | ((uint64_t)en << 32);
      s_start[e] = (uint32_t)run;
      s_loc[e] = (uint32_t)(run >> 32);
      s_cnt[e] = cn;
      s_pos[e] = (uint32_t)run + pre;
      run += v;
    }
    total = run;
    for (uint32_t w = 0; w < LW; ++w) {
      const uint32_t s = c * LW + w;
      const int64_t i0 = split(T, S, s) * k, i1 = split(T, S, s + 1) * k;
      for (int64_t i = i0; i < i1; ++i) {
        const uint32_t code = R(&codes, (size_t)i);
        const uint32_t e = code & 0x7ffu;
        if (e < (uint32_t)E && s_cnt[e] != 0) {
          const uint32_t pos = s_pos[e] + R(&wbase, (size_t)s * E + e) + (code >> 11);
          CHECK(pos < (uint32_t)total, "pos %u >= total", pos);
          const uint32_t t = (uint32_t)i / (uint32_t)k, slot = (uint32_t)i - t * (uint32_t)k;
          if (got.sorted_ids) {
            got.sorted_ids[pos] = (int32_t)((slot << 24) | t);
            if (got.sorted_weights) memcpy(&got.sorted_weights[pos], &wts[i], 4);
          }
          if (got.sorted_token_ids) got.sorted_token_ids[pos] = (int32_t)i;
        }
      }
      for (uint32_t e = c * LW + w; e < (uint32_t)E; e += G * LW) {
        const uint32_t cn = s_cnt[e];
        if (!cn) continue;
        const uint32_t start = s_start[e], pad = (cn + U - 1) / U * U;
        for (uint32_t j = cn; j < pad; ++j) {
          if (got.sorted_ids) {
            got.sorted_ids[start + j] = (int32_t)(((uint32_t)k << 24) | (uint32_t)T);
            if (got.sorted_weights) got.sorted_weights[start + j] = 0.0f;
          }
          if (got.sorted_token_ids) got.sorted_token_ids[start + j] = (int32_t)(T * k);
        }
        for (uint32_t b = start / U; b < (start + pad) / U; ++b) {
          if (got.sorted_expert_ids) got.sorted_expert_ids[b] = (int32_t)s_loc[e];
          if (got.expert_ids) got.expert_ids[b] = (int32_t)s_loc[e];
        }
      }
    }
    if (c == 0) {
      if (got.num_valid_ids) { got.num_valid_ids[0] = (int32_t)(uint32_t)total; got.num_valid_ids[1] = (int32_t)T; }
      if (got.ntpp) got.ntpp[0] = (int32_t)(uint32_t)total;
    }
    free(s_start); free(s_cnt); free(s_loc); free(s_pos);
  }
  /* compare every byte of every output (valid range and the untouched rest) */
  if (ck) {
    CHECK(!memcmp(ref.sorted_ids, got.sorted_ids, sz.ck_sorted_len * 4), "sorted_ids differ");
    if (with_w) CHECK(!memcmp(ref.sorted_weights, got.sorted_weights, sz.ck_sorted_len * 4), "sorted_weights differ");
    CHECK(!memcmp(ref.sorted_expert_ids, got.sorted_expert_ids, sz.ck_blocks_len * 4), "sorted_expert_ids differ");
    CHECK(!memcmp(ref.num_valid_ids, got.num_valid_ids, 8), "num_valid_ids differ");
  }
  if (vl) {
    CHECK(!memcmp(ref.sorted_token_ids, got.sorted_token_ids, sz.vllm_sorted_len * 4), "sorted_token_ids differ");
    CHECK(!memcmp(ref.expert_ids, got.expert_ids, sz.vllm_blocks_len * 4), "expert_ids differ");
    CHECK(!memcmp(ref.ntpp, got.ntpp, 4), "ntpp differ");
  }

  /* ---- moe_buf clear ranges (mirrors mr_l_args_init + the three clear sites) ---- */
  if (moe_bytes) {
    unsigned char* mem = (unsigned char*)malloc(moe_bytes + 64);
    memset(mem, 0xAB, moe_bytes + 64);
    unsigned char* pbuf = mem + 16 + moe_off; /* address mod 16 = moe_off (malloc is 16-aligned) */
    size_t lead = (size_t)((16u - ((uintptr_t)pbuf & 15u)) & 15u);
    if (lead > moe_bytes) lead = moe_bytes;
    const size_t units = (moe_bytes - lead) / 16u;
    unsigned char* body = pbuf + lead;
    const size_t trail_b = moe_bytes - lead - units * 16u;
    unsigned char* trail = body + units * 16u;
    size_t first;
    if (first_kb < 0) first = 0;
    else if (first_kb > 0) first = (size_t)first_kb * 64u;
    else { first = units / 4u; const size_t cap = (size_t)S * 256u; if (first > cap) first = cap; }
    if (first > units) first = units;
    const size_t rest = units - first;
    size_t ctas = (size_t)sms * (size_t)clear_per_sm;
    const size_t by_size = (rest * 16u + 65535u) / 65536u;
    if (ctas > by_size) ctas = by_size;
    if (ctas == 0) first = units;
    /* L1 */
    for (uint32_t s = 0; s < S; ++s) {
      const size_t u0 = (size_t)(((unsigned long long)first * s) / S), u1 = (size_t)(((unsigned long long)first * (s + 1)) / S);
      for (size_t u = u0; u < u1; ++u) memset(body + u * 16, 0, 16);
      if (s == 0) {
        for (uint32_t l = 0; l < 32; ++l) {
          if (l < lead) pbuf[l] = 0;
          if (l < trail_b) trail[l] = 0;
        }
      }
    }
    /* L3 clear CTAs */
    const size_t span = units - first;
    for (size_t b = 0; b < ctas; ++b) {
      const size_t u0 = first + (size_t)(((unsigned long long)span * b) / ctas);
      const size_t u1 = first + (size_t)(((unsigned long long)span * (b + 1)) / ctas);
      for (size_t u = u0; u < u1; ++u) memset(body + u * 16, 0, 16);
    }
    for (size_t i = 0; i < moe_bytes; ++i) CHECK(pbuf[i] == 0, "moe_buf byte %zu not cleared (n=%zu off=%d)", i, moe_bytes, moe_off);
    for (unsigned char* q = mem; q < pbuf; ++q) CHECK(*q == 0xAB, "moe_buf underrun");
    for (unsigned char* q = pbuf + moe_bytes; q < mem + moe_bytes + 64; ++q) CHECK(*q == 0xAB, "moe_buf overrun");
    free(mem);
  }

  arr_free(&counts); arr_free(&tot); arr_free(&wbase); arr_free(&codes);
  free(wc); free(ids); free(wts); free(mask); free(ws);
  for (int b = 0; b < 2; ++b) {
    outs* o = both[b];
    free(o->sorted_ids); free(o->sorted_weights); free(o->sorted_expert_ids); free(o->num_valid_ids);
    free(o->sorted_token_ids); free(o->expert_ids); free(o->ntpp);
  }
  return 0;
}

int main(int argc, char** argv) {
  int ncase = argc > 1 ? atoi(argv[1]) : 3000;
  const int Es[] = {1, 2, 7, 32, 64, 128, 256, 384, 512, 1000, 1024};
  const int Us[] = {1, 3, 16, 32, 64, 128, 1024};
  const int smss[] = {1, 2, 3, 16, 132, 148, 300};
  for (int c = 0; c < ncase; ++c) {
    const int E = Es[below(sizeof Es / sizeof *Es)];
    int k = 1 + (int)below((uint64_t)(E < 32 ? E : 32));
    int64_t T = 1 + (int64_t)below(below(4) == 0 ? 20000 : 600);
    if (T * k > 400000) T = 400000 / k;
    const int U = Us[below(sizeof Us / sizeof *Us)];
    const int sms = smss[below(sizeof smss / sizeof *smss)];
    const int per_sm = 1 + (int)below(3);
    const int layouts = 1 + (int)below(3);
    const int route_like = (int)below(2);
    const int mask_mode = below(3) == 0 ? (below(8) == 0 ? 2 : 1) : 0;
    const size_t mb = below(3) == 0 ? 0 : (below(2) ? 1 + below(100) : 1 + below(3000000));
    const int first_kb = below(4) == 0 ? (int)below(3) - 1 : 0;
    run_case(T, E, k, U, sms, per_sm, mask_mode, !route_like, layouts, (int)below(2), route_like,
             1 + (int)below(2), first_kb, mb, (int)below(16));
    if (fails) { printf("case %d: T=%lld E=%d k=%d U=%d sms=%d per_sm=%d lay=%d route=%d mask=%d mb=%zu\n", c, (long long)T, E, k, U, sms, per_sm, layouts, route_like, mask_mode, mb); return 1; }
  }
  /* a few big ones: rank-field bound and many chunks */
  run_case(262144, 256, 8, 32, 132, 2, 1, 0, 3, 1, 1, 1, 0, 4096 * 7 + 5, 3);
  run_case(300000, 8, 8, 128, 2, 1, 0, 1, 3, 1, 0, 1, 0, 0, 0);
  run_case(2100000, 4, 1, 64, 1, 1, 0, 0, 2, 0, 0, 1, 0, 0, 0); /* one expert stream, min_chunks > 1 */
  printf("%s: %d cases + 3 big\n", fails ? "FAILED" : "ok", ncase);
  return fails != 0;
}
