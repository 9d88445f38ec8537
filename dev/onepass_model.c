/*
 * onepass_model.c - a host model of the block phase of tiny.cu's one-pass layout (mr_tiny_onepass,
 * src/cuda/tiny.cuh), in its two forms, against a direct statement of the layout (lab code).
 *
 * The layout (design.md 26): with U >= T every enabled expert present in the picks holds one block;
 * block b belongs to the b-th such expert e (ascending id), holds popc(tm[e]) entries (tm[e]: the
 * tokens that picked e) and padding from there to U, and carries e's local id (its index among the
 * enabled experts with a mask, else e).
 *
 * The forms, as the kernel computes them, for every CTA c of R = 2^rl and every thread of NT:
 *   search (the default): lane l of warp w holds block b = ((base + w + NW*l) << rl) | c and finds its
 *     expert by the presence words' prefixes (the last word with prefix <= b, then the bit);
 *   own (v17, lab knob tiny_op_own): warp w takes words q = w, w + NW, ...; lane l stands for expert
 *     32q + l, whose block is prefix(q) + popc(word & lanes below l); the CTA keeps b % R == c.
 * Each form must write every block b < D exactly once over the CTAs, with the expert, local id and
 * padding range of the statement, and nothing else.
 *
 *   gcc -O2 -std=c99 -Wall dev/onepass_model.c -o /tmp/onepass_model && /tmp/onepass_model [cases] [seed]
 *   [--bug N]   (N = 1 - 5: a defect in the own form: lanes at or below, no CTA filter, every word in
 *                every warp, no word prefix, no mask's local id; each must fail)
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXE 1024
#define MAXW (MAXE / 32)

static uint64_t g_rng;
static uint64_t rnd(void) {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t irand(uint32_t n) { return (uint32_t)(rnd() % n); }
static uint32_t popc(uint32_t x) { return (uint32_t)__builtin_popcount(x); }

typedef struct Blk {
  int32_t e, local;
  uint32_t cnt;
  int writes; /* block id writes */
  uint32_t pad_writes[1024]; /* per slot */
} Blk;

typedef struct Case {
  uint32_t E, T, k, U, rl, NT, has_mask;
  uint32_t pb[MAXW];  /* presence, enabled (the mask applied) */
  uint32_t bm[MAXW];  /* the mask's bitmap */
  uint32_t pre[MAXW]; /* its prefix counts */
  uint32_t tm[MAXE];
} Case;

static Blk g_blk[MAXE];
static int g_bug; /* --bug N: a deliberate defect in the own form, which the model must catch */

static int32_t local_id(const Case* c, uint32_t word, uint32_t bit) {
  return c->has_mask ? (int32_t)(c->pre[word] + popc(c->bm[word] & ((1u << bit) - 1u))) : (int32_t)(word * 32u + bit);
}

static void write_block(const Case* c, uint32_t b, uint32_t e, uint32_t cnt, int32_t local, uint32_t D, int* bad) {
  if (b >= D) {
    (*bad)++;
    return;
  }
  Blk* k = &g_blk[b];
  k->writes++;
  if ((int32_t)e != k->e || local != k->local || cnt != k->cnt) (*bad)++;
  for (uint32_t q = cnt; q < c->U; ++q) k->pad_writes[q]++;
}

/* the default form: blocks by the search over the words' prefixes */
static void form_search(const Case* c, uint32_t D, const uint32_t* ex, uint32_t nwords, int* bad) {
  const uint32_t R = 1u << c->rl, NW = c->NT / 32u;
  for (uint32_t cta = 0; cta < R; ++cta)
    for (uint32_t base = 0; (base << c->rl) + cta < D; base += c->NT)
      for (uint32_t w = 0; w < NW; ++w)
        for (uint32_t l = 0; l < 32; ++l) {
          const uint32_t b = ((base + w + NW * l) << c->rl) | cta;
          if (b >= D) continue;
          uint32_t src = 0;
          for (uint32_t q = 1; q < nwords; ++q)
            if (ex[q] <= b) src = q;
          uint32_t wv = c->pb[src], r = b - ex[src], bit = 0;
          for (uint32_t width = 16; width >= 1; width >>= 1) {
            const uint32_t cc = popc(wv & ((1u << width) - 1u));
            if (r >= cc) {
              r -= cc;
              wv >>= width;
              bit += width;
            }
          }
          const uint32_t e = src * 32u + bit;
          write_block(c, b, e, popc(c->tm[e]), local_id(c, src, bit), D, bad);
        }
}

