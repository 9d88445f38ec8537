/*
 * gtm_gate.cu - route's first launch of the grid token-mask sort with the gating inside
 * (K1g, v16; lab knob gtm = 3; not yet run on a GPU): the rows the gate kernel gates as
 * PACKED (16-bit softmax without bias or groups), in the same row form it would pick
 * (a warp per row, or segments of LPR lanes: gate.cu mr_gate_seg_lpr), so the top-k are
 * the gate kernel's bits; each entry goes to the top-k outputs and into the CTA's token
 * masks at once (gtm.cuh), which removes a launch and the top-k's read-back from route =
 * gate kernel + K1 + K2.
 *
 * CTA c gates its tokens [8 NB c, 8 NB (c + 1)) with 8 warps: a warp per row, rows
 * t0 + w, t0 + w + 8, ...; or by segments, RPW = 32 / LPR rows per warp and step, rows
 * t0 + 8 RPW s + RPW w + seg. Then K2 (gtm.cu) as after K1.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/gtm.cuh"

#define MR_GTM_G_WARPS (MR_GTM_K1_THREADS / 32)

/* Entry (t, slot) of the CTA's rows: the top-k outputs and the masks. */
__device__ __forceinline__ void mr_gtm_g_emit(const mr_gtm_k& g, uint32_t* sm, const uint32_t* en, uint32_t t0,
                                                  int64_t t, uint32_t slot, int32_t id, float w, int32_t* topk_ids,
                                                  float* topk_weights) {
  topk_ids[t * g.k + slot] = id;
  topk_weights[t * g.k + slot] = w;
  if ((uint32_t)id >= g.E || en[id] == 0u) return; /* masked: in topk_ids only */
  mr_gtm_k1_mark(g, sm, (uint32_t)id, (uint32_t)t - t0, slot);
}

/* (256, 1): without the minimum ptxas capped the E > 256 instances at 64 - 80 registers and spilled */
template <int DT, int EPL>
__global__ void __launch_bounds__(MR_GTM_K1_THREADS, 1)
    mr_gtm_gate_row_kernel(const __grid_constant__ mr_gate_p p, const __grid_constant__ mr_sort_out o,
                           const __grid_constant__ mr_gtm_k g, int32_t* topk_ids, float* topk_weights) {
  extern __shared__ __align__(16) uint32_t mr_gtm_g_smem[]; /* mr_gtm_k1_words */
  uint32_t* sm = mr_gtm_g_smem;
  const uint32_t* en = sm + mr_gtm_rows(g) * g.swr; /* the enabled flags after the masks */
  mr_gtm_k1_begin(o, g, sm);
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t t0 = blockIdx.x * g.NB * 8u, t1 = min(g.T, t0 + g.NB * 8u);
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
#pragma unroll 1
  for (uint32_t t = t0 + warp; t < t1; t += MR_GTM_G_WARPS) { /* warp-uniform */
    uint32_t raw[EPL];
    mr_load_lane<MR_ESZ(DT), EPL>(p.logits + (size_t)t * p.row_bytes, lane, p.num_experts, ninf, true, raw);
    int32_t id;
    float w;
    mr_gate_row<DT, EPL, MR_KIND_PACKED>(p, lane, raw, NULL, NULL, true, NULL, NULL, &id, &w);
    if ((int)lane < p.top_k) mr_gtm_g_emit(g, sm, en, t0, t, lane, id, w, topk_ids, topk_weights);
  }
  mr_gtm_k1_publish(g, sm);
}

template <int DT, int EPS, int LPR, int L>
__global__ void __launch_bounds__(MR_GTM_K1_THREADS)
    mr_gtm_gate_seg_kernel(const __grid_constant__ mr_gate_p p, const __grid_constant__ mr_sort_out o,
                           const __grid_constant__ mr_gtm_k g, int32_t* topk_ids, float* topk_weights) {
  extern __shared__ __align__(16) uint32_t mr_gtm_g_smem[];
  constexpr uint32_t RPW = 32 / LPR;
  uint32_t* sm = mr_gtm_g_smem;
  const uint32_t* en = sm + mr_gtm_rows(g) * g.swr; /* the enabled flags after the masks */
  mr_gtm_k1_begin(o, g, sm);
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t sl = lane & (LPR - 1u), seg = lane / LPR;
  const uint32_t t0 = blockIdx.x * g.NB * 8u, t1 = min(g.T, t0 + g.NB * 8u);
  const uint32_t ninf = mr_raw_neg_inf<DT>(p.f16 != 0);
#pragma unroll 1
  for (uint32_t tb = t0 + warp * RPW; tb < t1; tb += MR_GTM_G_WARPS * RPW) { /* warp-uniform */
    const uint32_t t = tb + seg;
    const bool live = t < t1;
    uint32_t raw[EPS];
    const unsigned char* row = p.logits + (size_t)(live ? t : t0) * p.row_bytes;
    mr_load_lane<2, EPS>(row, sl, p.num_experts, ninf, live, raw);
    int32_t id;
    float w;
    mr_gate_packed_seg<DT, EPS, LPR, L>(p, sl, raw, row, 0, &id, &w); /* no filter (lab path) */
    if (live && (int)sl < p.top_k) mr_gtm_g_emit(g, sm, en, t0, t, sl, id, w, topk_ids, topk_weights);
  }
  mr_gtm_k1_publish(g, sm);
}

