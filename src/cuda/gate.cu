/*
 * gate.cu - the gate kernel: logits [T, E] -> topk_ids [T, k], topk_weights
 * [T, k], one warp per token row (the row math is in gate.cuh).
 *
 * Used by moeroute_cuda_gate, and by route when T*k is too large for the
 * one-launch path (the general path gates first, then sorts).
 *
 * Decode sizes (T <= 128): one row per CTA (three for 16-bit softmax rows
 * with 8 <= E <= 512 at T > 32, v42 / v42b), and a warp that runs the same code
 * on a zero row without loads or stores ("dry run", gate.cuh): it fetches the
 * kernel's instructions while the real warps wait for their rows
 * (dev/cuda-notes.md v3). Larger T: 4 warps per CTA, grid-stride.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"


/* A cap on the gate launch's threads per SM for the current call (0 = none): set
 * only around mr_cuda_launch_gate_capped (thread-local, so concurrent callers do
 * not see each other's). */
static __thread unsigned mr_gate_threads_cap = 0;
/* grid, at most `cap` CTAs of `threads` threads, and within the call's cap per SM */
static int64_t mr_gate_grid(int64_t grid, int64_t cap, unsigned threads) {
  if (mr_gate_threads_cap != 0) {
    const unsigned per = mr_gate_threads_cap / threads;
    const int64_t c = (int64_t)mr_cuda_sm_count() * (per > 0 ? per : 1);
    if (c < cap) cap = c;
  }
  return grid < cap ? grid : cap;
}

/* The segment kernel's start: wait for the previous work (PDL), then let the next launch start. The zero-word
 * form (v26, mr_cuda_launch_gate_zero: clear_bytes == 0 and clear_buf != NULL, then clear_buf is gxs's barrier
 * word): CTA 0 first zeroes that word and the clear's piece counter beside it and fences, so that gxs, launched next
 * without a zeroing launch, finds them zero (it waits for this launch before it touches them), and the clear after
 * gxs, which does not wait, finds its counter zero (the store is performed at L2 before the fence completes, and
 * the trigger comes after it: PTX does not promise visibility through the trigger, so this rests on the fence,
 * as v25's zeroing launch did).
 * Only the segment kernel has it (results run 42 had it in every gate kernel: the chain gate + sort at T = 2 - 4,
 * the warp-per-row and wide kernels, measured ~0.1 us slower; the segment kernel runs at T >= 1024 only). */
__device__ __forceinline__ void mr_gate_enter(unsigned char* clear_buf, size_t clear_bytes) {
  mr_pdl_wait();
  if (clear_bytes == 0 && clear_buf != nullptr && blockIdx.x == 0) { /* CTA-uniform */
    if (threadIdx.x == 0) {
      uint32_t* w = (uint32_t*)clear_buf;
      w[0] = 0u;
      w[MR_GX_TAIL_NEXT] = 0u;
      __threadfence();
    }
    __syncthreads();
  }
  mr_pdl_launch_dependents();
}

/* The filter form (v31, FILT): the picks by gate.cuh mr_top_filter, every score in line, and the bias read from
 * shared memory per row instead of held in registers; its CTAs per SM that the registers must allow (the default
 * form: up to 128 registers, 4 CTAs) */
#ifndef MR_GATE_FILT_MINB
#define MR_GATE_FILT_MINB 6
#endif
/* The filter forms' rows: element slot i's N logits (raw, -inf past E; live = false: no access) and its N biases from
 * the shared copy (braw): a warp lane's (slot = lane, N = EPL) or a segment lane's (slot = sl, N = EPS) */
template <int W, int N>
__device__ __forceinline__ void mr_load_row_sbias(const unsigned char* row, uint32_t slot, int E, uint32_t ninf,
                                                  bool live, const uint32_t* sbias, uint32_t* raw, uint32_t* braw) {
  mr_load_lane<W, N>(row, slot, E, ninf, live, raw);
#pragma unroll
  for (int r = 0; r < N; r += 4) *(uint4*)(braw + r) = *(const uint4*)(sbias + slot * N + r);
}
/* The filter forms' start (v31, v33): the bias into shared memory (32 * EPL words, 0 past E and without one), and
 * (AK) the approximate keys' bound eps = 2^-17 + (max |b| + 1) 2^-21 (gate.cuh mr_sig_filter_row); every thread */
template <int EPL, bool AK>
__device__ __forceinline__ float mr_gate_sbias_eps(const mr_gate_p& p, int E, uint32_t* sbias) {
  __shared__ uint32_t bmax_s;
  if (threadIdx.x == 0) bmax_s = 0u;
  __syncthreads();
  uint32_t bm = 0u; /* max |b| as bits: non-negative floats order as their bits */
  for (uint32_t i = threadIdx.x; i < 32u * EPL; i += blockDim.x) {
    const uint32_t b = p.bias != NULL && (int)i < E ? __float_as_uint(p.bias[i]) : 0u;
    sbias[i] = b;
    bm = max(bm, b & 0x7fffffffu);
  }
  if (AK) atomicMax(&bmax_s, bm);
  __syncthreads();
  return 0x1p-17f + (__uint_as_float(bmax_s) + 1.0f) * 0x1p-21f;
}
template <int DT, int EPL, int KIND, int FILT>
__device__ __forceinline__ void mr_gate_body(const mr_gate_p& p, int32_t* topk_ids, float* topk_weights,
                                             uint32_t scratch_words, int dry_warp, unsigned char* clear_buf,
                                             size_t clear_bytes, uint32_t clear_ctas) {
  constexpr int W = MR_ESZ(DT);
  mr_pdl_enter();
  if (mr_clear_lead_ctas(clear_buf, clear_bytes, clear_ctas)) return; /* a share of moe_buf under the gating */
  const uint32_t bid = blockIdx.x - clear_ctas, nblk = gridDim.x - clear_ctas;
  MR_STAMP(0);
  extern __shared__ __align__(16) uint32_t mr_gate_smem[];
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t live_warps = (blockDim.x >> 5) - (dry_warp >= 0 ? 1u : 0u);
  float* gbuf = (float*)(mr_gate_smem + warp * scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + p.num_experts);
  /* the filter's words (v31) end the warp's scratch */
  unsigned long long* fsm =
      FILT != 0 ? (unsigned long long*)(mr_gate_smem + (warp + 1u) * scratch_words - 2u * MR_FILT_WORDS) : nullptr;
  const int E = p.num_experts, k = p.top_k;
  const int64_t T = p.num_tokens;
  const bool dry = (int)warp == dry_warp;
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
  uint32_t braw[EPL];
  /* FILT: the bias, 0 past E (and without one), after the warps' scratch */
  uint32_t* sbias = mr_gate_smem + (blockDim.x >> 5) * scratch_words;
  float eps = 0.0f; /* FILT 2: the approximate keys' bound (gate.cuh mr_sig_filter_row) */
  if constexpr (FILT != 0 && KIND != MR_KIND_PACKED) { /* (PACKED rows have no bias) */
    eps = mr_gate_sbias_eps<EPL, FILT == 2>(p, E, sbias);
  } else if (KIND != MR_KIND_PACKED) {
    mr_load_lane<4, EPL>((const unsigned char*)p.bias, lane, E, 0u, !dry && p.bias != NULL, braw);
  }
  const int64_t step = (int64_t)nblk * live_warps;
#pragma unroll 1
  for (int64_t t = dry ? -1 : (int64_t)bid * live_warps + warp; t < T; t = t < 0 ? T : t + step) {
    const bool live = t >= 0;
    const unsigned char* row = p.logits + (live ? t : 0) * p.row_bytes;
    uint32_t raw[EPL];
    if constexpr (FILT != 0 && KIND != MR_KIND_PACKED)
      mr_load_row_sbias<W, EPL>(row, lane, E, ninf, live, sbias, raw, braw);
    else
      mr_load_lane<W, EPL>(row, lane, E, ninf, live, raw);
    int32_t id;
    float w;
    mr_gate_row<DT, EPL, KIND, FILT>(p, lane, raw, braw, row, live, gbuf, gsel, &id, &w, fsm, eps);
    MR_STAMP(2);
    if (live && (int)lane < k) {
      topk_ids[t * k + lane] = id;
      topk_weights[t * k + lane] = w;
    }
  }
  MR_STAMP(7);
}

