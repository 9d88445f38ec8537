/*
 * gx.cu - route in one cooperative launch over the grid for middle T (gx: v22, session 24; perf-log
 * v22, design.md 37), and the sort in one cooperative launch (gxs: v23 - v24, sessions 25 - 26; design.md
 * 38, below).
 * Lab calls 57 - 60 built and measured gx as dev/gx_lab.cu (TR form, segment rows).
 *
 * Where: route without moe_buf, 16-bit softmax rows without bias or groups (the PACKED kind),
 * 16 <= E <= 256, k <= 8, 256 <= T <= 4096 wherever no one-launch decode sort fits, i.e. where route is not the pair
 * (v45b, on since session 40; v45 before it: 60 <= E, T*k >= 1152, from T = 384 for E < 128; 1024 <= T before v43)
 * (mr_cuda_gx_takes; knob gx: 1 takes every E <= 256
 * and every T up to 32 rows per CTA). The automatic rule is on since lab call 63 / results run 35
 * (session 25: test_cuda and the sanitizers with it; route DeepSeek-R1 softmax T = 1024 / 2048 9.15 /
 * 12.05 -> 7.29 / 7.84 us on the H100 against run 34). Before it, route there was the
 * gate kernel then a sort launch (ctm's cluster sort, or large.cu's L1 by segments and two more
 * launches): 10.09 / 13.68 / 11.27 us at T = 1024 / 2048 / 4096 for DeepSeek-R1 softmax on the H100,
 * against gx's 8.09 / 8.54 / 10.83 (lab call 60, kernel metric, the zeroing launch included).
 *
 *   0. a one-thread launch zeroes the barrier word (the workspace does not persist between calls)
 *      after waiting for the previous work on the stream; gx follows with PDL, so it starts only once
 *      that work has completed (its logits are final), and waits for the zeroing launch's completion
 *      (its store) only before arriving at the barrier: the zeroing hides under the gating.
 *   A. CTA c gates its R rows [c R, c R + R) (R a multiple of 16, <= 32) by segments of 16 lanes,
 *      two rows per warp and step (gate.cuh mr_gate_packed_seg, the gate kernel's bits); each entry
 *      goes to shared memory (expert, weight bits), to the top-k outputs where asked, and sets bit
 *      tl of its expert's token mask tm[e] (a shared atomicOr: order-free, so deterministic).
 *   B. the CTA's count of every expert (popc(tm[e]) <= 32: one byte) as row c of the [G][Ep] byte
 *      matrix in the workspace (Ep / 16 vector stores), then ONE grid barrier. v46 / v46d (below: E > 128 at any G,
 *      E <= 128 at G <= 32): no barrier; every byte carries a flag, the zeroing launch clears the matrix first, and
 *      C polls the rows themselves.
 *   C. every CTA reads the whole matrix (thread (row group, column): its rows of one 16-byte column,
 *      every load in flight, summed in 16-bit lanes, reduced in shared memory without bank
 *      conflicts) into each expert's total and the count of the CTAs before it; the padded scan over
 *      the experts (64-bit: padded size low, enabled count high = the local id).
 *   D. entry (tl, slot) of expert e at start_e + before_e + popc(tm[e] below tl): ascending token
 *      order inside each expert, the same bits as every sort; the padding and block ids of experts
 *      c + G j (a warp each); CTA 0 the totals.
 *
 * The exchange costs ~3 us (the counts' publication ~1.2, the barrier ~0.7, the read-back ~1.7,
 * lab call 60's stamps at T = 1024): gx wins where the two launches it replaces cost more, not below
 * T = 1024 (T = 256: 8.05 against 7.20). A refused cooperative launch (MPS, green contexts) returns
 * cudaErrorCooperativeLaunchTooLarge and the caller takes the other paths.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

#define MR_GX_THREADS 256
#define MR_GX_WARPS (MR_GX_THREADS / 32)
#define MR_GX_THREADS_CLR (2 * MR_GX_THREADS) /* v47: the routing threads, then as many clearing threads */
#define MR_GX_LPR 16      /* lanes per row */
#define MR_GX_MAXJ 9      /* count rows per thread in flight: G <= 16 * 9 = 144 (E <= 256: >= 16 row groups) */
#define MR_GX_MAX_G 144
#define MR_GX_MAX_R 32    /* rows per CTA: a token mask word */
/* auto range (lab call 60, H100, kernel metric, gx with its zeroing launch / the route before it):
 * DeepSeek-R1 softmax T = 256 8.05 / 7.20 (slower), 1024 8.09 / 10.09, 2048 8.54 / 13.68, 4096
 * 10.83 / 11.27; GPT-OSS-120B 256 6.95 / 5.52 (slower), 1024 7.09 / 7.74, 2048 7.54 / 9.22, 4096
 * 8.97 / 12.85.
 * v43 (session 38, lab call 113, H100, gxs_lab --bounds, gx since v24b's lean barriers / auto): DeepSeek-R1
 * softmax T = 256 6.88 / 7.10, 384 6.86 / 7.34, 512 6.56 / 8.38, 768 6.60 / 9.11, 1023 6.89 / 10.15; GPT-OSS-120B
 * 256 5.78 / 5.38 (slower), 384 5.85 / 6.55, 512 5.92 / 6.60, 768 5.93 / 6.92, 1023 6.02 / 7.31. So from T = 256
 * where T*k >= 1536: k = 8 from 256, k = 4 from 384 (GPT-OSS-120B's slower 256 is T*k = 1024).
 * v43b (session 38, lab call 114, the same harness, gx forced / auto): DeepSeek-R1 softmax T = 160 7.66 / 6.14, 192
 * 7.29 / 6.23, 224 7.30 / 7.00 (gx slower below 256: the bound stays); GPT-OSS-120B 320 5.84 / 6.61, 352 5.86 / 6.61
 * (faster: T*k from 1280); Qwen3-235B (E = 128, k = 8, taken by v43's rule untimed) 256 6.29 / 6.89, 512 6.34 / 8.04;
 * below E = 128: OLMoE (E = 64, k = 8) 512 / 1024 / 2048 6.15 / 7.35, 6.31 / 8.71, 6.75 / 12.00, Qwen1.5-MoE (E = 60,
 * k = 4) 6.11 / 6.32, 6.24 / 7.65, 6.51 / 8.91. So E from 60 too, where timed: 512 <= T <= 2048 below E = 128. (Those
 * two presets do not renormalize: gx's weights there were 1 - 2 ulp from the gate kernel's warp-per-row form; until
 * v44 the rule kept such rows off gx unless the gate kernel's rows had gx's 16 lanes.)
 * v45 (session 39, lab call 115's edges, H100, gx forced / auto): GPT-OSS-120B T = 288 5.86 / 6.50; OLMoE 384 6.11 /
 * 6.71, 4096 8.37 / 8.66; Qwen1.5-MoE 384 6.08 / 6.29, 4096 7.85 / 12.06 (taken once v44 made rows without renormalize
 * keep the gate kernel's words in every form).
 * v45b (session 39, lab call 118 = results run 67, gx / the paths before it): OLMoE T = 256 6.11 / 6.46, 320 6.07 /
 * 6.69; Qwen1.5-MoE 256 6.04 / 5.21 (slower), 320 6.05 / 6.28; GPT-OSS-120B 272 5.88 / 6.57 (256: 5.78 / 5.38, slower);
 * DBRX (E = 16, k = 4) 1024 6.50 / 6.72; GPT-OSS-20B (E = 32, k = 4) 1024 6.16 / 6.85. Every point where gx lost from
 * T = 256 on is one where route's pair runs (the gate kernel, then a one-launch decode sort: T*k <= 1024, or the
 * token-mask sort at T <= 256 with T*k <= 1536; entry.cu mr_cuda_decode_sort_fits), ~5.2 - 5.4 us; every point where
 * it won is one where the mid pair or the gate kernel + ctm's sort runs (~6.3 - 12 us). So v45b's rule is that boundary,
 * from T = 256 (below it gx lost to the mid pair too: DeepSeek-R1 softmax T = 224, 7.30 against 7.00) to 4096, for
 * E >= 16 (Mixtral's E = 8 slower at T = 1024: 6.49 against 6.34). */
#define MR_GX_MIN_T 256
#define MR_GX_MAX_T 4096
#define MR_GX_MIN_E 16
/* v45b is the rule since session 40: lab call 121 (H100, `dev/runs/run121/`) ran test_cuda with it (4663 cases and
 * --no-pdl's thresholds group, 354, 0 failures) and timed its new edges (gx / before): DBRX 257 5.99 / 6.15, 512 5.99 /
 * 6.25, 2048 6.71 / 7.43, 4096 8.58 / 9.38; GPT-OSS-20B 257 5.56 / 6.33, 512 5.99 / 6.45, 2048 7.00 / 7.90, 4096 8.36 /
 * 10.61; Qwen1.5-MoE 264 5.68 / 6.30, 288 5.40 / 6.32; GPT-OSS-120B 257 5.36 / 6.56 (gx there with v46's flagged rows,
 * G <= 32; by the barrier DBRX 257 / 512 was slower, 6.55 against 6.15 / 6.25). v45's rule before it (results run 67):
 * 60 <= E, T*k >= 1152, T >= 256 (E >= 128) or 384 (E < 128), T <= 4096. */
/* The automatic rule: on since lab call 63 and results run 35 (session 25) ran test_cuda and the
 * sanitizers with it (session 24 had checked only the lab form); 0 leaves gx to the knob (gx = 1). */
#define MR_GX_AUTO 1
/* Route's weights by gx are the gate kernel's words (test_cuda: route's top-k equal the gate's, fused against unfused)
 * for every row: with renormalize the softmax denominator cancels (design.md 14); without it, every row form sums it
 * in one order since v44 (gate.cuh). Before v44 the order followed the lanes per row, so gx took such rows only where
 * the gate kernel's rows had its 16 lanes (session 38, 3f6169f): results run 66 had failed Qwen1.5-MoE's T = 512 (no
 * renormalize, k = 4) by 1 ulp in 658 of 3840 weights under v43b's rule without that condition. */
static int mr_gx_auto(const mr_config* cfg) {
  const int64_t T = cfg->num_tokens, E = cfg->num_experts;
  return MR_GX_AUTO && E >= MR_GX_MIN_E && T >= MR_GX_MIN_T && T <= MR_GX_MAX_T && !mr_cuda_decode_sort_fits(cfg);
}

/* knob gx_stagger: whether gx's and gxs's read-back of the count matrix starts at the CTA's own row
 * (v23b): 0 = the default (MR_GX_STAGGER), 1 = on, -1 = off. */
#define MR_GX_STAGGER 0
/* knob gx_lean_bar: gx's and gxs's grid barriers without their full fences (v24b, each form its own
 * kernel instantiation): 0 = the default (MR_GX_LEAN_BAR), 1 = on, -1 = off. gxs: -1.4 us at every T in lab
 * call 70; on by default from session 27 (lab call 71 timed gx's form too, results run 39 tested it). The
 * barrier's word is only ever touched by red.release / ld.acquire at gpu scope (and the zeroing store before
 * the launch: the zeroing launch's, or the segment gate kernel's CTA 0 under v26), so the release after
 * __syncthreads orders the whole CTA's earlier writes before the arrival, and the acquire spin plus
 * __syncthreads orders every later read after it: the fences were redundant. */
