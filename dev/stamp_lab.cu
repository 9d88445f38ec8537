/*
 * stamp_lab.cu - where the time goes inside one routing launch (lab file).
 *
 * Compiles the library's CUDA sources with MR_STAMP defined: thread 0 of CTA 0
 * records clock64 at each phase marker (markers are empty in the library).
 * For each shape it runs route (fused), gate and sort one call at a time and
 * prints the median cycles between consecutive markers, plus the in-kernel span
 * (globaltimer, first to last marker) next to the kernel metric of the same call.
 *
 * Markers (v3; thread 0 of CTA 0 is a gating lane in route):
 *   route: 0 entry | 1 setup (clear, mbarrier, CTA barrier, cluster arrive) |
 *          2 row gated | 3 entries sent (cluster wait, st.async) | 4 own mbarrier
 *          complete | 5 mask table built | 6 scan and start table published |
 *          7 entries, padding, block ids written
 *   sort:  0 entry | 1 ids loads issued, table cleared | 4 entries in shared |
 *          5 table built | 6 scan | 7 written
 *   gate:  0 entry | 2 row gated | 7 stored
 *   route by tiny.cu's one-pass finish (session 15, T >= 2): 0 entry | 2 row gated | 4 after
 *          the barrier | 5 presence prefix | 6 entry placed | 7 blocks and padding written
 *          (the sort kernel of tiny.cu passes 5 and 6 too). The span column is globaltimer
 *          0..7 of thread 0; the stores' drain after 7 is not in it.
 *   the same with the lab knob tiny_cluster = C (session 16, rows "route cC"): 2 row gated
 *          (thread 0 of CTA 0 gates row 0) | 4 after its own mbarrier (every entry landed), the
 *          cluster wait, the table atomics and the CTA barrier: 2-4 is the exchange. Rows
 *          "route w": the lab knob tiny_warm (the layout's code run ahead by warp 6).
 * Column "warm": 1 = the dry-run warps (instruction-cache warming) on, 0 = off
 * (mr_cuda_perf.no_warm), 4 = route with the dry gating warp on warp 0's
 * scheduler (mr_cuda_perf.dry_gate_warp = 4; the default is warp 6).
 *
 * Second table ("thrice"): one warp loads row 0 and gates it three times in a
 * rolled loop (lab_gate_thrice): the first pass runs cold (instruction and
 * constant caches), the next two run the same instructions warm, so pass 1 -
 * pass 2 is the cold cost and pass 2 the dependent chain itself. Three rows per
 * shape: no pre-warming; warp 1 (another scheduler) runs one full pass before
 * warp 0 starts; warp 4 (warp 0's scheduler) does. If only warp 4 helps, the
 * cold cost is per scheduler (L0 instruction cache); if both help, per SM.
 *
 * Build (after cmake --build build-cuda, which provides the C parts):
 *   nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common \
 *        dev/stamp_lab.cu build-cuda/libmoeroute.a -o build-cuda/stamp_lab
 * (the library supplies what this file does not include: the C parts, large.cu)
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__device__ unsigned long long mr_lab_clock[8];
__device__ unsigned long long mr_lab_time[8];
__device__ __forceinline__ void mr_lab_stamp(int slot) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long c, t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    mr_lab_clock[slot] = c;
    mr_lab_time[slot] = t;
  }
}
#define MR_STAMP(slot) mr_lab_stamp(slot)

#include "../src/cuda/entry.cu"
#include "../src/cuda/fused.cu"
#include "../src/cuda/gate.cu"
#include "../src/cuda/sort.cu"
#include "../src/cuda/tiny.cu"
#include "../src/cuda/tiny_lab.cu" /* session 16: the cluster form and the warm pass, stamped (not
                                       tiny_lab_rows.cu: a row of fp32-key rows a warp per row in the
                                       cluster form would run the library's unstamped copy) */
#include "lab_util.h"

