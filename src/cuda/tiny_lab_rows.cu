/*
 * tiny_lab_rows.cu - the instantiations of tiny.cu's lab knob tiny_cluster for the fp32-key rows
 * that the wide gate rows do not take, a warp per row (perf-log v15)
 * (tiny.cuh's kernel templates; a translation unit of its own so that these lab-only kernels
 * compile in parallel with tiny.cu's default ones).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/tiny.cuh"

struct mr_tiny_lab_rows_launch {
  mr_tiny_launch_args x;
  template <int DT, int EPL, int KIND>
  cudaError_t run() const {
    if constexpr (KIND != MR_KIND_PACKED)
      if (x.K->cl && !x.wide)
        return mr_launch_tiny_t<MR_KIND_DT(DT, KIND), EPL, KIND, false, true, MR_TINY_THREADS, true>(
            x.g, x.o, x.K, x.smem, x.topk_ids, x.topk_weights, x.stream);
    return cudaErrorInvalidConfiguration; /* unreachable: mr_cuda_launch_tiny_route */
  }
};

extern "C" cudaError_t mr_cuda_launch_tiny_lab_rows(const mr_config* cfg, const mr_gate_args* a,
                                                   const mr_tiny_launch_args* x) {
  return mr_tiny_dispatch(cfg, a, mr_tiny_lab_rows_launch{*x});
}