#ifndef MR_GX_LEAN_BAR
#define MR_GX_LEAN_BAR 1
#endif
/* knob gx_flag (v46, session 40): gx's count rows published with a flag in every byte (0x80 | count; a count is <= 32)
 * over a matrix the zeroing launch clears, and read back by polling the rows themselves (relaxed gpu-scope loads;
 * each 32-bit word is single-copy atomic and carries its own four flags), in place of the grid barrier: a CTA
 * needs nothing of the others but their rows, so the barrier's arrival, its spin on the word and the loads after
 * it (three dependent L2 round trips) become the loads alone, each repeated until its row has landed. The zeroing
 * launch (one CTA, 256 threads) clears G x Ep bytes (<= 36 KB) under the gating; a CTA waits for its completion
 * (griddepcontrol.wait) before it stores its row and reads any. The same bits either way.
 * Lab call 121 (session 40, H100, `dev/runs/run121/`, gxs_lab --bounds, kernel metric, flagged / barrier, us): faster
 * at G <= 32 CTAs, slower at G = 128 (every CTA's threads poll every row: G x G row polls on a few hot L2 lines, the
 * late CTAs' own row stores among them):
 *   G = 16 - 18 (T = 256 - 288): DeepSeek-R1 softmax 6.37 / 6.99, GPT-OSS-120B 5.47 / 5.78 (257: 5.36 / 5.86), DBRX
 *     5.99 / 6.55, GPT-OSS-20B 5.56 / 6.08, Qwen1.5-MoE 264 / 288 5.68 / 6.10, 5.40 / 6.12;
 *   G = 32 (T = 512): DBRX 5.99 / 6.55, GPT-OSS-20B 5.99 / 6.10;
 *   G = 64 (T = 1024): DeepSeek-R1 softmax 6.64 / 6.94, GPT-OSS-120B 6.75 / 6.15 (mixed);
 *   G = 128 (T = 2048, 4096): DBRX 6.71 / 6.76, 8.58 / 7.90; GPT-OSS-20B 7.00 / 6.48, 8.36 / 7.55; DeepSeek-R1 softmax
 *     4096 10.00 / 9.91; GPT-OSS-120B 4096 8.37 / 7.93.
 * So (session 40) on (MR_GX_FLAG 1) up to MR_GX_FLAG_MAX_G CTAs.
 * v46d (session 41): the rows still pending repeated together each round (one or two round trips after the last row
 * lands, not one per row); more polling traffic per round. Lab call 124 (H200, `dev/runs/run124/`, kernel metric,
 * us, barrier / v46d / v46): E = 256 faster at every G (DeepSeek-R1 softmax T = 256 7.01 / 6.37 / 6.38, 1024 6.76 /
 * 6.33 / 6.50, 2048 7.47 / 6.95 / 7.93, 4096 9.61 / 9.24 / 9.81); E <= 128 slower than v46 at G = 32 (DBRX 512 6.44 /
 * 6.21 / 5.88, GPT-OSS-20B 512 6.05 / 6.30 / 5.88) and than the barrier at G >= 64 (GPT-OSS-120B 1024 5.94 / 6.48 /
 * 6.58, GPT-OSS-20B 2048 6.40 / 7.25 / 6.96): with Ep / 16 <= 8 columns the 256 threads of every CTA poll a few
 * lines. So: v46d where E > MR_GX_FLAGD_MIN_E at every G; v46 where E <= 128 at G <= 32; the barrier elsewhere.
 * (v46e, warp 0 polling a piece of every row first, measured within 0.2 us of the barrier there and was removed.)
 * Knob gx_flag: 0 this rule, 1 v46d at any G, 2 v46 at any G, -1 the barrier. */
#ifndef MR_GX_FLAG
#define MR_GX_FLAG 1
#endif
#define MR_GX_FLAG_MAX_G 32
#define MR_GX_FLAGD_MIN_E 128
static uint32_t mr_gx_stagger(void) {
  return mr_knob_on(mr_cuda_tune.gx_stagger, MR_GX_STAGGER);
}

/* Lab probes (session 41; targets.md L1): built with -DMR_GX_PROBES=1, gx's route kernel returns at a phase end when
 * the knob gx_probe says so (1 after its prologue, 2 after the gating, 3 after the exchange and the read-back, 4
 * after the scan: every CTA at the same point, so nothing waits on a CTA that returned; each waits for the zeroing
 * launch first, griddepcontrol.wait, so that no grid ends before the one it depends on); the outputs are then WRONG.
 * The default build has neither the branches nor the field (the kernels as without this). Not in v47's form (CLR):
 * its clearing warps wait at named barrier 2 for the routing warps' arrival after the gating, which a return at
 * probe 1 would never make (a helper's review, session 42); the probes there time the whole call. */
#ifndef MR_GX_PROBES
#define MR_GX_PROBES 0
#endif
#if MR_GX_PROBES
#define MR_GX_PROBE_AT(n)        \
  do {                           \
    if (!CLR && a.probe == (n)) { \
      mr_pdl_wait();             \
      return;                    \
    }                            \
  } while (0)
#else
#define MR_GX_PROBE_AT(n) \
  do {                    \
  } while (0)
#endif

/* whether this library was built with the probes (gxs_lab --gx-probes refuses to time without them) */
extern "C" int mr_cuda_gx_probes_built(void) { return MR_GX_PROBES; }

typedef struct mr_gx_k {
  uint32_t T, E, Ep, k, U, G, R;
#if MR_GX_PROBES
  uint32_t probe; /* lab: return at this phase end (0 = none) */
#endif
  uint32_t stagger; /* the read-back starts at row c (knob gx_stagger): CTAs read different rows at a time */
  uint32_t tail;    /* v25: the zeroing launch also zeroes the counter of the clear launched after this one */
  uint32_t clr_mode; /* v47: moe_buf cleared inside gx's launch (1: the clearing warps start at once, 2: after their
                        CTA's gating); 0 = none */
  unsigned char* clr; /* v47: moe_buf, clr_bytes of it, cleared in 16 KB pieces from the counter at bar + MR_GX_TAIL_NEXT */
  size_t clr_bytes;
  unsigned char* cnt; /* [G][Ep] count bytes (16-byte aligned) */
  uint32_t* bar;      /* the barrier word */
  int32_t* topk_ids;  /* optional */
  float* topk_weights;
} mr_gx_k;

/* The grid barrier of gx (one) and gxs (one, split into arrive and wait by the place form, and a second
 * for the xchg form), after the CTA's own __syncthreads: thread 0 first waits for the
 * zeroing launch's completion (its store to *bar; long past by now), then arrives and spins; the
 * CTA's threads follow it. Every CTA is resident (a cooperative launch). */
/* Its two halves (gxs's v24 forms put CTA-local work between them): thread 0 only. */
__device__ __forceinline__ void mr_gx_grid_arrive(uint32_t* bar) {
  mr_pdl_wait();
  __threadfence();
  uint32_t v; /* unused: the arrival's old value */
  asm volatile("atom.add.release.gpu.u32 %0, [%1], 1;" : "=r"(v) : "l"(bar) : "memory");
  asm volatile("" ::"r"(v));
}
__device__ __forceinline__ void mr_gx_grid_wait(uint32_t* bar, uint32_t target) {
  uint32_t v;
  do {
    asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
  } while (v < target);
  __threadfence();
}
/* The lean form (knob gx_lean_bar, v24b; the default since session 27): the arrival a release reduction without the full fence
 * before it nor a returned value, the wait acquire loads without the fence after them; the CTA's other
 * threads are ordered by the __syncthreads around thread 0 (bar.sync), as in the plain form. It holds while
 * every arrival is an atomic on the word (no plain store to it inside the kernel) and the data exchanged
 * through it (cnt, pre, tot) is read with __ldcg or plain loads, never the read-only path (__ldg, .nc). */
template <bool LEAN>
__device__ __forceinline__ void mr_gx_grid_arrive_x(uint32_t* bar) {
  if constexpr (!LEAN) {
    mr_gx_grid_arrive(bar);
  } else {
    mr_pdl_wait();
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
  }
}
template <bool LEAN>
__device__ __forceinline__ void mr_gx_grid_wait_x(uint32_t* bar, uint32_t target) {
  if constexpr (!LEAN) {
    mr_gx_grid_wait(bar, target);
  } else {
    uint32_t v;
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
    } while (v < target);
  }
}
/* The whole barrier (complete once the word reaches target: G, or 2 G for gxs's second); LEAN: the form
 * without full fences (knob gx_lean_bar) */
/* v47 (CLR): gx's CTA has MR_GX_THREADS routing threads and as many clearing threads, which leave at once; the routing
 * threads meet at named barrier 1 (as mr_cta_excl_scan64<MR_GX_WARPS> does), not at the CTA's barrier 0 */
template <bool CLR>
__device__ __forceinline__ void mr_gx_sync(void) {
  if constexpr (CLR)
    asm volatile("bar.sync 1, %0;" ::"n"(MR_GX_THREADS) : "memory");
  else
    __syncthreads();
}
template <bool LEAN, bool CLR = false>
__device__ __forceinline__ void mr_gx_grid_barrier(uint32_t* bar, uint32_t target) {
  if (threadIdx.x == 0) {
    mr_gx_grid_arrive_x<LEAN>(bar);
    mr_gx_grid_wait_x<LEAN>(bar, target);
  }
  mr_gx_sync<CLR>();
}

__global__ void mr_gx_zero_kernel(uint32_t* bar, uint32_t tail, uint4* mat, uint32_t units) {
  mr_pdl_wait(); /* the previous call on the stream may still read it */
  /* v46: gx's flagged count matrix (units of 16 bytes; 0 for every other form) */
  for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) mat[u] = make_uint4(0u, 0u, 0u, 0u);
  if (threadIdx.x == 0) {
    *bar = 0u;
    if (tail) { /* the clear after gx / gxs takes its pieces from this counter: zero, and at L2 before the
                   launches after this one (the clear among them) can start */
      bar[MR_GX_TAIL_NEXT] = 0u;
      __threadfence();
    }
  }
  /* every lane's trigger after thread 0's zeroes and fence: the trigger of any thread may count for the CTA (session
   * 36's review: lanes 1 - 31 could otherwise trigger before the zero of the clear's counter, which the clear reads
   * without waiting); the CTA's, since v46 gives it up to 8 warps */
  __syncthreads();
  mr_pdl_launch_dependents();
}

/* shared: tm [E] | entry ids [R k] | weight bits [R k] | start, pos, cnt, loc [E] each | (to 16 bytes)
 * w64 [8] | count row [Ep] bytes (16-byte aligned: read as vectors) | partial sums [NRG][Ep + Ep / 16]
 * (before << 16 | total) */
__host__ __device__ __forceinline__ uint32_t mr_gx_w64_words(uint32_t E, uint32_t R, uint32_t k) {
  return (5u * E + 2u * R * k + 3u) & ~3u;
}
__host__ __device__ __forceinline__ size_t mr_gx_smem(uint32_t E, uint32_t R, uint32_t k) {
  const uint32_t Ep = (E + 15u) & ~15u;
  return (size_t)mr_gx_w64_words(E, R, k) * 4u + 8u * MR_GX_WARPS + Ep +
         (size_t)(MR_GX_THREADS / (Ep / 16u)) * (Ep + Ep / 16u) * 4u;
}

/* The exchange's form BAR: MR_GX_BAR_FULL / MR_GX_BAR_LEAN, the grid barrier with or without its full fences (knob
 * gx_lean_bar); MR_GX_BAR_FLAG, v46d's flagged rows without a barrier, the pending rows repeated together (knob
 * gx_flag); MR_GX_BAR_FLAG1, v46's. */
#define MR_GX_BAR_FULL 0
#define MR_GX_BAR_LEAN 1
#define MR_GX_BAR_FLAG 2
#define MR_GX_BAR_FLAG1 3 /* v46's first form (session 40): each row's repeats wait in turn (the default's for E <= 128
                             at G <= 32; knob gx_flag = 2 at any G) */
