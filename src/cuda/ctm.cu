/*
 * ctm.cu - the cluster token-mask path (v12, session 13): the sort, and route with
 * the gating fused, in ONE cluster launch for middle T, with the work split by
 * tokens instead of repeated by every CTA. By default only the sort runs (the sort
 * entry point and route's second launch without a moe_buf, mr_ctm_wanted); the
 * fused route measured slower everywhere (lab call 32) and is a lab knob (ctm = 1).
 *
 * tmsort.cu's CTAs each walk all T*k entries (lab call 26: its cost grows with
 * T*k however many CTAs write), and the route above tiny.cu's bounds is two
 * launches (gate kernel, then a sort) with the top-k through global memory. Here
 * a thread-block cluster of R CTAs (R <= 16) splits the tokens: CTA r owns the
 * tokens [r Tc, (r + 1) Tc) and
 *
 *   0. (before the PDL wait: shared memory only) zeroes its token masks;
 *   1. route: its 16 warps gate its rows (a warp per row, mr_gate_row: the gate
 *      kernel's code) and write the top-k outputs; sort: its threads load its
 *      entries. Entry (t, e): bit t - r Tc of tm[.][e] (shared atomicOr, order-free),
 *      id and weight bits into shared memory; a bit already set (only a sort input
 *      can name an expert twice in a token) raises the CTA's flag;
 *   2. counts its entries per expert (popcounts, or shared atomics when flagged),
 *      publishes them in shared memory; ONE cluster barrier;
 *   3. thread e reads expert e's counts of every CTA over DSMEM: the entries in
 *      the CTAs before it and the total (0 for a masked expert); blocks per expert,
 *      one block-wide scan (the same in every CTA): start block and local id;
 *   4. places its own entries: start + entries in earlier CTAs + rank among its
 *      own (a mask popcount, or counting equal ids before when flagged);
 *   5. writes the block ids and padding of the blocks b = r + R j; CTA 0 the totals;
 *      a cluster wait before it exits (its counts may still be read).
 * Further clusters clear moe_buf. Positions are a pure function of the ids (an
 * entry's position is its expert's start plus the entries of that expert in
 * earlier tokens), so the outputs are the same bits as every other path's.
 *
 * Shared memory (words): tm [W E] (the fallback's counts [E] there) | P [W E] |
 * cnt [E] | bef [E] | st [E] | C [E] | ids [nc] | wts [nc] | misc [20] |
 * grouped scratch [16 x sw] (route, grouped rows only). W = ceil(Tc / 32),
 * nc = Tc k <= 2048.
 *
 * A push form of the exchange (each CTA storing its counts into every CTA's shared
 * memory before the barrier) was built, checked and measured 0.15 us slower on average
 * than the pull (lab call 38, perf-log v12); it was removed in session 14 (commit
 * 6b4088f has it).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/gate.cuh"
#include "cuda/sort.cuh"

#define MR_CTM_THREADS 512
#define MR_CTM_WARPS (MR_CTM_THREADS / 32)
#define MR_CTM_MAX_R 16
#define MR_CTM_MAX_NC 2048 /* entries per CTA */
#define MR_CTM_PER (MR_CTM_MAX_NC / MR_CTM_THREADS)
#define MR_CTM_SMEM_WORDS (48 * 1024 / 4) /* no opt-in attribute needed */
#define MR_CTM_MISC 20

typedef struct mr_ctm_k {
  uint32_t T, R, Tc, W, nc; /* nc = Tc * k */
  uint32_t off_p, off_cnt, off_bef, off_st, off_c, off_ids, off_wts, off_misc, off_scr;
  uint32_t scratch_words; /* per gating warp (grouped rows), 0 otherwise */
  uint32_t probe;         /* lab knob ctm_probe (timing only, WRONG outputs): 1 = no cluster barrier and no
                             DSMEM (each CTA's own counts only), 2 = that and no cluster attribute */
} mr_ctm_k;

