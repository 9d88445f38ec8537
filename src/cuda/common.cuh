/*
 * common.cuh - what the CUDA sources share: the compile-time specialisation
 * list, order-preserving keys, warp helpers, cluster (DSMEM) helpers, the
 * moe_buf clear, kernel argument structs and the internal host interface
 * between the .cu files.
 *
 * CUDA C: the C subset plus templates for compile-time constants.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_CUDA_COMMON_CUH
#define MOEROUTE_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>

#include "common/internal.h"

#define MR_FULL_MASK 0xffffffffu
#define MR_WARP 32

/* ---- The one list of compile-time specialisations -------------------------
 *
 * Gating keeps a token's row in the registers of one warp: each lane holds
 * EPL ("experts per lane") logits. EPL is a template constant (register arrays
 * need a compile-time size), bucketed so that every E in 1..1024 has a kernel:
 *
 *   EPL  4 : E <=  128      EPL 16 : E <=  512
 *   EPL  8 : E <=  256      EPL 32 : E <= 1024
 *
 * The logits dtype is the other template constant (it fixes the load width:
 * 16-byte loads hold 8 bf16/fp16 or 4 fp32). Everything else (score, bias,
 * groups, k, U, layouts, mask) is a run-time argument: those branches are
 * warp-uniform and cheap next to the loads.
 *
 * 4 buckets x 3 dtypes = 12 instantiations per gating kernel (the gate kernel
 * and the fused route kernel). Sorting kernels are not templated.
 * mr_cuda_epl_bucket() is read both by the dispatch and by
 * moeroute_cuda_supports(), so the two can never disagree. */
#define MR_EPL_MAX 32
static inline int mr_cuda_epl_bucket(int32_t num_experts) {
  if (num_experts < 1) return 0;
  if (num_experts <= 128) return 4;
  if (num_experts <= 256) return 8;
  if (num_experts <= 512) return 16;
  if (num_experts <= 1024) return 32;
  return 0; /* no kernel: NOT_SUPPORTED */
}
static inline int mr_cuda_dtype_supported(moeroute_dtype dt) {
  return dt == MOEROUTE_DTYPE_FP32 || dt == MOEROUTE_DTYPE_BF16 || dt == MOEROUTE_DTYPE_FP16;
}

/* Expands X(DT, EPL) over the list above, for a switch in the launchers. */
#define MR_FOR_EACH_GATE_SPEC(X)                                                           \
  X(MOEROUTE_DTYPE_FP32, 4) X(MOEROUTE_DTYPE_FP32, 8) X(MOEROUTE_DTYPE_FP32, 16)           \
  X(MOEROUTE_DTYPE_FP32, 32) X(MOEROUTE_DTYPE_BF16, 4) X(MOEROUTE_DTYPE_BF16, 8)           \
  X(MOEROUTE_DTYPE_BF16, 16) X(MOEROUTE_DTYPE_BF16, 32) X(MOEROUTE_DTYPE_FP16, 4)          \
  X(MOEROUTE_DTYPE_FP16, 8) X(MOEROUTE_DTYPE_FP16, 16) X(MOEROUTE_DTYPE_FP16, 32)

/* ---- order-preserving keys -------------------------------------------------
 *
 * Selection compares fp32 keys. Mapping a float to a uint32 whose unsigned
 * order is the float order lets a warp pick its maximum with one
 * __reduce_max_sync (a single REDUX instruction on sm_80+) instead of a
 * five-step shuffle tree. -0 is folded onto +0 first: as floats they are
 * equal (a tie, resolved by the lower index), as bit patterns they are not.
 * Every real key maps to >= mr_ord32(-inf) = 0x007fffff; 0 is reserved for
 * "no candidate" (padding lanes, experts already picked). */
#define MR_ORD_NEG_INF 0x007fffffu

__device__ __forceinline__ uint32_t mr_ord32(float f) {
  uint32_t b = __float_as_uint(f);
  b = b == 0x80000000u ? 0u : b;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float mr_unord32(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

/* Same map for raw 16-bit floats (bf16, fp16): the bit patterns of a 16-bit
 * float are ordered like an fp32's. Caller folds NaN onto -inf and -0 onto +0. */
__device__ __forceinline__ uint32_t mr_ord16(uint32_t h) {
  return (h & 0x8000u) ? (~h & 0xffffu) : (h | 0x8000u);
}
__device__ __forceinline__ uint32_t mr_unord16(uint32_t o) {
  return (o & 0x8000u) ? (o & 0x7fffu) : (~o & 0xffffu);
}

/* ---- lab hook ---------------------------------------------------------------
 * Phase markers for dev/stamp_lab.cu, which includes these sources with its own
 * definition (a clock64 stamp per phase). Empty in the library. */
#ifndef MR_STAMP
#define MR_STAMP(slot) ((void)0)
#endif

/* ---- warp helpers ------------------------------------------------------------ */

__device__ __forceinline__ uint32_t mr_lane_id(void) {
  uint32_t r;
  asm("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t mr_lanemask_lt(void) {
  uint32_t r;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r));
  return r;
}
/* The lanes whose key equals this lane's key (every lane calls, converged;
 * keys < 2^nb, nb warp-uniform, at most 16): one ballot per key bit. Replaces
 * __match_any_sync, whose latency measured ~560 cycles on the H200 (tiny.cu
 * stamps, lab run 6b) against ~10 per ballot step. */
__device__ __forceinline__ uint32_t mr_warp_peers(uint32_t key, uint32_t nb) {
  uint32_t peers = MR_FULL_MASK;
#pragma unroll
  for (uint32_t b = 0; b < 16u; ++b) {
    if (b >= nb) break; /* warp-uniform */
    const uint32_t bit = (key >> b) & 1u;
    const uint32_t m = __ballot_sync(MR_FULL_MASK, bit != 0u);
    peers &= bit ? m : ~m;
  }
  return peers;
}
/* Bits of the keys 0..E (E itself stands for "no entry"): nb for mr_warp_peers. */
__host__ __device__ __forceinline__ uint32_t mr_key_bits(uint32_t E) {
  uint32_t nb = 1u;
  while ((1u << nb) <= E) ++nb;
  return nb;
}
/* Inclusive prefix sum over the warp (all 32 lanes must call). */
__device__ __forceinline__ uint32_t mr_warp_incl_scan(uint32_t v, uint32_t lane) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    uint32_t o = __shfl_up_sync(MR_FULL_MASK, v, off);
    v += lane >= (uint32_t)off ? o : 0u;
  }
  return v;
}
__device__ __forceinline__ uint64_t mr_warp_incl_scan64(uint64_t v, uint32_t lane) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    uint64_t o = __shfl_up_sync(MR_FULL_MASK, v, off);
    v += lane >= (uint32_t)off ? o : 0ull;
  }
  return v;
}

