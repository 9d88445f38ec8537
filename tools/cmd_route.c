/*
 * cmd_route.c - `moeroute route`: route one batch of logits from a .npy file
 * and write every output as .npy files.
 *
 * Nothing is written unless everything succeeded: inputs and parameters are
 * checked and the routing runs first; then the outputs go to hidden temporary
 * names in DIR and are renamed into place; any failure removes what this run
 * wrote (and the folders it created).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "npy.h"

#ifdef MOEROUTE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static const char* const route_usage =
    "usage: moeroute route --logits IN.npy --out DIR [options]\n"
    "\n"
    "Route one batch: IN.npy holds the router logits [T, E] (little-endian, C order):\n"
    "float32, float16, or uint16 holding raw bf16 bits. DIR (created if missing)\n"
    "receives topk_ids.npy (int32 [T,k]) and topk_weights.npy (float32 [T,k]), plus\n"
    "  ck:   sorted_ids, sorted_weights, sorted_expert_ids, num_valid_ids ([2])\n"
    "  vllm: sorted_token_ids, expert_ids, num_tokens_post_pad ([1])\n"
    "Sorted arrays hold exactly the valid range: total entries, total/U blocks.\n"
    "On any error nothing is left in DIR.\n"
    "\n"
    "options:\n"
    "  --model NAME            start from a preset (moeroute models); options below override it\n"
    "  --topk K                experts per token (required without --model)\n"
    "  --score S               softmax | sigmoid | sqrt_softplus (default softmax)\n"
    "  --renormalize 0|1       divide the k weights by their sum (default 1)\n"
    "  --scale F               routed scaling factor, applied last (default 1.0)\n"
    "  --bias B.npy            float32 [E] selection bias\n"
    "  --groups G:KG           grouped selection: G groups, keep the KG best\n"
    "  --group-score S         top2_sum | max (default top2_sum)\n"
    "  --expert-mask M.npy     int32 [E], 1 = expert on this rank, 0 = dropped\n"
    "  --unit-size U           block size of the grouped GEMM (default 32)\n"
    "  --layout L              ck | vllm | both (default both)\n"
    "  --model-dim D           also clear a bf16 moe_buf [T, D] (2*T*D bytes) and check it;\n"
    "                          reported, not written\n"
    "  --dtype D               routing dtype bf16 | fp16 | fp32; float32/float16 files are\n"
    "                          rounded to it (nearest even). Default: the file's type (fp32\n"
    "                          for float32, fp16 for float16, bf16 for uint16); a preset's\n"
    "                          router dtype is not applied to the file\n"
    "  --backend B             auto | cpu | cuda (default auto: cuda when a GPU is present)\n"
    "  -h, --help              this text\n"
    "\n"
    "exit status: 0 ok, 1 bad input file or routing error, 2 usage error\n";

/* ---- writing outputs: temp names, then rename; undo on failure ------------ */

typedef struct out_file {
  const char* name;   /* "topk_ids.npy" */
  const char* dtype;
  int ndim;
  int64_t shape[2];
  const void* data;
  char tmp[4096];
  char final[4096];
  int state;          /* 0 nothing, 1 temp written, 2 renamed */
} out_file;

typedef struct created_dirs {
  char path[16][4096];
  int count;
} created_dirs;

/* mkdir -p, remembering what it created (so a failed run can take it back). */
static int make_dirs(const char* dir, created_dirs* made, char* err, size_t errlen) {
  char buf[4096];
  size_t len = strlen(dir);
  if (len == 0 || len >= sizeof buf) {
    snprintf(err, errlen, "bad folder name");
    return -1;
  }
  memcpy(buf, dir, len + 1);
  while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    struct stat st;
    if (stat(buf, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a folder", buf);
        return -1;
      }
    } else if (mkdir(buf, 0777) == 0) {
      if (made->count < 16) snprintf(made->path[made->count++], sizeof made->path[0], "%s", buf);
    } else if (errno != EEXIST) {
      snprintf(err, errlen, "cannot create %s: %s", buf, strerror(errno));
      return -1;
    }
    buf[i] = saved;
  }
  return 0;
}

