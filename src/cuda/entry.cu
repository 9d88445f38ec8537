/*
 * entry.cu - the public CUDA entry points (moeroute_cuda_*): validate on the
 * host, check the specialisation list, pick a path, launch, check every
 * launch.
 *
 * Paths (docs/design.md 17-38; the measurements in docs/perf-log.md v5-v24):
 *
 *   route  PACKED rows (16-bit softmax without bias   gx: a zeroing launch, then one
 *          or groups), 16 <= E <= 256, k <= 8, no     cooperative launch over the grid
 *          moe_buf, 256 <= T <= 4096 wherever the     (gx.cu, design 37; flagged rows
 *          pair does not fit (v45b)                   without its barrier where E > 128
 *                                                     (v46d) or G <= 32 (v46))
 *          the same with a moe_buf where k >= 8,         gx with clearing warps beside the
 *          E >= 128, T >= 1024 (v47)                   routing warps and CTAs that only
 *                                                       clear (gx.cu mr_cuda_gx_clear_mode)
 *          4 <= k <= 10, E >= 128, T*k >= 16384         the gate kernel, then gxs: a zeroing
 *          (30720 for E > 384; for rows the gate        launch (none for segmented rows:
 *          kernel segments 65536 where E > 128, else    the gate kernel zeroes gxs's word,
 *          98304), no moe_buf, where gxs fits (E <=     v26) and one cooperative sort
 *          512, 48 KB of shared memory)                 launch (gx.cu mr_gxs_auto, design 38)
 *          the same with a moe_buf, T*k >= 262144       the same launches, then a clear of
 *                                                       moe_buf by a launch of its own
 *                                                       (gx.cu, design 39)
 *          16-bit softmax rows without bias or groups,  one launch: one routing CTA and
 *          T*k <= 32 and T = 1 (any E), or T <= 8       a one-warp sort (tiny.cu; at T = 1
 *          (T <= 16 for E <= 256, T*k <= 96),           or by 4 - 8 CTAs in one pass
 *          T*E <= 512, min(T*k, E) <= 16, E <= 128;     without a mask no sort at all:
 *          sigmoid / sqrt_softplus rows the wide gate   mr_tiny_solo_*)
 *          rows take (gate.cu), T = 1, T*k <= 32
 *          else T*k <= 1024 and E*ceil(T*k/32) <= 6144:
 *            with PDL (default on sm_90+)               the pair: gate kernel, then the
 *                                                       one-launch sort (2 launches)
 *            without PDL                                one cluster launch (fused.cu)
 *          else T*k <= 16384                            the mid pair: gate kernel, then the
 *                                                       mid sort (mid.cu, one launch, which
 *                                                       also clears moe_buf), or ctm's sort
 *                                                       where its rule takes the sort
 *                                                       (ctm.cu, design 30: no moe_buf)
 *          otherwise, where ctm's rule takes the sort   gate kernel, then ctm's sort
 *          and E <= 384
 *          otherwise, without a moe_buf, rows the gate  the large path (large.cu, design 31):
 *          kernel segments and T*k <= 65536             gate by segments + rank, scan,
 *                                                       place: 3 launches chained by PDL
 *          otherwise, without a moe_buf, T < 16384,     the large path with a warp per row
 *          rows not segmented (16-bit softmax:          in its first launch
 *          T*k < 40960)
 *          otherwise, with a moe_buf                    segmented rows below T*k = 65536
 *                                                       (E > 128) / 131072: a zeroing launch,
 *                                                       the gate kernel (<= 512 threads per
 *                                                       SM); other rows and segmented rows
 *                                                       from those bounds (v27): the gate
 *                                                       kernel, a zeroing launch; then P
 *                                                       (large.cu: one
 *                                                       cooperative launch, rank / scan /
 *                                                       place with grid barriers, and warps
 *                                                       that clear moe_buf beside them;
 *                                                       design 29)
 *          otherwise (T >= 16384, 16-bit softmax from   the chain: gate kernel, then the
 *          T*k 40960, segmented rows above T*k 65536,   general sort
 *          or a first large.cu launch over 48 KB)
 *   gate   any T                                     gate kernel (or nothing at T = 0);
 *                                                    16-bit softmax rows, E <= 256, k <= 8
 *                                                    by segments of 16/8/4 lanes at large T
 *   sort   4 <= k <= 10, E >= 128, T*k >= 49152      gxs (gx.cu, design 38)
 *          (16384 for 256 < E <= 384, 20480 above),
 *          no moe_buf, where gxs fits
 *          where ctm's rule takes it                   one cluster launch (ctm.cu)
 *          same bound as the pair                    one launch (sort.cu)
 *          T*k <= 16384                              one launch (mid.cu)
 *          otherwise                                  the large path (rank, scan,
 *                                                     place; 3 launches) without a
 *                                                     moe_buf; with one, a zeroing
 *                                                     launch then P (large.cu, design 29)
 *
 * Every launch is asynchronous on the caller's stream, allocates nothing, reads
 * nothing back, and is graph-capturable (cudaLaunchKernelEx with a cluster and/or
 * a programmatic-stream-serialization attribute; cudaFuncSetAttribute only once per
 * device for ctm's clusters of 16 (non-portable size), no memset on another stream).
 * Where the device refuses ctm's cluster launch, the call runs the path it replaced.
 * Every kernel launched with PDL as the first of a call (tiny, cluster, gate, one-launch
 * sort, ctm) waits (griddepcontrol.wait) before it touches global memory, so it is safe
 * after any predecessor; the first launch of the large and general paths has no PDL
 * attribute. At T = 0 (no PDL choice to make) route runs the
 * cluster kernel, or the one-launch sort under MOEROUTE_CUDA_NO_CLUSTER.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/common.cuh"
#include "cuda/large.cuh"

/* every knob automatic (general_v1 = 0: mr_cuda_large_v1 picks the large-T path) */
mr_cuda_tuning mr_cuda_tune = {0, 0, 0, 0};