/* ---- thread-block clusters (sm_90) --------------------------------------------
 *
 * The fused kernel gates tokens on several SMs and collects the results in
 * every CTA's shared memory (distributed shared memory, DSMEM). Written as
 * inline PTX to stay in CUDA C (cooperative_groups is C++ classes). Launched
 * without a cluster attribute, every CTA is a cluster of one and these still
 * work: rank 0 of 1, the barrier is a CTA barrier. */
__device__ __forceinline__ uint32_t mr_cluster_rank(void) {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t mr_cluster_size(void) {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
/* Shared-memory address of the same variable in CTA `rank` of the cluster. */
__device__ __forceinline__ uint32_t mr_dsmem_addr(const void* local_smem, uint32_t rank) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(local_smem), r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void mr_dsmem_or(uint32_t addr, uint32_t v) {
  asm volatile("red.relaxed.cluster.shared::cluster.or.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void mr_dsmem_store_f32(uint32_t addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void mr_dsmem_store_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t mr_dsmem_load_u32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
/* Split cluster barrier: arrive has release semantics (this thread's earlier
 * writes, local or remote, are visible to every thread of the cluster that
 * returns from the matching wait), wait has acquire semantics. */
__device__ __forceinline__ void mr_cluster_arrive(void) {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void mr_cluster_wait(void) {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/* ---- moe_buf clear ----------------------------------------------------------
 *
 * Zero n bytes at p (any alignment, any size) with 16-byte streaming stores
 * (st.global.cs: the buffer is not read again by this launch) for the aligned
 * body, four independent stores per thread per pass; `part` of `parts`
 * threads, grid-stride (every warp store covers 512 contiguous bytes). Called
 * by CTAs that do no routing, so the clear runs beside the routing work
 * instead of after it. The large path (large.cu) has its own split of the
 * clear over its launches. */
__device__ __forceinline__ void mr_clear_bytes(unsigned char* p, size_t n, size_t part, size_t parts) {
  if (n == 0) return;
  size_t head = (size_t)((16u - ((uintptr_t)p & 15u)) & 15u);
  if (head > n) head = n;
  const size_t body = (n - head) / 16;
  const size_t tail = n - head - body * 16;
  uint4* q = (uint4*)(p + head);
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
  size_t i = part;
  for (; i + 3 * parts < body; i += 4 * parts) {
    __stcs(q + i, z);
    __stcs(q + i + parts, z);
    __stcs(q + i + 2 * parts, z);
    __stcs(q + i + 3 * parts, z);
  }
  for (; i < body; i += parts) __stcs(q + i, z);
  if (part < head) p[part] = 0;
  if (part < tail) p[head + body * 16 + part] = 0;
}

/* The first clear_ctas CTAs of a launch clear moe_buf (all of it, grid-stride
 * over their threads) and return true; the others return false and route. */
__device__ __forceinline__ bool mr_clear_lead_ctas(unsigned char* buf, size_t bytes, uint32_t clear_ctas) {
  if (blockIdx.x >= clear_ctas) return false;
  mr_clear_bytes(buf, bytes, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)clear_ctas * blockDim.x);
  return true;
}

/* ---- kernel arguments ------------------------------------------------------- */

/* Everything gating needs for one row, precomputed on the host. */
typedef struct mr_gate_args {
  const void* logits;
  int64_t row_stride;       /* elements */
  int64_t num_tokens;
  const float* bias;        /* NULL = none */
  int32_t num_experts;
  int32_t top_k;
  int32_t score;            /* moeroute_score */
  int32_t renormalize;
  float scale;
  int32_t grouped;          /* num_groups > 1 && topk_groups < num_groups (as the CPU backend) */
  int32_t num_groups;
  int32_t topk_groups;
  int32_t group_score;      /* moeroute_group_score */
  int32_t group_size;       /* E / G */
  uint32_t group_magic;     /* ceil(2^22 / group_size): g = (e * magic) >> 22 for e < 1024 */
  int32_t group_lanes;      /* lanes per group when G <= 16 (power of two), else 1 */
  int32_t group_lanes_shift; /* log2(group_lanes) */
  int32_t packed;           /* 16-bit logits, softmax, no bias: 32-bit keys carry the index */
} mr_gate_args;

/* The outputs of the sorting step (either layout may be off: NULL pointers). */
typedef struct mr_sort_out {
  int32_t* sorted_ids;        /* CK */
  float* sorted_weights;      /* CK, optional */
  int32_t* sorted_expert_ids; /* CK */
  int32_t* num_valid_ids;     /* CK */
  int32_t* sorted_token_ids;  /* vLLM */
  int32_t* expert_ids;        /* vLLM */
  int32_t* num_tokens_post_pad; /* vLLM */
  const int32_t* expert_mask; /* NULL = all enabled; non-zero = enabled (design.md 7) */
  int64_t num_tokens;
  int32_t num_experts;
  int32_t top_k;
  int32_t unit_size;
  unsigned char* moe_buf;
  size_t moe_buf_bytes;
  uint32_t u_magic; /* mr_magic(unit_size): x / U by mr_udiv */
  uint32_t k_magic; /* mr_magic(top_k): i / k by mr_udiv */
} mr_sort_out;

/* The CTAs from `routing` on clear o's moe_buf (all of it, grid-stride over their threads) and return true; the first
 * `routing` CTAs return false and route (the decode launches' clear-only tail, mr_clear_lead_ctas's twin). */
__device__ __forceinline__ bool mr_clear_tail_ctas(const mr_sort_out& o, uint32_t routing) {
  if (blockIdx.x < routing) return false;
  mr_clear_bytes(o.moe_buf, o.moe_buf_bytes, (size_t)(blockIdx.x - routing) * blockDim.x + threadIdx.x,
                 (size_t)(gridDim.x - routing) * blockDim.x);
  return true;
}

/* Division by a run-time d in 1..1024 without the ~30-instruction integer
 * division: m = mr_magic(d) = ceil(2^32 / d) (0 for d = 1), then
 * x / d = umulhi(x, m), exact for x < 2^22 (m*d - 2^32 < d, so x*(m*d - 2^32) / 2^32 < 1
 * and the error x*(m*d - 2^32) / (d * 2^32) stays below 1/d); larger x divide. */
static inline uint32_t mr_magic(uint32_t d) {
  return d <= 1u ? 0u : (uint32_t)((((uint64_t)1 << 32) + d - 1u) / d);
}
#ifdef __CUDACC__
__device__ __forceinline__ uint32_t mr_udiv(uint32_t x, uint32_t d, uint32_t m) {
  if (m == 0u) return x;
  return x < (1u << 22) ? __umulhi(x, m) : x / d;
}
#endif

/* ---- internal host interface between the .cu files ----------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* Tuning knobs, read by the dispatch (0 = automatic, except general_v1). Only the lab
 * (dev/) changes them; not part of the public API. */
typedef struct mr_cuda_tuning {
  int fused_cluster;     /* CTAs that gate in the fused kernel: 1, 2, 4, 8 */
  int small_sort_ctas;   /* CTAs of the one-launch sort: 1..16 */
  int force_general;     /* 1: route/sort always take the multi-kernel path */
  /* the large path (large.cu, dev/large-notes.md); 0 everywhere = the defaults */
  int general_v1;        /* 0 = automatic (mr_cuda_large_v1), 1 = the run-1 general path (gate, count,
                            scan+clear, scatter), 2 = large.cu */
  int large_no_pdl;      /* 1: no programmatic dependent launch between the large path's launches */
  int large_ctas_per_sm; /* first-launch CTAs per SM: 0 = auto (route: 1 while a large moe_buf clear overlaps or
                            by segments, else the gate's register cap; sort: 1 up to T*k = 163840, else 2) */
  int clear_engine;      /* last-launch clear: 0 = auto (bulk copy), 1 = bulk copy (TMA), 2 = 16-byte stores */
  int clear_ctas_per_sm; /* last-launch clear CTAs per SM: 0 = auto (1) */
  int first_clear_kb;    /* moe_buf KB cleared by the first launch: 0 = auto, -1 = none */
  int no_tiny;           /* 1: route never takes the one-CTA kernel of tiny.cu */
  int tiny_max_n;        /* T*k bound of tiny.cu: 0 = its default rules (mr_cuda_tiny_takes), else this
                            bound alone (at most 128) */
  int route_pair;        /* route at decode as the pair gate kernel + one-launch sort: 0 = auto (when PDL
                            is on and tiny.cu does not take the call), 1 = whenever it fits, -1 = never */
  int decode_pdl;        /* the launches of tiny.cu, fused.cu, the gate kernel (at every T) and the
                            one-launch sort with PDL: 0 = auto (on for cc >= 9 unless MOEROUTE_PDL=0),
                            1 = on, -1 = off */
  int mid_max_entries;   /* largest T*k of the mid sort (mid.cu): 0 = its default, -1 = never */
  int mid_share;         /* entries per routing CTA of the mid sort: 0 = its default */
  int gate_live;         /* lab (L5, session 37): gating warps per CTA of the warp-per-row gate kernel at T <= 128
                            (mr_launch_gate_t): 0 = auto (v42 / v42b: 3 for 16-bit softmax rows with 8 <= E <= 512
                            at 32 < T, else 1), else this many (1 - 3: with the dry-run warp the kernels' 128-thread
                            bound) */
  int mid_pad_ctas;      /* lab (L5, session 37): CTAs added to the mid sort's grid without a moe_buf, each leaving
                            at once after its PDL wait and trigger (with a moe_buf its clear CTAs are there anyway): 0 =
                            none */
  int gate_lpr;          /* lanes per row of the 16-bit softmax gate kernel at large T: 0 = auto, 32 = always a
                            warp per row, 4 / 8 / 16 */
  int gate_wide;         /* sigmoid / sqrt_softplus rows over four warps (gate.cu): 0 = auto (gate.cu: T <= 256; 512
                            for rows without groups, k <= 8, E <= 384; never softmax),
                            -1 = never, > 0 = up to this T */
  int tiny_wide;         /* route of sigmoid / sqrt_softplus rows by tiny.cu with wide gate rows (two groups of
                            four warps): 0 = auto (T <= MR_TINY_WIDE_T, T*k <= 32), -1 = never, > 0 = up to this T
                            (T*k <= 128) */
  int tiny_sort;         /* the sort entry point and the pair's sort at decode in one pass (tiny.cu,
                            mr_tiny_sort_kernel; T <= 32, T*k <= 256, U >= T): 0 (default) and 1 = where it
                            fits, -1 = never (the mask-table sort of sort.cuh) */
  int tiny_ctas;         /* CTAs writing tiny.cu's one-pass layout (route and sort; each gates / loads every
                            entry alike and writes 1/ctas of the blocks): 0 = auto (4 up to T*k = 32, else 8),
                            1 / 2 / 4 / 8 */
  int tm_sort;           /* the token-mask sort (tmsort.cu; T <= 256, T*k <= 2048, any U) where tiny.cu's
                            one-pass sort does not fit: 0 = auto (E <= 384, 384 <= T*k <= 768; 1024 for
                            E <= 160), 1 = wherever it fits, -1 = never */
  int tm_sort_ctas;      /* its CTAs writing the layout: 0 = auto, else 1 - 32 (rounded down to 2^j) */
  int tiny_onepass;      /* tiny.cu's 16-bit softmax rows at 2 <= T <= 32 finish in one pass behind one barrier
                            (token masks per expert, mr_tiny_onepass) where U >= T: 0 = auto (T <= 8, E >= 16 and
                            T*k <= 40, or 64 for E <= 256: mr_tiny_onepass_wanted), 1 = always, -1 = never */
  int persist;           /* the persistent launch P of large.cu (v11) for the sort / route calls that reach the
                            large path: 0 = auto (with a moe_buf, where the device launches cooperative kernels),
                            1 = also without a moe_buf, -1 = never (the three launches / the run-1 chain) */
  int persist_ctas_per_sm; /* P's CTAs per SM: 0 = auto (1) */
  int persist_gate_tpsm;  /* route with P, segmented rows: the gate launch's threads per SM: 0 = auto (512),
                            -1 = no cap (other rows: the gate first, uncapped, then zero and P) */
  int ctm;               /* the cluster token-mask path (ctm.cu, v12): route and sort in one cluster launch for
                            middle T: 0 = auto (mr_ctm_wanted), 1 = wherever it fits, 2 = the sort wherever it fits
                            (also as the mid pair's second launch) but never route's fused form, -1 = never */
  int ctm_ctas;          /* its cluster size: 0 = auto, else 1 - 16 */
  int ctm_probe;         /* lab timing probe, WRONG outputs (ctm.cu mr_ctm_k.probe): 0 = off */
  int large_seg;         /* route's first large.cu launch gates by segments (gate + rank in one launch, v13)
                            where the gate kernel would: 0 = auto (there, without a moe_buf, T*k <= 65536),
                            1 = there at any T*k, -1 = never (the chain, as before) */
  int large_scan_carry;  /* L2's scan of an expert row: 0 = auto (the carry form after route's warp-per-row L1,
                            else lane blocks, v13), 1 = the carry form everywhere, -1 = lane blocks everywhere */
  int large_seg_warps;   /* the L1 by segments' CTAs: 0 = auto (16 warps for 128 < E <= 256, k = 8 and
                            65536 < T*k <= 131072 (262144 before v22), which the L1 by segments then takes; else 8), 16 = 16 warps and 16
                            slices per chunk wherever it runs (the auto range included), other values = 8 warps */
  int tiny_threads;      /* tiny.cu's one-pass route with 16 gating warps (512 threads, a row per warp, v14):
                            0 = auto (9 <= T <= 16, 16 <= E <= 256, T*k <= 96; mr_tiny_cta16), 512 = wherever the
                            one-pass route runs with T <= 16 and E <= 512, -1 = never (8 warps) */
  int tiny_probe;        /* lab timing probe, WRONG outputs (tiny.cu mr_tiny_k.probe, the one-pass route): 0 = off */
  int tiny_op_regs;      /* the one-pass route's presence words in registers, no shuffles (E <= 512, v14): 0 = auto
                            (E <= 256), 1 = on, -1 = off */
  int tiny_cluster;      /* tiny.cu's one-pass route by a cluster of C CTAs that split the rows (CTA r gates rows
                            r, r + C, ...) and send each entry to every CTA (st.async on the receiver's mbarrier),
                            for the wide gate rows (sigmoid / sqrt_softplus, a group of four warps per row) and
                            every other row kind (a warp per row) at 1 <= T <= 32, U >= T, T*k <= 128 (v15, lab):
                            0 = auto (tiny.cuh mr_tiny_cluster_auto, lab call 53; off while MR_TINY_CLUSTER_AUTO is 0), 1 / 2 / 4 / 8 = that C wherever
                            it fits, -1 = off (ignored under MOEROUTE_CUDA_NO_CLUSTER; the other tiny knobs and the
                            probes do not apply to it) */
  int tiny_warm;         /* tiny.cu's one-pass route (not the cluster form): an idle warp runs the layout's code
                            during gating with its loads and stores off, fetching its instructions ahead (v15,
                            lab): 0 = off, 1 = on */
  int tiny_filt;         /* tiny.cu's route of the sigmoid rows that the wide form takes (k <= 16, E 129 - 512, groups
                            in whole lanes of a warp-per-row layout), a warp per row by gate.cuh's filter on
                            approximate keys (v31b / v31c's form) instead of a row over four warps: at T = 1 the
                            solo form, at 2 <= T <= 16 the cluster form with one row per CTA (v40, session 35):
                            0 = auto (tiny.cuh MR_TINY_FILT_AUTO_K / _E: k >= 9 and E > 256, lab calls 103 and
                            105), 1 = wherever it applies, -1 = never. The same bits either way */
  int tiny_op_own;       /* tiny.cu's one-pass route (not the cluster form, not with tiny_warm): the blocks by word
                            ownership, warp w taking presence words w, w + warps, ... (each present expert's block from
                            its word's prefix, no search; v17): 0 = auto (tiny.cuh mr_tiny_own_auto: k <= 4,
                            T*k <= 16, lab call 53), 1 = on, -1 = off; 2 = the blocks by entry ownership instead
                            (v48, lab: the entry of each expert's lowest token writes its block's id, its warp the
                            padding; entries spread evenly over the warps) */
  int wide_rank_unroll;  /* tiny.cu's route of grouped wide gate rows (T = 1, not the cluster form): the groups'
                            ranks by eight broadcast reads in flight instead of one shuffle after the other (v17,
                            0 = auto (MR_TINY_RU_AUTO: on, lab call 53), 1 = on, -1 = off */
  int gtm;               /* the grid token-mask sort (gtm.cu, v16, lab): two launches, token masks per expert over
                            the whole grid, then a CTA per expert: 0 = off (no auto rule yet), 1 = the sort entry
                            point and route's sort wherever it fits (route: gate kernel, K1, K2), 2 = the sort
                            entry point only, 3 = as 1 with route's gating inside K1 for PACKED rows
                            (gtm_gate.cu: gate + masks, then K2) */
  int gate_seg_filter;   /* the 16-bit softmax segment rows (gate.cu's segment kernel, large.cu's L1 by segments;
                            not gtm_gate.cu's lab path) pick their top L through a filter by the least of the lanes' maxima before
                            the sorting network (gate.cuh mr_seg_filter_top, v20), where E = LPR * EPS: 0 = auto
                            (gate.cuh mr_seg_filter_on: the gate kernel from T = 32768 without a clear beside it,
                            the L1 by segments from T*k = 131072), 1 = at every T, -1 = never */
  int gtm_probe;         /* lab probes of gtm's K2: 2 = its expert CTAs return after their PDL wait (the launches
                            alone; WRONG outputs), 3 = %globaltimer stamps of its phases in the spare words of the
                            status lines (outputs right) */
  int gate_seg_form;     /* the segment rows' form (v21, gate.cuh mr_load_pairs / mr_seg_filter_top's TB /
                            mr_seg_rank_place): 0 = automatic (gate.cuh mr_seg_gate_form: the gate kernel packed
                            where it can be, the filter from T*k = 65536 in form 3 at 8 lanes per row, 2 at 4; route's
                            L1 by segments in v20's form), -1 = v20's form everywhere (each element unpacked on load,
                            the filter's bound the least of the lanes' maxima), 1 = the row's words kept in pairs (no
                            unpacking; v20's filter), 2 = as 1 with the filter's tight bound (the k-th largest of the
                            segment's half maxima), 3 = as 2 with the candidates ranked in shared memory instead of
                            lists and a butterfly. Where the filter runs is gate_seg_filter's (its rule for the packed
                            gate kernel: T*k >= 65536); 1 - 3 apply where EPS <= 32 and LPR <= 8 (elsewhere v20's
                            form). The same bits in every form */
  int persist_clear_ns;  /* P's clearing warps (large.cu, lab, v21; lab call 55: no gain, clr500 within 1%): 0 = full speed (the
                            default), > 0 = each sleeps this many ns after each 16 KB piece while its CTA's routing
                            warps have not finished (the routing's dependent loads and grid barriers queue behind
                            the clear's stores), < 0 = each pauses (polling every -ns ns) while its CTA's routing
                            waits at a grid barrier. Outputs are the same either way */
  int gx;                /* route in one cooperative launch over the grid (gx.cu, v22): 0 = auto (PACKED rows,
                            16 <= E <= 256, k <= 8, no moe_buf, 256 <= T <= 4096 wherever no one-launch decode
                            sort fits (v45b, session 40; gx.cu mr_gx_auto); gx.cu's
                            MR_GX_AUTO, on since results run 35), 1 = wherever it fits (E <= 256, T <= 32 rows
                            per CTA of at most one CTA per SM and 144 CTAs), -1 = never */
  int gxs;               /* the sort in one cooperative launch over the grid (gx.cu, v23): the sort entry point
                            and route's sort after the gate kernel, without a moe_buf: 0 = auto (gx.cu
                            mr_gxs_auto, v30: 4 <= k <= 10, E >= 128, the sort entry point from T*k = 49152
                            (16384 for 256 < E <= 384, 20480 above), route's rows not segmented from 16384 (E > 384:
                            30720), its segmented rows from 65536 (E > 128) / 98304), 1 = wherever it
                            fits (E <= 512, one CTA per SM, <= 48 KB of shared memory), 2 = the sort entry
                            point only, wherever it fits, -1 = never */
  int gxs_probe;         /* lab timing probe of gxs (gx.cu mr_gxs_k.probe), WRONG outputs: 0 = off */
  int gx_stagger;        /* gx's and gxs's read-back of the count matrix from the CTA's own row on (v23b): 0 = the
                            default (gx.cu MR_GX_STAGGER), 1 = on, -1 = off. The same bits either way */
  int gxs_place;         /* gxs's entries put in (expert, token, slot) order in shared memory while the other CTAs
                            arrive at the grid barrier, then stored in that order (v24): 0 = the default (gx.cu
                            MR_GXS_PLACE), 1 = on where it fits, -1 = off. The same bits either way */
  int gxs_xchg;          /* gxs's exchange by columns (v24): each CTA sums the columns of its experts into
                            prefixes, a second grid barrier, then each CTA reads its own row and the totals
                            (instead of every CTA reading the whole count matrix): 0 = the default (gx.cu
                            MR_GXS_XCHG), 1 = on, -1 = off. The same bits either way */
  int gx_lean_bar;       /* gx's and gxs's grid barriers without their full fences (v24b): the arrival a
                            red.release, the wait ld.acquire loads only: 0 = the default (gx.cu MR_GX_LEAN_BAR, on),
                            1 = on, -1 = off. The same bits either way */
  int gx_flag;           /* v46 (session 40), v46d (session 41): gx's count rows with a flag in every byte (0x80 |
                            count) over a matrix the zeroing launch clears, read back by polling the rows themselves:
                            no grid barrier in gx (gxs keeps its own): 0 = the default (gx.cu: v46d, the pending rows
                            loaded again together, where E > 128 at any G; v46, each row's repeats in turn, where
                            E <= 128 at G <= 32; the barrier elsewhere), 1 = v46d at any G, 2 = v46 at any G, -1 =
                            off (3 and above act as 1). Where a flagged form runs, gx_lean_bar has no effect on gx.
                            The same bits either way */
  int gx_clear;          /* v47 (session 42): route WITH a moe_buf by gx where gx takes the call without it, moe_buf
                            cleared inside gx's launch by warps beside the routing warps (gx.cu mr_cuda_gx_clear_mode):
                            0 = auto (gx.cu MR_GX_CLEAR_AUTO: mode 2 where k >= 8, E >= 128, T >= 1024; lab call 129),
                            1 = on, the clearing warps starting at once, 2 = on, the
                            clearing warps starting after their CTA's gating, -1 = off (3 and above act as 1; the
                            lean barrier where gx's rule takes the barrier, knob gx_lean_bar aside). The same bits
                            either way */
  int gx_probe;          /* lab (session 41): gx's route kernel returns at phase end N (1 - 4; gx.cu MR_GX_PROBES),
                            outputs WRONG; no effect unless the library is built with -DMR_GX_PROBES=1 */
  int gxs_gate_zero;     /* v26: where route's gate kernel before gxs is the segment kernel (mr_cuda_gate_segmented),
                            it zeroes gxs's barrier word (its CTA 0, before it lets the next launch start) in place
                            of the zeroing launch between them: 0 = the default
                            (gx.cu MR_GXS_GATE_ZERO), 1 = on, -1 = off. The same bits either way */
  int clear_tail;        /* moe_buf cleared by a launch of its own after the routing (v25, gx.cu
                            mr_cuda_launch_clear_tail), where the call without the moe_buf takes gx or gxs: those
                            cooperative launches let the next launch start as soon as they are resident, so the
                            clear comes up beside them: 0 = auto (gx.cu MR_CLEAR_TAIL_MIN_N: route from T*k =
                            262144), 1 = on there (route and sort),
                            2 = on there with the clear split by thread (its first form, lab), 3 = a memset of
                            moe_buf before the routing, on every path (v36, lab), -1 = off (the
                            paths with a moe_buf). The same bits either way */
  int p_seg_chain;       /* route with a moe_buf by P (large.cu), rows the gate kernel segments: the chain's order
                            (the gate kernel uncapped, with its filter, then the zeroing launch and P) instead of the
                            zeroing launch, the gate kernel capped at 512 threads per SM and P beside it (v27):
                            0 = auto (large.cu mr_l_p_seg_chain: from T*k = 65536 where E > 128, else 131072),
                            1 = always, -1 = never. The same bits either way */
  int gate_filt;         /* the warp-per-row gate kernel's fp32-key rows (FULL, GROUPED; k <= 16) pick their top k by
                            a filter on the k-th largest lane maximum and a rank count in shared memory instead of
                            the merge of truncated keys (v31, gate.cuh mr_top_filter): 0 = auto (gate.cu
                            mr_gate_filt_on: from T = 4096, 1024 for 256 < E <= 512 and for sigmoid rows without groups), -1 = never, > 0 =
                            from this T. Since v34 also the 16-bit softmax rows with 16 elements per lane (PACKED,
                            256 < E <= 512, k <= 16: gate.cu mr_gate_filt_packed_on, auto from T = 1024). The same bits
                            either way */
  int gate_filt_approx;  /* where the filter runs, sigmoid rows without groups or with groups in whole lanes (v31c)
                            filter on approximate keys first
                            (ex2.approx / rcp.approx, within a bound of the exact ones) and compute exact keys for
                            the candidates only (v31b, gate.cuh mr_sig_filter_row): 0 = on (default), -1 = off
                            (the exact keys of every element). The same bits either way */
  int gate_sig_seg;      /* v33: where the filter on approximate keys takes sigmoid rows without groups (E 128 - 512,
                            k <= 16), those rows by segments of 16 lanes, two per warp (gate.cu mr_gate_sigseg_kernel)
                            instead of a warp per row: 0 = auto (gate.cu mr_gate_sigseg_on, v33b: 144 < E <= 384,
                            k <= 8, from T = 16384, E > 256 from 8192), 1 = on (also grouped rows whose groups are
                            whole segment lanes: v35's lab form, not in the automatic rule), -1 = off. The same bits
                            either way */
  int tiny_rows;         /* tiny.cu's route of 16-bit softmax rows at T = 2 .. 4 (T*k <= 32, k <= 16, E <= 512,
                            T <= U <= 128, no expert mask, not the cluster form) by the rows form (v49, lab;
                            tiny.cuh mr_tiny_rows_kernel): the T rows gated by one warp side by side, the layout from
                            its registers, no barrier: 0 = off (the one-pass route), 1 = on, 2 = on with the padding
                            of blocks 0 .. k-1 written during gating by the CTA's other warps. The same bits */
} mr_cuda_tuning;
extern mr_cuda_tuning mr_cuda_tune;
/* A lab knob's reading: > 0 on, < 0 off, 0 its automatic rule or default (auto_on) */
static inline int mr_knob_on(int knob, int auto_on) { return knob > 0 || (knob == 0 && auto_on); }

/* Above the one-launch bounds, which path: 1 = the run-1 chain, 0 = the three
 * launches of large.cu. Measured (bench/results/run4, large_lab): large.cu is
 * faster without moe_buf (sort 13.1 vs 15.8 us, route 12.2 vs 14.1 at
 * T = 1024, DeepSeek-R1 sizes), the run-1 chain with it (its clear runs at a
 * higher rate: route + buf 93 vs 113 - 303 us at T = 16384). */
static inline int mr_cuda_large_v1(size_t moe_buf_bytes) {
  if (mr_cuda_tune.general_v1 == 1) return 1;
  if (mr_cuda_tune.general_v1 == 2) return 0;
  return moe_buf_bytes > 0;
}

/* Where the last failing launch was issued (file:line), for the message. */
void mr_cuda_note_where(const char* file, int line);
#define MR_TRY(expr)                              \
  do {                                            \
    cudaError_t e_ = (expr);                      \
    if (e_ != cudaSuccess) {                      \
      mr_cuda_note_where(__FILE__, __LINE__);     \
      return e_;                                  \
    }                                             \
  } while (0)

/* Per-device caches hold this many devices (a higher index is not cached). */
#define MR_MAX_DEVICES 64
/* The current device, or -1 (no usable device; the error is cleared). */
int mr_cuda_current_device(void);
/* The current device's slot in a per-device table of MR_MAX_DEVICES entries, or -1 (none, or beyond the table). */
int mr_cuda_device_slot(void);
/* Multiprocessor count of the current device (cached per device). */
int mr_cuda_sm_count(void);
/* 1 when the current device launches cooperative kernels (cached per device). */
int mr_cuda_coop_launch(void);
int mr_cuda_cc_major(void); /* compute capability major of the current device (cached) */
int mr_cuda_no_cluster(void); /* MOEROUTE_CUDA_NO_CLUSTER=1: no cluster kernel (racecheck runs) */
int mr_cuda_pdl_allowed(void); /* PDL may be used: sm_90+ and MOEROUTE_PDL is not "0" */
int mr_cuda_pdl_on(void);   /* the decode launches use PDL (knob decode_pdl, else mr_cuda_pdl_allowed) */
/* How many clear CTAs of `threads` threads a moe_buf of `bytes` gets (the
 * one-launch paths and the run-1 general path). */
int mr_cuda_clear_ctas(size_t bytes, int threads);

/* tiny.cu's cluster form with C = 16 (a non-portable size): 1 once the current device refused it (the attribute or
 * the launch: MPS, green contexts, a partitioned device); then C = 8 there. mr_cuda_tiny16_refuse marks it. */
int mr_cuda_tiny16_refused(void);
void mr_cuda_tiny16_refuse(void);
/* tiny.cu's cluster form (lab knob tiny_cluster): its C for cfg, 0 where it does not run. */
int mr_cuda_tiny_cluster_c(const mr_config* cfg, const mr_gate_args* a);
/* tiny.cu's warm pass (lab knob tiny_warm): 1 where route runs it. */
int mr_cuda_tiny_warm_c(const mr_config* cfg, const mr_gate_args* a);
/* tiny.cu's filter rows (lab knob tiny_filt, v40): 1 where route runs them. */
int mr_cuda_tiny_filt_c(const mr_config* cfg, const mr_gate_args* a);
/* tiny.cu's blocks by word ownership (lab knob tiny_op_own): 1 where route runs them. */
int mr_cuda_tiny_own_c(const mr_config* cfg, const mr_gate_args* a);
/* tiny.cu's grouped wide rows with unrolled group ranks (lab knob wide_rank_unroll): 1 where route runs them. */
int mr_cuda_tiny_ru_c(const mr_config* cfg, const mr_gate_args* a);
/* tiny.cu's rows form (lab knob tiny_rows, v49): 1 where route runs it without an expert mask. */
int mr_cuda_tiny_rows_c(const mr_config* cfg, const mr_gate_args* a);

/* Build the gating arguments for cfg. */
void mr_cuda_gate_args_init(const mr_config* cfg, const void* logits, const float* bias, mr_gate_args* a);
void mr_cuda_sort_out_init(const mr_config* cfg, const moeroute_buffers* b, mr_sort_out* o);

/* gate.cu: topk of every row, one warp per row. */
cudaError_t mr_cuda_launch_gate(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids, float* topk_weights,
                                cudaStream_t stream);
/* The same, its first CTAs clearing clear_bytes at clear_buf meanwhile (the run-1 route chain at large T). */
/* v26: the gate launch whose CTA 0 zeroes gxs's barrier word (and the clear's counter) before it lets the next
 * launch start (gate.cu mr_gate_enter); segment rows only, else cudaErrorNotSupported */
cudaError_t mr_cuda_launch_gate_zero(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                     float* topk_weights, uint32_t* zero_word, cudaStream_t stream);
cudaError_t mr_cuda_launch_gate_clear(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                      float* topk_weights, unsigned char* clear_buf, size_t clear_bytes,
                                      cudaStream_t stream);

/* The same with at most threads_per_sm of the gate launch's threads per SM (0 = no cap). */
cudaError_t mr_cuda_launch_gate_capped(const mr_config* cfg, const mr_gate_args* a, int32_t* topk_ids,
                                       float* topk_weights, unsigned threads_per_sm, cudaStream_t stream);

/* sort.cu: the one-launch sort for small T*k, and the general multi-kernel sort. */
int mr_cuda_small_sort_fits(const mr_config* cfg);
/* The lanes per row (4, 8 or 16) when the gate kernel gates cfg's rows by segments (gate.cu,
 * v6), else 0. */
int mr_cuda_gate_segmented(const mr_config* cfg, const mr_gate_args* a);
/* The mid sort (mid.cu): one launch, no workspace, T*k above the small sort's bound. */
int mr_cuda_mid_sort_fits(const mr_config* cfg);
cudaError_t mr_cuda_launch_mid_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                    const float* topk_weights, cudaStream_t stream);
cudaError_t mr_cuda_launch_small_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                      const float* topk_weights, cudaStream_t stream);
size_t mr_cuda_general_sort_workspace(const mr_config* cfg);
cudaError_t mr_cuda_launch_general_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                        const float* topk_weights, void* workspace, cudaStream_t stream);

/* tiny.cu: the one-launch route for small decode calls (one routing CTA, a one-warp
 * sort); _takes: the dispatch gives it the call. */
/* gate.cu: the row can take the wide gate rows (four warps per row), T bound aside. */
int mr_cuda_gate_wide_shape(const mr_gate_args* a, int kind);
int mr_cuda_tiny_takes(const mr_config* cfg, const mr_gate_args* a);
int mr_cuda_tiny_sort_fits(const mr_config* cfg);
cudaError_t mr_cuda_launch_tiny_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                     const float* topk_weights, cudaStream_t stream);
/* tmsort.cu: the token-mask sort at decode (any U), one launch, no workspace. */
int mr_cuda_tm_sort_fits(const mr_config* cfg);
/* entry.cu: one of the one-launch decode sorts fits (small, tiny or token-mask): route's pair can run */
int mr_cuda_decode_sort_fits(const mr_config* cfg);
int mr_cuda_ctm_route_takes(const mr_config* cfg, const mr_gate_args* a);
int mr_cuda_ctm_sort_takes(const mr_config* cfg);
int mr_cuda_ctm_route_sort_takes(const mr_config* cfg, const mr_gate_args* a);
int mr_cuda_ctm_refused(void); /* 1 once the current device refused a ctm launch (then ctm takes nothing) */
cudaError_t mr_cuda_launch_ctm_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                     int32_t* topk_ids, float* topk_weights, cudaStream_t stream);
cudaError_t mr_cuda_launch_ctm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                    const float* topk_weights, cudaStream_t stream);
cudaError_t mr_cuda_launch_tm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                   const float* topk_weights, cudaStream_t stream);
cudaError_t mr_cuda_launch_tiny_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                      int32_t* topk_ids, float* topk_weights, cudaStream_t stream);