/* ---- host ---- */

struct mr_gtm_g_args {
  const mr_gate_p* p;
  const mr_sort_out* o;
  const mr_gtm_k* g;
  int32_t* topk_ids;
  float* topk_weights;
  size_t smem;
  cudaStream_t stream;
};

static cudaError_t mr_gtm_g_launch(const mr_gtm_g_args& x, void (*kernel)(mr_gate_p, mr_sort_out, mr_gtm_k, int32_t*,
                                                                         float*)) {
  cudaLaunchConfig_t lc = mr_launch_config(x.g->G1, MR_GTM_K1_THREADS, x.smem, x.stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  return cudaLaunchKernelEx(&lc, kernel, *x.p, *x.o, *x.g, x.topk_ids, x.topk_weights);
}

/* the segment form in the instantiation gate.cuh's mr_gate_seg_dispatch picks for the gate kernel */
struct mr_gtm_seg_launcher {
  mr_gtm_g_args x;
  template <int DT, int EPS, int LPR, int L, bool PK> /* PK: never asked for (pk false below) */
  cudaError_t run() const {
    return mr_gtm_g_launch(x, mr_gtm_gate_seg_kernel<DT, EPS, LPR, L>);
  }
};

/* Route's gating and masks in one launch where the rows are PACKED (16-bit softmax without
 * bias or groups), then K2: cudaErrorNotSupported (nothing launched) for other rows. */
extern "C" cudaError_t mr_cuda_launch_gtm_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                int32_t* topk_ids, float* topk_weights, void* workspace,
                                                cudaStream_t stream) {
  if (mr_gate_kind(a, cfg->dtype) != MR_KIND_PACKED) return cudaErrorNotSupported;
  mr_gtm_k g;
  unsigned nt;
  size_t smem, off[2], bytes;
  if (!mr_gtm_plan(cfg, 1, &g, &nt, &smem, off, &bytes) || workspace == NULL) return cudaErrorInvalidConfiguration;
  mr_gtm_bind(&g, off, workspace);
  mr_gate_p p;
  mr_gate_p_init(a, cfg->dtype, &p);
  const mr_gtm_g_args x = {&p, o, &g, topk_ids, topk_weights, smem, stream};
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int lpr = mr_cuda_gate_segmented(cfg, a); /* the gate kernel's row form: the same bits */
  cudaError_t err = cudaErrorInvalidConfiguration;
  if (lpr != 0) {
    const mr_gtm_seg_launcher launch = {x};
    err = cfg->dtype == MOEROUTE_DTYPE_BF16 ? mr_gate_seg_dispatch<MOEROUTE_DTYPE_BF16>(epl, lpr, p.top_k, false, launch)
                                            : mr_gate_seg_dispatch<MOEROUTE_DTYPE_FP16>(epl, lpr, p.top_k, false, launch);
  } else {
    /* fp32 has no PACKED rows: its cases never match and instantiate the bf16 kernel */
#define MR_GTM_G_DT(DT) ((DT) == MOEROUTE_DTYPE_FP32 ? MOEROUTE_DTYPE_BF16 : (DT))
#define MR_GTM_G_CASE(DT, EPL)                                      \
  if (DT != MOEROUTE_DTYPE_FP32 && cfg->dtype == DT && epl == EPL) \
    err = mr_gtm_g_launch(x, mr_gtm_gate_row_kernel<MR_GTM_G_DT(DT), EPL>);
    MR_FOR_EACH_GATE_SPEC(MR_GTM_G_CASE)
#undef MR_GTM_G_CASE
#undef MR_GTM_G_DT
  }
  MR_TRY(err);
  return mr_gtm_launch_place(&g, nt, o, topk_ids, topk_weights, stream);
}
