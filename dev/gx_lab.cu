/*
 * gx_lab.cu - lab file (not built by default, never part of the library): "gx", route in ONE
 * cooperative launch over the whole grid for middle T (issue 4's T = 1024 target, docs/targets.md
 * L1), written in session 24 to learn whether the design can approach 4 us before it goes into
 * the library.
 *
 * Why. Route at T = 1024 (DeepSeek-R1 softmax) is the gate kernel then ctm's cluster sort: 8.26 us
 * on the H200 (run 26), of which the sort alone is 5.7. Every measured alternative moved a
 * dependent phase instead of removing one (perf-log v16): gtm's expert CTAs waited on each other
 * (a look-back over experts), ctm's exchange is one cluster (16 SMs). Here each CTA gates its own
 * R <= 32 rows, publishes one count byte per expert, meets the others at ONE grid barrier (0.94 us
 * at 132 CTAs, lab call 28), then computes every expert's start redundantly (each CTA reads the
 * whole E x G byte matrix, 33 KB at E = 256, G = 132) and places its own entries: no second
 * barrier, no look-back, no launch boundary, the top-k never leave the CTA.
 *
 *   A. CTA c gates rows [c R, c R + R) (a warp per row, gate.cuh mr_gate_row: the gate
 *      kernel's packed rows, the same bits); entry (tl, slot) -> shared (expert, weight); bit tl
 *      of the expert's token mask tm[e] (shared atomics: order-free, so deterministic).
 *   B. cnt[e][c] = popc(tm[e]) (one byte: R <= 32), then the grid barrier.
 *   C. thread e: total_e and before_e (the bytes of CTAs < c) by dp4a over its row; the padded
 *      exclusive scan over experts (64-bit: padded size low, enabled count high = local id).
 *   D. entry (tl, slot) of expert e -> start_e + before_e + popc(tm[e] below tl): ascending token
 *      order inside each expert. Padding and block ids of experts e = c + G j (a warp each);
 *      CTA 0 the totals.
 *
 * The barrier word: `mono` (the lab's best case) adds G per call to a counter that is never
 * reset (target = the next multiple of G), `zero` is what the library would do without a
 * persistent word: a one-thread launch zeroes it, the gx launch follows with PDL and waits for it
 * (griddepcontrol.wait) only before arriving, so the zeroing hides under the gating.
 *
 * Checks: every layout bit for bit against moeroute_cpu_sort of gx's own top-k (whole arrays:
 * poisoned before, past the total they must stay poison), gx's top-k against the library
 * route's (ids and weight bits), with and without an expert mask. Times (kernel metric:
 * lab_util.h): gx mono, gx zero, the library's route and gate kernel, side by side.
 *
 * Build (after cmake --build BUILD):
 *   nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gx_lab.cu \
 *        BUILD/libmoeroute.a -o BUILD/gx_lab
 * Run: BUILD/gx_lab [--no-time] [--ts 256,1024,...]   exit 0 all checks passed, 1 a check failed
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gate.cuh"
#include "cuda/sort.cuh"
#include "lab_util.h"
#include "moeroute.h"

#define GX_THREADS 256
#define GX_WARPS (GX_THREADS / 32)
#define GX_MAX_R 32

typedef struct gx_args {
  uint32_t T, E, k, U, G, R, Gp; /* Gp: the count rows' stride in bytes (G rounded up to 16) */
  unsigned char* cnt;            /* [E][Gp] */
  uint32_t* bar;
  int32_t* topk_ids;             /* optional */
  float* topk_weights;           /* optional */
  uint32_t probe;                /* timing probes (WRONG outputs): 1 = no grid barrier, 2 = stop after gating */
  unsigned long long* stamps;    /* optional: [G][GX_NST] %globaltimer of thread 0 at the phase ends */
} gx_args;
#define GX_NST 6 /* entry, gated, arrived, left the barrier, starts known, done */
__device__ __forceinline__ void gx_stamp(const gx_args& a, uint32_t j) {
  if (a.stamps == NULL || threadIdx.x != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  a.stamps[blockIdx.x * GX_NST + j] = t;
}

/* the bytes of word w (CTAs b .. b + 3) of CTAs below lim */
__device__ __forceinline__ uint32_t gx_below(uint32_t w, uint32_t b, uint32_t lim) {
  if (b + 4u <= lim) return w;
  if (b >= lim) return 0u;
  return w & ((1u << (8u * (lim - b))) - 1u);
}

/* shared words: tm [E] | ent id [R k] | ent weight bits [R k] | start [E] | pos [E] | cnt [E] | loc [E] | w64 [2 GX_WARPS] */
#define GX_MAXJ 9 /* count loads per thread in flight: G <= 144 (and, TR, E <= 256) */
template <int DT, int EPL, bool ZERO, bool TR, int LPR>
__global__ void __launch_bounds__(GX_THREADS, 1)
    gx_route_kernel(const __grid_constant__ mr_gate_p p, const __grid_constant__ mr_sort_out o,
                    const __grid_constant__ gx_args a) {
  extern __shared__ __align__(16) uint32_t gx_smem[];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, c = blockIdx.x;
  const uint32_t E = a.E, k = a.k, U = a.U, G = a.G, R = a.R;
  uint32_t* tm = gx_smem;
  int32_t* ent_id = (int32_t*)(tm + E);
  uint32_t* ent_w = (uint32_t*)(ent_id + R * k);
  uint32_t* s_start = ent_w + R * k;
  uint32_t* s_pos = s_start + E;
  uint32_t* s_cnt = s_pos + E;
  uint32_t* s_loc = s_cnt + E;
  unsigned long long* s_w64 = (unsigned long long*)(s_loc + E + (E & 1u)); /* 8-byte aligned */
  const uint32_t Ep = (E + 15u) & ~15u; /* TR: a CTA's row of count bytes */
  unsigned char* cb = (unsigned char*)(s_w64 + GX_WARPS);  /* TR: [Ep] bytes */
  uint32_t* rt = (uint32_t*)(cb + Ep);                     /* TR: [NRG][Ep + Ep / 16] (before << 16 | total) */
  gx_stamp(a, 0);
  if (ZERO) mr_pdl_launch_dependents(); /* nothing follows in the lab; kept as the library would */
  for (uint32_t e = tid; e < E; e += GX_THREADS) tm[e] = 0u;
  __syncthreads();

  /* A. gating: a warp per row */
  const uint32_t t0 = c * R, nrows = min(R, a.T - t0);
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
  /* a warp per row (LPR 32), or segments of LPR lanes, 32 / LPR rows per warp and step (the gate
   * kernel's segment rows: gate.cuh mr_gate_packed_seg without the filter, the same bits) */
  constexpr uint32_t RPW = LPR == 32 ? 1u : 32u / LPR;
  constexpr int EPS = LPR == 32 ? EPL : 32 * EPL / LPR;
  const uint32_t sl = LPR == 32 ? lane : lane % LPR, seg = LPR == 32 ? 0u : lane / LPR;
#pragma unroll 1
  for (uint32_t tb = warp * RPW; tb < nrows; tb += GX_WARPS * RPW) { /* warp-uniform */
    const uint32_t tl = tb + seg, t = t0 + tl;
    const bool live = tl < nrows;
    uint32_t raw[EPS];
    const unsigned char* row = p.logits + (size_t)(live ? t : t0) * p.row_bytes;
    int32_t id;
    float w;
    if constexpr (LPR == 32) {
      mr_load_lane<MR_ESZ(DT), EPL>(row, lane, p.num_experts, ninf, true, raw);
      mr_gate_row<DT, EPL, MR_KIND_PACKED>(p, lane, raw, NULL, NULL, true, NULL, NULL, &id, &w);
    } else {
      mr_load_lane<2, EPS>(row, sl, p.num_experts, ninf, live, raw);
      mr_gate_packed_seg<DT, EPS, LPR, (EPL == 4 ? 4 : 8)>(p, sl, raw, row, 0, &id, &w);
    }
    if (live && sl < k) {
      const uint32_t i = tl * k + sl; /* slot sl */
      ent_id[i] = id;
      ent_w[i] = __float_as_uint(w);
      if (a.topk_ids) a.topk_ids[(size_t)t * k + sl] = id;
      if (a.topk_weights) a.topk_weights[(size_t)t * k + sl] = w;
      const bool en = (uint32_t)id < E && (o.expert_mask == NULL || __ldg(o.expert_mask + id) != 0);
      if (en) atomicOr(tm + id, 1u << tl);
    }
  }
  __syncthreads();
  gx_stamp(a, 1);
  if (a.probe == 2u) return;

  /* B. this CTA's count byte of every expert, then the grid barrier */
  if (TR) { /* row c of [G][Ep]: Ep / 16 vector stores */
    for (uint32_t e = tid; e < Ep; e += GX_THREADS) cb[e] = e < E ? (unsigned char)__popc(tm[e]) : 0u;
    __syncthreads();
    for (uint32_t q = tid; q < Ep / 16u; q += GX_THREADS) ((uint4*)(a.cnt + (size_t)c * Ep))[q] = ((const uint4*)cb)[q];
  } else {
    for (uint32_t e = tid; e < E; e += GX_THREADS) a.cnt[(size_t)e * a.Gp + c] = (unsigned char)__popc(tm[e]);
  }
  __syncthreads();
  if (tid == 0 && a.probe != 1u) {
    uint32_t v;
    /* ZERO: the zeroing launch's store must land before any arrival counts, so the wait (its
     * completion) comes first; it has long completed by now, under the gating */
    if (ZERO) mr_pdl_wait();
    __threadfence();
    asm volatile("atom.add.release.gpu.u32 %0, [%1], 1;" : "=r"(v) : "l"(a.bar) : "memory");
    const uint32_t target = ZERO ? G : (v / G + 1u) * G; /* mono: a multiple of G between calls */
    gx_stamp(a, 2);
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(a.bar) : "memory");
    } while ((int32_t)(v - target) < 0);
    __threadfence();
  }
  __syncthreads();
  gx_stamp(a, 3);

  /* C. every expert's count, the count of the CTAs before this one, the padded scan */
  const uint32_t ept = (E + GX_THREADS - 1u) / GX_THREADS; /* <= 4 */
  if (TR) { /* thread (rg, col): the 16 experts of column col over rows rg + NRG i, 16-bit lanes */
    const uint32_t ncol = Ep / 16u, nrg = GX_THREADS / ncol, col = tid % ncol, rg = tid / ncol;
    uint4 x[GX_MAXJ];
#pragma unroll
    for (uint32_t i = 0; i < GX_MAXJ; ++i) {
      const uint32_t r = rg + nrg * i;
      x[i] = r < G ? __ldcg((const uint4*)(a.cnt + (size_t)r * Ep) + col) : make_uint4(0u, 0u, 0u, 0u);
    }
    uint32_t te[4] = {0u, 0u, 0u, 0u}, to[4] = {0u, 0u, 0u, 0u}, be[4] = {0u, 0u, 0u, 0u}, bo[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (uint32_t i = 0; i < GX_MAXJ; ++i) {
      const bool b4 = rg + nrg * i < c;
      const uint32_t w[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint32_t ev = w[q] & 0x00ff00ffu, od = (w[q] >> 8) & 0x00ff00ffu;
        te[q] += ev;
        to[q] += od;
        be[q] += b4 ? ev : 0u;
        bo[q] += b4 ? od : 0u;
      }
    }
    if (rg < nrg && col < ncol) {
      uint32_t* dst = rt + rg * (Ep + Ep / 16u) + col * 17u; /* expert e at e + e / 16: no bank conflicts */
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        dst[4 * q + 0] = (be[q] << 16) | (te[q] & 0xffffu);
        dst[4 * q + 1] = (bo[q] << 16) | (to[q] & 0xffffu);
        dst[4 * q + 2] = (be[q] & 0xffff0000u) | (te[q] >> 16);
        dst[4 * q + 3] = (bo[q] & 0xffff0000u) | (to[q] >> 16);
      }
    }
    __syncthreads();
  }
  unsigned long long v[4], sum = 0ull;
  uint32_t cn[4], bf[4];