/* v46's row accesses: relaxed at gpu scope (strong, so the poll is not a data race; L1 is not used) */
__device__ __forceinline__ void mr_st_relaxed_v4(uint4* p, uint4 v) {
  asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 mr_ld_relaxed_v4(const uint4* p) {
  uint4 v;
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ bool mr_gx_row_landed(uint4 v) {
  return ((v.x & v.y & v.z & v.w) & 0x80808080u) == 0x80808080u;
}
__device__ __forceinline__ uint4 mr_gx_row_counts(uint4 v) {
  return make_uint4(v.x & 0x7f7f7f7fu, v.y & 0x7f7f7f7fu, v.z & 0x7f7f7f7fu, v.w & 0x7f7f7f7fu);
}

#define MR_TAIL_PIECE 1024u /* units (16 B) per piece: 16 KB */
/* 16 KB pieces of buf's 16-byte-aligned body in order from the counter *next, a warp each, until none is left
 * (as P's clearing warps, large.cu: by-thread shares fixed at launch run at the pace of the SMs that hold the most
 * CTAs, and CTAs that come up beside the routing are placed unevenly); edge < 16: this thread also clears head
 * byte `edge` and tail byte `edge` where they exist (one group of 16 threads of the grid passes 0 .. 15). The
 * whole warp calls it. */
__device__ __forceinline__ void mr_clear_pieces(unsigned char* buf, size_t bytes, uint32_t* next, uint32_t edge) {
  const uint32_t lane = threadIdx.x & 31u;
  size_t head = (size_t)((16u - ((uintptr_t)buf & 15u)) & 15u);
  if (head > bytes) head = bytes;
  const size_t units = (bytes - head) / 16u, rest = bytes - head - units * 16u;
  uint4* body = (uint4*)(buf + head);
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
  if (edge < head) buf[edge] = 0;
  if (edge < rest) buf[head + units * 16u + edge] = 0;
  for (;;) {
    uint32_t j = 0u;
    if (lane == 0) j = atomicAdd(next, 1u);
    j = __shfl_sync(MR_FULL_MASK, j, 0);
    const size_t u0 = (size_t)j * MR_TAIL_PIECE;
    if (u0 >= units) break; /* warp-uniform */
    if (u0 + MR_TAIL_PIECE <= units) {
#pragma unroll 8
      for (uint32_t q = 0; q < MR_TAIL_PIECE / 32u; ++q) __stcs(body + u0 + q * 32u + lane, z);
    } else {
      for (size_t u = u0 + lane; u < units; u += 32u) __stcs(body + u, z);
    }
  }
}
template <int DT, int EPL, int L, int BAR, bool CLR = false>
__global__ void __launch_bounds__(CLR ? MR_GX_THREADS_CLR : MR_GX_THREADS, 1)
    mr_gx_route_kernel(const __grid_constant__ mr_gate_p p, const __grid_constant__ mr_sort_out o,
                       const __grid_constant__ mr_gx_k a) {
  extern __shared__ __align__(16) uint32_t mr_gx_sm[];
  constexpr int EPS = 32 * EPL / MR_GX_LPR;
  constexpr uint32_t RPW = 32u / MR_GX_LPR;
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, c = blockIdx.x;
  const uint32_t E = a.E, Ep = a.Ep, k = a.k, U = a.U, G = a.G;
  uint32_t* tm = mr_gx_sm;
  int32_t* ent_id = (int32_t*)(tm + E);
  uint32_t* ent_w = (uint32_t*)(ent_id + a.R * k);
  uint32_t* s_start = ent_w + a.R * k;
  uint32_t* s_pos = s_start + E;
  uint32_t* s_cnt = s_pos + E;
  uint32_t* s_loc = s_cnt + E;
  unsigned long long* s_w64 = (unsigned long long*)(mr_gx_sm + mr_gx_w64_words(E, a.R, k)); /* 16-byte aligned */
  unsigned char* cb = (unsigned char*)(s_w64 + MR_GX_WARPS);
  uint32_t* rt = (uint32_t*)(cb + Ep); /* Ep % 16 == 0: aligned */
  mr_pdl_launch_dependents();
  if constexpr (CLR) {
    /* v47: moe_buf by the clearing warps (warps MR_GX_WARPS.. of every CTA, every warp of CTAs c >= G), at once
     * (clr_mode 1) or after their CTA's gating (2), then by the routing warps as each finishes (below). The earlier
     * work on the stream is complete: gx starts only once the zeroing launch let it, which it does after its own
     * griddepcontrol.wait (as for the clear after gx, v25); the counter was zeroed before that (MR_GX_TAIL). */
    if (c >= G || warp >= MR_GX_WARPS) {
      if (c < G && a.clr_mode == 2u) asm volatile("bar.sync 2, %0;" ::"n"(MR_GX_THREADS_CLR) : "memory");
      mr_clear_pieces(a.clr, a.clr_bytes, a.bar + MR_GX_TAIL_NEXT,
                      c == 0u && warp == MR_GX_WARPS ? lane : 0xffffffffu); /* the edge bytes: CTA 0's warp 8 */
      return;
    }
  }
  for (uint32_t e = tid; e < E; e += MR_GX_THREADS) tm[e] = 0u;
  mr_gx_sync<CLR>();
  MR_GX_PROBE_AT(1);

  /* A. gating: segments of 16 lanes, RPW rows per warp and step */
  const uint32_t t0 = c * a.R, nrows = min(a.R, a.T - t0);
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
  const uint32_t sl = lane % MR_GX_LPR, seg = lane / MR_GX_LPR;
#pragma unroll 1
  for (uint32_t tb = warp * RPW; tb < nrows; tb += MR_GX_WARPS * RPW) { /* warp-uniform */
    const uint32_t tl = tb + seg, t = t0 + tl;
    const bool live = tl < nrows;
    uint32_t raw[EPS];
    const unsigned char* row = p.logits + (size_t)(live ? t : t0) * p.row_bytes;
    mr_load_lane<2, EPS>(row, sl, p.num_experts, ninf, live, raw);
    int32_t id;
    float w;
    mr_gate_packed_seg<DT, EPS, MR_GX_LPR, L>(p, sl, raw, row, 0, &id, &w);
    if (live && sl < k) {
      const uint32_t i = tl * k + sl; /* slot sl */
      ent_id[i] = id;
      ent_w[i] = __float_as_uint(w);
      if (a.topk_ids) a.topk_ids[(size_t)t * k + sl] = id;
      if (a.topk_weights) a.topk_weights[(size_t)t * k + sl] = w;
      if ((uint32_t)id < E && (o.expert_mask == NULL || __ldg(o.expert_mask + id) != 0)) atomicOr(tm + id, 1u << tl);
    }
  }
  mr_gx_sync<CLR>();
  if constexpr (CLR) /* v47, clr_mode 2: the CTA's clearing warps start now */
    if (a.clr_mode == 2u) asm volatile("bar.arrive 2, %0;" ::"n"(MR_GX_THREADS_CLR) : "memory");
  MR_GX_PROBE_AT(2);

  /* B. row c of the count matrix, then the grid barrier (the zeroing launch's store must have
   * landed before any arrival counts: its completion first, long past by now); v46 / v46d: the row flagged, after the
   * zeroing launch's completion, and no barrier */
  constexpr bool FLAGGED = BAR == MR_GX_BAR_FLAG || BAR == MR_GX_BAR_FLAG1;
  constexpr unsigned char FL = FLAGGED ? 0x80u : 0u; /* v46: every byte of a row carries its flag */
  for (uint32_t e = tid; e < Ep; e += MR_GX_THREADS) cb[e] = (e < E ? (unsigned char)__popc(tm[e]) : 0u) | FL;
  mr_gx_sync<CLR>();
  if constexpr (FLAGGED) {
    mr_pdl_wait(); /* the zeroing launch's clear of the matrix has completed (every thread: each then reads rows) */
    for (uint32_t q = tid; q < Ep / 16u; q += MR_GX_THREADS)
      mr_st_relaxed_v4((uint4*)(a.cnt + (size_t)c * Ep) + q, ((const uint4*)cb)[q]);
  } else {
    for (uint32_t q = tid; q < Ep / 16u; q += MR_GX_THREADS)
      ((uint4*)(a.cnt + (size_t)c * Ep))[q] = ((const uint4*)cb)[q];
    mr_gx_sync<CLR>();
    mr_gx_grid_barrier<BAR == MR_GX_BAR_LEAN, CLR>(a.bar, G);
  }

  /* C. each expert's total and the count of the CTAs before c: thread (rg, col) sums column col
   * (16 experts) over rows rg + NRG i in 16-bit lanes (<= 9 x 32 per lane), then per expert over the
   * row groups (its total <= T < 2^16) */
  const uint32_t ncol = Ep / 16u, nrg = MR_GX_THREADS / ncol, col = tid % ncol, rg = tid / ncol;
  const uint32_t rts = Ep + Ep / 16u; /* expert e of a row group at e + e / 16: no bank conflicts */
  {
    uint4 x[MR_GX_MAXJ];
    const uint32_t sh = a.stagger ? c : 0u; /* row r is read as row (r + sh) mod G */
#pragma unroll
    for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) {
      const uint32_t r = rg + nrg * i, rr = r + sh < G ? r + sh : r + sh - G;
      const uint4* src = (const uint4*)(a.cnt + (size_t)rr * Ep) + col;
      if constexpr (FLAGGED)
        x[i] = r < G && rg < nrg ? mr_ld_relaxed_v4(src) : make_uint4(0u, 0u, 0u, 0u);
      else
        x[i] = r < G && rg < nrg ? __ldcg(src) : make_uint4(0u, 0u, 0u, 0u);
    }
    if constexpr (BAR == MR_GX_BAR_FLAG1) { /* v46: every load above in flight; now each until its row landed */
#pragma unroll
      for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) {
        const uint32_t r = rg + nrg * i, rr = r + sh < G ? r + sh : r + sh - G;
        if (r < G && rg < nrg) {
          while (!mr_gx_row_landed(x[i])) x[i] = mr_ld_relaxed_v4((const uint4*)(a.cnt + (size_t)rr * Ep) + col);
          x[i] = mr_gx_row_counts(x[i]);
        }
      }
    } else if constexpr (FLAGGED) {
      /* v46d: every load above in flight; then rounds: the rows not landed yet are all loaded again together, so
       * the last row to land is seen one or two round trips after it lands, not one round trip per row after it */
      for (;;) {
        uint32_t pend = 0u;
#pragma unroll
        for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) {
          const uint32_t r = rg + nrg * i;
          if (r < G && rg < nrg && !mr_gx_row_landed(x[i])) pend |= 1u << i;
        }
        if (pend == 0u) break;
#pragma unroll
        for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) {
          const uint32_t r = rg + nrg * i, rr = r + sh < G ? r + sh : r + sh - G;
          if ((pend >> i) & 1u) x[i] = mr_ld_relaxed_v4((const uint4*)(a.cnt + (size_t)rr * Ep) + col);
        }
      }
#pragma unroll
      for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) x[i] = mr_gx_row_counts(x[i]);
    }
    uint32_t te[4] = {0u, 0u, 0u, 0u}, to[4] = {0u, 0u, 0u, 0u}, be[4] = {0u, 0u, 0u, 0u}, bo[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (uint32_t i = 0; i < MR_GX_MAXJ; ++i) {
      const uint32_t r = rg + nrg * i, rr = r + sh < G ? r + sh : r + sh - G;
      const bool before = rr < c;
      const uint32_t w4[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint32_t ev = w4[q] & 0x00ff00ffu, od = (w4[q] >> 8) & 0x00ff00ffu; /* bytes 0, 2 / 1, 3 */
        te[q] += ev;
        to[q] += od;
        be[q] += before ? ev : 0u;
        bo[q] += before ? od : 0u;
      }
    }
    if (rg < nrg) {
      uint32_t* dst = rt + rg * rts + col * 17u;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        dst[4 * q + 0] = (be[q] << 16) | (te[q] & 0xffffu);
        dst[4 * q + 1] = (bo[q] << 16) | (to[q] & 0xffffu);
        dst[4 * q + 2] = (be[q] & 0xffff0000u) | (te[q] >> 16);
        dst[4 * q + 3] = (bo[q] & 0xffff0000u) | (to[q] >> 16);
      }
    }
  }
  mr_gx_sync<CLR>();
  MR_GX_PROBE_AT(3);
  /* the padded scan over the experts, thread e (E <= 256) */
  unsigned long long v = 0ull;
  uint32_t cn = 0u, bf = 0u;
  if (tid < E) {
    uint32_t acc = 0u;
    for (uint32_t r = 0; r < nrg; ++r) acc += rt[r * rts + tid + tid / 16u];
    const uint32_t en = o.expert_mask == NULL || __ldg(o.expert_mask + tid) != 0;
    cn = en ? (acc & 0xffffu) : 0u; /* a masked expert's bits were never set */
    bf = acc >> 16;
    v = (unsigned long long)(mr_udiv(cn + U - 1u, U, o.u_magic) * U) | ((unsigned long long)en << 32);
  }
  unsigned long long total;
  const unsigned long long run = mr_cta_excl_scan64<MR_GX_WARPS>(v, s_w64, &total); /* sort.cuh */
  if (tid < E) {
    s_start[tid] = (uint32_t)run;
    s_loc[tid] = (uint32_t)(run >> 32);
    s_cnt[tid] = cn;
    s_pos[tid] = (uint32_t)run + bf;
  }
  mr_gx_sync<CLR>();
  MR_GX_PROBE_AT(4);

  /* D. this CTA's entries; the padding and block ids of experts c + G j; the totals */
  for (uint32_t i = tid; i < nrows * k; i += MR_GX_THREADS) {
    const uint32_t tl = mr_udiv(i, k, o.k_magic), slot = i - tl * k;
    const uint32_t e = (uint32_t)ent_id[i];
    if (e < E && s_cnt[e] != 0u) {
      const uint32_t pos = s_pos[e] + __popc(tm[e] & ((1u << tl) - 1u)), t = t0 + tl;
      if (o.sorted_ids) {
        o.sorted_ids[pos] = (int32_t)((slot << 24) | t);
        if (o.sorted_weights) ((uint32_t*)o.sorted_weights)[pos] = ent_w[i]; /* bit-exact */
      }
      if (o.sorted_token_ids) o.sorted_token_ids[pos] = (int32_t)(t * k + slot);
    }
  }
  for (uint32_t e = c + G * warp; e < E; e += G * MR_GX_WARPS) {
    const uint32_t n = s_cnt[e];
    if (n != 0u) mr_emit_padding(&o, s_start[e], n, mr_udiv(n + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  if (c == 0u && tid == 0u) mr_emit_totals(&o, (uint32_t)total);
  if constexpr (CLR) mr_clear_pieces(a.clr, a.clr_bytes, a.bar + MR_GX_TAIL_NEXT, 0xffffffffu); /* v47 */
}

/* ======================================================================== */
/* host side                                                                 */
/* ======================================================================== */

/* the plan: R rows per CTA (a multiple of 16), G CTAs; 0 where it does not fit */
static int mr_gx_plan(const mr_config* cfg, uint32_t* R, uint32_t* G) {
  const int64_t T = cfg->num_tokens;
  int64_t sms = mr_cuda_sm_count();
  if (sms > MR_GX_MAX_G) sms = MR_GX_MAX_G;
  if (T < 1 || sms < 1) return 0;
  int64_t r = (T + sms - 1) / sms;
  r = (r + MR_GX_LPR - 1) / MR_GX_LPR * MR_GX_LPR;
  if (r > MR_GX_MAX_R) return 0;
  *R = (uint32_t)r;
  *G = (uint32_t)((T + r - 1) / r);
  return 1;
}

/* What the configuration and the knob decide (route's workspace query reserves gx's bytes where this
 * holds; the rows' kind needs the bias pointer, which the query does not see): 16-bit logits, E <= 256,
 * k <= 8, no moe_buf, T within 32 rows per CTA of at most 144 CTAs (one per SM), and the knob or the
 * automatic rule. */
extern "C" int mr_cuda_gx_ws_reserved(const mr_config* cfg) {
  uint32_t R, G;
  const int knob = mr_cuda_tune.gx;
  return knob >= 0 && cfg->dtype != MOEROUTE_DTYPE_FP32 && cfg->num_experts <= 256 && cfg->top_k <= 8 &&
         cfg->moe_buf_bytes == 0 && (knob > 0 || mr_gx_auto(cfg)) && mr_gx_plan(cfg, &R, &G);
}

/* knob gx: 0 = auto (mr_gx_auto), 1 = wherever it fits, -1 = never. Beyond mr_cuda_gx_ws_reserved:
 * the rows the gate kernel gates by segments (PACKED: softmax without bias or groups) and a device
 * that launches cooperative kernels. */
extern "C" int mr_cuda_gx_takes(const mr_config* cfg, const mr_gate_args* a) {
  return !mr_cuda_tune.force_general && mr_cuda_gx_ws_reserved(cfg) &&
         mr_gate_kind(a, cfg->dtype) == MR_KIND_PACKED && mr_cuda_coop_launch();
}

/* workspace: the barrier word (its own 256 bytes), then the count matrix [G][Ep]; a function of
 * (T, E) and the SM count only, reserved wherever gx could take the call (mr_cuda_gx_ws_reserved) */
extern "C" size_t mr_cuda_gx_workspace(const mr_config* cfg) {
  uint32_t R, G;
  if (!mr_gx_plan(cfg, &R, &G)) return 0;
  const size_t Ep = ((size_t)cfg->num_experts + 15u) & ~(size_t)15u;
  return 256u + ((size_t)G * Ep + 255u) / 256u * 256u;
}

/* The zeroing launch (PDL after the previous work), then `kernel` over G CTAs as a cooperative
 * launch (PDL after the zeroing): gx's and gxs's launch. cudaErrorCooperativeLaunchTooLarge (cleared)
 * when the device refuses the cooperative launch: nothing was written but the barrier word (and, with MR_GX_TAIL,
 * the clear's counter; with mat_units != 0, v46's count matrix; with MR_GX_ZEROED no zeroing launch runs and nothing
 * is written). */
template <typename KF, typename... Args>
static cudaError_t mr_gx_coop_launch(KF kernel, uint32_t G, uint32_t threads, size_t smem, uint32_t* bar,
                                     uint32_t flags, uint4* mat, uint32_t mat_units, cudaStream_t stream,
                                     Args... args) {
  const uint32_t tail = (flags & MR_GX_TAIL) != 0u;
  const bool pdl = mr_cuda_pdl_on() != 0;
  cudaLaunchAttribute za;
  memset(&za, 0, sizeof za);
  za.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  za.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t zc = mr_launch_config(1, mat_units != 0u ? 256 : 32, 0, stream); /* v46: a matrix to clear */
  if (pdl) {
    zc.attrs = &za;
    zc.numAttrs = 1;
  }
  if (!(flags & MR_GX_ZEROED)) MR_TRY(cudaLaunchKernelEx(&zc, mr_gx_zero_kernel, bar, tail, mat, mat_units));
  cudaLaunchConfig_t lc = mr_launch_config(G, threads, smem, stream);
  cudaLaunchAttribute at[2];
  memset(at, 0, sizeof at);
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = 1;
  at[1] = za;
  lc.attrs = at;
  lc.numAttrs = pdl ? 2 : 1;
  const cudaError_t err = cudaLaunchKernelEx(&lc, kernel, args...);
  if (err == cudaErrorCooperativeLaunchTooLarge) {
    (void)cudaGetLastError(); /* the caller takes the other paths; the zeroing launch did no harm */
    return err;
  }
  MR_TRY(err);
  return cudaSuccess;
}

/* ---- v25: moe_buf cleared by a launch of its own after gx / gxs (knob clear_tail) ----------------
 * gx's and gxs's CTAs let the next launch start (griddepcontrol.launch_dependents) as their first
 * instruction, and their cooperative grids are resident as soon as they start; so a clear launched
 * after them with PDL comes up beside them at once, on the registers, threads and shared memory they
 * leave free (gxs: 512 threads of ~108 registers per SM; gx: 256 threads), and takes every SM once they
 * are done: the routing runs under the clear instead of before or beside a clear inside it. It is safe
 * to start early: it can start only after gx's / gxs's zeroing launch let it (that launch triggers after
 * its griddepcontrol.wait, so every earlier launch on the stream, the caller's included, is complete:
 * nothing still reads moe_buf). It waits for its predecessor at its end, so it completes only after the
 * routing has: whatever follows on the stream sees the whole call done. Without PDL it runs after the
 * routing, as a plain launch. Where a cooperative launch was refused, the paths that ran instead come
 * after the same zeroing launch. 16-byte streaming stores, four per thread per pass (mr_clear_bytes),
 * 128-thread CTAs (small enough to fit beside gxs), at most SMs x MR_TAIL_CTAS_PER_SM of them (how they land on
 * the SMs is the hardware's). v26: for segment rows there is no zeroing launch; the gate kernel before gxs waits
 * for the earlier work before it lets gxs (and so this clear) start, and zeroes the counter before that. */
/* v26 (knob gxs_gate_zero): route's gate kernel zeroes gxs's barrier word, in place of the zeroing launch */
#ifndef MR_GXS_GATE_ZERO
#define MR_GXS_GATE_ZERO 1
#endif
extern "C" int mr_cuda_gxs_gate_zero_on(void) {
  return mr_knob_on(mr_cuda_tune.gxs_gate_zero, MR_GXS_GATE_ZERO);
}

#ifndef MR_CLEAR_TAIL
#define MR_CLEAR_TAIL 1
#endif
/* Automatic rule (lab call 73, H100, `dev/runs/run73/tail.log`, kernel metric, route + buf, the clear inside /
 * by its own launch): route from T*k = 262144, where it won at every point of four presets (DeepSeek-R1 softmax
 * T = 32768 172.05 / 164.83, 65536 349.77 / 324.46; GPT-OSS-120B 65536 139.58 / 136.76; Kimi-K2 32768 280.66 /
 * 271.03, 65536 549.92 / 544.16; Qwen3-Next 32768 125.67 / 106.74). Below it the results were mixed and mostly
 * worse (DeepSeek-R1 softmax 16384 84.63 / 89.36, GPT-OSS-120B 32768 71.70 / 88.65, 2048 9.72 / 12.38). The clear
 * overlaps gxs at most (it can start in the gate kernel's last wave, once gxs's CTAs are up) with the two
 * 128-thread CTAs per SM that fit beside gxs, so the gain is at most the inside paths' excess over a memset
 * followed by the routing. The sort entry point keeps the clear inside (mixed: DeepSeek-R1 softmax 65536
 * 307.80 / 303.60, GPT-OSS-120B 65536 123.27 / 127.03, Qwen3-Next 32768 64.36 / 52.21). */
#define MR_CLEAR_TAIL_MIN_N 262144
#define MR_TAIL_THREADS 128
#define MR_TAIL_CTAS_PER_SM 4
extern "C" int mr_cuda_clear_tail_wanted(moeroute_op op, const mr_config* cfg) {
  return mr_knob_on(mr_cuda_tune.clear_tail, MR_CLEAR_TAIL && op == MOEROUTE_OP_ROUTE &&
                                                 cfg->num_tokens * (int64_t)cfg->top_k >= MR_CLEAR_TAIL_MIN_N);
}

__global__ void __launch_bounds__(MR_TAIL_THREADS) mr_clear_tail_kernel(unsigned char* buf, size_t bytes,
                                                                        uint32_t* next) {
  if (next == nullptr) { /* a grid-stride split by thread */
    mr_clear_bytes(buf, bytes, (size_t)blockIdx.x * MR_TAIL_THREADS + threadIdx.x,
                   (size_t)gridDim.x * MR_TAIL_THREADS);
  } else { /* pieces from the counter; the head and the tail bytes by CTA 0 */
    mr_clear_pieces(buf, bytes, next, blockIdx.x == 0 ? threadIdx.x : 0xffffffffu);
  }
  mr_pdl_wait(); /* complete only after the routing launch before it */
}

extern "C" cudaError_t mr_cuda_launch_clear_tail(unsigned char* buf, size_t bytes, void* counter,
                                                 cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (mr_cuda_tune.clear_tail == 2) counter = nullptr; /* lab: the split by thread (v25's first form) */
  uint32_t* next = counter ? (uint32_t*)counter + MR_GX_TAIL_NEXT : nullptr;
  const size_t per_cta = next ? (size_t)MR_TAIL_PIECE * 16u * (MR_TAIL_THREADS / 32u)
                              : (size_t)MR_TAIL_THREADS * 16u * 4u; /* one round */
  size_t n = (bytes + per_cta - 1u) / per_cta;
  const size_t cap = (size_t)mr_cuda_sm_count() * MR_TAIL_CTAS_PER_SM;
  if (n > cap) n = cap;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)n, MR_TAIL_THREADS, 0, stream);
  cudaLaunchAttribute at;
  memset(&at, 0, sizeof at);
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  if (mr_cuda_pdl_on()) {
    lc.attrs = &at;
    lc.numAttrs = 1;
  }
  MR_TRY(cudaLaunchKernelEx(&lc, mr_clear_tail_kernel, buf, bytes, next));
  return cudaSuccess;
}