/* gtm.cu: the grid token-mask sort (two launches, any T >= 1 where its masks fit; v16, lab).
 * _fits: it can run cfg; _takes: the dispatch gives it the call (knob gtm; op is
 * MOEROUTE_OP_SORT for the sort entry point, MOEROUTE_OP_ROUTE for route's sort). */
int mr_cuda_gtm_fits(const mr_config* cfg);
int mr_cuda_gtm_takes(const mr_config* cfg, int op);
size_t mr_cuda_gtm_workspace(const mr_config* cfg);
cudaError_t mr_cuda_launch_gtm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                    const float* topk_weights, void* workspace, cudaStream_t stream);
/* gtm_gate.cu: route's gating and masks in one launch (K1g), then K2, for PACKED rows (16-bit
 * softmax without bias or groups); cudaErrorNotSupported, nothing launched, for other rows. */
cudaError_t mr_cuda_launch_gtm_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                     int32_t* topk_ids, float* topk_weights, void* workspace, cudaStream_t stream);

/* gx.cu: route in one cooperative launch over the grid (v22). _takes: the dispatch gives it the call
 * (knob gx); _workspace: its bytes (0 where it cannot run: T beyond 32 rows per CTA); the launch
 * returns cudaErrorCooperativeLaunchTooLarge when the device refuses it (then route takes the other
 * paths). _ws_reserved: route's workspace query reserves it (no moe_buf, 16-bit logits, E <= 256,
 * k <= 8, T in the auto range or the knob on). */
