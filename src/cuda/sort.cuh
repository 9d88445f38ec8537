/*
 * sort.cuh - the sorting steps that the one-launch sort (sort.cu) and the
 * fused route kernel (fused.cu) share (contract section 3).
 *
 * The small-T*k sort keeps, per expert e, a bit mask over the entries
 * i = t*k + slot: bit (i % 32) of word maskw[e * NW + i / 32] is set when
 * entry i has expert e (NW = ceil(T*k / 32) words per expert). Setting the bits
 * needs atomics (atomicOr, or red.or into another CTA's shared memory), but an
 * OR is order-free, so the table is the same whatever order the atomics land in:
 * the result is deterministic. From the table:
 *
 *   cnt_e   = sum of popcounts of e's words;
 *   rank of entry i within e = popcount of e's bits below i, which is exactly
 *             "ascending token, then ascending slot" because i = t*k + slot;
 *   start_e = padded exclusive scan over e (one block-wide scan).
 *
 * No comparison sort, no ordering from atomics, and duplicate ids in a row
 * (possible in sort's input) are just two bits.
 *
 * Work split: scan thread tid owns experts [tid*EPT, tid*EPT + EPT) with
 * EPT = ceil(E/256); a warp emits the experts its own lanes scanned (no second
 * block barrier). Among R cooperating CTAs, CTA r emits the experts with
 * e % R == r.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_SORT_CUH
#define MOEROUTE_CUDA_SORT_CUH

#include "cuda/common.cuh"

#define MR_SORT_THREADS 256
/* The one-launch sort's limits: T*k entries, and the mask table in words
 * (E * NW <= 6144 words = 24 KB of shared memory). */
#define MR_SMALL_MAX_ENTRIES 1024
#define MR_SMALL_MAX_MASK_WORDS 6144

/* One entry of the sorted layouts: entry i = t*k + slot at position pos.
 * The weight is copied as bits (contract: bit-exact). */
__device__ __forceinline__ void mr_emit_entry(const mr_sort_out* o, uint32_t pos, uint32_t i,
                                              const uint32_t* weight_bits) {
  const uint32_t k = (uint32_t)o->top_k;
  const uint32_t t = i / k, slot = i - t * k;
  if (o->sorted_ids) {
    o->sorted_ids[pos] = (int32_t)((slot << 24) | t);
    if (o->sorted_weights) ((uint32_t*)o->sorted_weights)[pos] = weight_bits[i];
  }
  if (o->sorted_token_ids) o->sorted_token_ids[pos] = (int32_t)i;
}

/* Padding of expert e's unit: positions [start + cnt, start + pad), and the
 * block ids of its blocks [start/U, (start+pad)/U). One warp, lanes striding. */
__device__ __forceinline__ void mr_emit_padding(const mr_sort_out* o, uint32_t start, uint32_t cnt, uint32_t pad,
                                                uint32_t local_id, uint32_t lane) {
  const uint32_t T = (uint32_t)o->num_tokens, k = (uint32_t)o->top_k, U = (uint32_t)o->unit_size;
  const int32_t ck_sentinel = (int32_t)((k << 24) | T);
  const int32_t vllm_sentinel = (int32_t)(T * k);
  for (uint32_t j = cnt + lane; j < pad; j += 32) {
    const uint32_t pos = start + j;
    if (o->sorted_ids) {
      o->sorted_ids[pos] = ck_sentinel;
      if (o->sorted_weights) o->sorted_weights[pos] = 0.0f;
    }
    if (o->sorted_token_ids) o->sorted_token_ids[pos] = vllm_sentinel;
  }
  const uint32_t b1 = (start + pad) / U;
  for (uint32_t b = start / U + lane; b < b1; b += 32) {
    if (o->sorted_expert_ids) o->sorted_expert_ids[b] = (int32_t)local_id;
    if (o->expert_ids) o->expert_ids[b] = (int32_t)local_id;
  }
}

__device__ __forceinline__ void mr_emit_totals(const mr_sort_out* o, uint32_t total) {
  if (o->num_valid_ids) {
    o->num_valid_ids[0] = (int32_t)total;
    o->num_valid_ids[1] = (int32_t)o->num_tokens;
  }
  if (o->num_tokens_post_pad) o->num_tokens_post_pad[0] = (int32_t)total;
}

/* Bit q set: expert tid*EPT + q is enabled. Read at kernel start so that the
 * global load overlaps the gating / table building instead of the scan. */
__device__ __forceinline__ uint32_t mr_small_enabled(const mr_sort_out* o) {
  if (o->expert_mask == NULL) return 0xfu;
  const int E = o->num_experts;
  const int ept = (E + MR_SORT_THREADS - 1) / MR_SORT_THREADS;
  uint32_t bits = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int e = (int)threadIdx.x * ept + q;
    if (q < ept && e < E && __ldg(o->expert_mask + e) != 0) bits |= 1u << q;
  }
  return bits;
}

