/*
 * tiny.cu - route in ONE launch for small decode calls (mr_cuda_tiny_takes):
 *   - 16-bit softmax rows at T = 1 (any E; T*k <= 32), or 2 <= T <= 8 within the
 *     T*k bound of the E bucket (mr_tiny_packed_max_n: 48 for E <= 64, 32 for
 *     E <= 128, 24 for E <= 256, none for E <= 512, 32 above), or T <= 8 with
 *     the one-pass finish (mr_tiny_onepass_wanted: U >= T, E >= 16, T*k <= 40, or
 *     64 for E <= 256), or 9 <= T <= 16 with the one-pass finish in a 512-thread CTA
 *     (mr_tiny_cta16: 16 <= E <= 256, T*k <= 96, v14): a warp per row;
 *   - sigmoid / sqrt_softplus rows that take the wide gate rows (gate.cuh,
 *     mr_gate_wide_row) when T <= MR_TINY_WIDE_T (1) and T*k <= 32: one group of
 *     four warps gates the row (Kimi-K2, grouped DeepSeek-R1 at T = 1; two groups,
 *     a row each, only under the lab knob tiny_wide).
 * One routing CTA gates every row itself and sorts the at most 32 entries
 * inside ONE warp, with no expert-sized table, no block-wide scan and no
 * cross-CTA exchange; the other CTAs of the launch clear moe_buf. With the
 * one-pass finish, 4 - 8 routing CTAs gate every row alike and each writes its
 * share of the blocks (mr_tiny_ctas_log2, v10). The same one-pass scheme serves
 * the sort entry point at decode from a caller's top-k (mr_tiny_sort_kernel).
 *
 * Why (perf-log v4, stamp_lab run 4): the cluster kernel of fused.cu spent
 * ~3100 cycles after gating at T = 1 (exchange ~900, mask table ~290, the
 * block scan over E ~880, emission ~1050), all of it dependent latency, not
 * cold caches (the same code run twice in a row costs the same). Here:
 *
 *   1. the gating warps put entry i = t*k + j (expert, weight bits) into shared
 *      memory. Meanwhile an idle warp (or warp 0 after its rows) turns
 *      expert_mask into a bitmap of E bits and the prefix counts of its words
 *      (local ids, design.md 7).
 *   (T = 1 without a mask: mr_tiny_head_pad / mr_tiny_solo_sort instead of 2-3.)
 *   2. one CTA barrier; warp 0, lane i = entry i (at T = 1 from its registers):
 *        peers = the lanes with the same expert (mr_warp_peers): cnt = popc, rank = popc of
 *        the lanes below (ascending i = ascending token, then slot); at T = 1
 *        the k experts are distinct: cnt = 1, rank = 0;
 *        leader (rank 0, expert enabled): blocks = ceil(cnt / U);
 *        start block = sum of blocks of the leaders with a smaller expert
 *        (n independent shuffles, in eights), total = sum of all;
 *      entry i goes to start * U + rank; each leader fills its blocks' rows of
 *      the block table (local id, real entries in the block).
 *   3. one CTA barrier; every thread writes padding slots j, j + 256, ... of
 *      [0, total * U) (a slot is padding when its offset in its block is at
 *      least the block's real entries) and thread b the id of block b: one
 *      coalesced pass (v8; it was a warp per expert's record, ~900 cycles).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/tiny.cuh"

/* ---- the sort entry point at decode: one pass (v9, v10) -------------------------
 *
 * topk_ids [T, k] in (T <= 32, T*k <= MR_TINY_SORT_MAX_N, U >= T; mr_cuda_tiny_sort_fits):
 * thread i loads entry i into the entry table and, for an id in [0, E), sets the
 * expert's presence bit and the token's bit in tm[e] (shared atomics); one barrier;
 * then mr_tiny_onepass places everything, each of the 2^ctas_log2 routing CTAs its
 * share of the blocks. Its premise, at most one entry per (token, expert), holds for
 * any gating but not for any input: a token naming one expert twice finds its bit
 * already set (the atomic's old value) and raises a flag, and CTA 0 then takes
 * mr_tiny_sort_generic, slower but exact for any ids. The other CTAs of the launch
 * clear moe_buf. The default decode sort where it fits (lab calls 22 and 23: 1.6 -
 * 1.9 us at T = 1 - 16 with 8 CTAs, against 1.8 - 4.5 for the 8-CTA mask-table sort
 * of sort.cuh, whose table build, scan and exchange it skips).
 */