#pragma unroll
  for (uint32_t q = 0; q < 4u; ++q) {
    const uint32_t e = tid * ept + q;
    v[q] = 0ull;
    cn[q] = 0u;
    bf[q] = 0u;
    if (q < ept && e < E) {
      uint32_t tot = 0u, bef = 0u;
      if (TR) {
        const uint32_t ncol = Ep / 16u, nrg = GX_THREADS / ncol;
        uint32_t acc = 0u;
        for (uint32_t r = 0; r < nrg; ++r) acc += rt[r * (Ep + Ep / 16u) + e + e / 16u];
        tot = acc & 0xffffu;
        bef = acc >> 16;
      }
      const uint4* row = (const uint4*)(a.cnt + (size_t)e * a.Gp);
      uint4 xs[GX_MAXJ];
#pragma unroll
      for (uint32_t j = 0; j < GX_MAXJ; ++j) /* every load in flight (call 58: one after the other, 1.7 us) */
        xs[j] = !TR && j < a.Gp / 16u ? __ldcg(row + j) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
      for (uint32_t j = 0; j < GX_MAXJ; ++j) {
        if (TR) break;
        const uint4 x = xs[j];
        const uint32_t b = 16u * j;
        tot = __dp4a(gx_below(x.x, b, G), 0x01010101u, tot);
        tot = __dp4a(gx_below(x.y, b + 4u, G), 0x01010101u, tot);
        tot = __dp4a(gx_below(x.z, b + 8u, G), 0x01010101u, tot);
        tot = __dp4a(gx_below(x.w, b + 12u, G), 0x01010101u, tot);
        bef = __dp4a(gx_below(x.x, b, c), 0x01010101u, bef);
        bef = __dp4a(gx_below(x.y, b + 4u, c), 0x01010101u, bef);
        bef = __dp4a(gx_below(x.z, b + 8u, c), 0x01010101u, bef);
        bef = __dp4a(gx_below(x.w, b + 12u, c), 0x01010101u, bef);
      }
      const uint32_t en = o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0;
      cn[q] = en ? tot : 0u; /* a masked expert has no entries (its bits were never set) */
      bf[q] = bef;
      v[q] = (unsigned long long)(mr_udiv(cn[q] + U - 1u, U, o.u_magic) * U) | ((unsigned long long)en << 32);
    }
    sum += v[q];
  }
  unsigned long long total;
  unsigned long long run = mr_cta_excl_scan64<GX_WARPS>(sum, s_w64, &total); /* sort.cuh (since f6f42b1) */