/* The route kernel of an exchange form: the flagged rows (v46d, or v46 where v46), else the grid barrier, lean or with
 * its full fences; v47's form (CLR) has no full-fence instantiation and takes the lean barrier (knob gx_lean_bar
 * aside). */
template <int DT, int EPL, int L, bool CLR>
static auto mr_gx_route_kernel_for(bool flag, bool v46, bool lean) {
  if (flag)
    return v46 ? mr_gx_route_kernel<DT, EPL, L, MR_GX_BAR_FLAG1, CLR> : mr_gx_route_kernel<DT, EPL, L, MR_GX_BAR_FLAG, CLR>;
  if constexpr (CLR) {
    (void)lean;
    return mr_gx_route_kernel<DT, EPL, L, MR_GX_BAR_LEAN, CLR>;
  } else {
    return lean ? mr_gx_route_kernel<DT, EPL, L, MR_GX_BAR_LEAN, CLR> : mr_gx_route_kernel<DT, EPL, L, MR_GX_BAR_FULL, CLR>;
  }
}

template <int DT, int EPL, int L>
static cudaError_t mr_gx_launch_t(const mr_gate_p* p, const mr_sort_out* o, const mr_gx_k* g, cudaStream_t stream) {
  const bool lean = mr_knob_on(mr_cuda_tune.gx_lean_bar, MR_GX_LEAN_BAR) != 0;
  /* v46d for E > 128 at any G, v46 for E <= 128 at G <= MR_GX_FLAG_MAX_G, else the barrier (lab call 124) */
  const bool wide = g->E > MR_GX_FLAGD_MIN_E;
  const int kn = mr_cuda_tune.gx_flag;
  const bool flag = mr_knob_on(kn, MR_GX_FLAG && (wide || g->G <= MR_GX_FLAG_MAX_G)) != 0;
  const bool v46 = kn == 2 || (kn == 0 && !wide);
  const uint32_t units = flag ? g->G * g->Ep / 16u : 0u; /* v46's count matrix for the zeroing launch to clear */
  uint4* mat = units ? (uint4*)g->cnt : nullptr;
  const size_t smem = mr_gx_smem(g->E, g->R, g->k);
  if (g->clr_mode != 0u) {
    /* v47: the clearing warps beside the routing warps, and CTAs that only clear on the SMs gx leaves (one CTA of
     * 512 threads per SM: <= 128 registers); the zeroing launch zeroes the clear's piece counter (MR_GX_TAIL) */
    const uint32_t sms = (uint32_t)mr_cuda_sm_count();
    return mr_gx_coop_launch(mr_gx_route_kernel_for<DT, EPL, L, true>(flag, v46, lean), sms > g->G ? sms : g->G,
                             MR_GX_THREADS_CLR, smem, g->bar, MR_GX_TAIL, mat, units, stream, *p, *o, *g);
  }
  return mr_gx_coop_launch(mr_gx_route_kernel_for<DT, EPL, L, false>(flag, v46, lean), g->G, MR_GX_THREADS, smem,
                           g->bar, g->tail ? MR_GX_TAIL : 0u, mat, units, stream, *p, *o, *g);
}