/* The default form's minimum of CTAs per SM: none (0, as if not stated), but 1 for the 16-bit softmax rows with 16
 * elements per lane (256 < E <= 512: Qwen3-Next), whose minimum of 1 ran results runs 49 - 51 (84 registers against
 * 72) with Qwen3-Next's chain at T = 2048 at 14.73 - 14.86 us against 16.40 - 16.44 without it (runs 48, 52) */
#define MR_GATE_MINB(EPL, KIND) ((KIND) == MR_KIND_PACKED && (EPL) == 16 ? 1 : 0)
/* The default form: its own kernel, so that its launch bounds (and registers: session 29's SASS) are untouched by
 * the filter form's minimum of CTAs per SM (a minimum of 1 stated for it let ptxas take 12 - 38 more registers) */
template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(128, MR_GATE_MINB(EPL, KIND))
    mr_gate_kernel(const __grid_constant__ mr_gate_p p, int32_t* topk_ids, float* topk_weights,
                   uint32_t scratch_words, int dry_warp, unsigned char* clear_buf, size_t clear_bytes,
                   uint32_t clear_ctas) {
  mr_gate_body<DT, EPL, KIND, 0>(p, topk_ids, topk_weights, scratch_words, dry_warp, clear_buf, clear_bytes,
                                 clear_ctas);
}
template <int DT, int EPL, int KIND, int FILT>
__global__ void __launch_bounds__(128, EPL <= 16 ? MR_GATE_FILT_MINB : 1)
    mr_gate_filt_kernel(const __grid_constant__ mr_gate_p p, int32_t* topk_ids, float* topk_weights,
                        uint32_t scratch_words, int dry_warp, unsigned char* clear_buf, size_t clear_bytes,
                        uint32_t clear_ctas) {
  mr_gate_body<DT, EPL, KIND, FILT>(p, topk_ids, topk_weights, scratch_words, dry_warp, clear_buf, clear_bytes,
                                    clear_ctas);
}

/* v33 (knob gate_sig_seg): sigmoid rows without groups (FULL kind, k <= 16) by segments of 16 lanes, two rows per warp
 * and step (gate.cuh mr_sig_seg_row): lane sl of segment seg holds experts sl * EPS .. of row 2 q + seg. EPLW: the
 * warp-per-row form's elements per lane (E's bucket), which gates a row again where its segment had more than 16
 * candidates (the filter on approximate keys, then its own fallbacks). Shared memory as the filter form's: each warp's
 * scratch (its last MR_SIGSEG_WORDS 8-byte words the segments' candidates and picks, the first MR_FILT_WORDS of them the
 * warp-per-row filter's), then the bias (0 past E). */
template <int DT, int EPS, int EPLW, int KIND = MR_KIND_FULL> /* GROUPED: the lab form (gate.cuh mr_sig_seg_row GR) */
__global__ void __launch_bounds__(128, MR_GATE_FILT_MINB)
    mr_gate_sigseg_kernel(const __grid_constant__ mr_gate_p p, int32_t* topk_ids, float* topk_weights,
                          uint32_t scratch_words) {
  static_assert(16 * EPS <= 32 * EPLW && EPS % 4 == 0, "the segment's elements within the bias region");
  constexpr int W = MR_ESZ(DT);
  mr_pdl_enter();
  extern __shared__ __align__(16) uint32_t mr_gate_smem[];
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  float* gbuf = (float*)(mr_gate_smem + warp * scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + p.num_experts);
  unsigned long long* fsm = (unsigned long long*)(mr_gate_smem + (warp + 1u) * scratch_words - 2u * MR_SIGSEG_WORDS);
  const int E = p.num_experts, k = p.top_k;
  const int64_t T = p.num_tokens;
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
  uint32_t* sbias = mr_gate_smem + nw * scratch_words;
  const float eps = mr_gate_sbias_eps<EPLW, true>(p, E, sbias);
  const uint32_t sl = lane & 15u, seg = lane >> 4;
  const int64_t step = 2 * (int64_t)gridDim.x * nw;
#pragma unroll 1
  for (int64_t t0 = 2 * ((int64_t)blockIdx.x * nw + warp); t0 < T; t0 += step) { /* warp-uniform */
    const int64_t t = t0 + seg;
    const bool live = t < T;
    const unsigned char* row = p.logits + (live ? t : t0) * p.row_bytes;
    uint32_t raw[EPS], braw[EPS];
    mr_load_row_sbias<W, EPS>(row, sl, E, ninf, live, sbias, raw, braw);
    int32_t id;
    float w;
    const bool ok = mr_sig_seg_row<DT, EPS, KIND == MR_KIND_GROUPED>(p, lane, row, raw, braw, eps, fsm, &id, &w);
    w = mr_finish_weight(p, w, 16);
    if (ok && live && (int)sl < k) {
      topk_ids[t * k + sl] = id;
      topk_weights[t * k + sl] = w;
    }
    /* a segment with more than 16 candidates: its row again, by the whole warp (warp-uniform loop) */
#pragma unroll 1
    for (uint32_t fb = __ballot_sync(MR_FULL_MASK, !ok && live && sl == 0u); fb != 0u; fb &= fb - 1u) {
      const int64_t tf = t0 + ((__ffs(fb) - 1) >> 4);
      const unsigned char* rf = p.logits + tf * p.row_bytes;
      uint32_t rw[EPLW], bw[EPLW];
      mr_load_row_sbias<W, EPLW>(rf, lane, E, ninf, true, sbias, rw, bw);
      int32_t fid;
      float fw;
      mr_gate_row<DT, EPLW, KIND, 2>(p, lane, rw, bw, rf, true, gbuf, gsel, &fid, &fw, fsm, eps);
      if ((int)lane < k) {
        topk_ids[tf * k + lane] = fid;
        topk_weights[tf * k + lane] = fw;
      }
      __syncwarp();
    }
  }
}