/* One routing CTA (blockIdx.x < R). GATE: gate the rows (g); else load the top-k. */
template <bool GATE, int DT, int EPL, int KIND>
__device__ __forceinline__ void mr_ctm_body(const mr_gate_p* g, const mr_sort_out& o, const mr_ctm_k& K,
                                            const int32_t* in_ids, const float* in_w, int32_t* out_ids,
                                            float* out_w) {
  extern __shared__ __align__(16) uint32_t mr_ctm_smem[];
  uint32_t* tm = mr_ctm_smem;
  uint32_t* P = mr_ctm_smem + K.off_p;
  uint32_t* cnt = mr_ctm_smem + K.off_cnt;
  uint32_t* bef = mr_ctm_smem + K.off_bef;
  uint32_t* st = mr_ctm_smem + K.off_st;
  uint32_t* C = mr_ctm_smem + K.off_c;
  uint32_t* ids = mr_ctm_smem + K.off_ids;
  uint32_t* wts = mr_ctm_smem + K.off_wts;
  uint32_t* misc = mr_ctm_smem + K.off_misc; /* [0] flag, [1..16] warp sums */
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t E = (uint32_t)o.num_experts, U = (uint32_t)o.unit_size, k = (uint32_t)o.top_k;
  const uint32_t W = K.W, R = K.R, r = blockIdx.x; /* the routing cluster is blocks 0 .. R-1 */
  const uint32_t t0 = r * K.Tc < K.T ? r * K.Tc : K.T;
  const uint32_t t1 = t0 + K.Tc < K.T ? t0 + K.Tc : K.T;
  const uint32_t s0 = t0 * k, nc = (t1 - t0) * k;

  /* 1. entries */
  if constexpr (GATE) {
    constexpr int WB = MR_ESZ(DT);
    float* gbuf = (float*)(mr_ctm_smem + K.off_scr + warp * K.scratch_words);
    unsigned char* gsel = (unsigned char*)(gbuf + E);
    const uint32_t ninf = mr_raw_neg_inf<DT>(g->f16 != 0);
    uint32_t braw[EPL];
    if (KIND != MR_KIND_PACKED)
      mr_load_lane<4, EPL>((const unsigned char*)g->bias, lane, (int)E, 0u, t0 + warp < t1 && g->bias != NULL, braw);
#pragma unroll 1
    for (uint32_t t = t0 + warp; t < t1; t += MR_CTM_WARPS) {
      const unsigned char* row = g->logits + (int64_t)t * g->row_bytes;
      uint32_t raw[EPL];
      mr_load_lane<WB, EPL>(row, lane, (int)E, ninf, true, raw);
      int32_t id;
      float w;
      mr_gate_row<DT, EPL, KIND>(*g, lane, raw, braw, row, true, gbuf, gsel, &id, &w);
      if (lane < k) {
        const uint32_t i = t * k + lane, li = i - s0;
        if (out_ids) out_ids[i] = id;
        if (out_w) out_w[i] = w;
        const uint32_t e = (uint32_t)id < E ? (uint32_t)id : E; /* out of range: dropped */
        ids[li] = e;
        wts[li] = __float_as_uint(w);
        if (e < E) {
          const uint32_t lt = t - t0, bit = 1u << (lt & 31u);
          if (atomicOr(tm + (lt >> 5) * E + e, bit) & bit) atomicOr(misc, 1u);
        }
      }
    }
  } else {
    uint32_t id[MR_CTM_PER], wb[MR_CTM_PER];
#pragma unroll
    for (int m = 0; m < MR_CTM_PER; ++m) { /* loads first */
      const uint32_t li = tid + (uint32_t)m * MR_CTM_THREADS;
      id[m] = E;
      wb[m] = 0u;
      if (li < nc) {
        const int32_t x = __ldg(in_ids + s0 + li);
        id[m] = (uint32_t)x < E ? (uint32_t)x : E;
        if (in_w) wb[m] = __float_as_uint(__ldg(in_w + s0 + li));
      }
    }
#pragma unroll
    for (int m = 0; m < MR_CTM_PER; ++m) {
      const uint32_t li = tid + (uint32_t)m * MR_CTM_THREADS;
      if (li >= nc) break;
      ids[li] = id[m];
      wts[li] = wb[m];
      if (id[m] < E) {
        const uint32_t lt = mr_udiv(s0 + li, k, o.k_magic) - t0, bit = 1u << (lt & 31u);
        if (atomicOr(tm + (lt >> 5) * E + id[m], bit) & bit) atomicOr(misc, 1u);
      }
    }
  }
  __syncthreads();
  MR_STAMP(2);

  /* 2. this CTA's counts (the fallback: shared atomics into tm[0 .. E)) */
  const bool dup = misc[0] != 0u; /* uniform in the CTA */
  if (dup) {
    for (uint32_t e = tid; e < E; e += MR_CTM_THREADS) tm[e] = 0u;
    __syncthreads();
    for (uint32_t li = tid; li < nc; li += MR_CTM_THREADS)
      if (ids[li] < E) atomicAdd(tm + ids[li], 1u);
    __syncthreads();
  }
  const uint32_t ept = (E + MR_CTM_THREADS - 1u) / MR_CTM_THREADS; /* <= 2 */
  const uint32_t e0 = tid * ept;
  for (uint32_t q = 0; q < ept; ++q) {
    const uint32_t e = e0 + q;
    if (e < E) cnt[e] = dup ? tm[e] : mr_tm_count(tm, P, W, E, e);
  }
  MR_STAMP(3);
  if (!K.probe) mr_cluster_arrive(); /* release: cnt is visible to the cluster after the wait */
  /* the mask is an input (design.md 7: non-zero = enabled); loaded under the barrier */
  uint32_t en_bits = 0u;
  for (uint32_t q = 0; q < ept; ++q) {
    const uint32_t e = e0 + q;
    if (e < E && (o.expert_mask == NULL || __ldg(o.expert_mask + e) != 0)) en_bits |= 1u << q;
  }
  if (!K.probe) mr_cluster_wait();
  else __syncthreads();
  MR_STAMP(4);

  /* 3. every CTA's counts over DSMEM; blocks; one scan: start block | local id << 16 */
  uint32_t sum = 0u;
  for (uint32_t q = 0; q < ept; ++q) {
    const uint32_t e = e0 + q;
    if (e >= E) break;
    const uint32_t a = mr_smem_addr(cnt + e);
    uint32_t v[MR_CTM_MAX_R];
#pragma unroll
    for (uint32_t c = 0; c < MR_CTM_MAX_R; ++c)
      v[c] = K.probe ? (c == 0u ? cnt[e] : 0u) : c < R ? mr_dsmem_load_u32(mr_mapa(a, c)) : 0u;
    uint32_t before = 0u, total = 0u;
#pragma unroll
    for (uint32_t c = 0; c < MR_CTM_MAX_R; ++c) {
      before += c < r ? v[c] : 0u;
      total += v[c];
    }
    const bool en = (en_bits >> q) & 1u;
    if (!en) total = 0u; /* a masked expert's entries are dropped */
    C[e] = total;
    bef[e] = before;
    const uint32_t b = mr_udiv(total + U - 1u, U, o.u_magic) | (en ? 1u << 16 : 0u);
    st[e] = b;
    sum += b;
  }
  MR_STAMP(5);
  if (!K.probe) mr_cluster_arrive(); /* this CTA's remote reads are done (waited for before exit) */
  const uint32_t D = mr_tm_starts<MR_CTM_WARPS>(st, e0, ept, E, sum, misc);
  MR_STAMP(6);

  /* 4. this CTA's entries */
  for (uint32_t li = tid; li < nc; li += MR_CTM_THREADS) {
    const uint32_t e = ids[li];
    if (e >= E || C[e] == 0u) continue; /* dropped or masked */
    const uint32_t i = s0 + li, t = mr_udiv(i, k, o.k_magic), lt = t - t0;
    uint32_t rank = bef[e];
    if (dup) {
      for (uint32_t j = 0; j < li; ++j) rank += ids[j] == e ? 1u : 0u;
    } else {
      rank += mr_tm_rank(tm, P, E, lt, e);
    }
    mr_emit_entry_at(&o, (st[e] & 0xffffu) * U + rank, i, t, i - t * k, wts[li]);
  }

  /* 5. blocks b = r + R j; totals */
  MR_STAMP(7);
  mr_tm_write_blocks<MR_CTM_THREADS>(o, st, C, D, r, R);
  if (tid == 0 && r == 0u) mr_emit_totals(&o, D * U);
  MR_STAMP(8);
  if (!K.probe) mr_cluster_wait(); /* no CTA leaves while another may read its counts */
  MR_STAMP(9);
}