/* v47 (session 42, knob gx_clear): route WITH a moe_buf by gx where gx takes the call without it, moe_buf cleared
 * inside gx's launch: every CTA gets MR_GX_WARPS more warps that clear 16 KB pieces from a counter (at once, or after
 * their CTA's gating), CTAs that only clear fill the SMs gx leaves, and each routing warp joins the clear as it
 * finishes. Before it such calls took the paths with a moe_buf (the mid pair, the gate kernel + ctm's sort, P), whose
 * route + buf was the memset plus the routing (results run 70, H100, DeepSeek-R1 softmax T = 4096: 27.3 us against a
 * memset of 19.2 and route alone 8.8; the clear after gx, v25, and before it, v32, did no better). The clear's
 * stores and the routing's loads share the DRAM; whether the routing hides under the clear is what the lab times.
 * Returns the mode (MR_GX_CLEAR1 / MR_GX_CLEAR2) or 0. */
/* The automatic rule (lab call 129, H100, `bench/results/run71/lab_summary.txt`, gxs_lab --gxclear, kernel metric, route
 * + buf in us: the paths before / gx_clear 1 / gx_clear 2 / the clear after gx (v25); memset alone):
 *   DeepSeek-R1 softmax (E = 256, k = 8): T = 256 7.29 / 8.43 / 7.36 / 7.28 (1.98); 1024 10.22 / 10.44 / 10.14 / 8.40
 *     (4.81); 2048 15.02 / 14.67 / 14.63 / 17.69 (8.44); 4096 27.62 / 25.32 / **24.77** / 27.45 (19.26);
 *   Qwen3-235B (E = 128, k = 8): 1024 10.12 / 9.39 / **8.31** / 8.41 (3.17); 4096 19.38 / 16.80 / **16.26** / 17.68 (9.55);
 *   GPT-OSS-120B (E = 128, k = 4): 1024 7.63 / 8.79 / 7.51 / 7.62; 2048 9.82 / 10.42 / 10.39 / 12.51; 4096 13.22 / 14.24
 *     / 13.55 / 15.27 (slower from 2048);
 *   DBRX (E = 16, k = 4): 1024 8.19 / 10.38 / 8.75 / 8.66; 4096 20.72 / 21.69 / 21.40 / 23.43 (slower).
 * So gx_clear 2 where k >= 8, E >= 128 and T >= 1024 (never slower than the paths before there; -10 % / -16 % at T =
 * 4096), nowhere else. (The clear after gx was faster still at DeepSeek-R1 softmax T = 1024, 8.40, and slower at 2048:
 * not in the rule, one point.) Lab call 131 (`dev/runs/run131/`): T = 1536 / 3072 (G = 96) DeepSeek-R1 softmax 13.17 /
 * 11.37, 23.42 / 18.51; Qwen3-235B 11.44 / 10.44, 17.23 / 13.42 (before / gx_clear 2).
 * Except (results run 72, H100, the scaling sweep's inputs): DeepSeek-R1 softmax T = 2048 route + buf 14.60 by v47
 * against 14.27 by the paths before (results run 71) and the chain's 14.24, +2.5 % (the lab's inputs had it 2 - 3 %
 * faster: 14.59 against 14.90). There gx has 16 rows per CTA on 128 CTAs: the clear has 4 SMs to itself, the memset
 * (8.4 us) is no longer than the routing (7.0), and the paths before already overlap it. So not where R = 16 and
 * G >= 128 for E > 128 (T = 2033 - 2112 on 132 SMs); Qwen3-235B (E = 128) at 2048 gains 11 % (12.92 -> 11.48).
 * And only where the paths before sort by the mid sort (mr_cuda_mid_sort_fits: T*k <= 16384; session 43, lab calls
 * 135 - 136, H100, `dev/runs/run135/edges.csv` and `dev/runs/run136/gxc_edges.log`): above it they take a slower sort (sort alone 9.69 us at T = 2048, 17.19
 * at 2112) and lose by 4 us: DeepSeek-R1 softmax route + buf at T = 2049 / 2080 / 2112 18.89 / 18.78 / 19.02 by the
 * paths before against 14.71 / 14.64 / 14.73 by gx_clear 2; at 2048 the paths before 14.23 against the chain's 14.19. */
#ifndef MR_GX_CLEAR_AUTO
#define MR_GX_CLEAR_AUTO 1
#endif
#define MR_GX_CLEAR_MIN_T 1024
#define MR_GX_CLEAR_MIN_E 128
#define MR_GX_CLEAR_MIN_K 8
#define MR_GX_CLEAR_FULL_G 128 /* the exception above: 16 rows per CTA on at least this many CTAs, E > 128 */
extern "C" int mr_cuda_gx_clear_mode(const mr_config* cfg) {
  if (cfg->moe_buf_bytes == 0 || mr_cuda_tune.force_general) return 0;
  const int kn = mr_cuda_tune.gx_clear;
  if (kn < 0) return 0;
  if (kn == 0) {
    uint32_t R, G;
    if (!MR_GX_CLEAR_AUTO || cfg->num_tokens < MR_GX_CLEAR_MIN_T || cfg->num_experts < MR_GX_CLEAR_MIN_E ||
        cfg->top_k < MR_GX_CLEAR_MIN_K || !mr_gx_plan(cfg, &R, &G))
      return 0;
    return R == MR_GX_LPR && G >= MR_GX_CLEAR_FULL_G && cfg->num_experts > MR_GX_CLEAR_MIN_E &&
                   mr_cuda_mid_sort_fits(cfg)
               ? 0
               : MR_GX_CLEAR2;
  }
  return kn == 2 ? MR_GX_CLEAR2 : MR_GX_CLEAR1;
}

/* Route by gx (mr_cuda_gx_takes said so; workspace >= mr_cuda_gx_workspace, 16-byte aligned):
 * cudaErrorCooperativeLaunchTooLarge when the device refuses the launch (nothing written but the
 * workspace: the barrier word, v46's cleared matrix): the caller routes by the other paths. */