#pragma unroll
  for (uint32_t q = 0; q < 4u; ++q) {
    const uint32_t e = tid * ept + q;
    if (q < ept && e < E) {
      s_start[e] = (uint32_t)run;
      s_loc[e] = (uint32_t)(run >> 32);
      s_cnt[e] = cn[q];
      s_pos[e] = (uint32_t)run + bf[q];
    }
    run += v[q];
  }
  __syncthreads();
  gx_stamp(a, 4);

  /* D. this CTA's entries; padding and block ids of experts c + G j; the totals */
  for (uint32_t i = tid; i < nrows * k; i += GX_THREADS) {
    const uint32_t tl = mr_udiv(i, k, o.k_magic), slot = i - tl * k;
    const uint32_t e = (uint32_t)ent_id[i];
    if (e < E && s_cnt[e] != 0u) {
      const uint32_t pos = s_pos[e] + __popc(tm[e] & ((1u << tl) - 1u));
      const uint32_t t = t0 + tl;
      if (o.sorted_ids) {
        o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
        if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = ent_w[i];
      }
      if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)(t * k + slot);
    }
  }
  for (uint32_t e = c + G * warp; e < E; e += G * GX_WARPS) {
    const uint32_t n = s_cnt[e];
    if (n != 0u) mr_emit_padding(&o, s_start[e], n, mr_udiv(n + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  if (c == 0u && tid == 0u) mr_emit_totals(&o, (uint32_t)total);
  gx_stamp(a, 5);
}

__global__ void gx_zero_kernel(uint32_t* bar) {
  mr_pdl_wait();
  if (threadIdx.x == 0) *bar = 0u;
  mr_pdl_launch_dependents();
}

/* ---- host ---------------------------------------------------------------------------- */

typedef struct Case {
  const char* name;
  int E, k;
} Case;
static const Case CASES[] = {{"deepseek-r1-softmax", 256, 8}, {"gpt-oss-120b", 128, 4}};

typedef struct Dev {
  moeroute_params p;
  moeroute_buffers b;   /* the library route's outputs */
  moeroute_buffers x;   /* gx's outputs (same inputs) */
  moeroute_sizes sz;
  gx_args a;
  mr_gate_p gp;
  mr_sort_out o;
  size_t smem;
  int sms;
  int seg; /* the kernel gates by segments of 16 lanes (TR form): set at setup from g_seg */
} Dev;

static int g_seg = 0; /* dev_setup: the kernel gates by segments of 16 lanes per row (R a multiple of 16) */

static void out_alloc(const moeroute_sizes* sz, moeroute_buffers* b) {
  b->topk_ids = (int32_t*)lab_dalloc(sz->topk_len * 4);
  b->topk_weights = (float*)lab_dalloc(sz->topk_len * 4);
  b->sorted_ids = (int32_t*)lab_dalloc(sz->ck_sorted_len * 4);
  b->sorted_weights = (float*)lab_dalloc(sz->ck_sorted_len * 4);
  b->sorted_expert_ids = (int32_t*)lab_dalloc(sz->ck_blocks_len * 4);
  b->num_valid_ids = (int32_t*)lab_dalloc(8);
  b->sorted_token_ids = (int32_t*)lab_dalloc(sz->vllm_sorted_len * 4);
  b->expert_ids = (int32_t*)lab_dalloc(sz->vllm_blocks_len * 4);
  b->num_tokens_post_pad = (int32_t*)lab_dalloc(4);
}
static void out_poison(const moeroute_sizes* sz, const moeroute_buffers* b) {
  CK(cudaMemset(b->sorted_ids, 0xAB, sz->ck_sorted_len * 4));
  CK(cudaMemset(b->sorted_weights, 0xAB, sz->ck_sorted_len * 4));
  CK(cudaMemset(b->sorted_expert_ids, 0xAB, sz->ck_blocks_len * 4));
  CK(cudaMemset(b->num_valid_ids, 0xAB, 8));
  CK(cudaMemset(b->sorted_token_ids, 0xAB, sz->vllm_sorted_len * 4));
  CK(cudaMemset(b->expert_ids, 0xAB, sz->vllm_blocks_len * 4));
  CK(cudaMemset(b->num_tokens_post_pad, 0xAB, 4));
}

static int dev_setup(const Case* cs, int T, int mask_pct, uint64_t seed, Dev* d) {
  memset(d, 0, sizeof *d);
  moeroute_params_init(&d->p);
  d->p.num_tokens = T;
  d->p.num_experts = cs->E;
  d->p.top_k = cs->k;
  d->p.unit_size = 32;
  d->p.logits_dtype = MOEROUTE_DTYPE_BF16;
  d->p.score = MOEROUTE_SCORE_SOFTMAX;
  d->p.renormalize = 1;
  d->p.scale = 1.0f;
  moeroute_buffers_init(&d->b);
  if (moeroute_get_sizes(&d->p, &d->sz) != MOEROUTE_OK) return -1;
  /* inputs: random bf16 logits in [-4, 4), a few exact ties */
  uint64_t st = seed;
  const size_t nl = (size_t)T * cs->E;
  uint16_t* hl = (uint16_t*)malloc(nl * 2);
  for (size_t i = 0; i < nl; ++i) {
    hl[i] = lab_bf16_uniform(&st, -4.0, 4.0);
    if (i % 97 == 5) hl[i] = hl[i - 1]; /* ties */
  }
  void* logits = lab_dalloc(nl * 2);
  CK(cudaMemcpy(logits, hl, nl * 2, cudaMemcpyHostToDevice));
  free(hl);
  int32_t* mask = NULL;
  if (mask_pct > 0) {
    int32_t* hm = (int32_t*)malloc(cs->E * 4);
    for (int e = 0; e < cs->E; ++e) hm[e] = (int)(lab_splitmix(&st) % 100) >= mask_pct;
    mask = (int32_t*)lab_dalloc(cs->E * 4);
    CK(cudaMemcpy(mask, hm, cs->E * 4, cudaMemcpyHostToDevice));
    free(hm);
  }
  d->b.logits = logits;
  d->b.expert_mask = mask;
  out_alloc(&d->sz, &d->b);
  d->x = d->b;
  out_alloc(&d->sz, &d->x);
  size_t ws = 0;
  if (moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, &d->p, &ws) != MOEROUTE_OK) return -1;
  d->b.workspace = lab_dalloc(ws);
  d->b.workspace_bytes = ws;

  /* gx: R rows per CTA so that G <= SMs */
  int dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev));
  uint32_t R = (uint32_t)((T + d->sms - 1) / d->sms);
  if (R < 1) R = 1;
  d->seg = g_seg;
  if (g_seg) R = (R + 15u) & ~15u; /* whole steps of 16 rows */
  if (R > GX_MAX_R) return -1;
  gx_args* a = &d->a;
  a->T = T;
  a->E = cs->E;
  a->k = cs->k;
  a->U = 32;
  a->R = R;
  a->G = (T + R - 1) / R;
  a->Gp = (a->G + 15u) & ~15u;
  const size_t Ep = (a->E + 15u) & ~15u;
  a->cnt = (unsigned char*)lab_dalloc((size_t)a->Gp * Ep); /* [E][Gp] or (TR) [G][Ep] */
  a->bar = (uint32_t*)lab_dalloc(256);
  CK(cudaMemset(a->bar, 0, 256));
  CK(cudaMemset(a->cnt, 0x5A, (size_t)a->Gp * Ep)); /* bytes past G are never written: garbage on purpose */
  a->topk_ids = d->x.topk_ids;
  a->topk_weights = d->x.topk_weights;
  mr_gate_args ga;
  memset(&ga, 0, sizeof ga);
  ga.logits = logits;
  ga.row_stride = cs->E;
  ga.num_tokens = T;
  ga.num_experts = cs->E;
  ga.top_k = cs->k;
  ga.score = MOEROUTE_SCORE_SOFTMAX;
  ga.renormalize = 1;
  ga.scale = 1.0f;
  ga.num_groups = 1;
  ga.topk_groups = 1;
  ga.group_size = cs->E;
  ga.packed = 1;
  mr_gate_p_init(&ga, MOEROUTE_DTYPE_BF16, &d->gp);
  mr_sort_out* o = &d->o;
  memset(o, 0, sizeof *o);
  o->sorted_ids = d->x.sorted_ids;
  o->sorted_weights = d->x.sorted_weights;
  o->sorted_expert_ids = d->x.sorted_expert_ids;
  o->num_valid_ids = d->x.num_valid_ids;
  o->sorted_token_ids = d->x.sorted_token_ids;
  o->expert_ids = d->x.expert_ids;
  o->num_tokens_post_pad = d->x.num_tokens_post_pad;
  o->expert_mask = mask;
  o->num_tokens = T;
  o->num_experts = cs->E;
  o->top_k = cs->k;
  o->unit_size = 32;
  o->u_magic = mr_magic(32);
  o->k_magic = mr_magic((uint32_t)cs->k);
  const uint32_t E = a->E;
  d->smem = (size_t)(E + 2 * R * cs->k + 4 * E + 1) * 4 + 16 * GX_WARPS;
  return 0;
}

