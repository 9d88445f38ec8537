/*
 * tiny_lab.cu - the instantiations of tiny.cu's lab knobs tiny_cluster (16-bit softmax rows, wide gate rows)
 * and tiny_warm (perf-log v15), tiny_op_own (v17; its value 2, v48), wide_rank_unroll (v17) and tiny_rows (v49)
 * (tiny.cuh's kernel templates; a translation unit of its own so that these lab-only kernels
 * compile in parallel with tiny.cu's default ones).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/tiny.cuh"

struct mr_tiny_lab_launch {
  mr_tiny_launch_args x;
  /* the one-pass route with the blocks by ownership OWN, 256 or 512 threads as the default */
  template <int DT, int EPL, int KIND, int OWN>
  cudaError_t own() const {
    const mr_tiny_k* K = x.K;
    if constexpr (EPL <= 16)
      if (K->threads == MR_TINY_THREADS16)
        return mr_launch_tiny_t<DT, EPL, KIND, false, true, MR_TINY_THREADS16, false, false, OWN>(
            x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
    return mr_launch_tiny_t<DT, EPL, KIND, false, true, MR_TINY_THREADS, false, false, OWN>(
        x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
  }
  /* the rows form (v49): T = 2 .. 4 rows in one warp */
  template <int DT, int EPL>
  cudaError_t rows() const {
    if constexpr (EPL <= 16) {
      const mr_tiny_k* K = x.K;
      if (K->T == 2u) return mr_launch_tiny_rows_t<DT, EPL, 2>(x.g, x.o, K, x.topk_ids, x.topk_weights, x.stream);
      if (K->T == 3u) return mr_launch_tiny_rows_t<DT, EPL, 3>(x.g, x.o, K, x.topk_ids, x.topk_weights, x.stream);
      if (K->T == 4u) return mr_launch_tiny_rows_t<DT, EPL, 4>(x.g, x.o, K, x.topk_ids, x.topk_weights, x.stream);
    }
    return cudaErrorInvalidConfiguration; /* unreachable: mr_tiny_rows_fits */
  }
  template <int DT, int EPL, int KIND>
  cudaError_t run() const {
    const mr_tiny_k* K = x.K;
    if constexpr (KIND == MR_KIND_PACKED && DT != MOEROUTE_DTYPE_FP32) {
      if (K->rows) /* the rows form (v49) */
        return rows<DT, EPL>();
      if (K->cl) /* the cluster form */
        return mr_launch_tiny_t<DT, EPL, KIND, false, true, MR_TINY_THREADS, true>(x.g, x.o, K, x.smem, x.topk_ids,
                                                                                 x.topk_weights, x.stream);
      if (K->onepass && K->warm) /* the warm pass */
        return mr_launch_tiny_t<DT, EPL, KIND, false, true, MR_TINY_THREADS, false, true>(
            x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
      if (K->onepass && K->own) /* the blocks by word (1, v17) or entry (2, v48) ownership */
        return K->own == 2 ? own<DT, EPL, KIND, 2>() : own<DT, EPL, KIND, 1>();
    } else if constexpr (KIND != MR_KIND_PACKED && EPL >= 8) {
      if (K->cl && x.wide) /* the cluster form of the wide gate rows */
        return mr_launch_tiny_t<MR_KIND_DT(DT, KIND), EPL, KIND, true, true, MR_TINY_THREADS, true>(
            x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
      if constexpr (KIND == MR_KIND_GROUPED)
        if (K->ru && x.wide) /* the grouped wide rows, their group ranks unrolled */
          return mr_launch_tiny_t<MR_KIND_DT(DT, KIND), EPL, KIND, true, false, MR_TINY_THREADS, false, false, false,
                                  true>(x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights, x.stream);
    }
    return cudaErrorInvalidConfiguration; /* unreachable: mr_cuda_launch_tiny_route */
  }
};

extern "C" cudaError_t mr_cuda_launch_tiny_lab(const mr_config* cfg, const mr_gate_args* a,
                                              const mr_tiny_launch_args* x) {
  return mr_tiny_dispatch(cfg, a, mr_tiny_lab_launch{*x});
}