extern "C" cudaError_t mr_cuda_launch_gx_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                               int32_t* topk_ids, float* topk_weights, void* workspace,
                                               int flags, cudaStream_t stream) {
  mr_gx_k g;
  memset(&g, 0, sizeof g);
  g.tail = (flags & MR_GX_TAIL) != 0;
  if (!mr_gx_plan(cfg, &g.R, &g.G)) return cudaErrorInvalidConfiguration;
  if ((flags & (MR_GX_CLEAR1 | MR_GX_CLEAR2)) && o->moe_buf_bytes != 0) { /* v47 */
    g.clr_mode = (flags & MR_GX_CLEAR2) ? 2u : 1u;
    g.clr = o->moe_buf;
    g.clr_bytes = o->moe_buf_bytes;
  }
#if MR_GX_PROBES
  g.probe = (uint32_t)mr_cuda_tune.gx_probe;
#endif
  g.T = (uint32_t)cfg->num_tokens;
  g.E = (uint32_t)cfg->num_experts;
  g.Ep = (g.E + 15u) & ~15u;
  g.k = (uint32_t)cfg->top_k;
  g.U = (uint32_t)cfg->unit_size;
  g.bar = (uint32_t*)workspace;
  g.cnt = (unsigned char*)workspace + 256;
  g.topk_ids = topk_ids;
  g.topk_weights = topk_weights;
  g.stagger = mr_gx_stagger();
  mr_gate_p p;
  mr_gate_p_init(a, cfg->dtype, &p);
  const int epl = mr_cuda_epl_bucket(cfg->num_experts); /* 4 or 8 */
  const bool bf16 = cfg->dtype == MOEROUTE_DTYPE_BF16;
#define MR_GX_CASE(EPL, L)                                                                      \
  return bf16 ? mr_gx_launch_t<MOEROUTE_DTYPE_BF16, EPL, L>(&p, o, &g, stream)                   \
              : mr_gx_launch_t<MOEROUTE_DTYPE_FP16, EPL, L>(&p, o, &g, stream)
  if (epl == 4 && g.k <= 4) MR_GX_CASE(4, 4);
  if (epl == 4) MR_GX_CASE(4, 8);
  if (g.k <= 4) MR_GX_CASE(8, 4);
  MR_GX_CASE(8, 8);
#undef MR_GX_CASE
}

/* ======================================================================== */
/* gxs: the sort in one cooperative launch over the grid (v23 - v24)        */
/* ======================================================================== */
/*
 * The sort entry point's (and route's, after the gate kernel) answer to the large sort's three
 * launches (rank, scan, place: 13.27 us at DeepSeek-R1 T = 16384 on the H100, results run 34, most
 * of it the launches' latency): gx's exchange without the gating. CTA c owns the rows
 * [c R, c R + R) of topk_ids (R = ceil(T / G), G <= one CTA per SM):
 *   A. its entries into shared memory (where they fit; else B and D read them again from topk_ids), and
 *      bit t % 32 of word t / 32 of each entry's expert in the token masks tm[w][e] (a shared atomicOr:
 *      order-free). A bit already set is a token that names
 *      its expert twice (only a sort input can): the CTA then counts and ranks its entries by
 *      comparing ids (exact, slow; it touches no other CTA's work).
 *   B. its count of every expert (16 bits: <= R k) as row c of the [G][Ep] matrix (and the running
 *      counts P[w][e] over the mask words, 16 bits), then a grid barrier (gx's; v24 splits it and adds a
 *      second, below).
 *   C. thread (col, rg) sums the 8 experts of a 16-byte column over the rows rg + NRG j (32-bit
 *      totals, and the rows before c), the NRG row groups reduced by shuffles (rg is the lane's low
 *      bits); the padded scan over the experts (64-bit: padded size low, enabled high).
 *   D. entry (t, slot) of expert e at start_e + before_e + rank (P[w][e] + popc(tm below t)):
 *      ascending token order inside each expert, then ascending slot (a duplicate's ranks by
 *      comparison), the same bits as every sort; padding and block ids of experts c + G j; CTA 0
 *      the totals.
 * v24 (session 26, perf-log v24, both on by default):
 *   place (knob gxs_place): between B's arrival at the barrier and its wait, the CTA scans its counts
 *      over the experts (local starts) and writes each entry's index at local start + rank into a
 *      16-bit order array; D then stores in that order (thread j: local position j), so that a warp's
 *      stores are runs of consecutive positions, not a sector per entry (5.8 of 17.3 us at
 *      DeepSeek-R1 T = 16384 were those stores, lab call 68's probe 5).
 *   xchg (knob gxs_xchg): C by columns: warp w of CTA c prefixes the column of expert c + G (w + 16 j)
 *      over the rows into a [G][Ep] matrix of 32-bit counts before each CTA and a total per expert; a
 *      second grid barrier; each CTA reads its own row and the totals, not the whole matrix.
 * No moe_buf (P clears it beside the large sort's phases). Shared memory stays below 48 KB (no
 * opt-in attribute: cudaFuncSetAttribute is not a stream operation and is avoided during capture).
 */
#define MR_GXS_THREADS 512
#define MR_GXS_WARPS (MR_GXS_THREADS / 32)
#define MR_GXS_MAX_E 512
#define MR_GXS_J 8 /* count-matrix loads in flight per thread */
#define MR_GXS_SMEM_MAX (48u * 1024u)
#define MR_GXS_RPL 8 /* xchg: count rows per lane, G <= 256 */

typedef struct mr_gxs_k {
  uint32_t T, E, Ep, k, U, G, R, W; /* W = ceil(R / 32) mask words per expert */
  uint32_t nrg;                     /* row groups of the read-back: a power of two <= 32 */
  uint32_t ent_sm;                  /* the CTA's entries kept in shared memory (else read again from topk_ids) */
  uint32_t stagger;                 /* the read-back starts at row c (knob gx_stagger) */
  uint32_t place;                   /* v24 (knob gxs_place): the CTA's entries put in (expert, token, slot) order
                                       in shared memory while the other CTAs arrive, then stored in that order */
  uint32_t xchg;                    /* v24 (knob gxs_xchg): the exchange by columns and a second grid barrier */
  uint32_t rpl;                     /* xchg: count rows per lane, ceil(G / 32) <= MR_GXS_RPL */
  uint32_t zeroed;                  /* v26: no zeroing launch before this one (MR_GX_ZEROED): wait for the launch
                                       before (the gate kernel, which zeroed the barrier word) at the start */
  uint32_t probe;                   /* lab timing probe (knob gxs_probe), WRONG outputs: 1 = return at entry, 2 =
                                       after the counts (no barrier), 3 = after the barrier, 4 = after the scan,
                                       5 = everything but the entries' stores */
  uint16_t* cnt;                    /* [G][Ep] (16-byte aligned) */
  uint32_t* pre;                    /* xchg: [G][Ep] each CTA's count of each expert in the CTAs before it */
  uint32_t* tot;                    /* xchg: [Ep] each expert's total */
  uint32_t* bar;
} mr_gxs_k;

/* shared (words): tm [W E] | P [W E] halves | entries [R k] (where kept) | start, pos, cnt, loc [E] | dup
 * flag, pad to 4 | w64 [16] | count row [Ep] halves (16-byte aligned) | place: local starts [E], the order
 * [R k] halves */
__host__ __device__ __forceinline__ uint32_t mr_gxs_ent_word(uint32_t E, uint32_t W) {
  return W * E + (W * E + 1u) / 2u;
}
__host__ __device__ __forceinline__ uint32_t mr_gxs_w64_word(uint32_t E, uint32_t R, uint32_t k, uint32_t W,
                                                             uint32_t ent_sm) {
  return (mr_gxs_ent_word(E, W) + (ent_sm ? R * k : 0u) + 4u * E + 1u + 3u) & ~3u;
}
__host__ __device__ __forceinline__ size_t mr_gxs_smem(uint32_t E, uint32_t R, uint32_t k, uint32_t W,
                                                       uint32_t ent_sm, uint32_t place) {
  const uint32_t Ep = (E + 7u) & ~7u;
  return (size_t)mr_gxs_w64_word(E, R, k, W, ent_sm) * 4u + 8u * MR_GXS_WARPS + 2u * Ep +
         (place ? 4u * E + 2u * R * k : 0u);
}

/* The exchange by columns (v24, knob gxs_xchg): warp w of CTA c takes the experts c + G (w + 16 j); lane l its
 * count rows [l rpl, l rpl + rpl) (rpl = ceil(G / 32) <= MR_GXS_RPL): the prefix over the rows by a warp scan into
 * pre[r][e] (each CTA's count of e in the CTAs before it), the total into tot[e]. The caller then passes a second
 * grid barrier, after which each CTA reads its own row of pre and the totals instead of the whole count matrix.
 * (Session 29 measured the same pass in gx, v30: ~1 us slower there at every T, perf-log v30.) */
__device__ __forceinline__ void mr_gxs_cols(const uint16_t* cnt, uint32_t Ep, uint32_t E, uint32_t G, uint32_t rpl,
                                            uint32_t* pre, uint32_t* tot, uint32_t c, uint32_t warp, uint32_t lane) {
  for (uint32_t e = c + G * warp; e < E; e += G * MR_GXS_WARPS) { /* warp-uniform */
    uint32_t x[MR_GXS_RPL], s = 0u;
#pragma unroll
    for (uint32_t j = 0; j < MR_GXS_RPL; ++j) {
      const uint32_t r = lane * rpl + j;
      x[j] = j < rpl && r < G ? (uint32_t)__ldcg(cnt + (size_t)r * Ep + e) : 0u;
      s += x[j];
    }
    uint32_t inc = s;
#pragma unroll
    for (uint32_t m = 1u; m < 32u; m <<= 1) {
      const uint32_t y = __shfl_up_sync(MR_FULL_MASK, inc, m);
      if (lane >= m) inc += y;
    }
    uint32_t run = inc - s;
#pragma unroll
    for (uint32_t j = 0; j < MR_GXS_RPL; ++j) {
      const uint32_t r = lane * rpl + j;
      if (j < rpl && r < G) __stcg(pre + (size_t)r * Ep + e, run);
      run += x[j];
    }
    if (lane == 31u) __stcg(tot + e, inc);
  }
}

