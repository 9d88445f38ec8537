/*
 * large.cuh - the host interface of the large path (large.cu): route and sort
 * for T*k above the one-launch bound, in three launches chained by
 * programmatic dependent launch, with the moe_buf clear spread so that the
 * routing runs underneath it. dev/large-notes.md has the design, the
 * thresholds and the predictions.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_LARGE_CUH
#define MOEROUTE_CUDA_LARGE_CUH

#include "cuda/common.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* Workspace of the large sort (a pure function of T, k, E: device-independent). */
size_t mr_cuda_large_sort_workspace(const mr_config* cfg);

/* Sort through the large path (sort.cu's mr_cuda_launch_general_sort calls it
 * unless mr_cuda_large_v1). workspace: mr_cuda_large_sort_workspace bytes. */
cudaError_t mr_cuda_launch_large_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                      const float* topk_weights, void* workspace, cudaStream_t stream);

/* 1 when the persistent launch P (large.cu, perf-log v11) takes the sort / route
 * calls that reach the large path (the knob, cooperative launch support). */
int mr_cuda_persist_wanted(const mr_config* cfg);
/* Sort through P (sort.cu's mr_cuda_launch_general_sort calls it when
 * mr_cuda_persist_wanted): a zeroing launch, then P. Same workspace as the large sort. */
cudaError_t mr_cuda_launch_persist_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                        const float* topk_weights, void* workspace, cudaStream_t stream);

/* Route for T*k above the one-launch bound (entry.cu). Takes the large path when
 * it fits (!mr_cuda_large_v1 and the first launch's shared memory
 * fits 48 KB: every configuration except grouped selection with E > 768, or
 * E = 768 with more than 32 groups),
 * otherwise the run-1 chain: gate kernel, then mr_cuda_launch_general_sort.
 * topk_ids / topk_weights: the caller's (NULL when not asked for). workspace:
 * mr_cuda_general_sort_workspace + 2 * align256(T*k*4) bytes (entry.cu). */
cudaError_t mr_cuda_launch_large_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                       int32_t* topk_ids, float* topk_weights, void* workspace, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_CUDA_LARGE_CUH */
