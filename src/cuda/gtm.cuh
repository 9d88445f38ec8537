/*
 * gtm.cuh - what the grid token-mask sort's first launch (gtm.cu's K1 from topk_ids, and
 * gtm_gate.cu's K1g, which gates the rows itself) and its host plan share (v16; a lab path,
 * knob gtm; gtm.cu has the design).
 *
 * The masks in the workspace: row r (r = p * E + e: p = 0 the token mask of expert e, 1 .. P
 * bit plane p - 1 of the slot, P + 1 the duplicate mask) is W = ceil(T/32) words, stride Wp (W rounded up to 4): bit t
 * % 32 of word t / 32, i.e. (little-endian) bit t % 8 of byte t / 8. CTA c of the first launch
 * owns NB bytes of every row, the tokens [8 NB c, 8 NB (c + 1)), and writes all of them, zeros
 * included, up to the end of word W - 1 (G1 = ceil(4 W / NB) CTAs), and the last CTA zeroes
 * words [W, Wp): no other CTA writes them, so nothing is zeroed beforehand and no global atomic
 * is needed. NB is 1, 2 or a multiple of
 * 4 (then whole words are stored).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_GTM_CUH
#define MOEROUTE_CUDA_GTM_CUH

#include "cuda/sort.cuh"

#define MR_GTM_K1_THREADS 256
/* status[e] lives at status + e * MR_GTM_SSTRIDE: a 128-byte line each, so that the polling of
 * K2's CTAs spreads over the L2 slices instead of queueing on a few lines (lab call 49: with
 * the words packed, the sort at T = 16 took 8.8 us) */
#define MR_GTM_SSTRIDE 16

typedef struct mr_gtm_k {
  uint32_t T, E, k, U;
  uint32_t W, Wp;       /* mask words per row (ceil(T/32)) and the row stride (W rounded up to 4) */
  uint32_t NB, swr;     /* first launch: bytes per CTA and row; its shared words per row (ceil(NB/4)) */
  uint32_t swr_magic;   /* mr_magic(swr) */
  uint32_t G1;          /* first-launch CTAs */
  uint32_t planes;      /* P = ceil(log2 k) */
  uint32_t rounds;      /* K2: ceil(W / (NT * 4)) */
  uint32_t probe;       /* lab probes: 2 = K2's expert CTAs return after their PDL wait (the launches
                           alone; WRONG outputs), 3 = phase stamps (outputs right) */
  unsigned long long* status; /* [E], stride MR_GTM_SSTRIDE */
  uint32_t* mask;             /* [(2 + P) * E][Wp]: token masks, P slot planes, duplicate masks */
} mr_gtm_k;

/* Mask rows: r = p * E + e, p = 0 the token mask, 1 .. P the slot's bit planes, P + 1 the
 * duplicate mask (bit t: token t named e more than once; only a sort input can). */
__host__ __device__ __forceinline__ uint32_t mr_gtm_rows(const mr_gtm_k& g) { return (2u + g.planes) * g.E; }

/* The first launch's shared memory (words): masks [rows][swr] | enabled [E]. */
__host__ __device__ __forceinline__ uint32_t mr_gtm_k1_words(const mr_gtm_k& g) {
  return mr_gtm_rows(g) * g.swr + g.E;
}

/* Start of a first-launch CTA: zero its masks (shared only, before the PDL wait), wait for
 * the previous work (the top-k's producer, the previous call), let K2 launch; the enabled
 * flags; CTA 0 zeroes K2's status words (K2 reads them after its own wait). */
__device__ __forceinline__ void mr_gtm_k1_begin(const mr_sort_out& o, const mr_gtm_k& g, uint32_t* sm) {
  const uint32_t tid = threadIdx.x, E = g.E;
  const uint32_t masks = mr_gtm_rows(g) * g.swr;
  for (uint32_t q = tid; q < masks; q += blockDim.x) sm[q] = 0u;
  mr_pdl_enter();
  for (uint32_t e = tid; e < E; e += blockDim.x)
    sm[masks + e] = o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0 ? 1u : 0u;
  if (blockIdx.x == 0u)
    for (uint32_t e = tid; e < E; e += blockDim.x) g.status[(size_t)e * MR_GTM_SSTRIDE] = 0ull;
  __syncthreads();
}