/* v17: blocks by word ownership */
static void form_own(const Case* c, uint32_t D, const uint32_t* ex, uint32_t nwords, int* bad) {
  const uint32_t R = 1u << c->rl, NW = c->NT / 32u;
  for (uint32_t cta = 0; cta < R; ++cta)
    for (uint32_t w = 0; w < NW; ++w)
      for (uint32_t q = w; q < nwords; q += g_bug == 3 ? 1u : NW)
        for (uint32_t l = 0; l < 32; ++l) {
          const uint32_t e = q * 32u + l, wq = c->pb[q];
          const uint32_t tv = e < c->E ? c->tm[e] : 0u;
          const uint32_t below = g_bug == 1 ? (l == 31 ? ~0u : (2u << l) - 1u) : (1u << l) - 1u;
          const uint32_t b = (g_bug == 4 ? 0u : ex[q]) + popc(wq & below);
          if (((wq >> l) & 1u) && (g_bug == 2 || (b & (R - 1u)) == cta))
            write_block(c, b, e, popc(tv), g_bug == 5 ? (int32_t)e : local_id(c, q, l), D, bad);
        }
}

int main(int argc, char** argv) {
  const long cases = argc > 1 ? atol(argv[1]) : 200000;
  g_rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
  g_bug = argc > 4 && !strcmp(argv[3], "--bug") ? atoi(argv[4]) : 0;
  static const uint32_t Es[] = {1, 8, 16, 31, 60, 64, 128, 160, 256, 257, 384, 512, 513, 1024};
  long bad_cases[2] = {0, 0};
  for (long i = 0; i < cases; ++i) {
    Case c;
    memset(&c, 0, sizeof c);
    c.E = irand(4) ? Es[irand(14)] : 1 + irand(MAXE);
    c.k = 1 + irand(c.E < 32 ? c.E : 32);
    c.T = 2 + irand(15);
    if (c.T * c.k > 128) c.T = 128 / c.k < 2 ? 2 : 128 / c.k;
    if (c.T * c.k > 256) c.k = 128 / c.T;
    c.U = c.T + irand(1024 - c.T + 1);
    c.rl = irand(4);
    c.NT = irand(2) ? 256u : 512u;
    c.has_mask = irand(2);
    const uint32_t nwords = (c.E + 31) / 32;
    for (uint32_t e = 0; e < c.E; ++e)
      if (!c.has_mask || irand(10) >= 3) c.bm[e / 32] |= 1u << (e % 32);
    for (uint32_t wd = 0, acc = 0; wd < nwords; ++wd) {
      c.pre[wd] = acc;
      acc += popc(c.bm[wd]);
    }
    /* picks: k distinct experts per token (the route's gating gives distinct ones) */
    uint32_t pres[MAXW] = {0};
    for (uint32_t t = 0; t < c.T; ++t) {
      uint32_t mine[MAXW] = {0};
      for (uint32_t j = 0; j < c.k; ++j) {
        uint32_t e;
        do e = irand(c.E);
        while ((mine[e / 32] >> (e % 32)) & 1u);
        mine[e / 32] |= 1u << (e % 32);
        pres[e / 32] |= 1u << (e % 32);
        c.tm[e] |= 1u << t;
      }
    }
    for (uint32_t wd = 0; wd < nwords; ++wd) c.pb[wd] = pres[wd] & c.bm[wd];
    uint32_t ex[MAXW], D = 0;
    for (uint32_t wd = 0; wd < nwords; ++wd) {
      ex[wd] = D;
      D += popc(c.pb[wd]);
    }
    for (int f = 0; f < 2; ++f) {
      /* the statement */
      for (uint32_t e = 0, b = 0; e < c.E; ++e)
        if ((c.pb[e / 32] >> (e % 32)) & 1u) {
          memset(&g_blk[b], 0, sizeof g_blk[b]);
          g_blk[b].e = (int32_t)e;
          g_blk[b].local = local_id(&c, e / 32, e % 32);
          g_blk[b].cnt = popc(c.tm[e]);
          ++b;
        }
      int bad = 0;
      if (f == 0) form_search(&c, D, ex, nwords, &bad);
      else form_own(&c, D, ex, nwords, &bad);
      for (uint32_t b = 0; b < D; ++b) {
        if (g_blk[b].writes != 1) bad++;
        for (uint32_t q = 0; q < c.U; ++q)
          if (g_blk[b].pad_writes[q] != (q >= g_blk[b].cnt ? 1u : 0u)) bad++;
      }
      if (bad && bad_cases[f]++ < 5)
        printf("%s MISMATCH: E=%u k=%u T=%u U=%u R=%u NT=%u mask=%u D=%u (%d wrong)\n", f ? "own" : "search", c.E, c.k,
               c.T, c.U, 1u << c.rl, c.NT, c.has_mask, D, bad);
    }
  }
  printf("onepass_model: %ld cases (E 1 - 1024, T 2 - 16, T*k <= 128, U >= T, 1 - 8 CTAs, 256 / 512 threads, "
         "masks): search form %ld failing, own form %ld failing\n", cases, bad_cases[0], bad_cases[1]);
  return bad_cases[0] || bad_cases[1] ? 1 : 0;
}