template <bool LEAN>
__global__ void __launch_bounds__(MR_GXS_THREADS, 1)
    mr_gxs_sort_kernel(const int32_t* __restrict__ ids, const float* __restrict__ wts,
                       const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_gxs_k a) {
  extern __shared__ __align__(16) uint32_t mr_gxs_sm[];
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, c = blockIdx.x;
  const uint32_t E = a.E, Ep = a.Ep, k = a.k, U = a.U, G = a.G, W = a.W;
  uint32_t* tm = mr_gxs_sm;
  uint16_t* P = (uint16_t*)(tm + W * E); /* a CTA's counts: <= R k <= 65535 */
  int32_t* ent_s = (int32_t*)(mr_gxs_sm + mr_gxs_ent_word(E, W));
  uint32_t* s_start = (uint32_t*)ent_s + (a.ent_sm ? a.R * k : 0u);
  uint32_t* s_pos = s_start + E;
  uint32_t* s_cnt = s_pos + E;
  uint32_t* s_loc = s_cnt + E;
  uint32_t* s_dup = s_loc + E;
  unsigned long long* s_w64 = (unsigned long long*)(mr_gxs_sm + mr_gxs_w64_word(E, a.R, k, W, a.ent_sm));
  uint16_t* crow = (uint16_t*)(s_w64 + MR_GXS_WARPS); /* 16-byte aligned */
  uint32_t* s_lst = (uint32_t*)(crow + Ep);           /* place: the CTA's exclusive prefix of its counts */
  uint16_t* perm = (uint16_t*)(s_lst + E);             /* place: the entry at each CTA-local sorted position */
  mr_pdl_launch_dependents();
  if (a.zeroed) mr_pdl_wait(); /* v26: topk_ids and the zeroed barrier word come from the launch before */
  if (a.probe == 1u) return;
  for (uint32_t q = tid; q < W * E; q += MR_GXS_THREADS) tm[q] = 0u;
  if (tid == 0) *s_dup = 0u;
  __syncthreads();

  /* A. the entries and the token masks (topk_ids are final: the zeroing launch waited for the
   * previous work on the stream before this launch could start; with MR_GX_ZEROED, the wait above) */
  const uint32_t t0 = c * a.R, nrows = min(a.R, a.T - t0), n = nrows * k;
  const int32_t* cid = ids + (size_t)t0 * k;
  const int32_t* ent = a.ent_sm ? (const int32_t*)ent_s : cid; /* phases B and D read the entries here */
  for (uint32_t i = tid; i < n; i += MR_GXS_THREADS) {
    const int32_t id = cid[i];
    if (a.ent_sm) ent_s[i] = id;
    if ((uint32_t)id < E && (o.expert_mask == NULL || __ldg(o.expert_mask + id) != 0)) {
      const uint32_t tl = mr_udiv(i, k, o.k_magic), bit = 1u << (tl & 31u);
      if (atomicOr(tm + (tl >> 5) * E + (uint32_t)id, bit) & bit) *s_dup = 1u;
    }
  }
  __syncthreads();
  const bool dup = *s_dup != 0u; /* CTA-uniform */

  /* B. this CTA's counts: row c of the matrix; the grid barrier */
  for (uint32_t e = tid; e < Ep; e += MR_GXS_THREADS) {
    uint32_t cn = 0u;
    if (e < E && !dup) {
      cn = mr_tm_count(tm, P, W, E, e);
    } else if (e < E && (o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0)) {
      for (uint32_t j = 0; j < n; ++j) cn += ent[j] == (int32_t)e; /* a duplicate somewhere in the CTA */
    }
    crow[e] = (uint16_t)cn;
  }
  __syncthreads();
  for (uint32_t q = tid; q < Ep / 8u; q += MR_GXS_THREADS)
    ((uint4*)(a.cnt + (size_t)c * Ep))[q] = ((const uint4*)crow)[q];
  if (a.probe == 2u) return;
  __syncthreads();
  uint32_t nl = 0u; /* place: the CTA's entries that are placed (in range, enabled) */
  if (a.place) {
    /* arrive; then, while the other CTAs arrive, each placed entry at its CTA-local sorted position
     * (its expert's local start + its rank: the same ranks as D's) */
    if (tid == 0) mr_gx_grid_arrive_x<LEAN>(a.bar);
    unsigned long long lt;
    const uint32_t lv = tid < E ? (uint32_t)crow[tid] : 0u;
    const uint32_t lrun = (uint32_t)mr_cta_excl_scan64<MR_GXS_WARPS>(lv, s_w64, &lt); /* sort.cuh */
    nl = (uint32_t)lt;
    if (tid < E) s_lst[tid] = lrun;
    __syncthreads();
    for (uint32_t i = tid; i < n; i += MR_GXS_THREADS) {
      const int32_t id = ent[i];
      if ((uint32_t)id < E && (o.expert_mask == NULL || __ldg(o.expert_mask + id) != 0)) {
        uint32_t rank = 0u;
        if (!dup) {
          rank = mr_tm_rank(tm, P, E, mr_udiv(i, k, o.k_magic), (uint32_t)id);
        } else {
          for (uint32_t j = 0; j < i; ++j) rank += ent[j] == id;
        }
        perm[s_lst[id] + rank] = (uint16_t)i;
      }
    }
    if (tid == 0) mr_gx_grid_wait_x<LEAN>(a.bar, G);
    __syncthreads();
  } else {
    mr_gx_grid_barrier<LEAN>(a.bar, G);
  }
  if (a.probe == 3u) return;

  /* C. each expert's total and its count in the CTAs before c (thread e's: cn, bf) */
  uint32_t cn = 0u, bf = 0u;
  if (a.xchg) {
    /* by columns: warp w of CTA c takes the experts c + G (w + 16 j); lane l its rows [l rpl, l rpl + rpl):
     * the prefix over the rows by a warp scan into pre[r][e], the total into tot[e]; a second grid
     * barrier; then each CTA reads its own row of pre and the totals (no CTA reads the whole matrix) */
    mr_gxs_cols(a.cnt, Ep, E, G, a.rpl, a.pre, a.tot, c, warp, lane);
    __syncthreads();
    mr_gx_grid_barrier<LEAN>(a.bar, 2u * G);
    if (tid < E) {
      cn = __ldcg(a.tot + tid);
      bf = __ldcg(a.pre + (size_t)c * Ep + tid);
    }
  } else {
    /* every CTA reads the whole matrix: thread (col, rg) sums the 8 experts of a 16-byte column over the
     * rows rg + NRG j */
    const uint32_t ncol = Ep / 8u, nrg = a.nrg, col = tid / nrg, rg = tid % nrg;
    const bool act = col < ncol;
    uint32_t te[8], be[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) te[q] = be[q] = 0u;
    const uint32_t sh = a.stagger ? c : 0u; /* row r is read as row (r + sh) mod G */
    for (uint32_t r0 = rg; r0 < G; r0 += nrg * MR_GXS_J) { /* no shuffle inside: the lanes may part here */
      uint4 x[MR_GXS_J];
#pragma unroll
      for (uint32_t j = 0; j < MR_GXS_J; ++j) {
        const uint32_t r = r0 + nrg * j, rr = r + sh < G ? r + sh : r + sh - G;
        x[j] = act && r < G ? __ldcg((const uint4*)(a.cnt + (size_t)rr * Ep) + col) : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
      for (uint32_t j = 0; j < MR_GXS_J; ++j) {
        const uint32_t r = r0 + nrg * j, rr = r + sh < G ? r + sh : r + sh - G;
        const bool before = rr < c;
        const uint32_t w4[4] = {x[j].x, x[j].y, x[j].z, x[j].w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const uint32_t lo = w4[q] & 0xffffu, hi = w4[q] >> 16;
          te[2 * q] += lo;
          te[2 * q + 1] += hi;
          be[2 * q] += before ? lo : 0u;
          be[2 * q + 1] += before ? hi : 0u;
        }
      }
    }
    for (uint32_t m = 1u; m < nrg; m <<= 1) { /* nrg divides 32: the groups are aligned lane ranges */
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        te[q] += __shfl_xor_sync(MR_FULL_MASK, te[q], m);
        be[q] += __shfl_xor_sync(MR_FULL_MASK, be[q], m);
      }
    }
    if (act && rg == 0u) {
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const uint32_t e = col * 8u + (uint32_t)q;
        if (e < E) {
          s_cnt[e] = te[q];
          s_pos[e] = be[q];
        }
      }
    }
    __syncthreads();
    if (tid < E) {
      cn = s_cnt[tid];
      bf = s_pos[tid];
    }
  }
  /* the padded scan over the experts, thread e (E <= 512 = the CTA's threads) */
  unsigned long long v = 0ull;
  if (tid < E) {
    const uint32_t en = o.expert_mask == NULL || __ldg(o.expert_mask + tid) != 0;
    cn = en ? cn : 0u; /* a masked expert's entries were never counted */
    v = (unsigned long long)(mr_udiv(cn + U - 1u, U, o.u_magic) * U) | ((unsigned long long)en << 32);
  }
  unsigned long long total;
  const unsigned long long run = mr_cta_excl_scan64<MR_GXS_WARPS>(v, s_w64, &total); /* sort.cuh */
  if (tid < E) {
    s_start[tid] = (uint32_t)run;
    s_loc[tid] = (uint32_t)(run >> 32);
    s_cnt[tid] = cn;
    s_pos[tid] = (uint32_t)run + bf;
  }
  if (a.probe == 4u) return;
  __syncthreads();

  /* D. this CTA's entries; the padding and block ids of experts c + G j; the totals */
  const float* cw = wts ? wts + (size_t)t0 * k : NULL;
  if (a.place) { /* in (expert, token, slot) order: each expert's entries of this CTA are consecutive positions */
    for (uint32_t j = tid; j < nl; j += MR_GXS_THREADS) {
      const uint32_t i = perm[j], e = (uint32_t)ent[i];
      const uint32_t tl = mr_udiv(i, k, o.k_magic), slot = i - tl * k, pos = s_pos[e] + (j - s_lst[e]);
      if (a.probe == 5u) {
        if (pos == 0xffffffffu) o.sorted_token_ids[0] = 0; /* never: keeps the positions computed */
      } else {
        mr_emit_entry_at(&o, pos, t0 * k + i, t0 + tl, slot, cw ? __float_as_uint(cw[i]) : 0u);
      }
    }
  } else {
    for (uint32_t i = tid; i < n; i += MR_GXS_THREADS) {
      const uint32_t e = (uint32_t)ent[i];
      if (e < E && s_cnt[e] != 0u) {
        const uint32_t tl = mr_udiv(i, k, o.k_magic), slot = i - tl * k;
        uint32_t rank = 0u;
        if (!dup) {
          rank = mr_tm_rank(tm, P, E, tl, e);
        } else {
          for (uint32_t j = 0; j < i; ++j) rank += ent[j] == (int32_t)e;
        }
        if (a.probe == 5u) {
          if (s_pos[e] + rank == 0xffffffffu) o.sorted_token_ids[0] = 0; /* never */
        } else {
          mr_emit_entry_at(&o, s_pos[e] + rank, t0 * k + i, t0 + tl, slot, cw ? __float_as_uint(cw[i]) : 0u);
        }
      }
    }
  }
  for (uint32_t e = c + G * warp; e < E; e += G * MR_GXS_WARPS) {
    const uint32_t ne = s_cnt[e];
    if (ne != 0u) mr_emit_padding(&o, s_start[e], ne, mr_udiv(ne + U - 1u, U, o.u_magic) * U, s_loc[e], lane);
  }
  if (c == 0u && tid == 0u) mr_emit_totals(&o, (uint32_t)total);
}

/* knobs gxs_place and gxs_xchg (v24, lab forms until measured): 0 = the default (MR_GXS_PLACE, MR_GXS_XCHG),
 * 1 = on, -1 = off. The same bits either way. */
#define MR_GXS_PLACE 1
#define MR_GXS_XCHG 1

/* the plan: R rows per CTA, G CTAs (at most one per SM), the mask words, the read-back's row groups,
 * the v24 forms where they fit (place: its order in shared memory, the entries then read again from
 * topk_ids if need be; xchg: G <= 32 MR_GXS_RPL); 0 where gxs does not fit (E > 512, shared memory over
 * 48 KB, a count over 16 bits) */
static int mr_gxs_plan(const mr_config* cfg, mr_gxs_k* g, size_t* smem) {
  const int64_t T = cfg->num_tokens, E = cfg->num_experts, k = cfg->top_k;
  const int64_t sms = mr_cuda_sm_count();
  if (T < 1 || sms < 1 || E > MR_GXS_MAX_E || T >= ((int64_t)1 << 24)) return 0;
  const int64_t R = (T + sms - 1) / sms;
  if (R * k > 65535) return 0; /* the 16-bit counts (cnt, P) and the place form's 16-bit order array rest on it */
  memset(g, 0, sizeof *g);
  g->T = (uint32_t)T;
  g->E = (uint32_t)E;
  g->Ep = (g->E + 7u) & ~7u;
  g->k = (uint32_t)k;
  g->U = (uint32_t)cfg->unit_size;
  g->R = (uint32_t)R;
  g->G = (uint32_t)((T + R - 1) / R);
  g->W = (g->R + 31u) / 32u;
  uint32_t nrg = 32u;
  while (nrg > 1u && (g->Ep / 8u) * nrg > MR_GXS_THREADS) nrg >>= 1;
  g->nrg = nrg;
  g->rpl = (g->G + 31u) / 32u;
  g->xchg = mr_knob_on(mr_cuda_tune.gxs_xchg, MR_GXS_XCHG) && g->rpl <= MR_GXS_RPL;
  for (uint32_t place = (uint32_t)mr_knob_on(mr_cuda_tune.gxs_place, MR_GXS_PLACE);; place = 0u) {
    g->place = place;
    g->ent_sm = 1u;
    *smem = mr_gxs_smem(g->E, g->R, g->k, g->W, 1u, place);
    if (*smem > MR_GXS_SMEM_MAX) { /* the entries read twice from topk_ids instead */
      g->ent_sm = 0u;
      *smem = mr_gxs_smem(g->E, g->R, g->k, g->W, 0u, place);
    }
    if (*smem <= MR_GXS_SMEM_MAX || place == 0u) break;
  }
  return *smem <= MR_GXS_SMEM_MAX;
}