/* ---- small host helpers ---------------------------------------------------- */

static __thread const char* mr_where_file = "";
static __thread int mr_where_line = 0;

extern "C" void mr_cuda_note_where(const char* file, int line) {
  mr_where_file = file;
  mr_where_line = line;
}

extern "C" int mr_cuda_current_device(void) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

extern "C" int mr_cuda_device_slot(void) {
  const int d = mr_cuda_current_device();
  return d < MR_MAX_DEVICES ? d : -1;
}

/* A device attribute of the current device, cached per device (0 = not read
 * yet; benign race: every writer writes the same value); `fallback` when there
 * is no device or the query fails (not cached). */
static int mr_device_attr(int* cache, cudaDeviceAttr attr, int fallback) {
  const int dev = mr_cuda_current_device();
  int v = 0;
  if (dev < 0) return fallback;
  if (dev < MR_MAX_DEVICES && cache[dev] > 0) return cache[dev];
  if (cudaDeviceGetAttribute(&v, attr, dev) != cudaSuccess || v < 1) {
    (void)cudaGetLastError();
    return fallback;
  }
  if (dev < MR_MAX_DEVICES) cache[dev] = v;
  return v;
}

static int mr_cc_majors[MR_MAX_DEVICES];
extern "C" int mr_cuda_cc_major(void) { return mr_device_attr(mr_cc_majors, cudaDevAttrComputeCapabilityMajor, 0); }

static int mr_sm_counts[MR_MAX_DEVICES];
extern "C" int mr_cuda_sm_count(void) { return mr_device_attr(mr_sm_counts, cudaDevAttrMultiProcessorCount, 132); }

static int mr_coop_launch[MR_MAX_DEVICES];
extern "C" int mr_cuda_coop_launch(void) { return mr_device_attr(mr_coop_launch, cudaDevAttrCooperativeLaunch, 0); }

/* An environment switch, read once (*cache: -1 = not read yet; benign race):
 * 1 when the variable is exactly `on`. */
static int mr_env_is(const char* name, const char* on, int* cache) {
  if (*cache < 0) {
    const char* s = getenv(name);
    *cache = (s != NULL && strcmp(s, on) == 0) ? 1 : 0;
  }
  return *cache;
}

/* PDL for the decode launches: the knob, else MOEROUTE_PDL ("0" turns it off),
 * and sm_90+ (griddepcontrol). */
static int mr_pdl_off_env = -1;
extern "C" int mr_cuda_pdl_allowed(void) {
  return !mr_env_is("MOEROUTE_PDL", "0", &mr_pdl_off_env) && mr_cuda_cc_major() >= 9;
}
extern "C" int mr_cuda_pdl_on(void) {
  if (mr_cuda_tune.decode_pdl != 0) return mr_cuda_tune.decode_pdl > 0;
  return mr_cuda_pdl_allowed();
}

/* MOEROUTE_CUDA_NO_CLUSTER=1: route never takes the cluster kernel of fused.cu
 * (tiny.cu, the pair or the multi-launch path instead). For compute-sanitizer
 * racecheck, which hangs in that kernel's st.async/mbarrier exchange
 * (bench/sanitize.sh); not a tuning switch. */
static int mr_no_cluster_env = -1;
extern "C" int mr_cuda_no_cluster(void) { return mr_env_is("MOEROUTE_CUDA_NO_CLUSTER", "1", &mr_no_cluster_env); }

extern "C" int mr_cuda_clear_ctas(size_t bytes, int threads) {
  if (bytes == 0) return 0;
  /* 4 x 16-byte stores per thread per pass; at most four CTAs per SM (grid-stride
   * beyond). Run 1 capped this at two (512 storing threads per SM) and the clear
   * ran at ~3.5 TB/s against the memset's 4.4-4.6 (dev/large-notes.md); the
   * routing CTAs of these launches are few (8 CTAs, or E/8 scan CTAs), so the
   * extra clear CTAs do not crowd them out. Used by the one-launch paths and the
   * run-1 general path; the large path (large.cu) sizes its own clear. */
  const size_t per_cta = (size_t)threads * 16u * 4u;
  size_t n = (bytes + per_cta - 1) / per_cta;
  const size_t cap = (size_t)mr_cuda_sm_count() * 4u;
  if (n > cap) n = cap;
  return (int)n;
}

/* ---- planning -------------------------------------------------------------- */

/* 1 if op with cfg has a kernel in this build (the specialisation list of
 * common.cuh); the same function gates the dispatch. */