/* Clears the token masks and the flag (shared memory only: before the PDL wait),
 * then waits; the CTAs past the routing cluster clear moe_buf. Returns true for
 * the routing CTAs. */
__device__ __forceinline__ bool mr_ctm_enter(const mr_sort_out& o, const mr_ctm_k& K) {
  extern __shared__ __align__(16) uint32_t mr_ctm_smem[];
  const bool routing = blockIdx.x < K.R;
  MR_STAMP(0);
  if (routing) {
    for (uint32_t w = threadIdx.x; w < K.W * (uint32_t)o.num_experts; w += MR_CTM_THREADS) mr_ctm_smem[w] = 0u;
    if (threadIdx.x == 0) mr_ctm_smem[K.off_misc] = 0u;
    __syncthreads();
  }
  mr_pdl_enter();
  MR_STAMP(1);
  return !mr_clear_tail_ctas(o, K.R);
}

template <int DT, int EPL, int KIND>
__global__ void __launch_bounds__(MR_CTM_THREADS, 1)
    mr_ctm_route_kernel(const __grid_constant__ mr_gate_p g, const __grid_constant__ mr_sort_out o,
                        const __grid_constant__ mr_ctm_k K, int32_t* topk_ids, float* topk_weights) {
  if (mr_ctm_enter(o, K)) mr_ctm_body<true, DT, EPL, KIND>(&g, o, K, NULL, NULL, topk_ids, topk_weights);
}