/* 16-bit softmax rows (PACKED) with a segment of LPR lanes per row (large T,
 * v6): a warp gates 32/LPR rows at a time, grid-stride over the rows. */
#define MR_SEG_THREADS 256
template <int DT, int EPS, int LPR, int L, bool PK = false>
__global__ void __launch_bounds__(MR_SEG_THREADS)
    mr_gate_seg_kernel(const __grid_constant__ mr_gate_p p, int32_t* topk_ids, float* topk_weights,
                       unsigned char* clear_buf, size_t clear_bytes, uint32_t clear_ctas, int filt) {
  mr_gate_enter(clear_buf, clear_bytes);
  if (mr_clear_lead_ctas(clear_buf, clear_bytes, clear_ctas)) return; /* a share of moe_buf under the gating */
  constexpr int RPW = 32 / LPR; /* rows per warp step */
  const uint32_t lane = threadIdx.x & 31u, sl = lane & (LPR - 1u), seg = lane / LPR;
  const int64_t gw = (int64_t)(blockIdx.x - clear_ctas) * (MR_SEG_THREADS / 32) + (threadIdx.x >> 5);
  const int64_t nw = (int64_t)(gridDim.x - clear_ctas) * (MR_SEG_THREADS / 32);
  const int64_t T = p.num_tokens;
  const int k = p.top_k;
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
  uint32_t* sk = nullptr; /* the rank form's words (v21, filt 3) */
  if constexpr (PK) sk = mr_seg_rank_smem<MR_SEG_THREADS / 32>(threadIdx.x >> 5);
#pragma unroll 1
  for (int64_t t0 = gw * RPW; t0 < T; t0 += nw * RPW) { /* warp-uniform */
    const int64_t t = t0 + seg;
    const bool live = t < T;
    uint32_t raw[PK ? EPS / 2 : EPS];
    const unsigned char* row = p.logits + (live ? t : 0) * p.row_bytes;
    if constexpr (PK)
      mr_load_pairs<EPS>(row, sl, p.num_experts, ninf, live, raw);
    else
      mr_load_lane<2, EPS>(row, sl, p.num_experts, ninf, live, raw);
    int32_t id;
    float w;
    mr_gate_packed_seg<DT, EPS, LPR, L, PK>(p, sl, raw, row, filt, &id, &w, sk);
    if (live && (int)sl < k) {
      topk_ids[t * k + sl] = id;
      topk_weights[t * k + sl] = w;
    }
  }
}

/* Lanes per row of the segment kernel for cfg, 0 = the warp-per-row kernel.
 * Auto, for 16-bit softmax rows without bias or groups, E <= 256, k <= 8
 * (lab run 8, large_lab --v6, gate alone, kernel metric, us, warp / 16 / 8 / 4
 * lanes per row): DeepSeek-R1 sizes (k = 8) T = 1024 2.21 / 2.28 / 2.73 / -,
 * 2048 3.06 / 2.38 / 2.78, 4096 4.62 / 3.41 / 2.90, 16384 14.4 / 9.1 / 7.25,
 * 65536 52.2 / 32.2 / 24.4; GPT-OSS-120B (k = 4) 1024 1.81 / 1.74 / 1.93 / 2.34,
 * 4096 3.32 / 2.25 / 2.04 / 2.40, 8192 4.90 / 3.19 / 2.74 / 2.53, 65536
 * 29.0 / 16.9 / 12.0 / 9.96. Fewer lanes per row issue fewer instructions per
 * row (fewer butterfly stages) but make each row's chain longer: they pay once
 * the rows fill the GPU several times over. */
static int mr_gate_seg_lpr(const mr_config* cfg, int kind) {  /* also mr_cuda_gate_segmented */
  if (kind != MR_KIND_PACKED || cfg->dtype == MOEROUTE_DTYPE_FP32 || cfg->num_experts > 256 || cfg->top_k > 8)
    return 0;
  const int knob = mr_cuda_tune.gate_lpr;
  if (knob == 32) return 0;
  if (knob == 8 || knob == 16 || (knob == 4 && cfg->top_k <= 4)) return knob;
  const int64_t T = cfg->num_tokens;
  if (cfg->top_k <= 4) return T >= 8192 ? 4 : T >= 4096 ? 8 : T >= 1024 ? 16 : 0;
  return T >= 4096 ? 8 : T >= 2048 ? 16 : 0;
}

extern "C" int mr_cuda_gate_segmented(const mr_config* cfg, const mr_gate_args* a) {
  return mr_gate_seg_lpr(cfg, mr_gate_kind(a, cfg->dtype));
}

template <int DT, int EPS, int LPR, int L, bool PK>
static cudaError_t mr_launch_seg_t(const mr_gate_p* p, int32_t* topk_ids, float* topk_weights,
                                   unsigned char* clear_buf, size_t clear_bytes, int filt, cudaStream_t stream) {
  constexpr int RPC = (MR_SEG_THREADS / 32) * (32 / LPR); /* rows per CTA step */
  const int64_t grid = mr_gate_grid((p->num_tokens + RPC - 1) / RPC, (int64_t)mr_cuda_sm_count() * 16, MR_SEG_THREADS);
  const unsigned clear = clear_bytes > 0 ? (unsigned)mr_cuda_clear_ctas(clear_bytes, MR_SEG_THREADS) : 0u;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)grid + clear, MR_SEG_THREADS, 0, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_seg_kernel<DT, EPS, LPR, L, PK>, *p, topk_ids, topk_weights, clear_buf,
                            clear_bytes, clear, filt));
  return cudaSuccess;
}