static int mr_cuda_has_kernel(moeroute_op op, const mr_config* cfg) {
  if (cfg->num_experts < 1 || cfg->num_experts > MOEROUTE_MAX_EXPERTS) return 0;
  if (op == MOEROUTE_OP_SORT) return 1; /* sort kernels are not specialised */
  return mr_cuda_epl_bucket(cfg->num_experts) != 0 && mr_cuda_dtype_supported(cfg->dtype);
}

/* Route needs no general-path workspace: T = 0, or the cluster kernel fits
 * (tiny.cu takes only some of the calls it fits, and the general path is the
 * fallback of the others, so it does not count here). */
static int mr_route_one_launch(const mr_config* cfg) {
  if (cfg->num_tokens == 0) return 1; /* also the forced-general lab setting: nothing to gate */
  return !mr_cuda_tune.force_general && mr_cuda_fused_fits(cfg);
}
/* One of the one-launch decode sorts fits (mr_cuda_launch_decode_sort below); gx's rule asks it too (gx.cu). */
extern "C" int mr_cuda_decode_sort_fits(const mr_config* cfg) {
  return mr_cuda_small_sort_fits(cfg) || mr_cuda_tiny_sort_fits(cfg) || mr_cuda_tm_sort_fits(cfg);
}
/* The pair (gate kernel, then the one-launch sort, PDL between them) can run
 * this route: the one-launch sort fits. Its top-k goes through the caller's
 * topk buffers or, without them, the workspace. */
static int mr_route_pair_fits(const mr_config* cfg) {
  return cfg->num_tokens > 0 && mr_cuda_decode_sort_fits(cfg);
}
/* Route at decode, which kernels (perf-log v5, lab run 6b, kernel metric with
 * PDL on): tiny.cu where it takes the call (one launch, fastest there); else
 * the pair, which measured 0.96 - 0.99x the cluster kernel's time at T = 4..16
 * for every preset and 0.94 - 1.00x at T = 1 for the fp32-key kinds (its gate
 * kernel spreads the rows over SMs and PDL hides the second launch); the
 * cluster kernel of fused.cu when PDL is off (there it is 1.03 - 1.24x faster
 * than the pair). */
/* Results runs 21 / 22 had route take the mid pair instead of the token-mask sort for 16-bit
 * softmax rows with E >= 256 and T*k > 768 without a moe_buf (DeepSeek-R1 softmax T = 128: gate + the
 * token-mask sort 7.16 against the mid pair's 6.69 us). That rule was removed after results run 26
 * (H200: the chain, gate + the token-mask sort, 6.23 against route's mid pair 6.62) and lab call 53
 * (dev/runs/run53/tm_nobuf.log, H100, kernel metric: route with the token-mask sort 6.37 / 6.29 /
 * 7.00 us against the mid pair 6.78 / 6.88 / 7.12 at T = 128 / 192 / 256): the pair keeps the
 * token-mask sort wherever it fits (docs/targets.md L5). */
static int mr_route_use_pair(const mr_config* cfg) {
  if (!mr_route_pair_fits(cfg) || mr_cuda_tune.force_general || mr_cuda_tune.fused_cluster > 0 ||
      mr_cuda_tune.route_pair < 0)
    return 0;
  if (mr_cuda_tune.route_pair > 0) return 1;
  return mr_cuda_pdl_on();
}
/* Route above the one-launch sort's bound and up to the mid sort's: the gate
 * kernel, then the mid sort (mid.cu), PDL between them when it is on. The
 * top-k travels through the caller's buffers or the workspace, as the pair's. */
static int mr_route_use_mid(const mr_config* cfg) {
  if (cfg->num_tokens <= 0 || mr_cuda_tune.force_general || !mr_cuda_mid_sort_fits(cfg)) return 0;
  /* Where the cluster kernel also fits (E * ceil(T*k/32) in 5121..6144, above the
   * pair's bound), the mid pair when PDL is on, as the pair would have run
   * (lab call 20: Kimi-K2 T = 64 as the pair 10.03 us, T = 128 as the mid pair
   * 8.04); the cluster kernel when it is off or forced by knob. */
  if (!mr_route_one_launch(cfg)) return 1;
  return mr_cuda_tune.fused_cluster <= 0 && mr_cuda_tune.route_pair >= 0 && mr_cuda_pdl_on();
}
static int mr_sort_one_launch(const mr_config* cfg) {
  if (cfg->num_tokens == 0) return 1;
  return !mr_cuda_tune.force_general && mr_cuda_decode_sort_fits(cfg);
}

/* The one-launch sort at decode (the sort entry point and the pair's second launch):
 * tiny.cu's one-pass sort where it fits (T <= 32, T*k <= 256, U >= T; lab calls 22
 * and 23), else the token-mask sort of tmsort.cu where it wins (any U, E <= 384,
 * 384 <= T*k <= 768, or 1024 for E <= 160; lab calls 26, 27),
 * else the mask-table sort of sort.cuh (8 CTAs). None needs workspace. */
static cudaError_t mr_cuda_launch_decode_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* topk_ids,
                                              const float* topk_weights, cudaStream_t s) {
  if (cfg->num_tokens > 0 && mr_cuda_tiny_sort_fits(cfg))
    return mr_cuda_launch_tiny_sort(cfg, o, topk_ids, topk_weights, s);
  if (cfg->num_tokens > 0 && mr_cuda_tm_sort_fits(cfg))
    return mr_cuda_launch_tm_sort(cfg, o, topk_ids, topk_weights, s);
  return mr_cuda_launch_small_sort(cfg, o, topk_ids, topk_weights, s);
}