int mr_cuda_gx_takes(const mr_config* cfg, const mr_gate_args* a);
size_t mr_cuda_gx_workspace(const mr_config* cfg);
int mr_cuda_gx_ws_reserved(const mr_config* cfg);
/* flags: MR_GX_TAIL (below) */
cudaError_t mr_cuda_launch_gx_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                    int32_t* topk_ids, float* topk_weights, void* workspace, int flags,
                                    cudaStream_t stream);

/* gx.cu: the sort in one cooperative launch over the grid (gxs, v23). _takes: the dispatch gives it the
 * sort entry point's call (op SORT) or route's sort after the gate kernel (op ROUTE); _workspace: its
 * bytes (0 where it cannot run); the launch returns cudaErrorCooperativeLaunchTooLarge when the device
 * refuses it (then the caller takes the other paths). */
int mr_cuda_gxs_takes(const mr_config* cfg, moeroute_op op, int seg);
/* gx / gxs launch flags (mr_cuda_launch_gx_route's and mr_cuda_launch_gxs_sort's `flags`): MR_GX_TAIL, a clear
 * follows (mr_cuda_launch_clear_tail with this workspace): zero its piece counter too; MR_GX_ZEROED (gxs, v26): the
 * launch before gxs (the gate kernel, mr_cuda_launch_gate_clear's zero-word form) zeroed the barrier word and the
 * counter, so no zeroing launch runs and gxs waits for that launch at its start */
