/*
 * tiny_lab_filt.cu - the instantiations of tiny.cu's lab knob tiny_filt (v40, session 35): the sigmoid rows that
 * the wide form would take (tiny.cuh mr_tiny_filt_kind), a warp per row by gate.cuh's filter on approximate keys, in
 * the solo form at T = 1 and the cluster form at 2 <= T <= 16 (tiny.cuh's kernel templates with FILT = 2; a
 * translation unit of its own so that these kernels compile in parallel with tiny.cu's). Lab-only in session 35; since
 * session 36 the default where k >= 9 and E > 256 (tiny.cuh MR_TINY_FILT_AUTO, lab call 105), so the file keeps its
 * name but its kernels are on the default path there.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/tiny.cuh"

struct mr_tiny_lab_filt_launch {
  mr_tiny_launch_args x;
  template <int DT, int EPL, int KIND>
  cudaError_t run() const {
    if constexpr (KIND != MR_KIND_PACKED && (EPL == 8 || EPL == 16)) {
      const mr_tiny_k* K = x.K;
      constexpr int D = MR_KIND_DT(DT, KIND); /* fp16 folds into bf16's instantiation, as elsewhere */
      if (K->cl) /* 2 <= T <= 16: the cluster form, one row per CTA */
        return mr_launch_tiny_t<D, EPL, KIND, false, true, MR_TINY_THREADS, true, false, false, false, 2>(
            x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
      if (!K->onepass) /* T = 1: the solo form (with an expert mask, the sort from registers) */
        return mr_launch_tiny_t<D, EPL, KIND, false, false, MR_TINY_THREADS, false, false, false, false, 2>(
            x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
    }
    return cudaErrorInvalidConfiguration; /* unreachable: mr_tiny_filt_kind, mr_tiny_plan */
  }
};

extern "C" cudaError_t mr_cuda_launch_tiny_lab_filt(const mr_config* cfg, const mr_gate_args* a,
                                                   const mr_tiny_launch_args* x) {
  return mr_tiny_dispatch(cfg, a, mr_tiny_lab_filt_launch{*x});
}