/* ctm's sort where its rule takes the call (ctm.cu): 1 when it ran, or failed for a reason
 * other than the device refusing its cluster launch (*err holds the result); 0 when the
 * caller runs the path ctm replaced (also after a refusal: the error is cleared). */
static int mr_try_ctm_sort(const mr_config* cfg, const mr_sort_out* o, const int32_t* ids, const float* w,
                           cudaStream_t s, cudaError_t* err) {
  if (cfg->num_tokens <= 0 || mr_cuda_tune.force_general || !mr_cuda_ctm_sort_takes(cfg)) return 0;
  *err = mr_cuda_launch_ctm_sort(cfg, o, ids, w, s);
  if (*err == cudaSuccess || !mr_cuda_ctm_refused()) return 1;
  (void)cudaGetLastError();
  return 0;
}

#define MR_ALIGN256(x) (((x) + 255u) & ~(size_t)255u)

/* gtm's 16-byte mask loads and 64-bit status words, and gx's count rows (16-byte vectors), want a
 * 16-byte aligned workspace (the API does not ask for one): elsewhere the call takes the other
 * paths, whose workspace the size query also covers (it reserves the larger). */
static int mr_ws_aligned16(const moeroute_buffers* b) { return ((uintptr_t)b->workspace & 15u) == 0; }

/* Bytes of one of route's workspace top-k arrays (ids, then weights): the
 * pair's, or after the general sort's workspace in the chain (large.cu). */
static size_t mr_route_topk_half(const mr_config* cfg) {
  return MR_ALIGN256((size_t)cfg->num_tokens * (size_t)cfg->top_k * 4u);
}

/* Route's top-k between its gating and its sort: the caller's topk_ids / topk_weights where given, else
 * the two halves (mr_route_topk_half each) from byte `offset` of the workspace. */
static void mr_route_topk_bufs(const mr_config* cfg, const moeroute_buffers* b, size_t offset, int32_t** ids,
                               float** wts) {
  unsigned char* at = (unsigned char*)b->workspace + offset;
  *ids = b->topk_ids ? b->topk_ids : (int32_t*)at;
  *wts = b->topk_weights ? b->topk_weights : (float*)(at + mr_route_topk_half(cfg));
}

static size_t mr_cuda_workspace_one(moeroute_op op, const mr_config* cfg) {
  switch (op) {
    case MOEROUTE_OP_ROUTE:
    { /* the pair's (or the mid pair's) top-k: reserved whenever either fits, whether
       * or not it is chosen (the size must not depend on PDL or optional outputs) */
      const size_t pair =
          mr_route_pair_fits(cfg) || mr_cuda_mid_sort_fits(cfg) ? 2u * mr_route_topk_half(cfg) : 0u;
      size_t need = pair;
      if (!mr_route_one_launch(cfg)) {
        /* the top-k between gating and sorting, always reserved (the size must
         * not depend on which optional outputs the caller passes) */
        const size_t general = mr_cuda_general_sort_workspace(cfg) + 2u * mr_route_topk_half(cfg);
        if (general > need) need = general;
      }
      /* gtm's workspace, then the top-k, at every T it takes (decode sizes too: route asks
       * gtm first; the review of session 17 found this returned early there) */
      if (mr_cuda_gtm_takes(cfg, MOEROUTE_OP_ROUTE)) {
        const size_t gtm = mr_cuda_gtm_workspace(cfg) + 2u * mr_route_topk_half(cfg);
        if (gtm > need) need = gtm;
      }
      /* gx's barrier word and count matrix (gx.cu; <= 37 KB, less than the sort's workspace in
       * its auto range) */
      if (mr_cuda_gx_ws_reserved(cfg)) {
        const size_t gx = mr_cuda_gx_workspace(cfg);
        if (gx > need) need = gx;
      }
      /* gxs after the gate kernel (v23 - v24): its barrier word, count matrix, prefixes and totals, or the
       * general sort's workspace where the device refuses the cooperative launch, then the top-k at the end */
      if (mr_cuda_gxs_takes(cfg, MOEROUTE_OP_ROUTE, 0)) { /* the lower bound: the bias is not known here */
        const size_t gs = mr_cuda_gxs_workspace(cfg), gen = mr_cuda_general_sort_workspace(cfg);
        const size_t gxs = (gs > gen ? gs : gen) + 2u * mr_route_topk_half(cfg);
        if (gxs > need) need = gxs;
      }
      return need;
    }
    case MOEROUTE_OP_SORT:
    {
      const size_t base = mr_sort_one_launch(cfg) ? 0 : mr_cuda_general_sort_workspace(cfg);
      const size_t gtm = mr_cuda_gtm_takes(cfg, MOEROUTE_OP_SORT) ? mr_cuda_gtm_workspace(cfg) : 0u;
      const size_t gxs = mr_cuda_gxs_takes(cfg, MOEROUTE_OP_SORT, 0) ? mr_cuda_gxs_workspace(cfg) : 0u;
      const size_t m = gtm > base ? gtm : base;
      return gxs > m ? gxs : m;
    }
    case MOEROUTE_OP_GATE:
    default:
      return 0;
  }
}
/* With a moe_buf, also what the same call without one needs: where the clear runs as a launch of its
 * own (v25, mr_clear_tail_takes) the routing is the call without it. Reserved whatever the knob, so
 * the size depends on the configuration alone. */