/* mr_launch_seg_t for the instantiation gate.cuh's mr_gate_seg_dispatch picks */
struct mr_seg_launcher {
  const mr_gate_p* p;
  int32_t* topk_ids;
  float* topk_weights;
  unsigned char* clear_buf;
  size_t clear_bytes;
  int filt; /* gate.cuh mr_gate_packed_seg's filter (v20; 2: v21's tight bound) */
  cudaStream_t stream;
  template <int DT, int EPS, int LPR, int L, bool PK>
  cudaError_t run() const {
    return mr_launch_seg_t<DT, EPS, LPR, L, PK>(p, topk_ids, topk_weights, clear_buf, clear_bytes, filt, stream);
  }
};

/* FULL / GROUPED rows of sigmoid or sqrt_softplus at decode: a row per CTA of
 * four warps (gate.cuh, mr_gate_wide_row), grid-stride beyond. */
template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(MR_WIDE_THREADS)
    mr_gate_wide_kernel(const __grid_constant__ mr_gate_p p, int32_t* topk_ids, float* topk_weights,
                        unsigned char* clear_buf, size_t clear_bytes, uint32_t clear_ctas) {
  mr_pdl_enter();
  if (mr_clear_lead_ctas(clear_buf, clear_bytes, clear_ctas)) return; /* a share of moe_buf under the gating */
  __shared__ __align__(16) mr_wide_smem<EPL> s;
  constexpr bool GR = KIND == MR_KIND_GROUPED;
  const int64_t T = p.num_tokens, step = (int64_t)(gridDim.x - clear_ctas);
  const int k = p.top_k;
#pragma unroll 1
  for (int64_t t = (int64_t)(blockIdx.x - clear_ctas); t < T; t += step) {
    if (t >= step) __syncthreads(); /* the previous row's readers of s are done */
    const unsigned char* row = p.logits + t * p.row_bytes;
    int32_t id;
    float w;
    bool out;
    if (k <= 4)
      out = mr_gate_wide_row<DT, EPL, GR, 4>(p, row, s, 0u, MR_WIDE_THREADS, &id, &w);
    else if (k <= 8)
      out = mr_gate_wide_row<DT, EPL, GR, 8>(p, row, s, 0u, MR_WIDE_THREADS, &id, &w);
    else
      out = mr_gate_wide_row<DT, EPL, GR, 16>(p, row, s, 0u, MR_WIDE_THREADS, &id, &w);
    if (out && (int)(threadIdx.x & 31u) < k) {
      topk_ids[t * k + (threadIdx.x & 31u)] = id;
      topk_weights[t * k + (threadIdx.x & 31u)] = w;
    }
  }
}

/* T bound of the wide kernel (auto), from lab run 10 (dev/runs/run10/wide_time.log,
 * gate alone, kernel metric, us, warp per row / wide): the wide rows win at every
 * T <= 256 for all seven shapes (DeepSeek-R1 grouped 4.63 / 3.64 at 256, Kimi-K2
 * 6.24 / 3.52); at T = 512 they still win for rows without groups with k <= 8 and
 * E <= 384 (Kimi-K2 6.88 / 4.89, GLM-4.5 4.51 / 3.67, MiniMax-M2 3.80 / 3.69) but
 * lose with k = 16 (7.52 / 8.17) and grouped E = 1024 (9.67 / 10.68), and grouped
 * DeepSeek-R1's route is no faster there (11.40 / 12.00). */
#define MR_WIDE_DEFAULT_T 256
#define MR_WIDE_FULL_T 512 /* FULL rows, k <= 8, E <= 384 */
/* Softmax rows stay on the warp-per-row kernels. Lab run 11 (commit de5a513,
 * dev/runs/run11/wide_time.log, same metric) tried them wide, each warp publishing
 * its maximum and its denominator: 16-bit rows lost at every T (Qwen3-Next 2.12 /
 * 2.98 at T = 1, DeepSeek-R1 softmax 1.68 / 2.20): their packed merge (two 16-bit
 * keys per word) is short already. fp32 rows (E = 384, k = 8) won up to T = 128
 * (2.74 / 2.06), but the four-warp denominator is summed in another order than the
 * warp-per-row kernels' (gate kernel, cluster kernel), so route's weights could
 * differ in the last bit from the chain's (results run 10, test_cuda --no-pdl: 98
 * of 413 sorted weights one ulp off). The code was removed (perf-log v7). */
/* The wide kernel takes cfg: sigmoid / sqrt_softplus rows (fp32 keys), k <= 16,
 * E > 128 (EPL >= 8: at least two elements per lane and warp), T within the
 * bound; grouped selection when each group is whole lanes of one warp. Knob
 * mr_cuda_tune.gate_wide: -1 never, > 0 the T bound instead of the default. */
static int mr_gate_wide_fits(const mr_config* cfg, const mr_gate_args* a, int kind) {
  const int knob = mr_cuda_tune.gate_wide;
  if (knob < 0 || cfg->num_tokens < 1) return 0;
  const int64_t bound = knob > 0                                                                    ? (int64_t)knob
                        : kind == MR_KIND_FULL && a->top_k <= 8 && a->num_experts <= 384 ? MR_WIDE_FULL_T
                                                                                          : MR_WIDE_DEFAULT_T;
  if (cfg->num_tokens > bound) return 0;
  return mr_cuda_gate_wide_shape(a, kind);
}

/* The shape part of mr_gate_wide_fits (also tiny.cu's wide form). */
extern "C" int mr_cuda_gate_wide_shape(const mr_gate_args* a, int kind) {
  if (kind == MR_KIND_PACKED || a->score == MOEROUTE_SCORE_SOFTMAX || a->top_k > 16) return 0; /* see above */
  const int epl = mr_cuda_epl_bucket(a->num_experts);
  if (epl < 8) return 0;
  if (kind == MR_KIND_GROUPED) {
    const int epw = epl / MR_WIDE_WARPS, gs = a->group_size;
    if (a->num_groups > 32 || gs % epw != 0 || (32 * epw) % gs != 0) return 0;
    const int lpg = gs / epw;
    if (lpg > 32 || (lpg & (lpg - 1)) != 0) return 0;
  }
  return 1;
}

