/*
 * lab_util.h - what the dev/ lab programs share (lab code only, never the library):
 * the CUDA error check that stops a lab, a splitmix64 generator (and a bf16 draw from it), a
 * device allocation, and the kernel
 * metric of bench/README (a graph of `calls` captured calls, replayed; median over
 * `reps` replays of replay time / calls).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_DEV_LAB_UTIL_H
#define MOEROUTE_DEV_LAB_UTIL_H
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

/* splitmix64 over *state */
static inline uint64_t lab_splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A device allocation of at least 16 bytes (a zero-length array still gets a valid pointer). */
static inline void* lab_dalloc(size_t n) {
  void* d = NULL;
  CK(cudaMalloc(&d, n < 16 ? 16 : n));
  return d;
}

/* A bf16 value (its bits) uniform in [lo, hi) from *state: 24 random bits, truncated to bf16. */
static inline uint16_t lab_bf16_uniform(uint64_t* state, double lo, double hi) {
  const float f = (float)((lab_splitmix(state) >> 40) * ((hi - lo) / 16777216.0) + lo);
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* The median of v[0 .. n) (sorted in place; insertion order is fine for the few dozen values of a timing). */
static inline double lab_median(double* v, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (v[j] < v[i]) {
        const double x = v[i];
        v[i] = v[j];
        v[j] = x;
      }
  return v[n / 2];
}

/* A captured graph g instantiated and replayed on stream s: `warm` replays first, then `reps` (<= 32) times
 * `launches` replays back to back between two events; the median of the reps, us per replay divided by `per`.
 * Destroys g. */
static inline double lab_graph_replay_us(cudaGraph_t g, int launches, double per, int reps, int warm, cudaStream_t s) {
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < warm; ++i) CK(cudaGraphLaunch(ge, s));
  double ts[32];
  if (reps > 32) reps = 32;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < launches; ++i) CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts[r] = ms * 1000.0 / launches / per;
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return lab_median(ts, reps);
}

/* Kernel metric of a captured graph g of `calls` calls on stream s: `warm`
 * replays first, then the median of `reps` (<= 32) replays, us per call.
 * Destroys g. */
static inline double lab_graph_us(cudaGraph_t g, int calls, int reps, int warm, cudaStream_t s) {
  return lab_graph_replay_us(g, 1, (double)calls, reps, warm, s);
}

#endif /* MOEROUTE_DEV_LAB_UTIL_H */