static void dev_free(Dev* d) {
  moeroute_buffers* bs[2] = {&d->b, &d->x};
  for (int i = 0; i < 2; ++i) {
    moeroute_buffers* b = bs[i];
    cudaFree(b->topk_ids);
    cudaFree(b->topk_weights);
    cudaFree(b->sorted_ids);
    cudaFree(b->sorted_weights);
    cudaFree(b->sorted_expert_ids);
    cudaFree(b->num_valid_ids);
    cudaFree(b->sorted_token_ids);
    cudaFree(b->expert_ids);
    cudaFree(b->num_tokens_post_pad);
  }
  cudaFree((void*)d->b.logits);
  cudaFree((void*)d->b.expert_mask);
  cudaFree(d->b.workspace);
  cudaFree(d->a.cnt);
  cudaFree(d->a.bar);
}

static int g_coop = 1; /* 0: a plain launch (every CTA resident in practice: G <= SMs, an idle GPU) */
static int g_tr = 0; /* the count rows by CTA ([G][Ep], vector stores) instead of by expert */
template <int EPL, bool ZERO, bool TR, int LPR>
static cudaError_t gx_launch_t(const Dev* d, cudaStream_t s) {
  cudaLaunchConfig_t lc = mr_launch_config(d->a.G, GX_THREADS, d->smem, s);
  cudaLaunchAttribute at[2];
  memset(at, 0, sizeof at);
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = g_coop;
  unsigned n = 1;
  if (ZERO) { /* the zeroing launch with PDL too: it starts under its predecessor's tail */
    cudaLaunchConfig_t zc = mr_launch_config(1, 32, 0, s);
    cudaLaunchAttribute za;
    memset(&za, 0, sizeof za);
    za.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    za.val.programmaticStreamSerializationAllowed = 1;
    zc.attrs = &za;
    zc.numAttrs = 1;
    const cudaError_t ze = cudaLaunchKernelEx(&zc, gx_zero_kernel, d->a.bar);
    if (ze != cudaSuccess) return ze;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    n = 2;
  }
  lc.attrs = at;
  lc.numAttrs = n;
  const size_t smem = d->smem + (TR ? 16u * ((d->a.E + 15u) & ~15u) + 4u * GX_THREADS * 16u : 0u);
  lc.dynamicSmemBytes = smem;
  return cudaLaunchKernelEx(&lc, gx_route_kernel<MOEROUTE_DTYPE_BF16, EPL, ZERO, TR, LPR>, d->gp, d->o, d->a);
}
template <int EPL, bool ZERO>
static cudaError_t gx_launch_z(const Dev* d, cudaStream_t s) {
  if (d->seg) return gx_launch_t<EPL, ZERO, true, 16>(d, s);
  return g_tr ? gx_launch_t<EPL, ZERO, true, 32>(d, s) : gx_launch_t<EPL, ZERO, false, 32>(d, s);
}
static cudaError_t gx_launch(const Dev* d, bool zero, cudaStream_t s) {
  const int epl = mr_cuda_epl_bucket((int32_t)d->a.E);
  if (epl == 4) return zero ? gx_launch_z<4, true>(d, s) : gx_launch_z<4, false>(d, s);
  if (epl == 8) return zero ? gx_launch_z<8, true>(d, s) : gx_launch_z<8, false>(d, s);
  return cudaErrorInvalidValue;
}