template <int DT, int EPL, int KIND>
static cudaError_t mr_launch_wide_t(const mr_gate_p* p0, int32_t* topk_ids, float* topk_weights,
                                    unsigned char* clear_buf, size_t clear_bytes, cudaStream_t stream) {
  mr_gate_p p = *p0;
  if (KIND == MR_KIND_GROUPED) p.group_reg_lanes = p.group_size / (EPL / MR_WIDE_WARPS); /* lanes per group here */
  const int64_t grid = mr_gate_grid(p.num_tokens, (int64_t)mr_cuda_sm_count() * 8, MR_WIDE_THREADS);
  const unsigned clear = clear_bytes > 0 ? 2u * (unsigned)mr_cuda_clear_ctas(clear_bytes, 256) : 0u;
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)grid + clear, MR_WIDE_THREADS, 0, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_wide_kernel<DT, EPL, KIND>, p, topk_ids, topk_weights, clear_buf,
                            clear_bytes, clear));
  return cudaSuccess;
}

template <int DT>
static cudaError_t mr_launch_wide(const mr_gate_p* p, int epl, int kind, int32_t* topk_ids, float* topk_weights,
                                  unsigned char* clear_buf, size_t clear_bytes, cudaStream_t stream) {
#define MR_WIDE_CASE(EPL)                                                                                      \
  if (epl == EPL) {                                                                                            \
    if (kind == MR_KIND_GROUPED)                                                                               \
      return mr_launch_wide_t<DT, EPL, MR_KIND_GROUPED>(p, topk_ids, topk_weights, clear_buf, clear_bytes, stream); \
    return mr_launch_wide_t<DT, EPL, MR_KIND_FULL>(p, topk_ids, topk_weights, clear_buf, clear_bytes, stream);     \
  }
  MR_WIDE_CASE(8)
  MR_WIDE_CASE(16)
  MR_WIDE_CASE(32)
#undef MR_WIDE_CASE
  return cudaErrorInvalidConfiguration; /* unreachable: mr_gate_wide_fits */
}

extern "C" void mr_cuda_gate_args_init(const mr_config* cfg, const void* logits, const float* bias, mr_gate_args* a) {
  memset(a, 0, sizeof *a);
  a->logits = logits;
  a->row_stride = cfg->row_stride;
  a->num_tokens = cfg->num_tokens;
  a->bias = bias;
  a->num_experts = cfg->num_experts;
  a->top_k = cfg->top_k;
  a->score = (int32_t)cfg->score;
  a->renormalize = cfg->renormalize;
  a->scale = cfg->scale;
  /* as the CPU backend: keeping every group is no grouped selection */
  a->grouped = cfg->num_groups > 1 && cfg->topk_groups < cfg->num_groups;
  a->num_groups = cfg->num_groups;
  a->topk_groups = cfg->topk_groups;
  a->group_score = (int32_t)cfg->group_score;
  a->group_size = cfg->num_experts / cfg->num_groups;
  a->group_magic = (uint32_t)(((1u << 22) + (uint32_t)a->group_size - 1u) / (uint32_t)a->group_size);
  a->group_lanes = 1;
  a->group_lanes_shift = 0;
  if (cfg->num_groups <= 16) {
    int sh = 0;
    while ((1 << sh) < cfg->num_groups) sh++; /* ceil(log2 G) */
    a->group_lanes_shift = 5 - sh;
    a->group_lanes = 1 << a->group_lanes_shift;
  }
  a->packed = cfg->dtype != MOEROUTE_DTYPE_FP32 && cfg->score == MOEROUTE_SCORE_SOFTMAX && bias == NULL;
}

/* The warp-per-row kernel's rows of the fp32-key kinds pick by the filter (v31, gate.cuh mr_top_filter), k <= 16,
 * from T = MR_GATE_FILT_T, or MR_GATE_FILT_T_WIDE where a lane holds 16 elements (256 < E <= 512). Lab call 88
 * (H100, gate alone, filter / merge): 0.68 - 0.93 at T = 4096 - 65536 for every preset timed (Kimi-K2, grouped
 * DeepSeek-R1, GLM-4.5, MiniMax-M2, DeepSeek-V4-Flash, ERNIE-4.5, Llama-4, DeepSeek-V2); at T = 2048 1.08 - 1.22
 * except Kimi-K2 (0.79, E = 384) and ERNIE / Llama-4; Kimi-K2 0.91 at 1024. Knob gate_filt: 0 this rule, -1 never,
 * > 0 from that T. */
#define MR_GATE_FILT_T 4096
#define MR_GATE_FILT_T_WIDE 1024
/* Rows the approximate keys serve take the filter from MR_GATE_FILT_T_APPROX without groups (v31b, lab call 89:
 * 0.70 - 0.94 of the merge at T = 1024, 0.63 - 0.92 at 2048 for Kimi-K2, GLM-4.5, MiniMax-M2, Llama-4), from
 * MR_GATE_FILT_T with groups (v31c, lab call 90, grouped DeepSeek-R1: 1.10 / 1.06 at T = 1024 / 2048, 0.75 at 4096,
 * 0.60 - 0.67 from 8192) */
#define MR_GATE_FILT_T_APPROX 1024
static int mr_gate_filt_approx(const mr_gate_p* p, int kind) {
  return p->score == MOEROUTE_SCORE_SIGMOID && mr_cuda_tune.gate_filt_approx >= 0 &&
         (kind == MR_KIND_FULL || (kind == MR_KIND_GROUPED && p->group_reg_lanes > 0));
}
static int mr_gate_filt_on(const mr_gate_p* p, int kind, int epl) {
  const int knob = mr_cuda_tune.gate_filt;
  const int64_t T = p->num_tokens;
  if (kind == MR_KIND_PACKED || p->top_k > 16 || knob < 0) return 0;
  if (knob > 0) return T >= (int64_t)knob;
  if (mr_gate_filt_approx(p, kind)) return T >= (kind == MR_KIND_FULL ? MR_GATE_FILT_T_APPROX : MR_GATE_FILT_T);
  return T >= (epl == 16 ? MR_GATE_FILT_T_WIDE : MR_GATE_FILT_T);
}

/* v33 (knob gate_sig_seg): where the filter on approximate keys takes sigmoid rows without groups, the segment form
 * (mr_gate_sigseg_kernel) instead: 0 = auto, 1 = on there, -1 = off. 128 <= E <= 512 (4 - 16 elements per warp
 * lane: 8 - 32 per segment lane), k <= 16. Automatic rule (lab call 93, H100, gate alone, the segments / the
 * warp-per-row filter on approximate keys): Kimi-K2 (E = 384: 24 elements per segment lane) T = 16384 24.35 / 27.34,
 * 65536 81.84 / 96.36 us, but 1024 9.32 / 4.90, 4096 11.57 / 9.69; GLM-4.5 (E = 160: 16 per lane, of which the last
 * six lanes hold only -inf, so the bound is loose and many rows take the warp-per-row form again) slower at every T
 * (65536 86.08 / 67.68). So: 256 < E <= 384 from T = MR_GATE_SIGSEG_T (v33; v33b below widens it). */