static void undo(out_file* files, int n, created_dirs* made) {
  for (int i = 0; i < n; i++) {
    if (files[i].state == 1) remove(files[i].tmp);
    if (files[i].state == 2) remove(files[i].final);
    files[i].state = 0;
  }
  for (int i = made->count - 1; i >= 0; i--) rmdir(made->path[i]); /* only succeeds when empty */
}

static int write_all(const char* dir, out_file* files, int n, char* err, size_t errlen) {
  created_dirs made;
  made.count = 0;
  if (make_dirs(dir, &made, err, errlen) != 0) {
    undo(files, 0, &made);
    return -1;
  }
  long pid = (long)getpid();
  for (int i = 0; i < n; i++) {
    int a = snprintf(files[i].final, sizeof files[i].final, "%s/%s", dir, files[i].name);
    int b = snprintf(files[i].tmp, sizeof files[i].tmp, "%s/.%s.tmp%ld", dir, files[i].name, pid);
    if (a < 0 || b < 0 || (size_t)a >= sizeof files[i].final || (size_t)b >= sizeof files[i].tmp) {
      snprintf(err, errlen, "path too long");
      undo(files, n, &made);
      return -1;
    }
  }
  for (int i = 0; i < n; i++) {
    char e2[512];
    if (mr_npy_save(files[i].tmp, files[i].dtype, files[i].ndim, files[i].shape, files[i].data, e2, sizeof e2) != 0) {
      snprintf(err, errlen, "%s", e2);
      undo(files, n, &made);
      return -1;
    }
    files[i].state = 1;
  }
  for (int i = 0; i < n; i++) {
    if (rename(files[i].tmp, files[i].final) != 0) {
      snprintf(err, errlen, "cannot rename %s to %s: %s", files[i].tmp, files[i].final, strerror(errno));
      undo(files, n, &made);
      return -1;
    }
    files[i].state = 2;
  }
  return 0;
}

/* ---- inputs ----------------------------------------------------------------- */

static int load_vector(const char* opt, const char* path, const char* dtype, const char* what, int64_t E,
                       mr_npy* a) {
  char err[512];
  if (mr_npy_load(path, a, err, sizeof err) != 0) {
    cli_error("%s: %s", opt, err);
    return -1;
  }
  if (strcmp(a->dtype, dtype) != 0 || a->ndim != 1 || a->shape[0] != E) {
    char shape[64] = "";
    int o = 0;
    for (int d = 0; d < a->ndim && o < 48; d++) o += snprintf(shape + o, sizeof shape - (size_t)o, d ? ", %lld" : "%lld", (long long)a->shape[d]);
    cli_error("%s: %s must be %s [%lld], got %s [%s]", opt, path, what, (long long)E, a->dtype, shape);
    mr_npy_free(a);
    return -1;
  }
  return 0;
}

/* The CUDA path of route: device copies, one call on a stream, copy back. */
static int route_on_cuda(const route_case* c, const moeroute_params* p, size_t moe_buf_bytes, host_route* out,
                         int* moe_buf_zero) {
#ifdef MOEROUTE_WITH_CUDA
  char err[512];
  gpu_route g;
  if (gpu_route_alloc(&g, c, moe_buf_bytes, err, sizeof err) != 0) {
    cli_error("cuda: %s", err);
    return -1;
  }
  if (gpu_route_fill(&g, 0xAB, err, sizeof err) != 0) { /* moe_buf must really be cleared */
    cli_error("cuda: %s", err);
    gpu_route_free(&g);
    return -1;
  }
  moeroute_buffers b;
  gpu_route_bind(&g, p, MOEROUTE_OP_ROUTE, 1, &b);
  cudaStream_t stream = NULL;
  cudaError_t ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (ce != cudaSuccess) {
    cli_error("cuda: cudaStreamCreate failed: %s", cudaGetErrorString(ce));
    gpu_route_free(&g);
    return -1;
  }
  moeroute_status st = moeroute_cuda_route(p, &b, stream);
  if (st != MOEROUTE_OK) {
    cli_lib_error("moeroute_cuda_route", st);
    cudaStreamDestroy(stream);
    gpu_route_free(&g);
    return -1;
  }
  ce = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  if (ce != cudaSuccess) {
    cli_error("cuda: the routing kernel failed: %s", cudaGetErrorString(ce));
    gpu_route_free(&g);
    return -1;
  }
  if (gpu_route_download(&g, out, err, sizeof err) != 0) {
    cli_error("cuda: %s", err);
    gpu_route_free(&g);
    return -1;
  }
  int z = gpu_moe_buf_is_zero(&g, err, sizeof err);
  gpu_route_free(&g);
  if (z < 0) {
    cli_error("cuda: %s", err);
    return -1;
  }
  *moe_buf_zero = z;
  return 0;
#else
  (void)c;
  (void)p;
  (void)moe_buf_bytes;
  (void)out;
  (void)moe_buf_zero;
  cli_error("--backend cuda: this moeroute was built without CUDA");
  return -1;
#endif
}