static int cmp_words(const char* what, const void* dv, const void* hv, int64_t n) {
  uint32_t* g = (uint32_t*)malloc(n * 4 + 4);
  CK(cudaMemcpy(g, dv, n * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int64_t i = 0; i < n; ++i)
    if (g[i] != ((const uint32_t*)hv)[i]) {
      if (bad < 3) printf("  MISMATCH %s[%lld]: gpu %08x cpu %08x\n", what, (long long)i, g[i], ((const uint32_t*)hv)[i]);
      ++bad;
    }
  free(g);
  return bad;
}

/* gx's layouts against moeroute_cpu_sort of gx's top-k (whole arrays, the CPU's poisoned alike);
 * gx's top-k against the library route's */
static int check_case(const Case* cs, int T, int mask_pct, bool zero, cudaStream_t s) {
  Dev d;
  if (dev_setup(cs, T, mask_pct, 0x1234u + T + mask_pct, &d) != 0) {
    printf("setup failed %s T=%d\n", cs->name, T);
    return 1;
  }
  out_poison(&d.sz, &d.b);
  out_poison(&d.sz, &d.x);
  if (moeroute_cuda_route(&d.p, &d.b, s) != MOEROUTE_OK) {
    printf("library route failed: %s\n", moeroute_last_error());
    return 1;
  }
  int bad = 0;
  for (int rep = 0; rep < 3; ++rep) CK(gx_launch(&d, zero, s)); /* three calls: the barrier word's reuse */
  CK(cudaStreamSynchronize(s));
  /* CPU sort of gx's top-k */
  const int64_t n = d.sz.topk_len;
  int32_t* hid = (int32_t*)malloc(n * 4);
  float* hw = (float*)malloc(n * 4);
  CK(cudaMemcpy(hid, d.x.topk_ids, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hw, d.x.topk_weights, n * 4, cudaMemcpyDeviceToHost));
  int32_t* rid = (int32_t*)malloc(n * 4);
  float* rw = (float*)malloc(n * 4);
  CK(cudaMemcpy(rid, d.b.topk_ids, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(rw, d.b.topk_weights, n * 4, cudaMemcpyDeviceToHost));
  int topk_diff = 0;
  for (int64_t i = 0; i < n; ++i) topk_diff += hid[i] != rid[i] || memcmp(hw + i, rw + i, 4) != 0;
  moeroute_buffers hb;
  moeroute_buffers_init(&hb);
  int32_t* hmask = NULL;
  if (d.b.expert_mask) {
    hmask = (int32_t*)malloc(cs->E * 4);
    CK(cudaMemcpy(hmask, d.b.expert_mask, cs->E * 4, cudaMemcpyDeviceToHost));
  }
  hb.expert_mask = hmask;
  hb.topk_ids = hid;
  hb.topk_weights = hw;
  const moeroute_sizes* z = &d.sz;
  hb.sorted_ids = (int32_t*)malloc(z->ck_sorted_len * 4);
  hb.sorted_weights = (float*)malloc(z->ck_sorted_len * 4);
  hb.sorted_expert_ids = (int32_t*)malloc(z->ck_blocks_len * 4);
  hb.num_valid_ids = (int32_t*)malloc(8);
  hb.sorted_token_ids = (int32_t*)malloc(z->vllm_sorted_len * 4);
  hb.expert_ids = (int32_t*)malloc(z->vllm_blocks_len * 4);
  hb.num_tokens_post_pad = (int32_t*)malloc(4);
  memset(hb.sorted_ids, 0xAB, z->ck_sorted_len * 4);
  memset(hb.sorted_weights, 0xAB, z->ck_sorted_len * 4);
  memset(hb.sorted_expert_ids, 0xAB, z->ck_blocks_len * 4);
  memset(hb.num_valid_ids, 0xAB, 8);
  memset(hb.sorted_token_ids, 0xAB, z->vllm_sorted_len * 4);
  memset(hb.expert_ids, 0xAB, z->vllm_blocks_len * 4);
  memset(hb.num_tokens_post_pad, 0xAB, 4);
  size_t cws = 0;
  moeroute_cpu_workspace_size(MOEROUTE_OP_SORT, &d.p, &cws);
  hb.workspace = cws ? malloc(cws) : NULL;
  hb.workspace_bytes = cws;
  if (moeroute_cpu_sort(&d.p, &hb) != MOEROUTE_OK) {
    printf("cpu sort failed: %s\n", moeroute_last_error());
    return 1;
  }
  bad += cmp_words("sorted_ids", d.x.sorted_ids, hb.sorted_ids, z->ck_sorted_len);
  bad += cmp_words("sorted_weights", d.x.sorted_weights, hb.sorted_weights, z->ck_sorted_len);
  bad += cmp_words("sorted_expert_ids", d.x.sorted_expert_ids, hb.sorted_expert_ids, z->ck_blocks_len);
  bad += cmp_words("num_valid_ids", d.x.num_valid_ids, hb.num_valid_ids, 2);
  bad += cmp_words("sorted_token_ids", d.x.sorted_token_ids, hb.sorted_token_ids, z->vllm_sorted_len);
  bad += cmp_words("expert_ids", d.x.expert_ids, hb.expert_ids, z->vllm_blocks_len);
  bad += cmp_words("num_tokens_post_pad", d.x.num_tokens_post_pad, hb.num_tokens_post_pad, 1);
  printf("check %-20s T=%6d mask %2d%% %s%s G=%u R=%u: %s (layout words wrong %d; top-k entries unlike the "
         "library route's %d)\n",
         cs->name, T, mask_pct, zero ? "zero" : "mono", d.seg ? " seg" : g_tr ? " tr" : "", d.a.G, d.a.R, bad ? "FAIL" : "ok", bad,
         topk_diff);
  free(hid);
  free(hw);
  free(rid);
  free(rw);
  free(hmask);
  free(hb.sorted_ids);
  free(hb.sorted_weights);
  free(hb.sorted_expert_ids);
  free(hb.num_valid_ids);
  free(hb.sorted_token_ids);
  free(hb.expert_ids);
  free(hb.num_tokens_post_pad);
  free(hb.workspace);
  dev_free(&d);
  return bad != 0; /* top-k unlike the library's: reported (the gate kernel's segment rows claim the same bits) */
}

static double time_gx(const Dev* d, bool zero, cudaStream_t s) {
  const int calls = 50;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) CK(gx_launch(d, zero, s));
  CK(cudaStreamEndCapture(s, &g));
  return lab_graph_us(g, calls, 9, 2, s);
}
static double time_lib(const Dev* d, int gate, cudaStream_t s) {
  const int calls = 50;
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) {
    const moeroute_status st = gate ? moeroute_cuda_gate(&d->p, &d->b, s) : moeroute_cuda_route(&d->p, &d->b, s);
    if (st != MOEROUTE_OK) {
      printf("timing call failed: %s\n", moeroute_last_error());
      exit(2);
    }
  }
  CK(cudaStreamEndCapture(s, &g));
  return lab_graph_us(g, calls, 9, 2, s);
}