#ifndef MR_GATE_SIGSEG_AUTO
#define MR_GATE_SIGSEG_AUTO 1
#endif
#define MR_GATE_SIGSEG_T 16384
/* v33b (lab call 95, H100, the segments / the warp-per-row approximate form, both v33b): Kimi-K2 T = 4096 8.43 / 8.53,
 * 16384 16.60 / 24.40, 65536 55.34 / 86.19 us; MiniMax-M2 (E = 256, 16 per segment lane) 7.10 / 7.01, 14.20 / 18.17,
 * 46.26 / 62.49; GLM-4.5 with 16 per segment lane 8.92 / 6.97, 19.36 / 18.30, 60.76 / 61.96 (a host estimate puts 16 %
 * of its rows above 16 candidates, 1.7 % with 12 per lane: the EPS = 12 form for 128 < E <= 192, in the rule ahead of
 * its measurement in lab call 96). Segments from E > 144 (12 per lane: at least 13 lanes live; E = 136 would leave 9.7 %
 * of rows to the fallback by the same estimate; GLM-4.5 measured in lab call 96, below). */
#define MR_GATE_SIGSEG_MIN_E 144
/* Lab call 96 (H100, 55ed114, the same forms): at T = 8192 the segments win for Kimi-K2 (11.14 / 13.23 us) and lose for
 * GLM-4.5 (E = 160, 12 per lane: 10.63 / 10.10) and MiniMax-M2 (E = 256: 10.61 / 10.12); GLM-4.5 at 16384 / 65536 14.73 /
 * 17.57, 46.11 / 59.21. So 256 < E <= 384 (24 per segment lane) from T = 8192, 144 < E <= 256 from 16384. */
#define MR_GATE_SIGSEG_T_WIDE 8192
/* The segment form's elements per segment lane for EPL's bucket and E: 24 for 256 < E <= 384 (Kimi-K2: no lane of
 * padding), 12 for 128 < E <= 192 (v33b), else 2 EPL; grouped rows (v35's lab form) always 2 EPL, whole lanes per
 * group. mr_launch_gate_t launches the kernel of this EPS. */
static int mr_gate_sigseg_eps(int epl, int E, int kind) {
  if (kind == MR_KIND_FULL && epl == 16 && E <= 384) return 24;
  if (kind == MR_KIND_FULL && epl == 8 && E <= 192) return 12;
  return 2 * epl;
}
static int mr_gate_sigseg_on(const mr_gate_p* p, int epl, int kind) {
  /* grouped rows (the lab form, knob 1 only): groups of at least two warp lanes, so whole segment lanes at 2 EPL */
  const bool fits = epl >= 4 && epl <= 16 && p->num_experts >= 128 && p->top_k <= 16 && mr_gate_filt_approx(p, kind) &&
                    (kind == MR_KIND_FULL || (kind == MR_KIND_GROUPED && p->group_reg_lanes >= 2));
  if (mr_cuda_tune.gate_sig_seg != 0) return mr_cuda_tune.gate_sig_seg > 0 && fits;
  if (kind == MR_KIND_GROUPED) /* v35 (lab call 98, H100, grouped DeepSeek-R1 gate alone, segments / the warp-per-row
                                  approximate form): T = 4096 10.80 / 8.31, 16384 19.31 / 23.81, 65536 59.35 / 81.15 us;
                                  route without moe_buf 29.17 / 33.57, 76.66 / 98.98. From T = 16384, E <= 256, k <= 8
                                  (the shapes measured: E = 256, eight groups of two segment lanes) */
    return MR_GATE_SIGSEG_AUTO && fits && p->num_experts <= 256 && p->top_k <= 8 &&
           p->num_tokens >= MR_GATE_SIGSEG_T;
  if (kind != MR_KIND_FULL) return 0;
  /* the segment lanes that hold an expert (the EPS mr_launch_gate_t takes): with k of them or more the bound is
   * -inf and every row falls back (session 32's review); k <= 8 is what lab calls 93 - 96 measured, with at least 4
   * live lanes beyond k (GLM-4.5: 14 lanes, k = 8; host estimate 1.7 % of rows to the fallback) */
  const int E = p->num_experts, eps = mr_gate_sigseg_eps(epl, E, kind);
  const int live = (E + eps - 1) / eps;
  return MR_GATE_SIGSEG_AUTO && fits && E > MR_GATE_SIGSEG_MIN_E && E <= 384 && p->top_k <= 8 && p->top_k + 4 <= live &&
         p->num_tokens >= (E > 256 ? MR_GATE_SIGSEG_T_WIDE : MR_GATE_SIGSEG_T);
}
/* v34: the 16-bit softmax rows with 16 elements per lane (256 < E <= 512: Qwen3-Next; no segment form there) pick by
 * the filter (gate.cuh mr_top_filter on the packed keys, which are unique) from T = MR_GATE_FILT_T_PACKED, k <= 16: the
 * merge of 16-key lists (k = 9 - 16) is most of such a row. Lab call 97 (H200, Qwen3-Next gate alone, merge / filter):
 * T = 1024 3.21 / 3.15, 2048 5.64 / 3.91, 16384 27.86 / 17.54, 65536 104.43 / 64.71 us. Knob gate_filt as for the
 * fp32-key rows (0 this rule, -1 never, > 0 from that T). */
#define MR_GATE_FILT_T_PACKED 1024
static int mr_gate_filt_packed_on(const mr_gate_p* p, int epl) {
  const int knob = mr_cuda_tune.gate_filt;
  if (epl != 16 || p->top_k > 16 || knob < 0) return 0;
  return p->num_tokens >= (knob > 0 ? (int64_t)knob : (int64_t)MR_GATE_FILT_T_PACKED);
}
#ifndef MR_GATE_LIVE3_T
#define MR_GATE_LIVE3_T 32 /* v42: above this T (to 128), three gating warps per CTA for PACKED rows ... */
#endif
#ifndef MR_GATE_LIVE3_E
#define MR_GATE_LIVE3_E 512 /* ... with MR_GATE_LIVE3_E_MIN <= E <= this (the E timed: 8, 16, 32, 60, 64, 128, 256, 512;
                               v42b: 128 - 256 before) */