#define MR_GX_TAIL 1
#define MR_GX_ZEROED 2
/* v47 (gx only): clear o->moe_buf inside gx's launch, the clearing warps starting at once (CLEAR1) or after their
 * CTA's gating (CLEAR2); the caller passes the configuration without the moe_buf (the one gx takes) */
#define MR_GX_CLEAR1 4
#define MR_GX_CLEAR2 8
/* v47 (knob gx_clear): the MR_GX_CLEAR* mode in which route with a moe_buf takes gx where gx takes it without, or 0 */
int mr_cuda_gx_clear_mode(const mr_config* cfg);
#define MR_GX_TAIL_NEXT 32 /* word of the barrier's 256 bytes holding the clear's piece counter (its own line) */
/* v26 (knob gxs_gate_zero): route's segment gate kernel zeroes gxs's barrier word instead of a zeroing launch */
int mr_cuda_gxs_gate_zero_on(void);
/* v25: whether knob clear_tail (0: gx.cu's rule) wants op's moe_buf cleared by mr_cuda_launch_clear_tail (where
 * the call without it takes gx or gxs: entry.cu mr_clear_tail_takes) */
int mr_cuda_clear_tail_wanted(moeroute_op op, const mr_config* cfg);
/* v25: zero moe_buf (bytes at buf) in a launch of its own, after the routing's last launch on the stream
 * (PDL: it comes up while that launch runs; it completes only after it). counter: the workspace of the gx /
 * gxs launch before it, launched with tail = 1 (its zeroing launch zeroed the piece counter there), else
 * NULL (a split by thread: where the device refused the cooperative launch and other paths ran) */