/* one warp gates row 0 three times (stamps: 0 entry, 1 row loaded, 2/3/4 after each pass) */
template <int DT, int EPL, int KIND>
__global__ void lab_gate_thrice(const __grid_constant__ mr_gate_p p, int32_t* ids, float* ws, int pre) {
  MR_STAMP(0);
  extern __shared__ __align__(16) uint32_t lab_smem[];
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (pre > 0 && (int)warp == pre) { /* the pre-warming warp: one full pass, then release warp 0 */
    uint32_t raw[EPL], braw[EPL];
    mr_load_lane<MR_ESZ(DT), EPL>(p.logits, lane, p.num_experts, mr_raw_neg_inf<DT>(p.f16 != 0), true, raw);
    mr_load_lane<4, EPL>((const unsigned char*)p.bias, lane, p.num_experts, 0u, p.bias != NULL, braw);
    int32_t id;
    float w;
    mr_gate_row<DT, EPL, KIND>(p, lane, raw, braw, p.logits, true, (float*)lab_smem + 2048,
                               (unsigned char*)((float*)lab_smem + 2048 + p.num_experts), &id, &w);
    if (id == -7) ids[62] = 0;
    asm volatile("bar.sync 1, 64;" ::: "memory");
    return;
  }
  if (warp != 0) return;
  if (pre > 0) asm volatile("bar.sync 1, 64;" ::: "memory");
  uint32_t raw[EPL], braw[EPL];
  mr_load_lane<MR_ESZ(DT), EPL>(p.logits, lane, p.num_experts, mr_raw_neg_inf<DT>(p.f16 != 0), true, raw);
  mr_load_lane<4, EPL>((const unsigned char*)p.bias, lane, p.num_experts, 0u, p.bias != NULL, braw);
  uint32_t acc = 0;
#pragma unroll
  for (int r = 0; r < EPL; ++r) acc ^= raw[r] ^ braw[r];
  if (acc == 0x9e3779b9u) ids[63] = 0; /* waits for the loads */
  MR_STAMP(1);
  int32_t id = 0;
  float w = 0.0f;
#pragma unroll 1
  for (int rep = 0; rep < 3; ++rep) {
    mr_gate_row<DT, EPL, KIND>(p, lane, raw, braw, p.logits, true, (float*)lab_smem,
                               (unsigned char*)((float*)lab_smem + p.num_experts), &id, &w);
    MR_STAMP(2 + rep);
  }
  if ((int)lane < p.top_k) {
    ids[lane] = id;
    ws[lane] = w;
  }
  MR_STAMP(7);
}

typedef struct Shape {
  const char* name;
  int E, k;
  moeroute_score score;
  int bias, G, tg;
  float scale;
  int hidden;
  moeroute_dtype dt;
  int T;
  int cl; /* route with the lab knob tiny_cluster = cl (session 16); 0 = off (knob -1) */
  int tw; /* route with the lab knob tiny_warm (session 16) */
} Shape;