#endif
#ifndef MR_GATE_LIVE3_E_MIN
#define MR_GATE_LIVE3_E_MIN 8
#endif
template <int DT, int EPL, int KIND>
static cudaError_t mr_launch_gate_t(const mr_gate_p* p, uint32_t sw, int32_t* topk_ids, float* topk_weights,
                                    unsigned char* clear_buf, size_t clear_bytes, cudaStream_t stream) {
  /* Decode sizes: one row per CTA spreads the rows over SMs (a lone warp per
   * scheduler runs its dependent reductions fastest), plus the dry-run warp.
   * Large T: 4 warps per CTA, grid-stride beyond a few waves.
   * v42 (session 37, docs/targets.md L5, docs/perf-log.md v42): the 16-bit softmax rows at MR_GATE_LIVE3_T < T <=
   * 128 three gating warps per CTA (43 CTAs at T = 128 instead of 128, about one per SM), for 8 <= E <= 512 (v42b,
   * session 38: 128 <= E <= 256 before; lab call 113 timed the others at T = 48 - 128, three warps against one:
   * route -0.0 to -0.3 us, Qwen3-Next T = 64 6.19 -> 5.89, never slower; E outside 8 - 512 was not timed). Lab calls
   * 111 - 112 (H100, kernel metric, DeepSeek-R1 softmax route without moe_buf, one / two / three warps): T = 128
   * 6.36 - 7.30 (by graph instance) / 5.69 / 5.60 us, T = 112 6.23 / 5.61 / 5.50, T = 64 4.91 / - / 4.78; route +
   * buf at T = 128 6.06 - 6.41 / 6.05 / 5.77; GPT-OSS-120B -0.05 to -0.11; T = 32 even, T = 17 +0.06 / -0.05 (so
   * not below 33). The gate kernel alone gains 0.02 - 0.07. What the one-warp form lost at T = 128: the gate CTAs
   * on ~every SM when the mid sort's CTAs (1024 threads, 36 KB of shared memory) come up early under PDL. */
  const int64_t T = p->num_tokens;
  const int warm = T <= 128 && !mr_cuda_perf.no_warm;
  const bool live3 = KIND == MR_KIND_PACKED && T > MR_GATE_LIVE3_T && p->num_experts >= MR_GATE_LIVE3_E_MIN &&
                     p->num_experts <= MR_GATE_LIVE3_E;
  unsigned live = T <= 128 ? (live3 ? 3u : 1u) : 4u;
  /* (the kernels' __launch_bounds__ are 128 threads: with the dry-run warp at most 3 gating warps) */
  if (T <= 128 && mr_cuda_tune.gate_live >= 1 && mr_cuda_tune.gate_live <= 3) live = (unsigned)mr_cuda_tune.gate_live;
  const unsigned warps = live + (warm ? 1u : 0u);
  const int64_t grid = mr_gate_grid((T + live - 1) / live, (int64_t)mr_cuda_sm_count() * 64, warps * 32u);
  /* 128-thread CTAs: twice the 256-thread count for the same storing threads */
  const unsigned clear = clear_bytes > 0 ? 2u * (unsigned)mr_cuda_clear_ctas(clear_bytes, 256) : 0u;
  const bool filt = KIND != MR_KIND_PACKED ? mr_gate_filt_on(p, KIND, EPL) : mr_gate_filt_packed_on(p, EPL);
  if (filt) sw += 2u * MR_FILT_WORDS; /* the filter's words after the warp's scratch (sw: a multiple of 4) */
  const size_t smem = ((size_t)sw * warps + (filt && KIND != MR_KIND_PACKED ? 32u * EPL : 0u)) * 4u; /* FILT: the bias
                                                                                                         after the scratch */
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)grid + clear, warps * 32u, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  if constexpr ((KIND == MR_KIND_FULL || KIND == MR_KIND_GROUPED) && EPL >= 4 && EPL <= 16) {
    if (filt && clear == 0u && mr_gate_sigseg_on(p, EPL, KIND)) { /* v33: sigmoid rows by segments of 16 lanes */
      const uint32_t sws = sw - 2u * MR_FILT_WORDS + 2u * MR_SIGSEG_WORDS;
      const int64_t gs = mr_gate_grid((T + 7) / 8, (int64_t)mr_cuda_sm_count() * 64, 128u); /* 2 rows per warp */
      cudaLaunchConfig_t ls = mr_launch_config((unsigned)gs, 128u, ((size_t)sws * 4u + 32u * EPL) * 4u, stream);
      ls.attrs = lc.attrs;
      ls.numAttrs = lc.numAttrs;
      const int eps = mr_gate_sigseg_eps(EPL, p->num_experts, KIND);
      if constexpr (KIND == MR_KIND_GROUPED) /* the lab form: 2 EPL per segment lane (whole lanes per group) */
        MR_TRY(cudaLaunchKernelEx(&ls, mr_gate_sigseg_kernel<DT, 2 * EPL, EPL, KIND>, *p, topk_ids, topk_weights, sws));
      else if (eps == 24) /* Kimi-K2 */
        MR_TRY(cudaLaunchKernelEx(&ls, mr_gate_sigseg_kernel<DT, 24, 16>, *p, topk_ids, topk_weights, sws));
      else if (eps == 12) /* GLM-4.5's 160 on 14 of 16 lanes */
        MR_TRY(cudaLaunchKernelEx(&ls, mr_gate_sigseg_kernel<DT, 12, 8>, *p, topk_ids, topk_weights, sws));
      else
        MR_TRY(cudaLaunchKernelEx(&ls, mr_gate_sigseg_kernel<DT, 2 * EPL, EPL>, *p, topk_ids, topk_weights, sws));
      return cudaSuccess;
    }
  }
  if constexpr (KIND != MR_KIND_PACKED) {
    if (filt) {
      /* sigmoid rows: approximate keys first (v31b; with groups in whole lanes v31c; knob gate_filt_approx) */
      if (mr_gate_filt_approx(p, KIND))
        MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_filt_kernel<DT, EPL, KIND, 2>, *p, topk_ids, topk_weights, sw,
                                  warm ? (int)live : -1, clear_buf, clear_bytes, clear));
      else
        MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_filt_kernel<DT, EPL, KIND, 1>, *p, topk_ids, topk_weights, sw,
                                  warm ? (int)live : -1, clear_buf, clear_bytes, clear));
      return cudaSuccess;
    }
  }
  if constexpr (KIND == MR_KIND_PACKED && EPL == 16 && DT != MOEROUTE_DTYPE_FP32) {
    if (filt) { /* v34 */
      MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_filt_kernel<DT, EPL, KIND, 1>, *p, topk_ids, topk_weights, sw,
                                warm ? (int)live : -1, clear_buf, clear_bytes, clear));
      return cudaSuccess;
    }
  }
  MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_kernel<DT, EPL, KIND>, *p, topk_ids, topk_weights, sw,
                            warm ? (int)live : -1, clear_buf, clear_bytes, clear));
  return cudaSuccess;
}