/* Any ids, any U (the fallback): thread e counts expert e's entries, warp 0 scans the
 * blocks, thread i ranks entry i among the earlier entries of its expert. Shared
 * words at off: start block [E] | count [E]. Dropped: ids outside [0, E), masked. */
__device__ __forceinline__ void mr_tiny_sort_generic(const mr_sort_out& o, const mr_tiny_k& tk, uint32_t* sm,
                                                     uint32_t off, bool has_mask) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t E = tk.E, n = tk.n, U = tk.U;
  uint32_t* st = sm + off;
  uint32_t* ct = st + E;
#pragma unroll 1
  for (uint32_t e = tid; e < E; e += MR_TINY_THREADS) {
    const bool en = !has_mask || ((sm[MR_TINY_BM + (e >> 5)] >> (e & 31u)) & 1u);
    uint32_t c = 0u;
    if (en)
      for (uint32_t i = 0; i < n; ++i) c += sm[tk.ent_off + 2u * i] == e ? 1u : 0u;
    ct[e] = c;
    st[e] = mr_udiv(c + U - 1u, U, tk.umagic);
  }
  __syncthreads();
  if (warp == 0) { /* exclusive scan of the blocks: lane l owns a contiguous run of experts */
    const uint32_t per = (E + 31u) / 32u, a = lane * per, b = min(E, a + per);
    uint32_t sum = 0u;
    for (uint32_t e = a; e < b; ++e) sum += st[e];
    const uint32_t incl = mr_warp_incl_scan(sum, lane);
    uint32_t run = incl - sum;
    for (uint32_t e = a; e < b; ++e) {
      const uint32_t x = st[e];
      st[e] = run;
      run += x;
    }
    if (lane == 31u) mr_emit_totals(&o, incl * U);
  }
  __syncthreads();
  if (tid < n) {
    const uint32_t e = sm[tk.ent_off + 2u * tid];
    if (e < E && ct[e] != 0u) { /* in range and enabled (a masked expert counts 0) */
      uint32_t rank = 0u;
      for (uint32_t i = 0; i < tid; ++i) rank += sm[tk.ent_off + 2u * i] == e ? 1u : 0u;
      mr_tiny_put_entry(o, tk, st[e] * U + rank, tid, sm[tk.ent_off + 2u * tid + 1u]);
    }
  }
#pragma unroll 1
  for (uint32_t e = tid; e < E; e += MR_TINY_THREADS) {
    const uint32_t c = ct[e];
    if (c == 0u) continue;
    const uint32_t b0 = st[e], nb = mr_udiv(c + U - 1u, U, tk.umagic);
    const int32_t local = has_mask ? (int32_t)(sm[MR_TINY_PRE + (e >> 5)] +
                                              __popc(sm[MR_TINY_BM + (e >> 5)] & ((1u << (e & 31u)) - 1u)))
                                   : (int32_t)e;
    for (uint32_t q = c; q < nb * U; ++q) mr_emit_pad_slot(&o, b0 * U + q);
    for (uint32_t q = 0; q < nb; ++q) mr_emit_block_id(&o, b0 + q, local);
  }
}