static size_t mr_cuda_workspace_needed(moeroute_op op, const mr_config* cfg) {
  const size_t need = mr_cuda_workspace_one(op, cfg);
  if (cfg->moe_buf_bytes == 0) return need;
  mr_config c = *cfg;
  c.moe_buf_bytes = 0;
  const size_t bare = mr_cuda_workspace_one(op, &c);
  return bare > need ? bare : need;
}

/* v25 (knob clear_tail, gx.cu mr_cuda_clear_tail_wanted: route from T*k = 262144): route or sort with a
 * moe_buf runs as the same call without one, then clears moe_buf by a launch of its own
 * (mr_cuda_launch_clear_tail), where that call takes gx or gxs: their cooperative launches let the clear come
 * up beside them at once. Elsewhere the clear stays inside the routing's launches (the other paths' first CTAs
 * or P's clearing warps). */
static int mr_clear_tail_takes(moeroute_op op, const mr_config* cfg, const mr_gate_args* ga,
                               const moeroute_buffers* b) {
  if (cfg->moe_buf_bytes == 0 || cfg->num_tokens == 0 || !mr_ws_aligned16(b) || !mr_cuda_clear_tail_wanted(op, cfg))
    return 0;
  if (mr_cuda_tune.clear_tail == 3) return 1; /* v36 (lab): the memset first, any path */
  mr_config c = *cfg;
  c.moe_buf_bytes = 0;
  if (op == MOEROUTE_OP_SORT) return mr_cuda_gxs_takes(&c, MOEROUTE_OP_SORT, 0);
  return mr_cuda_gx_takes(&c, ga) || mr_cuda_gxs_takes(&c, MOEROUTE_OP_ROUTE, mr_cuda_gate_segmented(&c, ga));
}
/* Takes the moe_buf out of the call (cfg, o) into *buf / *bytes where mr_clear_tail_takes says so */
static void mr_clear_tail_split(moeroute_op op, mr_config* cfg, const mr_gate_args* ga, const moeroute_buffers* b,
                                mr_sort_out* o, unsigned char** buf, size_t* bytes) {
  *buf = NULL;
  *bytes = 0;
  if (!mr_clear_tail_takes(op, cfg, ga, b)) return;
  *buf = o->moe_buf;
  *bytes = o->moe_buf_bytes;
  cfg->moe_buf_bytes = 0;
  o->moe_buf = NULL;
  o->moe_buf_bytes = 0;
}

/* v36 (knob clear_tail = 3, lab): moe_buf split off by mr_clear_tail_split is cleared by a memset on the stream
 * before the routing (the call without it then runs on whatever path takes it), instead of a clear launch after it;
 * *bytes becomes 0, so no tail clear follows. The question: at large T the clear launches (P's warps, the tail
 * kernel) ran below the memset's rate on the H200 (results run 57: route + buf above memset + route alone). */
static cudaError_t mr_clear_memset_first(unsigned char* buf, size_t* bytes, cudaStream_t s) {
  if (*bytes == 0 || mr_cuda_tune.clear_tail != 3) return cudaSuccess;
  const size_t n = *bytes;
  *bytes = 0;
  return cudaMemsetAsync(buf, 0, n, s);
}

static moeroute_status mr_cuda_fail_launch(const char* fn, cudaError_t err) {
  (void)cudaGetLastError(); /* clear the (non-sticky) launch error */
  return mr_fail(MOEROUTE_ERR_CUDA, "%s: CUDA launch failed at %s:%d: %s (%s)", fn, mr_where_file, mr_where_line,
                 cudaGetErrorName(err), cudaGetErrorString(err));
}

/* Validation shared by route/gate/sort: params, support, workspace, buffers,
 * and a usable device. */
static moeroute_status mr_cuda_prepare(moeroute_op op, const moeroute_params* params, const moeroute_buffers* buffers,
                                       const char* fn, mr_config* cfg, size_t* ws) {
  moeroute_status st = mr_validate_params(op, params, MR_BACKEND_CUDA, fn, cfg);
  if (st != MOEROUTE_OK) return st;
  if (!mr_cuda_has_kernel(op, cfg))
    return mr_fail(MOEROUTE_ERR_NOT_SUPPORTED, "%s: no CUDA kernel for num_experts=%d dtype=%d", fn,
                   (int)cfg->num_experts, (int)cfg->dtype);
  *ws = mr_cuda_workspace_needed(op, cfg);
  st = mr_validate_buffers(op, cfg, buffers, *ws, fn);
  if (st != MOEROUTE_OK) return st;
  /* The kernels store 4-, 8- and 16-byte words in the workspace: a pointer off that grid would fault on the device
   * (session 36's review). cudaMalloc and the caching allocators return 256-byte aligned memory. */
  if (*ws > 0 && !mr_ws_aligned16(buffers))
    return mr_fail(MOEROUTE_ERR_BAD_VALUE, "%s: buffers->workspace=%p is not 16-byte aligned (the CUDA backend stores "
                   "16-byte words there; cudaMalloc returns 256-byte aligned memory)", fn, buffers->workspace);
  int dev = -1;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return mr_fail(MOEROUTE_ERR_NO_DEVICE, "%s: no usable CUDA device (%s)", fn, cudaGetErrorString(err));
  }
  return MOEROUTE_OK;
}