/* Emit expert e (one warp): its entries in rank order, padding, block ids. */
__device__ __forceinline__ void mr_emit_expert(const mr_sort_out* o, const uint32_t* maskw, int nw, uint32_t e,
                                               uint32_t start, uint32_t cnt, uint32_t local_id,
                                               const uint32_t* weight_bits, uint32_t lane) {
  const uint32_t U = (uint32_t)o->unit_size;
  const uint32_t* words = maskw + e * (uint32_t)nw;
  /* lane l takes word l (nw <= 32); its entries' ranks start at the popcount of
   * the words below it: up to 4 words (T*k <= 128, decode) each lane adds them
   * itself (independent loads), beyond that a warp scan */
  uint32_t word = (int)lane < nw ? words[lane] : 0u;
  uint32_t base = 0;
  if (nw <= 4) {
#pragma unroll
    for (int w = 0; w < 4; ++w)
      if (w < nw && (uint32_t)w < lane) base += __popc(words[w]);
  } else {
    const uint32_t pc = __popc(word);
    base = mr_warp_incl_scan(pc, lane) - pc;
  }
  uint32_t pos = start + base;
  while (word) {
    const uint32_t b = __ffs(word) - 1;
    word &= word - 1;
    mr_emit_entry(o, pos++, lane * 32u + b, weight_bits);
  }
  mr_emit_padding(o, start, cnt, (cnt + U - 1) / U * U, local_id, lane);
}

/*
 * Scan and emit of the small sort (all MR_SORT_THREADS threads call, after the
 * mask table is complete). Returns total.
 *
 * Scan: each expert contributes pad_e | enabled_e << 21 to one 32-bit block
 * scan, so the padded start and the local id (enabled experts below e) come out
 * of the same pass: pads sum to at most T*k + E*(U-1) <= 1024 + 1024*1023 < 2^21
 * and the enabled count to at most 1024 < 2^11. One __syncthreads (the warp
 * totals).
 *
 * Emit: the results stay in the scan threads' registers. For each of its
 * expert slots q, a warp ballots "has entries and is mine (e % nranks ==
 * rank)" and walks only the set bits, fetching start / count / local id from
 * the owning lane with shuffles: no shared-memory table, no second barrier, and
 * no serial walk over empty experts.
 */
__device__ __forceinline__ uint32_t mr_small_scan_emit(const mr_sort_out* o, const uint32_t* maskw, int nw,
                                                       uint32_t* s_warp, const uint32_t* weight_bits, uint32_t rank,
                                                       uint32_t nranks, uint32_t en_bits) {
  const int E = o->num_experts;
  const uint32_t U = (uint32_t)o->unit_size;
  const int ept = (E + MR_SORT_THREADS - 1) / MR_SORT_THREADS; /* <= 4 */
  const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  uint32_t v[4], cnt[4], sum = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int e = (int)tid * ept + q;
    v[q] = 0;
    cnt[q] = 0;
    if (q < ept && e < E) {
      uint32_t c = 0;
      for (int w = 0; w < nw; ++w) c += __popc(maskw[e * nw + w]);
      const uint32_t en = (en_bits >> q) & 1u;
      c = en ? c : 0u; /* a masked expert's entries are dropped */
      cnt[q] = c;
      v[q] = ((c + U - 1) / U * U) | (en << 21);
    }
    sum += v[q];
  }
  const uint32_t incl = mr_warp_incl_scan(sum, lane);
  if (lane == 31) s_warp[warp] = incl;
  __syncthreads();
  MR_STAMP(6);
  uint32_t pre = 0, total = 0;
#pragma unroll
  for (int w = 0; w < MR_SORT_THREADS / 32; ++w) {
    const uint32_t x = s_warp[w];
    pre += (uint32_t)w < warp ? x : 0u;
    total += x;
  }
  uint32_t run = pre + incl - sum;
  uint32_t st[4], lc[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    st[q] = run & 0x1fffffu;
    lc[q] = run >> 21;
    run += v[q];
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if (q >= ept) break; /* warp-uniform */
    const uint32_t e = tid * (uint32_t)ept + (uint32_t)q;
    const bool mine = e < (uint32_t)E && cnt[q] != 0u && e % nranks == rank;
    uint32_t todo = __ballot_sync(MR_FULL_MASK, mine);
    while (todo) { /* warp-uniform */
      const uint32_t src = __ffs(todo) - 1;
      todo &= todo - 1;
      const uint32_t s = __shfl_sync(MR_FULL_MASK, st[q], src);
      const uint32_t c = __shfl_sync(MR_FULL_MASK, cnt[q], src);
      const uint32_t l = __shfl_sync(MR_FULL_MASK, lc[q], src);
      mr_emit_expert(o, maskw, nw, (warp * 32u + src) * (uint32_t)ept + (uint32_t)q, s, c, l, weight_bits, lane);
    }
  }
  return total & 0x1fffffu;
}

#endif /* MOEROUTE_CUDA_SORT_CUH */