__global__ void __launch_bounds__(MR_TINY_THREADS, 1)
    mr_tiny_sort_kernel(const __grid_constant__ mr_sort_out o, const __grid_constant__ mr_tiny_k tk,
                        const int32_t* topk_ids, const float* topk_weights) {
  extern __shared__ __align__(16) uint32_t mr_tiny_smem[];
  uint32_t* sm = mr_tiny_smem;
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const uint32_t flag = tk.op_off + 32u + tk.E; /* the duplicate flag, then the fallback's tables */
  const uint32_t ctas = 1u << tk.ctas_log2;
  if (blockIdx.x < ctas) /* shared memory only: before the wait, under the previous kernel's tail */
    for (uint32_t w = tid; w <= 32u + tk.E; w += MR_TINY_THREADS) sm[tk.op_off + w] = 0u;
  mr_pdl_enter();
  if (mr_clear_tail_ctas(o, ctas)) return; /* clear-only CTAs */
  const bool has_mask = o.expert_mask != NULL;
  uint32_t id = tk.E, wb = 0u;
  if (tid < tk.n) { /* loads first, then the zeroing's barrier */
    const int32_t x = __ldg(topk_ids + tid);
    id = (uint32_t)x < tk.E ? (uint32_t)x : tk.E; /* out of range: dropped */
    if (topk_weights) wb = __float_as_uint(__ldg(topk_weights + tid));
  }
  __syncthreads();
  if (tid < tk.n) {
    sm[tk.ent_off + 2u * tid] = id;
    sm[tk.ent_off + 2u * tid + 1u] = wb;
    if (id < tk.E) {
      const uint32_t t = (tid * tk.kmagic) >> 20;
      atomicOr(sm + tk.op_off + id / 32u, 1u << (id & 31u));
      const uint32_t old = atomicOr(sm + tk.op_off + 32u + id, 1u << t);
      if ((old >> t) & 1u) atomicOr(sm + flag, 1u); /* this token named id twice */
    }
  }
  if (warp == MR_TINY_WARPS - 1u && has_mask) mr_tiny_mask_bitmap(o.expert_mask, tk.E, sm, lane); /* no entries */
  __syncthreads();
  if (sm[flag] == 0u)
    mr_tiny_onepass<true>(o, tk, sm, has_mask);
  else if (blockIdx.x == 0) /* the fallback by CTA 0 alone */
    mr_tiny_sort_generic(o, tk, sm, flag + 1u, has_mask);
}

/* The cluster form's C for cfg, 0 where it does not run (the lab asserts its cases run the form). */
extern "C" int mr_cuda_tiny_cluster_c(const mr_config* cfg, const mr_gate_args* a) { return mr_tiny_cluster_size(cfg, a); }

/* Route's tiny.cu plan for cfg with the knobs as set, 0 where route does not take tiny.cu (the
 * lab's questions below: which lab form a call runs). */
static int mr_tiny_route_plan(const mr_config* cfg, const mr_gate_args* a, mr_tiny_k* K) {
  size_t smem;
  return mr_cuda_tiny_takes(cfg, a) && mr_tiny_plan(cfg, a, K, &smem);
}

/* 1 when route runs the warm pass for cfg with the knobs as set: tiny.cu takes the call, its plan
 * has the pass (the one-pass route with 256 threads), and warp 6 gates no row (the lab asserts its
 * cases run the pass). */
extern "C" int mr_cuda_tiny_warm_c(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  if (!mr_tiny_route_plan(cfg, a, &K)) return 0;
  return K.warm && !K.cl && K.threads == MR_TINY_THREADS && K.gate_warps <= (int32_t)MR_TINY_WARPS - 2 ? 1 : 0;
}

/* 1 when route runs v40's filter rows (lab knob tiny_filt) for cfg: tiny.cu takes the call and its plan sets filt
 * (the solo form at T = 1, the cluster form at 2 <= T <= 16). */
extern "C" int mr_cuda_tiny_filt_c(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  return mr_tiny_route_plan(cfg, a, &K) && K.filt ? 1 : 0;
}

/* 1 when route runs the blocks by word ownership for cfg with the knobs as set: tiny.cu takes the
 * call and its plan sets own (only for the one-pass route, not the cluster form or the warm pass). */
extern "C" int mr_cuda_tiny_own_c(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  return mr_tiny_route_plan(cfg, a, &K) && K.own ? 1 : 0;
}

/* 1 when route runs the grouped wide rows with unrolled group ranks: tiny.cu takes the call and its
 * plan sets ru (only for grouped rows of the wide form, not the cluster form). */