/* knob gxs: 0 = auto (mr_gxs_auto), 1 = the sort entry point and route's sort wherever it fits, 2 = the
 * sort entry point only, -1 = never. No moe_buf; a device that launches cooperative kernels.
 * Automatic rule, v24 (session 26; lab calls 68 - 69, H100, dev/gxs_lab.cu, kernel metric, the paths before
 * gxs / gxs with place and xchg, same run; `dev/runs/run69/gxs_grid.log`):
 *   sort: every preset timed (DeepSeek-R1 softmax and grouped, GPT-OSS-120B, Kimi-K2, Qwen3-Next,
 *     Qwen3-235B) is faster by gxs from T*k = 49152 on (T = 6144 at k = 8: 10.54 / 10.05, 10.38 / 9.66,
 *     11.19 / 10.05, 9.62 / 9.25; GPT-OSS-120B T = 12288: 9.55 / 9.25; Qwen3-Next 6144: 12.53 / 11.88), and at
 *     16384 by 7 - 30% (DeepSeek-R1 softmax 15.38 / 11.56). Below it the paths before gxs have T where they
 *     are faster (T*k = 32768: DeepSeek-R1 softmax 9.16 / 9.70, Qwen3-235B 8.01 / 8.95; GPT-OSS-120B T = 8192
 *     8.08 / 9.14).
 *   route (the gate kernel, then gxs): rows the gate kernel gates by segments (16-bit softmax without bias,
 *     E <= 256, k <= 8: gate.cu mr_cuda_gate_segmented) from T*k = 98304 (DeepSeek-R1 softmax T = 12288 19.16 /
 *     16.88, 8192 15.55 / 15.95 slower; GPT-OSS-120B 24576 16.66 / 15.42, 16384 13.45 / 14.62 slower;
 *     Qwen3-235B 12288 16.89 / 15.48, 8192 13.04 / 14.79 slower); other rows from 49152, as the sort (Kimi-K2
 *     T = 6144 35.84 / 34.07, 4096 27.09 / 27.04; grouped DeepSeek-R1 6144 26.25 / 26.03; Qwen3-Next from
 *     T = 3072, 4096 20.59 / 19.41). Results run 37 had route at 98304 for every row: Kimi-K2 and Qwen3-Next at
 *     T = 8192 were then 3.6% / 6% slower than the chain (the gate kernel + gxs's sort).
 *   v24b (the lean barriers, -1.4 us on every gxs call; session 27): results run 39 had DeepSeek-R1 softmax
 *     T = 8192 (T*k = 65536) route 14.70 us (the large path), the chain (gate kernel + gxs) 14.00; lab call
 *     69's grid less 1.4 puts gxs ahead there (15.55 / ~14.55) and behind at 6144 (14.32 / ~15.7). So
 *     segmented rows with E > 128 from 65536; E = 128 stays at 98304 (GPT-OSS-120B T = 16384 route 12.35,
 *     chain 12.84 in run 39; Qwen3-235B 8192 13.04 / ~13.4).
 * E >= 128 and 4 <= k <= 10: the E and k timed (128 - 512; 4, 8, 10). v23's rule (session 25, before the
 * v24 forms) was k >= 8, E >= 256 and T*k >= 393216 (327680 for E > 256). */
/* v30 (session 29; lab calls 83 - 84, H100, gxs_lab --bounds, `dev/runs/run83/`, `run84/`, kernel metric, the paths
 * before / gxs): the bounds of lab call 69 predate v24b's lean barriers, which took ~1.4 us off every gxs call.
 *   sort: every k = 8 preset is faster by gxs ALONE at T*k = 16384 and slower at 8192 (DeepSeek-R1 softmax T = 2048
 *     10.22 / 8.00, 1024 7.42 / 7.85; Kimi-K2 9.63 / 8.20, 7.42 / 8.19; Qwen3-235B 9.90 / 7.52), k = 4 from 12288,
 *     E = 512 at 20480. But results run 47, which ran those bounds for every E, has the CHAIN (our gate kernel, then
 *     the sort) slower by 1.6 - 2.6 us where the gate kernel is the fast segment kernel (DeepSeek-R1 softmax T = 2048
 *     / 4096 11.98 / 12.44 -> 13.99 / 14.83 us, GPT-OSS-120B 4096 / 8192 11.00 / 10.92 -> 12.64 / 13.56; the sort
 *     alone 0.2 - 1.0 faster): gxs's zeroing and cooperative launches do not overlap the gate kernel's tail as the
 *     paths before it do. Where the gate kernel is slow (Kimi-K2, Qwen3-Next) both got faster (Kimi-K2 T = 4096 chain
 *     27.19 -> 25.16, Qwen3-Next 20.07 -> 17.52). So the lower sort bound holds for E > 256 only (16384; 20480 for
 *     E > 384); E <= 256 keeps 49152.
 *   route, rows not segmented: from 16384 for E <= 384 (Kimi-K2 T = 2048 19.04 / 17.95, T = 1024 15.20 / 17.52
 *     slower; grouped DeepSeek-R1 16.16 / 14.53, 12.65 / 14.41), from 30720 for E = 512 (Qwen3-Next T = 3072 19.58 /
 *     17.20, T = 2048 15.98 / 16.62 slower); results run 47: Kimi-K2 T = 4096 26.83 -> 25.16, Qwen3-Next 20.07 ->
 *     17.55.
 *   route, segmented rows: the bounds below stand (DeepSeek-R1 softmax T = 6144 14.23 / 14.81; Qwen3-235B 6144 11.87
 *     / 12.58). (Where route ran the gate kernel + ctm's sort past gx's T = 4096, GPT-OSS-120B T = 4097 - 6144, large.cu's
 *     L1 by segments is faster than both: ctm.cu mr_cuda_ctm_route_sort_takes.) */
#define MR_GXS_AUTO 1
#define MR_GXS_MIN_N_SORT 49152         /* E <= 256 */
#define MR_GXS_MIN_N_SORT_E384 16384    /* 256 < E <= 384 (v30) */
#define MR_GXS_MIN_N_SORT_E512 20480    /* E > 384 (v30) */
#define MR_GXS_MIN_N_ROUTE_OTHER 16384  /* rows the gate kernel does not segment, E <= 384 (v30); the lowest route bound */
#define MR_GXS_MIN_N_ROUTE_OTHER_E512 20480 /* (E > 384; v30: 30720; session 30: 20480, the sort's bound, after
                                               results runs 49 - 51 had Qwen3-Next's chain (the gate kernel + gxs)
                                               at T = 2048 at 14.73 - 14.86 us against route's 15.55 - 15.68) */
#define MR_GXS_MIN_N_ROUTE 98304        /* segmented rows, E <= 128 */
#define MR_GXS_MIN_N_ROUTE_E256 65536   /* segmented rows, E > 128 (v24b's lean barriers: results run 39) */
#define MR_GXS_MIN_K 4
#define MR_GXS_MAX_K 10
#define MR_GXS_MIN_E 128
static int mr_gxs_auto(const mr_config* cfg, moeroute_op op, int seg) {
  const int64_t n = cfg->num_tokens * (int64_t)cfg->top_k, E = cfg->num_experts;
  if (!MR_GXS_AUTO || cfg->top_k < MR_GXS_MIN_K || cfg->top_k > MR_GXS_MAX_K || E < MR_GXS_MIN_E) return 0;
  if (op != MOEROUTE_OP_ROUTE)
    return n >= (E > 384 ? MR_GXS_MIN_N_SORT_E512 : E > 256 ? MR_GXS_MIN_N_SORT_E384 : MR_GXS_MIN_N_SORT);
  if (!seg) return n >= (E > 384 ? MR_GXS_MIN_N_ROUTE_OTHER_E512 : MR_GXS_MIN_N_ROUTE_OTHER);
  return n >= (E > 128 ? MR_GXS_MIN_N_ROUTE_E256 : MR_GXS_MIN_N_ROUTE);
}
/* seg: route's rows are gated by segments (mr_cuda_gate_segmented); 0 where unknown (route's workspace
 * query, which cannot see the bias pointer: the lower bound, so it reserves wherever gxs may take) */
extern "C" int mr_cuda_gxs_takes(const mr_config* cfg, moeroute_op op, int seg) {
  const int knob = mr_cuda_tune.gxs;
  mr_gxs_k g;
  size_t smem;
  if (knob < 0 || mr_cuda_tune.force_general || cfg->moe_buf_bytes != 0 || !mr_gxs_plan(cfg, &g, &smem)) return 0;
  if (knob == 2 && op != MOEROUTE_OP_SORT) return 0;
  return (knob > 0 || mr_gxs_auto(cfg, op, seg)) && mr_cuda_coop_launch();
}

/* workspace: the barrier word (its own 256 bytes), the count matrix [G][Ep] of 16 bits, then xchg's
 * prefixes [G][Ep] and totals [Ep] of 32 bits (reserved whatever the knobs: a function of T, E and
 * the SM count) */
static size_t mr_gxs_ws_cnt(const mr_gxs_k* g) { return ((size_t)g->G * g->Ep * 2u + 255u) & ~(size_t)255u; }
static size_t mr_gxs_ws_pre(const mr_gxs_k* g) { return ((size_t)g->G * g->Ep * 4u + 255u) & ~(size_t)255u; }
extern "C" size_t mr_cuda_gxs_workspace(const mr_config* cfg) {
  mr_gxs_k g;
  size_t smem;
  if (!mr_gxs_plan(cfg, &g, &smem)) return 0;
  return 256u + mr_gxs_ws_cnt(&g) + mr_gxs_ws_pre(&g) + (size_t)g.Ep * 4u;
}

/* Sort by gxs (mr_cuda_gxs_takes said so; workspace >= mr_cuda_gxs_workspace, 16-byte aligned):
 * cudaErrorCooperativeLaunchTooLarge when the device refuses the launch (nothing written but the
 * barrier word): the caller sorts by the other paths. */
extern "C" cudaError_t mr_cuda_launch_gxs_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                               const float* topk_weights, void* workspace, int flags,
                                               cudaStream_t stream) {
  mr_gxs_k g;
  size_t smem;
  if (!mr_gxs_plan(cfg, &g, &smem)) return cudaErrorInvalidConfiguration;
  g.bar = (uint32_t*)workspace;
  g.cnt = (uint16_t*)((unsigned char*)workspace + 256);
  g.pre = (uint32_t*)((unsigned char*)workspace + 256 + mr_gxs_ws_cnt(&g));
  g.tot = (uint32_t*)((unsigned char*)workspace + 256 + mr_gxs_ws_cnt(&g) + mr_gxs_ws_pre(&g));
  g.probe = (uint32_t)mr_cuda_tune.gxs_probe;
  g.stagger = mr_gx_stagger();
  g.zeroed = (flags & MR_GX_ZEROED) != 0;
  const bool lean = mr_knob_on(mr_cuda_tune.gx_lean_bar, MR_GX_LEAN_BAR) != 0; /* v24b: each form its own instantiation */
  return mr_gx_coop_launch(lean ? mr_gxs_sort_kernel<true> : mr_gxs_sort_kernel<false>, g.G, MR_GXS_THREADS, smem,
                           g.bar, (uint32_t)flags, (uint4*)nullptr, 0u, stream, topk_ids, topk_weights, *o, g);
}