__global__ void __launch_bounds__(MR_CTM_THREADS, 1)
    mr_ctm_sort_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_ctm_k K,
                       const int32_t* topk_ids, const float* topk_weights) {
  if (mr_ctm_enter(o, K))
    mr_ctm_body<false, MOEROUTE_DTYPE_BF16, 4, MR_KIND_PACKED>(NULL, o, K, topk_ids, topk_weights, NULL, NULL);
}

/* ---- host ---- */

/* Cluster size: the knob, else 8 up to T = 128 (a row per warp) and 16 above. */
static uint32_t mr_ctm_auto_r(const mr_config* cfg) {
  if (mr_cuda_tune.ctm_ctas > 0) return (uint32_t)(mr_cuda_tune.ctm_ctas < MR_CTM_MAX_R ? mr_cuda_tune.ctm_ctas
                                                                                      : MR_CTM_MAX_R);
  return cfg->num_tokens <= 128 ? 8u : 16u;
}

/* The layout for R CTAs; 0 when it does not fit (entries per CTA, shared memory,
 * E; route: the gate kinds' specialisations up to EPL 16, i.e. E <= 512). */
static int mr_ctm_plan(const mr_config* cfg, const mr_gate_args* a, uint32_t R, mr_ctm_k* K, size_t* smem) {
  const int64_t T = cfg->num_tokens, E = cfg->num_experts, k = cfg->top_k;
  if (T < 1 || R < 1 || E > (a ? 512 : 1024)) return 0;
  memset(K, 0, sizeof *K);
  K->T = (uint32_t)T;
  K->R = R;
  K->Tc = (uint32_t)((T + R - 1) / R);
  K->W = (K->Tc + 31u) / 32u;
  K->nc = K->Tc * (uint32_t)k;
  if ((int64_t)K->Tc * k > MR_CTM_MAX_NC) return 0;
  const uint32_t tmw = (uint32_t)E * K->W; /* >= E: the fallback's counts */
  K->off_p = tmw;
  K->off_cnt = K->off_p + tmw;
  K->off_bef = K->off_cnt + (uint32_t)E;
  K->off_st = K->off_bef + (uint32_t)E;
  K->off_c = K->off_st + (uint32_t)E;
  K->off_ids = K->off_c + (uint32_t)E;
  K->off_wts = K->off_ids + K->nc;
  K->off_misc = K->off_wts + K->nc;
  K->off_scr = (K->off_misc + MR_CTM_MISC + 3u) & ~3u;
  K->scratch_words = a ? mr_gate_scratch_words(a) : 0u;
  K->probe = mr_cuda_tune.ctm_probe > 0 ? (uint32_t)mr_cuda_tune.ctm_probe : 0u;
  const uint32_t words = K->off_scr + MR_CTM_WARPS * K->scratch_words;
  if (words > MR_CTM_SMEM_WORDS) return 0;
  *smem = (size_t)words * 4u;
  return 1;
}