extern "C" int mr_cuda_tiny_ru_c(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  return mr_tiny_route_plan(cfg, a, &K) && K.ru ? 1 : 0;
}

/* 1 when route runs the rows form (lab knob tiny_rows, v49) for cfg without an expert mask: tiny.cu takes the call and
 * its plan sets rows (with a mask the launch keeps the one-pass route). */
extern "C" int mr_cuda_tiny_rows_c(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  return mr_tiny_route_plan(cfg, a, &K) && K.rows ? 1 : 0;
}

/* Route takes tiny.cu: it fits, and the row kind is PACKED (16-bit softmax, no
 * bias, no grouping) within the bounds below, or the rows take the wide gate
 * rows and T <= MR_TINY_WIDE_T, T*k <= 32. Run 5: for the fp32-key kinds the
 * one-SM kernel with a warp per row was slower than the cluster kernel already
 * at T = 1 (grouped DeepSeek-R1 7.0 us against 6.4 in v3); a row over four
 * warps shortens their gating ~2x (perf-log v7). */
extern "C" int mr_cuda_tiny_takes(const mr_config* cfg, const mr_gate_args* a) {
  mr_tiny_k K;
  size_t smem;
  const int64_t n = cfg->num_tokens * cfg->top_k;
  if (mr_tiny_cluster_size(cfg, a)) return mr_tiny_plan(cfg, a, &K, &smem); /* lab knob tiny_cluster */
  if (mr_tiny_filt_kind(cfg, a)) /* v40 (lab knob tiny_filt): T = 1 by the solo form; above, the cluster form only */
    return cfg->num_tokens == 1 && n <= 32 && mr_tiny_plan(cfg, a, &K, &smem);
  if (mr_gate_kind(a, cfg->dtype) != MR_KIND_PACKED) {
    if (!mr_tiny_wide_kind(cfg, a)) return 0;
    const int knob = mr_cuda_tune.tiny_wide;
    if (cfg->num_tokens > (knob > 0 ? knob : MR_TINY_WIDE_T) || n > (knob > 0 ? (int64_t)MR_TINY_MAX_N : 32)) return 0;
    return mr_tiny_plan(cfg, a, &K, &smem);
  }
  /* Run 6 (bench/results/run6, kernel metric, tiny.cu against the pair of
   * gate kernel + one-launch sort): tiny.cu wins by 1.01 - 1.26x while every
   * warp gates at most one row (T <= 8) and the warps emit at most two records
   * each (min(T*k, E) <= 16 distinct experts); beyond, it lost: Mixtral T = 12,
   * 16 (two rows per warp) 0.86 - 0.89x, Qwen3-235B and OLMoE at T = 4 (32
   * entries, up to 32 records, ~900 cycles each) 0.94 - 0.95x. */
  /* Run 8 (bench/results/run8) adds: with E = 512 (Qwen3-Next, T = 1) tiny.cu
   * lost to the pair in runs 6, 7 and 8 (4.14 / 4.14 / 4.37 us against 4.05 /
   * 4.11 / 4.02): rows of E > 256 take the pair. */
  /* Results runs 9 and 11 add: DeepSeek-R1 softmax (E = 256) at T = 2 lost to the
   * chain (3.71 / 3.65 us against 3.64 / 3.50; run 6 3.51 / 3.54), while E <= 128
   * at T = 2 still wins (Qwen3-235B 3.52 / 3.47 against 3.74 / 3.54): rows of
   * E > 128 take tiny.cu at T = 1 only. */
  /* Lab call 16 (v8, dev/runs/run16): T = 1 without peers, barriers or block table
   * (mr_tiny_solo_*) took DeepSeek-R1 softmax from 3.27 to 2.16 us and GPT-OSS-120B
   * from 2.91 to 1.91, 1.6x the chain: every E takes tiny.cu at T = 1. */
  /* Lab call 20 replaces these rules by E (mr_tiny_packed_max_n, mr_tiny_onepass_wanted):
   * T <= 8 (a warp per row, one row each) and T*k within the bound of the E bucket,
   * or the one-pass finish where it wins. At T = 1, T*k <= 32 (k <= 32). */
  if (mr_cuda_tune.tiny_max_n > 0) return mr_tiny_plan(cfg, a, &K, &smem);
  if (cfg->num_tokens == 1) return n <= 32 && mr_tiny_plan(cfg, a, &K, &smem);
  if (cfg->num_tokens > MR_TINY_WARPS && !(mr_tiny_onepass_wanted(cfg) && mr_tiny_cta16(cfg))) return 0;
  if (!mr_tiny_onepass_wanted(cfg) && n > mr_tiny_packed_max_n(cfg->num_experts)) return 0;
  return mr_tiny_plan(cfg, a, &K, &smem);
}