/* ---- public API -------------------------------------------------------------- */

extern "C" MOEROUTE_API int moeroute_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

extern "C" MOEROUTE_API int moeroute_cuda_supports(moeroute_op op, const moeroute_params* params) {
  mr_config cfg;
  mr_clear_error();
  if (mr_validate_params(op, params, MR_BACKEND_CUDA, "moeroute_cuda_supports", &cfg) != MOEROUTE_OK) {
    mr_clear_error(); /* a query: "no" is the answer, not an error */
    return 0;
  }
  return mr_cuda_has_kernel(op, &cfg);
}

extern "C" MOEROUTE_API moeroute_status moeroute_cuda_workspace_size(moeroute_op op, const moeroute_params* params,
                                                                     size_t* bytes) {
  static const char fn[] = "moeroute_cuda_workspace_size";
  mr_config cfg;
  mr_clear_error();
  if (!bytes) return mr_fail(MOEROUTE_ERR_NULL_POINTER, "%s: bytes is NULL", fn);
  moeroute_status st = mr_validate_params(op, params, MR_BACKEND_CUDA, fn, &cfg);
  if (st != MOEROUTE_OK) return st;
  *bytes = mr_cuda_workspace_needed(op, &cfg);
  return MOEROUTE_OK;
}

extern "C" MOEROUTE_API moeroute_status moeroute_cuda_route(const moeroute_params* params,
                                                            const moeroute_buffers* buffers, void* stream) {
  static const char fn[] = "moeroute_cuda_route";
  mr_config cfg;
  size_t ws = 0;
  mr_clear_error();
  moeroute_status st = mr_cuda_prepare(MOEROUTE_OP_ROUTE, params, buffers, fn, &cfg, &ws);
  if (st != MOEROUTE_OK) return st;
  const cudaStream_t s = (cudaStream_t)stream;
  mr_gate_args ga;
  mr_sort_out so;
  mr_cuda_gate_args_init(&cfg, buffers->logits, buffers->bias, &ga);
  mr_cuda_sort_out_init(&cfg, buffers, &so);
  unsigned char* tail_buf;
  size_t tail_bytes;
  mr_clear_tail_split(MOEROUTE_OP_ROUTE, &cfg, &ga, buffers, &so, &tail_buf, &tail_bytes); /* v25 */
  void* tail_counter = NULL; /* the workspace of gx / gxs where they ran: the clear's piece counter */
  cudaError_t err = mr_clear_memset_first(tail_buf, &tail_bytes, s); /* v36 (lab) */
  if (err != cudaSuccess) return mr_cuda_fail_launch(fn, err);
  /* gx (v22): one cooperative launch over the grid at middle T; on a refused cooperative launch the
   * other paths below */
  bool routed = false;
  /* v47 (knob gx_clear): with a moe_buf, gx where it takes the call without one, the clear inside its launch */
  mr_config bare = cfg;
  bare.moe_buf_bytes = 0;
  const int gxc = tail_bytes == 0 ? mr_cuda_gx_clear_mode(&cfg) : 0;
  if (cfg.num_tokens > 0 && mr_ws_aligned16(buffers) && mr_cuda_gx_takes(gxc ? &bare : &cfg, &ga)) {
    err = mr_cuda_launch_gx_route(gxc ? &bare : &cfg, &ga, &so, buffers->topk_ids, buffers->topk_weights,
                                  buffers->workspace, (tail_bytes != 0 ? MR_GX_TAIL : 0) | gxc, s);
    routed = err != cudaErrorCooperativeLaunchTooLarge;
    if (err == cudaSuccess) tail_counter = buffers->workspace;
  }
  if (routed) {
    /* gx ran (or failed for a reason other than the device refusing it) */
  } else if (cfg.num_tokens > 0 && mr_ws_aligned16(buffers) &&
             mr_cuda_gxs_takes(&cfg, MOEROUTE_OP_ROUTE, mr_cuda_gate_segmented(&cfg, &ga))) {
    /* the gate kernel, then gxs (v23); the top-k through the caller's buffers or the end of the
     * workspace; where the device refuses gxs's cooperative launch, the general sort */
    int32_t* ids;
    float* wts;
    mr_route_topk_bufs(&cfg, buffers, ws - 2u * mr_route_topk_half(&cfg), &ids, &wts);
    const float* sw = so.sorted_weights ? wts : NULL;
    /* v26: the segment kernel zeroes gxs's barrier word (no zeroing launch between them); other rows keep it */
    const int gz = mr_cuda_gxs_gate_zero_on() && mr_cuda_gate_segmented(&cfg, &ga);
    err = gz ? mr_cuda_launch_gate_zero(&cfg, &ga, ids, wts, (uint32_t*)buffers->workspace, s)
             : mr_cuda_launch_gate(&cfg, &ga, ids, wts, s);
    if (err == cudaSuccess) {
      err = mr_cuda_launch_gxs_sort(&cfg, &so, ids, sw, buffers->workspace,
                                    (tail_bytes != 0 ? MR_GX_TAIL : 0) | (gz ? MR_GX_ZEROED : 0), s);
      if (err == cudaSuccess) tail_counter = buffers->workspace;
    }
    if (err == cudaErrorCooperativeLaunchTooLarge)
      err = mr_cuda_launch_general_sort(&cfg, &so, ids, sw, buffers->workspace, s);
  } else if (mr_cuda_gtm_takes(&cfg, MOEROUTE_OP_ROUTE) && mr_ws_aligned16(buffers)) {
    /* the lab's grid token-mask sort after the gate kernel (gtm.cu, v16): gtm's workspace
     * first, the top-k through the caller's buffers or the two halves after it */
    int32_t* ids;
    float* wts;
    mr_route_topk_bufs(&cfg, buffers, mr_cuda_gtm_workspace(&cfg), &ids, &wts);
    err = mr_cuda_tune.gtm == 3 ? mr_cuda_launch_gtm_route(&cfg, &ga, &so, ids, wts, buffers->workspace, s)
                                : cudaErrorNotSupported;
    if (err == cudaErrorNotSupported) { /* not fused (knob), or not PACKED rows: gate kernel, K1, K2 */
      err = mr_cuda_launch_gate(&cfg, &ga, ids, wts, s);
      if (err == cudaSuccess)
        err = mr_cuda_launch_gtm_sort(&cfg, &so, ids, so.sorted_weights ? wts : NULL, buffers->workspace, s);
    }
  } else if (cfg.num_tokens > 0 && !mr_cuda_tune.force_general && mr_cuda_tiny_takes(&cfg, &ga)) {
    err = mr_cuda_launch_tiny_route(&cfg, &ga, &so, buffers->topk_ids, buffers->topk_weights, s);
  } else if (cfg.num_tokens > 0 && !mr_cuda_tune.force_general && mr_cuda_ctm_route_takes(&cfg, &ga)) {
    err = mr_cuda_launch_ctm_route(&cfg, &ga, &so, buffers->topk_ids, buffers->topk_weights, s);
  } else if (mr_route_use_pair(&cfg)) {
    /* the caller's top-k buffers, else the workspace (mr_cuda_workspace_needed) */
    int32_t* ids;
    float* wts;
    mr_route_topk_bufs(&cfg, buffers, 0, &ids, &wts);
    err = mr_cuda_launch_gate(&cfg, &ga, ids, wts, s);
    if (err == cudaSuccess) err = mr_cuda_launch_decode_sort(&cfg, &so, ids, so.sorted_weights ? wts : NULL, s);
  } else if (mr_route_use_mid(&cfg)) {
    int32_t* ids;
    float* wts;
    mr_route_topk_bufs(&cfg, buffers, 0, &ids, &wts);
    /* moe_buf: all of it by the mid sort's extra CTAs, as in the chain gate +
     * sort. Run 8 (bench/results/run8, kernel metric, with moe_buf) measured
     * the 5/8 split across the two launches 1.03 - 1.18x slower than the chain
     * at T = 128 - 4096 (GPT-OSS-120B T = 2048: 11.00 against 9.68 us; Kimi-K2
     * 21.89 against 18.63); without it the two are the same kernels. */
    err = mr_cuda_launch_gate(&cfg, &ga, ids, wts, s);
    const float* sw = so.sorted_weights ? wts : NULL;
    if (err == cudaSuccess && !mr_try_ctm_sort(&cfg, &so, ids, sw, s, &err))
      err = mr_cuda_launch_mid_sort(&cfg, &so, ids, sw, s);
  } else if (cfg.num_tokens > 0 && !mr_cuda_tune.force_general && cfg.num_experts <= 384 &&
             !mr_cuda_mid_sort_fits(&cfg) && mr_cuda_ctm_route_sort_takes(&cfg, &ga) &&
             ws >= mr_cuda_general_sort_workspace(&cfg) + 2u * mr_route_topk_half(&cfg)) {
    /* above the mid sort's bound without a moe_buf: the gate kernel, then ctm's sort (as
     * the chain runs it: gate, then the sort entry point); the top-k through the caller's
     * buffers or the end of the workspace (mr_cuda_workspace_needed reserves it last).
     * E <= 384: for Qwen3-Next (E = 512) large.cu's route stays faster (T = 2048 14.83
     * against 15.37 us, results runs 21 / 22; the chain with ctm's sort 15.36) */
    int32_t* ids;
    float* wts;
    mr_route_topk_bufs(&cfg, buffers, ws - 2u * mr_route_topk_half(&cfg), &ids, &wts);
    const float* sw = so.sorted_weights ? wts : NULL;
    err = mr_cuda_launch_gate(&cfg, &ga, ids, wts, s);
    if (err == cudaSuccess && !mr_try_ctm_sort(&cfg, &so, ids, sw, s, &err)) /* the chain's general sort */
      err = mr_cuda_launch_general_sort(&cfg, &so, ids, sw, buffers->workspace, s);
  } else if (cfg.num_tokens == 0 && mr_cuda_no_cluster()) {
    /* nothing to gate: the one-launch sort of zero entries clears moe_buf and
     * writes the totals (as sort does at T = 0) */
    err = mr_cuda_launch_small_sort(&cfg, &so, NULL, NULL, s);
  } else if (mr_route_one_launch(&cfg)) {
    err = mr_cuda_launch_fused_route(&cfg, &ga, &so, buffers->topk_ids, buffers->topk_weights, s);
  } else {
    /* general: the large path (large.cu: gate+rank, scan, place) without a
     * moe_buf below T = 16384, else the chain, gate kernel + general sort (also
     * whenever the large path's first launch would exceed 48 KB of shared
     * memory); mr_l_route_as_chain in large.cu */
    err = mr_cuda_launch_large_route(&cfg, &ga, &so, buffers->topk_ids, buffers->topk_weights, buffers->workspace, s);
  }
  if (err == cudaSuccess && tail_bytes != 0) err = mr_cuda_launch_clear_tail(tail_buf, tail_bytes, tail_counter, s);
  if (err != cudaSuccess) return mr_cuda_fail_launch(fn, err);
  return MOEROUTE_OK;
}