/* Where ctm's SORT takes the call by default (knob ctm = 0): the sort entry point, and
 * route's second launch after the gate kernel; route's fused form only by the knob (ctm =
 * 1). Lab call 35 (dev/runs/run35/ctm_pair.log, kernel metric, no moe_buf, R = 16 against
 * the mid / general sorts): the sort alone wins from T*k = 4096 to 24576 for E <= 256
 * (DeepSeek-R1 softmax T = 1024 5.67 / 6.11 us, 3072 8.93 / 9.90; OLMoE T = 512 4.44 / 5.05;
 * GPT-OSS-120B T = 1024 4.68 / 5.16), from 8192 for E = 384 (Kimi-K2 T = 512 5.12 / 4.90,
 * T = 1536 6.55 / 6.88) and from 16384 for E = 512 (Qwen3-Next T = 2048 9.16 / 11.36); at
 * T*k = 32768 it is within noise or slower (DeepSeek-R1 softmax T = 4096 10.74 / 10.21), and
 * at T = 256 mixed. Route as the gate kernel + ctm's sort: DeepSeek-R1 softmax T = 1024 8.23 /
 * 9.08, Qwen3-235B 7.63 / 8.66, OLMoE 7.33 / 8.42. With a moe_buf it loses where the mid sort
 * runs (DeepSeek-R1 softmax T = 1024 7.30 / 6.59) and wins at T = 3072 - 4096 against P
 * (16.08 / 18.80), where route does not use it yet: not taken with a moe_buf. */
static int mr_ctm_wanted(const mr_config* cfg) {
  const int64_t n = cfg->num_tokens * cfg->top_k, E = cfg->num_experts;
  if (cfg->moe_buf_bytes != 0) return 0;
  if (E <= 256) return n >= 4096 && n <= 24576;
  if (E <= 384) return n >= 8192 && n <= 24576;
  return E <= 512 && n >= 16384 && n <= 32768;
}

/* Devices that refused a ctm launch (a cluster of its size, or the non-portable size's
 * attribute: MPS, green contexts, a partitioned device): 1, and ctm takes no more calls
 * there; the call that saw the refusal runs the path ctm replaced (entry.cu). */
static int mr_ctm_refused_dev[MR_MAX_DEVICES];
extern "C" int mr_cuda_ctm_refused(void) {
  const int d = mr_cuda_device_slot();
  return d >= 0 && mr_ctm_refused_dev[d] != 0;
}

static int mr_ctm_takes(const mr_config* cfg, const mr_gate_args* a) {
  if (mr_cuda_tune.ctm < 0 || mr_cuda_no_cluster() || cfg->num_tokens < 1 || mr_cuda_ctm_refused()) return 0;
  if (mr_cuda_tune.ctm == 0 && !mr_ctm_wanted(cfg)) return 0;
  mr_ctm_k K;
  size_t smem;
  return mr_ctm_plan(cfg, a, mr_ctm_auto_r(cfg), &K, &smem) || mr_ctm_plan(cfg, a, 8u, &K, &smem);
}
/* route's fused form: only by the knob (lab call 32: slower than the other paths nearly
 * everywhere, perf-log v12) */