cudaError_t mr_cuda_launch_clear_tail(unsigned char* buf, size_t bytes, void* counter, cudaStream_t stream);
size_t mr_cuda_gxs_workspace(const mr_config* cfg);
cudaError_t mr_cuda_launch_gxs_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                    const float* topk_weights, void* workspace, int flags, cudaStream_t stream);

/* fused.cu: the one-launch route for small T*k. */
int mr_cuda_fused_fits(const mr_config* cfg);
cudaError_t mr_cuda_launch_fused_route(const mr_config* cfg, const mr_gate_args* a, const mr_sort_out* o,
                                       int32_t* topk_ids, float* topk_weights, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* A launch configuration without attributes. */
static inline cudaLaunchConfig_t mr_launch_config(unsigned grid, unsigned threads, size_t smem, cudaStream_t stream) {
  cudaLaunchConfig_t lc;
  memset(&lc, 0, sizeof lc);
  lc.gridDim = dim3(grid, 1, 1);
  lc.blockDim = dim3(threads, 1, 1);
  lc.dynamicSmemBytes = smem;
  lc.stream = stream;
  lc.attrs = NULL;
  lc.numAttrs = 0;
  return lc;
}

/* Programmatic dependent launch (sm_90). Both are no-ops for a kernel launched
 * without the attribute. launch_dependents lets the next launch start; wait
 * returns once the previous launch has completed and its writes are visible. */
__device__ __forceinline__ void mr_pdl_launch_dependents(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void mr_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* The decode launches' programmatic dependent launch (design.md 17; on by default
 * on sm_90+, MOEROUTE_PDL=0 in the environment or the lab knob decode_pdl = -1
 * turn it off): every CTA first waits for the previous work on the stream (a
 * no-op without the attribute), then lets the next launch start, so that a
 * following PDL launch (the next routing call, or an engine's GEMM that waits
 * with griddepcontrol.wait) is scheduled while this call runs. Nothing global is
 * read or written before the wait, so the predecessor may be any kernel. */
__device__ __forceinline__ void mr_pdl_enter(void) {
  mr_pdl_wait();
  mr_pdl_launch_dependents();
}
/* Whether one cluster of lc's shape (its cluster dimension attribute, block and dynamic shared memory) fits on the
 * device: cudaOccupancyMaxActiveClusters, which is not a stream operation, so a call inside a graph capture may ask.
 * Its own error is cleared (not sticky). The non-portable cluster sizes ask before their first launch (tiny.cuh's
 * C = 16, ctm.cu's R = 16): a device that says no (MPS, green contexts, a partitioned device) gets the smaller
 * cluster with nothing launched. */
static inline bool mr_cluster_fits(const void* kernel, const cudaLaunchConfig_t* lc) {
  int n = 0;
  const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, kernel, lc);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess && n > 0;
}
static inline void mr_decode_pdl(cudaLaunchConfig_t* lc, cudaLaunchAttribute* attr, unsigned* n) {
  if (!mr_cuda_pdl_on()) return;
  memset(attr + *n, 0, sizeof *attr);
  attr[*n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[*n].val.programmaticStreamSerializationAllowed = 1;
  ++*n;
  lc->attrs = attr;
  lc->numAttrs = *n;
}

/* A one-launch decode sort (tiny.cu's and tmsort.cu's kernels): `routing` CTAs, then the
 * CTAs that clear moe_buf, with the decode launches' PDL. */
template <typename P>
static inline cudaError_t mr_launch_decode_sort_kernel(void (*kernel)(mr_sort_out, P, const int32_t*, const float*),
                                                       const P& params, unsigned routing, unsigned threads, size_t smem,
                                                       const mr_sort_out* o, const int32_t* topk_ids,
                                                       const float* topk_weights, cudaStream_t stream) {
  const int clear = mr_cuda_clear_ctas(o->moe_buf_bytes, (int)threads);
  cudaLaunchConfig_t lc = mr_launch_config(routing + (unsigned)clear, threads, smem, stream);
  cudaLaunchAttribute attr[1];
  unsigned na = 0;
  mr_decode_pdl(&lc, attr, &na);
  return cudaLaunchKernelEx(&lc, kernel, *o, params, topk_ids, topk_weights);
}

/* ---- decode-path helpers (v3: fused.cu, sort.cu one launch, gate.cu) ---------------
 *
 * Asynchronous stores into another CTA's shared memory that complete on an
 * mbarrier of that CTA (sm_90): a CTA learns that all its inputs have landed
 * by waiting on its own mbarrier, with no cluster-wide barrier and no fence. */
__device__ __forceinline__ uint32_t mr_smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* the same shared-memory address (mr_smem_addr) in CTA `rank` of the cluster */
__device__ __forceinline__ uint32_t mr_mapa(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void mr_st_async_v2(uint32_t remote_addr, uint32_t a, uint32_t b, uint32_t remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.u32 [%0], {%1, %2}, [%3];" ::"r"(remote_addr),
               "r"(a), "r"(b), "r"(remote_bar)
               : "memory");
}
__device__ __forceinline__ void mr_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* one arrival that also announces `bytes` of transactions for the current phase */
__device__ __forceinline__ void mr_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* makes mbarrier.init visible to the cluster (then a cluster barrier, before any remote use) */
__device__ __forceinline__ void mr_fence_mbar_init(void) {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ bool mr_mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
/* cluster barrier arrive without release semantics (pairs with mr_cluster_wait) */
__device__ __forceinline__ void mr_cluster_arrive_relaxed(void) {
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}
/* named CTA barrier: `count` threads (a multiple of 32) on barrier `id` */
__device__ __forceinline__ void mr_bar_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
/* the same without .aligned (barrier.sync), for warps that reach the barrier at different instructions (synccheck
 * reports the aligned form there; gate.cuh's mr_wide_bar is this form) */
__device__ __forceinline__ void mr_bar_sync_n(uint32_t id, uint32_t count) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/* Knobs of the decode path for the lab (dev/); defaults 0. */
typedef struct mr_cuda_perf_knobs {
  int no_warm;       /* 1: no dry-run warps (instruction-cache warming) in the fused and gate kernels */
  int dry_gate_warp; /* fused: the warp that gates a zero row ahead (0 = warp 6; 4 = warp 0's scheduler) */
} mr_cuda_perf_knobs;
#ifdef __cplusplus
extern "C" {
#endif
extern mr_cuda_perf_knobs mr_cuda_perf;
#ifdef __cplusplus
}
#endif

#endif /* MOEROUTE_CUDA_COMMON_CUH */
