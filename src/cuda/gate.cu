/*
 * gate.cu - the gate kernel: logits [T, E] -> topk_ids [T, k], topk_weights
 * [T, k], one warp per token row (the row math is in gate.cuh).
 *
 * Used by moeroute_cuda_gate, and by route when T*k is too large for the
 * one-launch path (the general path gates first, then sorts).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"

/* Shared-memory words per warp for grouped selection: E floats of s + bias,
 * plus G flag bytes when G > 32 (G <= 32 publishes the kept groups with a
 * ballot instead). 0 without grouped selection. */
static uint32_t mr_gate_scratch_words(const mr_gate_args* a) {
  if (!a->grouped) return 0;
  uint32_t w = (uint32_t)a->num_experts;
  if (a->num_groups > 32) w += ((uint32_t)a->num_groups + 3u) / 4u;
  return w;
}

template <int DT, int EPL>
__global__ void __launch_bounds__(256) mr_gate_kernel(const __grid_constant__ mr_gate_args a, int32_t* topk_ids,
                                                      float* topk_weights, uint32_t scratch_words) {
  MR_STAMP(0);
  extern __shared__ uint32_t mr_gate_smem[];
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint32_t warps = blockDim.x >> 5;
  float* gbuf = (float*)(mr_gate_smem + warp * scratch_words);
  unsigned char* gsel = (unsigned char*)(gbuf + a.num_experts);
  const int k = a.top_k;
  for (int64_t t = (int64_t)blockIdx.x * warps + warp; t < a.num_tokens; t += (int64_t)gridDim.x * warps) {
    uint32_t raw[EPL];
    int32_t id;
    float w;
    mr_gate_load<DT, EPL>(&a, t, lane, raw);
    mr_gate_compute<DT, EPL>(&a, t, lane, raw, gbuf, gsel, &id, &w);
    MR_STAMP(2);
    if ((int)lane < k) {
      topk_ids[t * k + lane] = id;
      topk_weights[t * k + lane] = w;
    }
  }
  MR_STAMP(7);
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

template <int DT, int EPL>
static cudaError_t mr_launch_gate_t(const mr_gate_args* a, int32_t* topk_ids, float* topk_weights,
                                    cudaStream_t stream) {
  /* Decode sizes: one warp per CTA spreads the rows over SMs (a lone warp per
   * scheduler runs its dependent reductions fastest). Large T: 4 warps per CTA,
   * grid-stride beyond a few waves. */
  const int64_t T = a->num_tokens;
  const unsigned warps = T <= 128 ? 1u : 4u;
  int64_t grid = (T + warps - 1) / warps;
  const int64_t cap = (int64_t)mr_cuda_sm_count() * 64;
  if (grid > cap) grid = cap;
  const uint32_t sw = mr_gate_scratch_words(a);
  cudaLaunchConfig_t lc = mr_launch_config((unsigned)grid, warps * 32u, (size_t)sw * warps * 4u, stream);
  MR_TRY(cudaLaunchKernelEx(&lc, mr_gate_kernel<DT, EPL>, *a, topk_ids, topk_weights, sw));
  return cudaSuccess;
}

extern "C" cudaError_t mr_cuda_launch_gate(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                           float* topk_weights, cudaStream_t stream) {
  if (cfg->num_tokens == 0) return cudaSuccess;
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
#define MR_GATE_CASE(DT, EPL) \
  if (cfg->dtype == DT && epl == EPL) return mr_launch_gate_t<DT, EPL>(a, topk_ids, topk_weights, stream);
  MR_FOR_EACH_GATE_SPEC(MR_GATE_CASE)
#undef MR_GATE_CASE
  return cudaErrorInvalidConfiguration; /* unreachable: the dispatch checked the list */
}