extern "C" int mr_cuda_ctm_route_takes(const mr_config* cfg, const mr_gate_args* a) {
  return mr_cuda_tune.ctm == 1 && mr_cuda_epl_bucket(cfg->num_experts) <= 16 && mr_ctm_takes(cfg, a);
}
extern "C" int mr_cuda_ctm_sort_takes(const mr_config* cfg) { return mr_ctm_takes(cfg, NULL); }
/* Route's gate kernel + ctm's sort (entry.cu): where ctm's sort takes, except the rows the gate kernel segments with
 * E >= 128 above T*k = 16384 (past gx's T = 4096 for k <= 5), which take large.cu's L1 by segments instead (v30,
 * session 29; lab call 84, H100, `dev/runs/run84/bounds.log`, kernel metric: GPT-OSS-120B T = 4097 / 5120 / 6144
 * 13.43 / 14.11 / 15.42 us by the gate kernel + ctm's sort, 8.87 / 10.21 / 10.52 by the L1, 12.12 / 12.19 / 12.30 by
 * the gate kernel + gxs). */
extern "C" int mr_cuda_ctm_route_sort_takes(const mr_config* cfg, const mr_gate_args* a) {
  if (cfg->num_experts >= 128 && cfg->num_tokens * (int64_t)cfg->top_k > 16384 && mr_cuda_gate_segmented(cfg, a))
    return 0;
  return mr_cuda_ctm_sort_takes(cfg);
}

/* Per kernel and device: the non-portable size's attribute set, and the largest dynamic shared memory for which
 * cudaOccupancyMaxActiveClusters said a cluster of 16 fits (0: not asked yet). */
typedef struct {
  int attr_set;
  size_t fit_smem;
} mr_ctm_dev;

/* One cluster launch: the routing cluster (R CTAs) first, then whole clusters that
 * clear moe_buf. Clusters above 8 CTAs need the non-portable attribute, and before the
 * first launch of a shape with more shared memory than any that fitted, the device is
 * asked whether one such cluster fits (cudaOccupancyMaxActiveClusters). Neither is a
 * stream operation, so inside a graph capture a device that says no (MPS, green
 * contexts, a partitioned device) gets cudaErrorNotSupported here, with nothing
 * launched, instead of a captured launch that fails only when the graph runs (as
 * tiny.cuh's C = 16; session 36's review). The caller retries with 8. */
template <typename KF, typename... Args>
static cudaError_t mr_ctm_launch(KF kernel, mr_ctm_dev* devs, const mr_sort_out* o, const mr_ctm_k* K, size_t smem,
                                 cudaStream_t stream, Args... args) {
  const int dev = mr_cuda_device_slot();
  if (K->R > 8u && (dev < 0 || !devs[dev].attr_set)) { /* once per kernel and device (benign race) */
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return e;
    if (dev >= 0) devs[dev].attr_set = 1;
  }
  int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, MR_CTM_THREADS);
  clear = (clear + (int)K->R - 1) / (int)K->R * (int)K->R;
  const int cluster = K->probe != 2u;
  cudaLaunchConfig_t lc = mr_launch_config(K->R + (unsigned)clear, MR_CTM_THREADS, smem, stream);
  cudaLaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = K->R;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  lc.attrs = cluster ? attr : NULL;
  lc.numAttrs = cluster ? 1 : 0;
  if (cluster && K->R > 8u && (dev < 0 || smem + 1u > devs[dev].fit_smem)) {
    if (!mr_cluster_fits((const void*)kernel, &lc)) return cudaErrorNotSupported;
    if (dev >= 0) devs[dev].fit_smem = smem + 1u;
  }
  unsigned na = cluster ? 1 : 0;
  mr_decode_pdl(&lc, attr, &na);
  return cudaLaunchKernelEx(&lc, kernel, args...);
}

/* R from the rule (8 where R's plan does not fit); a cluster above 8 CTAs that the
 * device refuses (the attribute or the launch: MPS, green contexts, a partitioned
 * device) retries with 8 where that plan fits, else the call fails. */