/* Entry (t, j) of expert e (valid and enabled), lt = t - t0 < 8 NB: its bits. A bit already
 * set (the atomic's old value) means the token named e twice: its bit in the duplicate mask. */
__device__ __forceinline__ void mr_gtm_k1_mark(const mr_gtm_k& g, uint32_t* sm, uint32_t e, uint32_t lt,
                                               uint32_t j) {
  const uint32_t w = lt >> 5, bit = 1u << (lt & 31u), swr = g.swr;
  if (atomicOr(sm + e * swr + w, bit) & bit) atomicOr(sm + ((1u + g.planes) * g.E + e) * swr + w, bit);
  for (uint32_t p = 0; p < g.planes; ++p)
    if ((j >> p) & 1u) atomicOr(sm + ((1u + p) * g.E + e) * swr + w, bit);
}

/* End of a first-launch CTA: after one barrier, its bytes of every row to the workspace. */
__device__ __forceinline__ void mr_gtm_k1_publish(const mr_gtm_k& g, const uint32_t* sm) {
  __syncthreads();
  const uint32_t tid = threadIdx.x, c = blockIdx.x, rows = mr_gtm_rows(g);
  if ((g.NB & 3u) == 0u) { /* whole words: [c NB/4, c NB/4 + nw) of each row */
    const uint32_t wbase = c * g.swr, nw = min(g.swr, g.W - wbase);
    for (uint32_t q = tid; q < rows * g.swr; q += blockDim.x) {
      const uint32_t r = mr_udiv(q, g.swr, g.swr_magic), w = q - r * g.swr;
      if (w < nw) g.mask[(size_t)r * g.Wp + wbase + w] = sm[q];
    }
  } else { /* NB = 1 or 2 bytes of each row (swr = 1), up to the end of word W - 1 */
    const uint32_t bbase = c * g.NB, nb = min(g.NB, 4u * g.W - bbase);
    for (uint32_t q = tid; q < rows * g.NB; q += blockDim.x) {
      const uint32_t r = g.NB == 1u ? q : q >> 1, b = q - r * g.NB;
      if (b < nb)
        ((unsigned char*)g.mask)[((size_t)r * g.Wp) * 4u + bbase + b] = (unsigned char)(sm[r] >> (8u * b));
    }
  }
  if (c == g.G1 - 1u) /* the last CTA: words [W, Wp) of every row, which K2's 16-byte loads read */
    for (uint32_t q = tid; q < rows * (g.Wp - g.W); q += blockDim.x) {
      const uint32_t r = q / (g.Wp - g.W);
      g.mask[(size_t)r * g.Wp + g.W + (q - r * (g.Wp - g.W))] = 0u;
    }
}

#ifdef __cplusplus
extern "C" {
#endif
/* gtm.cu: the plan (0 where the path does not fit; gate: for K1g, whose CTAs gate their rows,
 * else K1, whose CTAs take whole 32-byte sectors of each row where shared memory allows), its
 * workspace offsets (status, masks) and bytes; K2's launch (after a first launch that built g's
 * masks). */
int mr_gtm_plan(const mr_config* cfg, int gate, mr_gtm_k* g, unsigned* nt, size_t* smem, size_t off[2],
                size_t* bytes);
/* g's workspace pointers (mr_gtm_plan's offsets). */
void mr_gtm_bind(mr_gtm_k* g, const size_t off[2], void* workspace);
cudaError_t mr_gtm_launch_place(const mr_gtm_k* g, unsigned nt, const mr_sort_out* o, const int32_t* topk_ids,
                                const float* topk_weights, cudaStream_t stream);
#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_CUDA_GTM_CUH */