/* ---- the command -------------------------------------------------------------- */

int cmd_route(int argc, char** argv) {
  const char *logits_path = NULL, *out_dir = NULL, *model = NULL, *bias_path = NULL, *mask_path = NULL;
  int64_t topk = -1, renorm = -1, unit_size = 32, model_dim = 0, groups = -1, topk_groups = -1;
  float scale = 0;
  int have_scale = 0, have_score = 0, have_group_score = 0, have_dtype = 0;
  moeroute_score score = MOEROUTE_SCORE_SOFTMAX;
  moeroute_group_score group_score = MOEROUTE_GROUP_SCORE_TOP2_SUM;
  moeroute_dtype dtype = MOEROUTE_DTYPE_FP32;
  uint32_t layouts = MOEROUTE_LAYOUT_BOTH;
  cli_backend backend = CLI_BACKEND_AUTO;

  for (int i = 0; i < argc; i++) {
    const char* v = NULL;
    if (cli_is_help(argv[i])) {
      fputs(route_usage, stdout);
      return CLI_EXIT_OK;
    }
#define OPT(name) cli_opt(argc, argv, &i, name, &v)
    if (OPT("--logits")) logits_path = v;
    else if (OPT("--out")) out_dir = v;
    else if (OPT("--model")) model = v;
    else if (OPT("--topk")) {
      if (cli_parse_i64("--topk", v, 1, MOEROUTE_MAX_TOPK, &topk)) return CLI_EXIT_USAGE;
    } else if (OPT("--score")) {
      if (cli_parse_score(v, &score)) {
        cli_error("--score: '%s' is not softmax, sigmoid or sqrt_softplus", v);
        return CLI_EXIT_USAGE;
      }
      have_score = 1;
    } else if (OPT("--renormalize")) {
      if (cli_parse_i64("--renormalize", v, 0, 1, &renorm)) return CLI_EXIT_USAGE;
    } else if (OPT("--scale")) {
      if (cli_parse_float("--scale", v, &scale)) return CLI_EXIT_USAGE;
      have_scale = 1;
    } else if (OPT("--bias")) bias_path = v;
    else if (OPT("--groups")) {
      const char* colon = strchr(v, ':');
      char g[32];
      if (!colon || (size_t)(colon - v) >= sizeof g) {
        cli_error("--groups: '%s' is not G:KG (e.g. 8:4)", v);
        return CLI_EXIT_USAGE;
      }
      memcpy(g, v, (size_t)(colon - v));
      g[colon - v] = '\0';
      if (cli_parse_i64("--groups G", g, 1, MOEROUTE_CPU_MAX_EXPERTS, &groups) ||
          cli_parse_i64("--groups KG", colon + 1, 1, MOEROUTE_CPU_MAX_EXPERTS, &topk_groups))
        return CLI_EXIT_USAGE;
    } else if (OPT("--group-score")) {
      if (cli_parse_group_score(v, &group_score)) {
        cli_error("--group-score: '%s' is not top2_sum or max", v);
        return CLI_EXIT_USAGE;
      }
      have_group_score = 1;
    } else if (OPT("--expert-mask")) mask_path = v;
    else if (OPT("--unit-size")) {
      if (cli_parse_i64("--unit-size", v, 1, MOEROUTE_MAX_UNIT_SIZE, &unit_size)) return CLI_EXIT_USAGE;
    } else if (OPT("--layout")) {
      if (cli_parse_layout(v, &layouts)) {
        cli_error("--layout: '%s' is not ck, vllm or both", v);
        return CLI_EXIT_USAGE;
      }
    } else if (OPT("--model-dim")) {
      if (cli_parse_i64("--model-dim", v, 0, INT32_MAX, &model_dim)) return CLI_EXIT_USAGE;
    } else if (OPT("--dtype")) {
      if (cli_parse_dtype(v, &dtype)) {
        cli_error("--dtype: '%s' is not bf16, fp16 or fp32", v);
        return CLI_EXIT_USAGE;
      }
      have_dtype = 1;
    } else if (OPT("--backend")) {
      if (cli_parse_backend(v, &backend)) {
        cli_error("--backend: '%s' is not auto, cpu or cuda", v);
        return CLI_EXIT_USAGE;
      }
    } else {
      cli_error("route: unknown option '%s' (see moeroute route --help)", argv[i]);
      return CLI_EXIT_USAGE;
    }
#undef OPT
  }
  if (!logits_path || !out_dir) {
    cli_error("route: --logits and --out are required (see moeroute route --help)");
    return CLI_EXIT_USAGE;
  }
  const moeroute_preset* preset = NULL;
  if (model && !(preset = moeroute_preset_find(model))) {
    cli_error("--model: unknown model '%s' (moeroute models lists them)", model);
    return CLI_EXIT_USAGE;
  }
  if (!preset && topk < 0) {
    cli_error("route: --topk is required without --model");
    return CLI_EXIT_USAGE;
  }

  /* ---- inputs ---- */
  int rc = CLI_EXIT_FAIL;
  char err[512];
  mr_npy logits = {0}, bias = {0}, mask = {0};
  host_route out;
  memset(&out, 0, sizeof out);
  route_case c;
  memset(&c, 0, sizeof c);
  void* converted = NULL;
  void* moe_buf = NULL;

  if (mr_npy_load(logits_path, &logits, err, sizeof err) != 0) {
    cli_error("--logits: %s", err);
    goto done;
  }
  moeroute_dtype file_dtype;
  if (!strcmp(logits.dtype, "<f4")) file_dtype = MOEROUTE_DTYPE_FP32;
  else if (!strcmp(logits.dtype, "<f2")) file_dtype = MOEROUTE_DTYPE_FP16;
  else if (!strcmp(logits.dtype, "<u2")) file_dtype = MOEROUTE_DTYPE_BF16;
  else {
    cli_error("--logits: %s has dtype %s; expected float32, float16 or uint16 (bf16 bits)", logits_path, logits.dtype);
    goto done;
  }
  if (logits.ndim != 2) {
    cli_error("--logits: %s must be 2-D [T, E], it has %d dimensions", logits_path, logits.ndim);
    goto done;
  }
  const int64_t T = logits.shape[0], E = logits.shape[1];
  if (E < 1 || E > INT32_MAX) {
    cli_error("--logits: %s has E=%lld columns", logits_path, (long long)E);
    goto done;
  }
  if (!have_dtype) dtype = file_dtype;

  moeroute_params p;
  moeroute_params_init(&p);
  if (preset) {
    moeroute_params_from_preset(&p, preset);
    if (preset->num_experts != E) {
      cli_error("--logits: %s has E=%lld columns but model %s has %d experts", logits_path, (long long)E, preset->name,
                preset->num_experts);
      goto done;
    }
  }
  p.num_tokens = T;
  p.num_experts = (int32_t)E;
  p.logits_dtype = dtype;
  p.unit_size = (int32_t)unit_size;
  p.layouts = layouts;
  if (topk >= 0) p.top_k = (int32_t)topk;
  if (have_score) p.score = score;
  if (renorm >= 0) p.renormalize = (int32_t)renorm;
  if (have_scale) p.scale = scale;
  if (groups >= 0) {
    p.num_groups = (int32_t)groups;
    p.topk_groups = (int32_t)topk_groups;
  }
  if (have_group_score) p.group_score = group_score;
  if (model_dim > 0) {
    if ((uint64_t)T > SIZE_MAX / 2 / (uint64_t)model_dim) {
      cli_error("--model-dim: moe_buf of 2*%lld*%lld bytes is too large", (long long)T, (long long)model_dim);
      goto done;
    }
    p.moe_buf_bytes = (size_t)(2 * T * model_dim);
  }

  if (bias_path) {
    if (load_vector("--bias", bias_path, "<f4", "float32", E, &bias)) goto done;
    c.bias = (float*)bias.data;
  }
  if (mask_path) {
    if (load_vector("--expert-mask", mask_path, "<i4", "int32", E, &mask)) goto done;
    c.expert_mask = (int32_t*)mask.data;
  }

  /* logits in the routing dtype: the raw bytes when the file already is it */
  size_t count = (size_t)(T * E);
  if (dtype == file_dtype) {
    c.logits = logits.data;
  } else {
    converted = cli_malloc(count * cli_dtype_size(dtype));
    float* tmp = (float*)cli_malloc(count * sizeof(float));
    if (!converted || !tmp) {
      free(tmp);
      cli_error("out of memory converting the logits");
      goto done;
    }
    for (size_t i = 0; i < count; i++) tmp[i] = cli_decode1(file_dtype, logits.data, i);
    cli_encode(dtype, tmp, converted, count);
    free(tmp);
    c.logits = converted;
  }
  c.p = p;

  /* ---- backend ---- */
  int use_cuda = 0;
  const char* backend_note = "";
  if (backend == CLI_BACKEND_CUDA) {
    if (!cli_cuda_built()) {
      cli_error("--backend cuda: this moeroute was built without CUDA");
      goto done;
    }
    if (moeroute_cuda_device_count() == 0) {
      cli_error("--backend cuda: no CUDA device found");
      goto done;
    }
    use_cuda = 1;
  } else if (backend == CLI_BACKEND_AUTO) {
    if (!cli_cuda_built()) backend_note = " (auto: built without CUDA)";
    else if (moeroute_cuda_device_count() == 0) backend_note = " (auto: no CUDA device)";
    else if (!moeroute_cuda_supports(MOEROUTE_OP_ROUTE, &p)) backend_note = " (auto: CUDA has no path for these params)";
    else use_cuda = 1;
  }

  /* ---- route ---- */
  if (host_route_alloc(&out, &p, err, sizeof err) != 0) {
    cli_error("%s", err);
    goto done;
  }
  if (p.moe_buf_bytes) {
    moe_buf = malloc(p.moe_buf_bytes);
    if (!moe_buf) {
      cli_error("--model-dim: cannot allocate %zu bytes of moe_buf", p.moe_buf_bytes);
      goto done;
    }
    memset(moe_buf, 0xAB, p.moe_buf_bytes); /* so "cleared" is observed, not assumed */
  }
  int moe_buf_zero = 1;
  if (use_cuda) {
    if (route_on_cuda(&c, &p, p.moe_buf_bytes, &out, &moe_buf_zero) != 0) goto done;
  } else {
    moeroute_status st = cli_cpu_run(MOEROUTE_OP_ROUTE, &c, &p, &out, NULL, NULL, moe_buf);
    if (st != MOEROUTE_OK) {
      cli_lib_error("moeroute_cpu_route", st);
      goto done;
    }
    for (size_t i = 0; i < p.moe_buf_bytes; i++)
      if (((unsigned char*)moe_buf)[i]) {
        moe_buf_zero = 0;
        break;
      }
  }
  if (!moe_buf_zero) {
    cli_error("moe_buf was not cleared (%zu bytes)", p.moe_buf_bytes);
    goto done;
  }

  /* ---- write ---- */
  const int64_t k = p.top_k, U = p.unit_size;
  out_file files[9];
  int nf = 0;
  memset(files, 0, sizeof files);
#define ADD(nm, dt, nd, s0, s1, ptr)          \
  do {                                        \
    files[nf].name = nm;                      \
    files[nf].dtype = dt;                     \
    files[nf].ndim = nd;                      \
    files[nf].shape[0] = s0;                  \
    files[nf].shape[1] = s1;                  \
    files[nf].data = ptr;                     \
    nf++;                                     \
  } while (0)
  ADD("topk_ids.npy", "<i4", 2, T, k, out.topk_ids);
  ADD("topk_weights.npy", "<f4", 2, T, k, out.topk_weights);
  int64_t total_ck = -1, total_vllm = -1;
  if (layouts & MOEROUTE_LAYOUT_CK) {
    total_ck = out.num_valid_ids[0];
    if (total_ck < 0 || total_ck > out.sizes.ck_sorted_len || total_ck % U) {
      cli_error("internal: num_valid_ids[0]=%lld is not a valid total", (long long)total_ck);
      goto done;
    }
    ADD("sorted_ids.npy", "<i4", 1, total_ck, 0, out.sorted_ids);
    ADD("sorted_weights.npy", "<f4", 1, total_ck, 0, out.sorted_weights);
    ADD("sorted_expert_ids.npy", "<i4", 1, total_ck / U, 0, out.sorted_expert_ids);
    ADD("num_valid_ids.npy", "<i4", 1, 2, 0, out.num_valid_ids);
  }
  if (layouts & MOEROUTE_LAYOUT_VLLM) {
    total_vllm = out.num_tokens_post_pad[0];
    if (total_vllm < 0 || total_vllm > out.sizes.vllm_sorted_len || total_vllm % U) {
      cli_error("internal: num_tokens_post_pad=%lld is not a valid total", (long long)total_vllm);
      goto done;
    }
    ADD("sorted_token_ids.npy", "<i4", 1, total_vllm, 0, out.sorted_token_ids);
    ADD("expert_ids.npy", "<i4", 1, total_vllm / U, 0, out.expert_ids);
    ADD("num_tokens_post_pad.npy", "<i4", 1, 1, 0, out.num_tokens_post_pad);
  }
#undef ADD
  if (write_all(out_dir, files, nf, err, sizeof err) != 0) {
    cli_error("--out: %s", err);
    goto done;
  }

  printf("routed T=%lld E=%lld k=%lld score=%s renormalize=%d scale=%g", (long long)T, (long long)E, (long long)k,
         cli_score_name(p.score), p.renormalize, (double)p.scale);
  if (p.num_groups > 1) printf(" groups=%d:%d/%s", p.num_groups, p.topk_groups, cli_group_score_name(p.group_score));
  printf(" bias=%s mask=%s dtype=%s U=%lld layout=%s backend=%s%s\n", c.bias ? "yes" : "no",
         c.expert_mask ? "yes" : "no", cli_dtype_name(dtype), (long long)U, cli_layout_name(layouts),
         use_cuda ? "cuda" : "cpu", backend_note);
  if (total_ck >= 0) printf("ck:   total=%lld (%lld blocks)\n", (long long)total_ck, (long long)(total_ck / U));
  if (total_vllm >= 0) printf("vllm: total=%lld (%lld blocks)\n", (long long)total_vllm, (long long)(total_vllm / U));
  if (p.moe_buf_bytes)
    printf("moe_buf: %zu bytes cleared, verified zero (bf16 [%lld, %lld], not written)\n", p.moe_buf_bytes,
           (long long)T, (long long)model_dim);
  printf("wrote %d files to %s\n", nf, out_dir);
  if (preset && preset->has_bias && !bias_path)
    cli_note("note: %s has a selection bias; without --bias it was routed with none", preset->name);
  rc = CLI_EXIT_OK;

done:
  host_route_free(&out);
  free(converted);
  free(moe_buf);
  mr_npy_free(&logits);
  mr_npy_free(&bias);
  mr_npy_free(&mask);
  return rc;
}