/* One call at a time (after warm-up), thread 0's %globaltimer at the phase ends: over the CTAs, the
 * median and the latest of (stamp - the earliest entry), ns; the median of 7 calls of each */
static void stamps(Dev* d, cudaStream_t s) {
  const uint32_t G = d->a.G;
  unsigned long long* ds = (unsigned long long*)lab_dalloc((size_t)G * GX_NST * 8);
  unsigned long long* hs = (unsigned long long*)malloc((size_t)G * GX_NST * 8);
  d->a.stamps = ds;
  double med[GX_NST][7], mx[GX_NST][7];
  for (int r = 0; r < 9; ++r) {
    CK(gx_launch(d, false, s));
    CK(cudaStreamSynchronize(s));
    if (r < 2) continue;
    CK(cudaMemcpy(hs, ds, (size_t)G * GX_NST * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (uint32_t c = 0; c < G; ++c) t0 = hs[c * GX_NST] < t0 ? hs[c * GX_NST] : t0;
    for (int j = 0; j < GX_NST; ++j) {
      double v[1024];
      double m = 0;
      for (uint32_t c = 0; c < G; ++c) {
        v[c] = (double)(hs[c * GX_NST + j] - t0);
        m = v[c] > m ? v[c] : m;
      }
      med[j][r - 2] = lab_median(v, (int)G);
      mx[j][r - 2] = m;
    }
  }
  printf("   stamps ns (median / latest CTA): entry, gated, arrived, left barrier, starts known, done:");
  for (int j = 0; j < GX_NST; ++j) printf("  %.0f/%.0f", lab_median(med[j], 7), lab_median(mx[j], 7));
  printf("\n");
  d->a.stamps = NULL;
  cudaFree(ds);
  free(hs);
}

int main(int argc, char** argv) {
  int do_time = 1;
  int ts[16] = {64, 256, 512, 1024, 2048, 4096}, nts = 6;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--no-time")) do_time = 0;
    if (!strcmp(argv[i], "--ts") && i + 1 < argc) {
      nts = 0;
      for (char* q = strtok(argv[++i], ","); q && nts < 16; q = strtok(NULL, ",")) ts[nts++] = atoi(q);
    }
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int fails = 0;
  const int checks[] = {1, 7, 64, 133, 256, 1000, 1024, 2049, 4096, 4224};
  for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; ++c)
    for (size_t j = 0; j < sizeof checks / sizeof checks[0]; ++j)
      for (int m = 0; m < 2; ++m)
        for (g_tr = 0; g_tr < 3; ++g_tr) {
          g_seg = g_tr == 2;
          fails += check_case(&CASES[c], checks[j], m ? 30 : 0, j & 1, s);
        }
  g_tr = 0;
  g_seg = 0;
  printf("gx check: %d failure(s)\n", fails);
  if (do_time) {
    printf("kernel metric, us (no moe_buf, U = 32, both layouts, bf16): gx mono | gx zero | route | gate | "
           "gx mono plain launch | probe 1 (no barrier) | probe 2 (gating only)\n");
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; ++c)
      for (int j = 0; j < nts; ++j) {
        Dev d;
        if (dev_setup(&CASES[c], ts[j], 0, 99u + ts[j], &d) != 0) continue;
        const double gm = time_gx(&d, false, s), gz = time_gx(&d, true, s);
        const double rt = time_lib(&d, 0, s), gt = time_lib(&d, 1, s);
        g_coop = 0;
        const double gp = time_gx(&d, false, s);
        g_coop = 1;
        d.a.probe = 1;
        const double p1 = time_gx(&d, false, s);
        d.a.probe = 2;
        const double p2 = time_gx(&d, false, s);
        d.a.probe = 0;
        printf("gx %-20s T=%6d G=%3u R=%2u  %7.2f  %7.2f  %7.2f  %7.2f  %7.2f  %7.2f  %7.2f  (zero / route %.3f)\n",
               CASES[c].name, ts[j], d.a.G, d.a.R, gm, gz, rt, gt, gp, p1, p2, gz / rt);
        stamps(&d, s);
        g_tr = 1;
        const double tm = time_gx(&d, false, s), tz = time_gx(&d, true, s);
        printf("gx-tr %-17s T=%6d G=%3u R=%2u  %7.2f  %7.2f  (zero / route %.3f)\n", CASES[c].name, ts[j], d.a.G,
               d.a.R, tm, tz, tz / rt);
        stamps(&d, s);
        g_tr = 0;
        dev_free(&d);
        g_seg = 1;
        if (dev_setup(&CASES[c], ts[j], 0, 99u + ts[j], &d) != 0) continue;
        const double sm_ = time_gx(&d, false, s), sz = time_gx(&d, true, s);
        printf("gx-seg %-16s T=%6d G=%3u R=%2u  %7.2f  %7.2f  (zero / route %.3f)\n", CASES[c].name, ts[j], d.a.G,
               d.a.R, sm_, sz, sz / rt);
        stamps(&d, s);
        g_seg = 0;
        dev_free(&d);
      }
  }
  CK(cudaStreamDestroy(s));
  return fails ? 1 : 0;
}