extern "C" MOEROUTE_API moeroute_status moeroute_cuda_gate(const moeroute_params* params,
                                                           const moeroute_buffers* buffers, void* stream) {
  static const char fn[] = "moeroute_cuda_gate";
  mr_config cfg;
  size_t ws = 0;
  mr_clear_error();
  moeroute_status st = mr_cuda_prepare(MOEROUTE_OP_GATE, params, buffers, fn, &cfg, &ws);
  if (st != MOEROUTE_OK) return st;
  mr_gate_args ga;
  mr_cuda_gate_args_init(&cfg, buffers->logits, buffers->bias, &ga);
  const cudaError_t err = mr_cuda_launch_gate(&cfg, &ga, buffers->topk_ids, buffers->topk_weights,
                                              (cudaStream_t)stream);
  if (err != cudaSuccess) return mr_cuda_fail_launch(fn, err);
  return MOEROUTE_OK;
}

extern "C" MOEROUTE_API moeroute_status moeroute_cuda_sort(const moeroute_params* params,
                                                           const moeroute_buffers* buffers, void* stream) {
  static const char fn[] = "moeroute_cuda_sort";
  mr_config cfg;
  size_t ws = 0;
  mr_clear_error();
  moeroute_status st = mr_cuda_prepare(MOEROUTE_OP_SORT, params, buffers, fn, &cfg, &ws);
  if (st != MOEROUTE_OK) return st;
  mr_sort_out so;
  mr_cuda_sort_out_init(&cfg, buffers, &so);
  const cudaStream_t s = (cudaStream_t)stream;
  const float* wts = so.sorted_weights ? buffers->topk_weights : NULL;
  unsigned char* tail_buf;
  size_t tail_bytes;
  mr_clear_tail_split(MOEROUTE_OP_SORT, &cfg, NULL, buffers, &so, &tail_buf, &tail_bytes); /* v25 */
  cudaError_t err = mr_clear_memset_first(tail_buf, &tail_bytes, s); /* v36 (lab) */
  if (err != cudaSuccess) return mr_cuda_fail_launch(fn, err);
  err = cudaErrorCooperativeLaunchTooLarge;
  /* gxs (v23): one cooperative launch over the grid; on a refused cooperative launch the other paths */
  void* tail_counter = NULL; /* the workspace of gxs where it ran: the clear's piece counter */
  if (cfg.num_tokens > 0 && mr_ws_aligned16(buffers) && mr_cuda_gxs_takes(&cfg, MOEROUTE_OP_SORT, 0)) {
    err = mr_cuda_launch_gxs_sort(&cfg, &so, buffers->topk_ids, wts, buffers->workspace,
                                  tail_bytes != 0 ? MR_GX_TAIL : 0, s);
    if (err == cudaSuccess) tail_counter = buffers->workspace;
  }
  if (err != cudaErrorCooperativeLaunchTooLarge)
    ; /* gxs ran (or failed for a reason other than the device refusing it) */
  else if (mr_cuda_gtm_takes(&cfg, MOEROUTE_OP_SORT) && mr_ws_aligned16(buffers)) /* the lab's gtm sort (v16) */
    err = mr_cuda_launch_gtm_sort(&cfg, &so, buffers->topk_ids, wts, buffers->workspace, s);
  else if (mr_try_ctm_sort(&cfg, &so, buffers->topk_ids, wts, s, &err))
    ; /* ctm's sort ran (or failed for a reason other than the device refusing it) */
  else if (mr_sort_one_launch(&cfg))
    err = mr_cuda_launch_decode_sort(&cfg, &so, buffers->topk_ids, wts, s);
  else if (!mr_cuda_tune.force_general && mr_cuda_mid_sort_fits(&cfg))
    err = mr_cuda_launch_mid_sort(&cfg, &so, buffers->topk_ids, wts, s);
  else
    err = mr_cuda_launch_general_sort(&cfg, &so, buffers->topk_ids, wts, buffers->workspace, s);
  if (err == cudaSuccess && tail_bytes != 0) err = mr_cuda_launch_clear_tail(tail_buf, tail_bytes, tail_counter, s);
  if (err != cudaSuccess) return mr_cuda_fail_launch(fn, err);
  return MOEROUTE_OK;
}