static cudaError_t mr_gate_launch(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                  float* topk_weights, unsigned char* clear_buf, size_t clear_bytes,
                                  cudaStream_t stream);

extern "C" cudaError_t mr_cuda_launch_gate(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                           float* topk_weights, cudaStream_t stream) {
  return mr_gate_launch(cfg, a, topk_ids, topk_weights, NULL, 0, stream);
}

/* A clear of clear_bytes at clear_buf beside the gating; nothing of moe_buf is touched when clear_bytes is 0 (the
 * buffer pointer is dropped then: with the segment kernel, a pointer without bytes is the zero-word form, which
 * only mr_cuda_launch_gate_zero asks for; the review of session 27 found large.cu's chain passing moe_buf with 0
 * bytes below 40 MB, which would have zeroed two of its words) */
extern "C" cudaError_t mr_cuda_launch_gate_clear(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                                 float* topk_weights, unsigned char* clear_buf, size_t clear_bytes,
                                                 cudaStream_t stream) {
  return mr_gate_launch(cfg, a, topk_ids, topk_weights, clear_bytes != 0 ? clear_buf : NULL, clear_bytes, stream);
}

/* The gate launch: clear_bytes of moe_buf at clear_buf by the kernel's first CTAs, or (the segment kernel,
 * clear_bytes == 0 and clear_buf != NULL: mr_cuda_launch_gate_zero only) the zero-word form of mr_gate_enter */
static cudaError_t mr_gate_launch(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                  float* topk_weights, unsigned char* clear_buf, size_t clear_bytes,
                                  cudaStream_t stream) {
  if (cfg->num_tokens == 0) return cudaSuccess;
  mr_gate_p p;
  mr_gate_p_init(a, cfg->dtype, &p);
  const uint32_t sw = mr_gate_scratch_words(a);
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int kind = mr_gate_kind(a, cfg->dtype);
  const int lpr = mr_gate_seg_lpr(cfg, kind);
  if (lpr != 0) {
    /* the filter (gate.cuh mr_seg_filter_on), never beside a clear unless the knob forces it */
    const int beside = (clear_bytes > 0 || mr_gate_threads_cap != 0) && mr_cuda_tune.gate_seg_filter <= 0;
    bool pk;
    int32_t filt;
    mr_seg_gate_form(cfg->num_tokens, p.top_k, epl, lpr, beside, &pk, &filt); /* gate.cuh */
    const mr_seg_launcher launch = {&p, topk_ids, topk_weights, clear_buf, clear_bytes, filt, stream};
    if (cfg->dtype == MOEROUTE_DTYPE_BF16)
      return mr_gate_seg_dispatch<MOEROUTE_DTYPE_BF16>(epl, lpr, p.top_k, pk, launch);
    return mr_gate_seg_dispatch<MOEROUTE_DTYPE_FP16>(epl, lpr, p.top_k, pk, launch);
  }
  if (mr_gate_wide_fits(cfg, a, kind)) {
    if (cfg->dtype == MOEROUTE_DTYPE_FP32)
      return mr_launch_wide<MOEROUTE_DTYPE_FP32>(&p, epl, kind, topk_ids, topk_weights, clear_buf, clear_bytes,
                                                 stream);
    return mr_launch_wide<MOEROUTE_DTYPE_BF16>(&p, epl, kind, topk_ids, topk_weights, clear_buf, clear_bytes,
                                               stream); /* fp16 folds into the 16-bit class (p.f16) */
  }
  /* the specialisation list of common.cuh, times the kinds (gate.cuh) */
#define MR_GATE_LAUNCH(DT, EPL, KIND) \
  return mr_launch_gate_t<MR_KIND_DT(DT, MR_KIND_FIX(DT, KIND)), EPL, MR_KIND_FIX(DT, KIND)>(&p, sw, topk_ids, \
                                                                                               topk_weights,       \
                                                                                               clear_buf,          \
                                                                                               clear_bytes, stream)
#define MR_GATE_CASE(DT, EPL)                                              \
  if (cfg->dtype == DT && epl == EPL) {                                    \
    if (kind == MR_KIND_PACKED) MR_GATE_LAUNCH(DT, EPL, MR_KIND_PACKED);   \
    if (kind == MR_KIND_GROUPED) MR_GATE_LAUNCH(DT, EPL, MR_KIND_GROUPED); \
    MR_GATE_LAUNCH(DT, EPL, MR_KIND_FULL);                                 \
  }
  MR_FOR_EACH_GATE_SPEC(MR_GATE_CASE)
#undef MR_GATE_CASE
#undef MR_GATE_LAUNCH
  return cudaErrorInvalidConfiguration; /* unreachable: the dispatch checked the list */
}

/* The gate launch that also zeroes gxs's barrier word (and the clear's counter beside it) in its CTA 0 before
 * it lets the next launch start (v26: route's gate kernel + gxs without a zeroing launch between them); rows the
 * segment kernel gates only (mr_cuda_gate_segmented), else cudaErrorNotSupported and nothing launched */
extern "C" cudaError_t mr_cuda_launch_gate_zero(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                                float* topk_weights, uint32_t* zero_word, cudaStream_t stream) {
  if (mr_gate_seg_lpr(cfg, mr_gate_kind(a, cfg->dtype)) == 0) return cudaErrorNotSupported; /* segment rows only */
  return mr_gate_launch(cfg, a, topk_ids, topk_weights, (unsigned char*)zero_word, 0, stream);
}

/* The gate launch with at most threads_per_sm of its threads per SM (grid-stride
 * beyond): route's gate launch before P (large.cu), so that P's CTAs find room
 * beside it from the start and their clearing warps run under the gating. */
extern "C" cudaError_t mr_cuda_launch_gate_capped(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                                  float* topk_weights, unsigned threads_per_sm, cudaStream_t stream) {
  mr_gate_threads_cap = threads_per_sm;
  const cudaError_t err = mr_gate_launch(cfg, a, topk_ids, topk_weights, NULL, 0, stream);
  mr_gate_threads_cap = 0;
  return err;
}