template <typename Launch>
static cudaError_t mr_ctm_run(const mr_config* cfg, const mr_gate_args* a, Launch launch) {
  mr_ctm_k K;
  size_t smem;
  uint32_t R = mr_ctm_auto_r(cfg);
  if (!mr_ctm_plan(cfg, a, R, &K, &smem)) {
    R = 8u;
    if (!mr_ctm_plan(cfg, a, R, &K, &smem)) return cudaErrorInvalidConfiguration;
  }
  cudaError_t err = launch(&K, smem);
  if (err != cudaSuccess && R > 8u && mr_ctm_plan(cfg, a, 8u, &K, &smem)) {
    (void)cudaGetLastError();
    err = launch(&K, smem);
  }
  if (err != cudaSuccess) {
    const int d = mr_cuda_device_slot();
    if (d >= 0) mr_ctm_refused_dev[d] = 1;
  }
  return err;
}

extern "C" cudaError_t mr_cuda_launch_ctm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                               const float* topk_weights, cudaStream_t stream) {
  static mr_ctm_dev devs[MR_MAX_DEVICES];
  return mr_ctm_run(cfg, NULL, [&](const mr_ctm_k* K, size_t smem) {
    return mr_ctm_launch(mr_ctm_sort_kernel, devs, o, K, smem, stream, *o, *K, topk_ids, topk_weights);
  });
}

template <int DT, int EPL, int KIND>
static cudaError_t mr_ctm_route_t(const mr_config* cfg, const mr_gate_args* a, const mr_gate_p* g,
                                  const mr_sort_out* o, int32_t* topk_ids, float* topk_weights,
                                  cudaStream_t stream) {
  static mr_ctm_dev devs[MR_MAX_DEVICES];
  return mr_ctm_run(cfg, a, [&](const mr_ctm_k* K, size_t smem) {
    return mr_ctm_launch(mr_ctm_route_kernel<DT, EPL, KIND>, devs, o, K, smem, stream, *g, *o, *K, topk_ids,
                         topk_weights);
  });
}

extern "C" cudaError_t mr_cuda_launch_ctm_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  mr_gate_p g;
  mr_gate_p_init(a, cfg->dtype, &g);
  const int epl = mr_cuda_epl_bucket(cfg->num_experts);
  const int kind = mr_gate_kind(a, cfg->dtype);
  /* the specialisation list of common.cuh up to EPL 16 (E <= 512: mr_ctm_plan), times
   * the kinds (gate.cuh) */
#define MR_CTM_LAUNCH(DT, EPL, KIND)                                                                        \
  return mr_ctm_route_t<MR_KIND_DT(DT, MR_KIND_FIX(DT, KIND)), EPL, MR_KIND_FIX(DT, KIND)>(cfg, a, &g, o,   \
                                                                                           topk_ids,       \
                                                                                           topk_weights, stream)
#define MR_CTM_CASE(DT, EPL)                                    \
  if (cfg->dtype == DT && epl == EPL) {                         \
    if (kind == MR_KIND_PACKED) MR_CTM_LAUNCH(DT, EPL, MR_KIND_PACKED);   \
    if (kind == MR_KIND_GROUPED) MR_CTM_LAUNCH(DT, EPL, MR_KIND_GROUPED); \
    MR_CTM_LAUNCH(DT, EPL, MR_KIND_FULL);                                 \
  }
  MR_CTM_CASE(MOEROUTE_DTYPE_FP32, 4) MR_CTM_CASE(MOEROUTE_DTYPE_FP32, 8) MR_CTM_CASE(MOEROUTE_DTYPE_FP32, 16)
  MR_CTM_CASE(MOEROUTE_DTYPE_BF16, 4) MR_CTM_CASE(MOEROUTE_DTYPE_BF16, 8) MR_CTM_CASE(MOEROUTE_DTYPE_BF16, 16)
  MR_CTM_CASE(MOEROUTE_DTYPE_FP16, 4) MR_CTM_CASE(MOEROUTE_DTYPE_FP16, 8) MR_CTM_CASE(MOEROUTE_DTYPE_FP16, 16)
#undef MR_CTM_CASE
#undef MR_CTM_LAUNCH
  return cudaErrorInvalidConfiguration;
}