/* The default instantiations: a warp per row for PACKED rows (16-bit softmax), the wide form for
 * the rows mr_tiny_wide_kind admits: EPL >= 8 (mr_cuda_gate_wide_shape) and 32-bit or 16-bit
 * logits (fp16 folds into bf16's instantiation, as in gate.cu). The lab knobs' instantiations
 * (tiny_cluster, tiny_warm, tiny_op_own, wide_rank_unroll) live in tiny_lab.cu and tiny_lab_rows.cu,
 * tiny_filt's in tiny_lab_filt.cu. */
struct mr_tiny_default_launch {
  mr_tiny_launch_args x;
  template <int DT, int EPL, int KIND>
  cudaError_t run() const {
    const mr_tiny_k* K = x.K;
    if constexpr (KIND == MR_KIND_PACKED && DT != MOEROUTE_DTYPE_FP32) {
      if constexpr (EPL <= 16) /* E <= 512 (mr_tiny_cta16); mr_tiny_plan gives 512 threads with the one-pass finish only */
        if (K->threads == MR_TINY_THREADS16)
          return mr_launch_tiny_t<DT, EPL, KIND, false, true, MR_TINY_THREADS16>(x.g, x.o, K, x.smem, x.topk_ids,
                                                                                x.topk_weights, x.stream);
      return K->onepass ? mr_launch_tiny_t<DT, EPL, KIND, false, true>(x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights,
                                                                       x.stream)
                        : mr_launch_tiny_t<DT, EPL, KIND, false, false>(x.g, x.o, K, x.smem, x.topk_ids, x.topk_weights,
                                                                        x.stream);
    } else if constexpr (KIND != MR_KIND_PACKED && EPL >= 8) {
      if (!x.wide) return cudaErrorInvalidConfiguration; /* unreachable: mr_cuda_tiny_takes */
      return mr_launch_tiny_t<MR_KIND_DT(DT, KIND), EPL, KIND, true, false>(x.g, x.o, K, x.smem, x.topk_ids,
                                                                            x.topk_weights, x.stream);
    } else {
      return cudaErrorInvalidConfiguration; /* unreachable: mr_cuda_tiny_takes */
    }
  }
};

/* Devices that refused the cluster form's C = 16 (mr_launch_tiny_t sets the non-portable size's attribute): 1 */
static int mr_tiny16_refused_dev[MR_MAX_DEVICES];
extern "C" int mr_cuda_tiny16_refused(void) {
  const int d = mr_cuda_device_slot();
  return d >= 0 && mr_tiny16_refused_dev[d] != 0;
}
extern "C" void mr_cuda_tiny16_refuse(void) {
  const int d = mr_cuda_device_slot();
  if (d >= 0) mr_tiny16_refused_dev[d] = 1;
}