static int cmp_u64(const void* a, const void* b) {
  const unsigned long long x = *(const unsigned long long*)a, y = *(const unsigned long long*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  static const Shape shapes[] = {
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 1},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 16},
      {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16, 1},
      {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16, 16},
      {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32, 1},
      {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32, 16},
      {"kimi-k2", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 2.827f, 7168, MOEROUTE_DTYPE_FP32, 1},
      {"kimi-k2", 384, 8, MOEROUTE_SCORE_SIGMOID, 1, 1, 1, 2.827f, 7168, MOEROUTE_DTYPE_FP32, 16},
      {"qwen3-next", 512, 10, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2048, MOEROUTE_DTYPE_BF16, 16},
      /* session 15: tiny.cu's one-pass route (markers 0 entry | 2 row gated | 4 after the
       * barrier | 5 the presence prefix | 6 the entry placed | 7 blocks and padding written) */
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 2},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 4},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 8},
      {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16, 2},
      {"gpt-oss-120b", 128, 4, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 2880, MOEROUTE_DTYPE_BF16, 12},
      /* session 16: the cluster form (C = cl) and the warm pass (tw) */
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 2, 2, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 12, 8, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 16, 8, 0},
      {"deepseek-r1", 256, 8, MOEROUTE_SCORE_SIGMOID, 1, 8, 4, 2.5f, 7168, MOEROUTE_DTYPE_FP32, 4, 4, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 2, 0, 1},
      /* session 20: why the cluster form gains nothing for E = 256 at T = 6 - 8 where E = 128 gains
       * (perf-log v19); each shape without it (0) and with C = 8, and the one-CTA route at T = 12 */
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 6, 0, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 6, 8, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 8, 8, 0},
      {"deepseek-r1-softmax", 256, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 7168, MOEROUTE_DTYPE_BF16, 12, 0, 0},
      {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16, 6, 0, 0},
      {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16, 6, 8, 0},
      {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16, 8, 0, 0},
      {"qwen3-235b", 128, 8, MOEROUTE_SCORE_SOFTMAX, 0, 1, 1, 1.0f, 4096, MOEROUTE_DTYPE_BF16, 8, 8, 0},
  };
  const char* ops[3] = {"route", "gate", "sort"};
  printf("cycles between markers (median of 21 single calls), thread 0 of CTA 0; span = globaltimer ns 0..7\n");
  printf("%-20s %3s %-8s %4s %7s %7s %7s %7s %7s %7s %7s %8s\n", "shape", "T", "op", "warm", "0-1", "1-2", "2-3", "3-4",
         "4-5", "5-6", "6-7", "span ns");
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s) {
    const Shape* sh = &shapes[s];
    moeroute_params p;
    moeroute_params_init(&p);
    p.num_tokens = sh->T;
    p.num_experts = sh->E;
    p.top_k = sh->k;
    p.logits_dtype = sh->dt;
    p.score = sh->score;
    p.scale = sh->scale;
    p.num_groups = sh->G;
    p.topk_groups = sh->tg;
    p.layouts = MOEROUTE_LAYOUT_CK;
    p.moe_buf_bytes = (size_t)sh->T * sh->hidden * 2;
    moeroute_sizes sz;
    sz.struct_size = sizeof sz;
    moeroute_get_sizes(&p, &sz);
    const size_t es = sh->dt == MOEROUTE_DTYPE_FP32 ? 4 : 2;
    const size_t lb = (size_t)sh->T * sh->E * es;
    unsigned char* hl = (unsigned char*)malloc(lb);
    for (size_t i = 0; i < lb / es; ++i) {
      const float f = (float)(rand() % 4000) / 1000.0f - 2.0f;
      if (es == 4)
        ((float*)hl)[i] = f;
      else
        ((uint16_t*)hl)[i] = sh->dt == MOEROUTE_DTYPE_BF16 ? mr_float_to_bf16(f) : mr_float_to_fp16(f);
    }
    float* hb = (float*)malloc((size_t)sh->E * 4);
    for (int e = 0; e < sh->E; ++e) hb[e] = (float)(rand() % 200) / 1000.0f - 0.1f;
    void *dl, *db, *dm, *d[8];
    CK(cudaMalloc(&dl, lb));
    CK(cudaMemcpy(dl, hl, lb, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&db, (size_t)sh->E * 4));
    CK(cudaMemcpy(db, hb, (size_t)sh->E * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dm, p.moe_buf_bytes + 16));
    const size_t n[6] = {(size_t)sz.topk_len, (size_t)sz.topk_len, (size_t)sz.ck_sorted_len,
                         (size_t)sz.ck_sorted_len, (size_t)sz.ck_blocks_len, 2};
    for (int i = 0; i < 6; ++i) CK(cudaMalloc(&d[i], n[i] * 4 + 4));
    moeroute_buffers b;
    moeroute_buffers_init(&b);
    b.logits = dl;
    b.bias = sh->bias ? (const float*)db : NULL;
    b.topk_ids = (int32_t*)d[0];
    b.topk_weights = (float*)d[1];
    b.sorted_ids = (int32_t*)d[2];
    b.sorted_weights = (float*)d[3];
    b.sorted_expert_ids = (int32_t*)d[4];
    b.num_valid_ids = (int32_t*)d[5];
    b.moe_buf = dm;
    size_t wr = 0, wsort = 0;
    moeroute_cuda_workspace_size(MOEROUTE_OP_ROUTE, &p, &wr);
    moeroute_cuda_workspace_size(MOEROUTE_OP_SORT, &p, &wsort);
    if (wsort > wr) wr = wsort;
    void* dws = NULL;
    if (wr) CK(cudaMalloc(&dws, wr));
    b.workspace = dws;
    b.workspace_bytes = wr;
    static const int vop[6] = {0, 1, 2, 0, 1, 0}, vwarm[6] = {1, 1, 1, 0, 0, 4};
    for (int v = 0; v < 6; ++v) {
      const int op = vop[v], warm = vwarm[v];
      if ((sh->cl || sh->tw) && (op != 0 || warm != 1)) continue; /* the lab knobs' rows: route alone */
      mr_cuda_tune.tiny_cluster = sh->cl ? sh->cl : -1; /* 0: the rows without the cluster form */
      mr_cuda_tune.tiny_warm = sh->tw;
      mr_cuda_perf.no_warm = warm == 0;
      mr_cuda_perf.dry_gate_warp = warm == 4 ? 4 : 0;
      unsigned long long delta[7][21], span[21];
      for (int r = 0; r < 21; ++r) {
        unsigned long long z[8] = {0};
        CK(cudaMemcpyToSymbol(mr_lab_clock, z, sizeof z));
        CK(cudaMemcpyToSymbol(mr_lab_time, z, sizeof z));
        moeroute_status st = op == 0 ? moeroute_cuda_route(&p, &b, NULL)
                             : op == 1 ? moeroute_cuda_gate(&p, &b, NULL)
                                       : moeroute_cuda_sort(&p, &b, NULL);
        if (st != MOEROUTE_OK) {
          printf("%s: %s\n", ops[op], moeroute_last_error());
          return 1;
        }
        CK(cudaDeviceSynchronize());
        unsigned long long c[8], t[8];
        CK(cudaMemcpyFromSymbol(c, mr_lab_clock, sizeof c));
        CK(cudaMemcpyFromSymbol(t, mr_lab_time, sizeof t));
        unsigned long long prev = c[0];
        for (int i = 1; i < 8; ++i) {
          delta[i - 1][r] = c[i] ? c[i] - prev : 0;
          if (c[i]) prev = c[i];
        }
        span[r] = t[7] - t[0];
      }
      mr_cuda_tune.tiny_cluster = 0;
      mr_cuda_tune.tiny_warm = 0;
      char opname[16];
      if (sh->cl)
        snprintf(opname, sizeof opname, "route c%d", sh->cl);
      else
        snprintf(opname, sizeof opname, "%s%s", ops[op], sh->tw ? " w" : "");
      printf("%-20s %3d %-8s %4d", sh->name, sh->T, opname, warm);
      for (int i = 0; i < 7; ++i) {
        qsort(delta[i], 21, sizeof(unsigned long long), cmp_u64);
        printf(" %7llu", delta[i][10]);
      }
      qsort(span, 21, sizeof(unsigned long long), cmp_u64);
      printf(" %8llu\n", span[10]);
    }
    mr_cuda_perf.no_warm = 0;
    mr_cuda_perf.dry_gate_warp = 0;
    /* thrice: the gating of row 0 cold, then warm (same warp, same registers); not for the lab knobs' rows */
    if (!sh->cl && !sh->tw) {
      mr_config cfg;
      if (mr_validate_params(MOEROUTE_OP_GATE, &p, MR_BACKEND_CUDA, "stamp_lab", &cfg) != MOEROUTE_OK) return 1;
      mr_gate_args ga;
      mr_cuda_gate_args_init(&cfg, b.logits, b.bias, &ga);
      mr_gate_p gp;
      mr_gate_p_init(&ga, cfg.dtype, &gp);
      const int kind = mr_gate_kind(&ga, cfg.dtype), epl = mr_cuda_epl_bucket(cfg.num_experts);
      const size_t smem = (size_t)(2048 + sh->E) * 4 + 64;
      static const int pres[3] = {0, 1, 4}; /* pre-warming warp: none, another scheduler, warp 0's scheduler */
      for (int pi = 0; pi < 3; ++pi) {
      const int pre = pres[pi];
      unsigned long long th[5][21];
      for (int r = 0; r < 21; ++r) {
        unsigned long long z[8] = {0};
        CK(cudaMemcpyToSymbol(mr_lab_clock, z, sizeof z));
        if (cfg.dtype == MOEROUTE_DTYPE_BF16 && kind == MR_KIND_PACKED && epl == 8)
          lab_gate_thrice<MOEROUTE_DTYPE_BF16, 8, MR_KIND_PACKED><<<1, 32 * (pre + 1), smem>>>(gp, b.topk_ids, b.topk_weights, pre);
        else if (cfg.dtype == MOEROUTE_DTYPE_BF16 && kind == MR_KIND_PACKED && epl == 4)
          lab_gate_thrice<MOEROUTE_DTYPE_BF16, 4, MR_KIND_PACKED><<<1, 32 * (pre + 1), smem>>>(gp, b.topk_ids, b.topk_weights, pre);
        else if (cfg.dtype == MOEROUTE_DTYPE_BF16 && kind == MR_KIND_PACKED && epl == 16)
          lab_gate_thrice<MOEROUTE_DTYPE_BF16, 16, MR_KIND_PACKED><<<1, 32 * (pre + 1), smem>>>(gp, b.topk_ids, b.topk_weights, pre);
        else if (cfg.dtype == MOEROUTE_DTYPE_FP32 && kind == MR_KIND_GROUPED && epl == 8)
          lab_gate_thrice<MOEROUTE_DTYPE_FP32, 8, MR_KIND_GROUPED><<<1, 32 * (pre + 1), smem>>>(gp, b.topk_ids, b.topk_weights, pre);
        else if (cfg.dtype == MOEROUTE_DTYPE_FP32 && kind == MR_KIND_FULL && epl == 16)
          lab_gate_thrice<MOEROUTE_DTYPE_FP32, 16, MR_KIND_FULL><<<1, 32 * (pre + 1), smem>>>(gp, b.topk_ids, b.topk_weights, pre);
        else
          break;
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long c[8];
        CK(cudaMemcpyFromSymbol(c, mr_lab_clock, sizeof c));
        for (int i = 0; i < 4; ++i) th[i][r] = c[i + 1] - c[i];
        th[4][r] = c[7] - c[0];
      }
      for (int i = 0; i < 4; ++i) qsort(th[i], 21, sizeof(unsigned long long), cmp_u64);
      printf("%-20s %3d thrice (pre-warm warp %d): load %llu, pass 1 (cold) %llu, pass 2 %llu, pass 3 %llu cycles\n",
             sh->name, sh->T, pre, th[0][10], th[1][10], th[2][10], th[3][10]);
      }
    }
    free(hl);
    free(hb);
    cudaFree(dl);
    cudaFree(db);
    cudaFree(dm);
    if (dws) cudaFree(dws);
    for (int i = 0; i < 6; ++i) cudaFree(d[i]);
  }
  return 0;
}