static cudaError_t mr_tiny_route_plan_launch(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                             int32_t* topk_ids, float* topk_weights, cudaStream_t stream,
                                             uint32_t* ctas_log2) {
  mr_tiny_k K;
  size_t smem;
  if (!mr_tiny_plan(cfg, a, &K, &smem)) return cudaErrorInvalidConfiguration;
  *ctas_log2 = K.cl ? K.ctas_log2 : 0u;
  mr_gate_p g;
  mr_gate_p_init(a, cfg->dtype, &g);
  if (o->expert_mask) K.rows = 0; /* the rows form (lab knob tiny_rows, v49): no expert mask */
  const mr_tiny_launch_args x = {&g, o, &K, smem, mr_tiny_wide_kind(cfg, a), topk_ids, topk_weights, stream};
  if (K.filt) /* lab knob tiny_filt (v40): the sigmoid rows a warp per row by the filter */
    return mr_cuda_launch_tiny_lab_filt(cfg, a, &x);
  if (K.cl && !x.wide && mr_gate_kind(a, cfg->dtype) != MR_KIND_PACKED) /* lab knob tiny_cluster, fp32-key rows */
    return mr_cuda_launch_tiny_lab_rows(cfg, a, &x);
  if (K.cl || K.warm || K.own || K.ru || K.rows) /* lab knobs tiny_cluster, tiny_warm, tiny_op_own, wide_rank_unroll,
                                                    tiny_rows */
    return mr_cuda_launch_tiny_lab(cfg, a, &x);
  return mr_tiny_dispatch(cfg, a, mr_tiny_default_launch{x});
}

extern "C" cudaError_t mr_cuda_launch_tiny_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                                 int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  uint32_t cl_log2 = 0u;
  cudaError_t err = mr_tiny_route_plan_launch(cfg, a, o, topk_ids, topk_weights, stream, &cl_log2);
  /* C = 16 refused (v37): mr_launch_tiny_t's check before any launch (cudaErrorNotSupported, nothing launched), or
   * the launch itself (cudaErrorInvalidClusterSize, or out of resources for a cluster of 16: not sticky); any other
   * error is the caller's to see, untouched. The device takes no more C = 16; the plan again (C <= 8). */
  if (cl_log2 == 4u && (err == cudaErrorNotSupported || err == cudaErrorInvalidClusterSize ||
                        err == cudaErrorLaunchOutOfResources)) {
    if (err != cudaErrorNotSupported) (void)cudaGetLastError();
    mr_cuda_tiny16_refuse();
    err = mr_tiny_route_plan_launch(cfg, a, o, topk_ids, topk_weights, stream, &cl_log2);
  }
  return err;
}

/* ---- the sort entry point at decode (mr_tiny_sort_kernel) ---- */
static int mr_tiny_sort_plan(const mr_config* cfg, mr_tiny_k* K, size_t* smem) {
  const int64_t T = cfg->num_tokens, n = T * cfg->top_k;
  /* on unless the knob says -1 (lab calls 22, 23: bit-identical to the mask-table sort,
   * faster at every T it takes) */
  if (mr_cuda_tune.tiny_sort < 0 || T < 1 || T > 32 || n > (int64_t)MR_TINY_SORT_MAX_N || cfg->unit_size < T ||
      cfg->num_experts > MR_TINY_MAX_E)
    return 0;
  mr_tiny_k_init(cfg, K);
  K->onepass = 1u;
  K->ctas_log2 = mr_tiny_ctas_log2(cfg);
  K->ent_off = MR_TINY_TBL; /* (the route's entry table holds 128) */
  K->op_off = K->ent_off + 2u * MR_TINY_SORT_MAX_N;
  /* entries [2 * 256] | presence [32] | token masks [E] | flag [1] | the fallback's start [E] and count [E] */
  const uint32_t words = K->op_off + 32u + 1u + 3u * K->E;
  if (words > MR_TINY_SMEM_BYTES / 4u) return 0;
  *smem = (size_t)words * 4u;
  return 1;
}

extern "C" int mr_cuda_tiny_sort_fits(const mr_config* cfg) {
  mr_tiny_k K;
  size_t smem;
  return mr_tiny_sort_plan(cfg, &K, &smem);
}

extern "C" cudaError_t mr_cuda_launch_tiny_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                                const float* topk_weights, cudaStream_t stream) {
  mr_tiny_k K;
  size_t smem;
  if (!mr_tiny_sort_plan(cfg, &K, &smem)) return cudaErrorInvalidConfiguration;
  MR_TRY(mr_launch_decode_sort_kernel(mr_tiny_sort_kernel, K, 1u << K.ctas_log2, MR_TINY_THREADS, smem, o, topk_ids,
                                      topk_weights, stream));
  return cudaSuccess;
}
