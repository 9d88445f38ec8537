/*
 * cmd_info.c - `moeroute info` (versions, build, CUDA devices) and
 * `moeroute models` (the compiled-in presets).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "cli.h"

#ifdef MOEROUTE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

int cmd_info(int argc, char** argv) {
  for (int i = 0; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      puts("usage: moeroute info\n\nPrint the library version (run time and header), its build options and the CUDA\ndevices found.");
      return CLI_EXIT_OK;
    }
    cli_error("info: unknown option '%s'", argv[i]);
    return CLI_EXIT_USAGE;
  }
  printf("moeroute library: %s (number %u)\n", moeroute_version_string(), moeroute_version_number());
  printf("moeroute header:  %d.%d.%d (number %d)%s\n", MOEROUTE_VERSION_MAJOR, MOEROUTE_VERSION_MINOR,
         MOEROUTE_VERSION_PATCH, MOEROUTE_VERSION_NUMBER,
         moeroute_version_number() == (unsigned)MOEROUTE_VERSION_NUMBER ? "" : "  (differs from the library)");
  printf("build:            %s\n", moeroute_build_info());
  printf("command built:    %s CUDA\n", cli_cuda_built() ? "with" : "without");
  printf("CUDA backend:     %d usable device(s) (moeroute_cuda_device_count)\n", moeroute_cuda_device_count());
#ifdef MOEROUTE_WITH_CUDA
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
  printf("CUDA runtime:     %d.%d, driver: ", rt / 1000, (rt % 1000) / 10);
  if (drv) printf("%d.%d\n", drv / 1000, (drv % 1000) / 10);
  else printf("none\n");
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    printf("CUDA devices:     none (%s)\n", cudaGetErrorString(e));
    (void)cudaGetLastError();
  } else if (n == 0) {
    printf("CUDA devices:     none\n");
  }
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    printf("CUDA device %d:    %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.1f MiB\n", d, prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
           (double)prop.l2CacheSize / (1024.0 * 1024.0));
  }
#else
  printf("CUDA devices:     none (built without CUDA)\n");
#endif
  return CLI_EXIT_OK;
}

int cmd_models(int argc, char** argv) {
  for (int i = 0; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      puts("usage: moeroute models\n\nList the compiled-in model presets (data/models.tsv); use one with\n"
           "moeroute route --model NAME or moeroute bench --models NAME,...");
      return CLI_EXIT_OK;
    }
    cli_error("models: unknown option '%s'", argv[i]);
    return CLI_EXIT_USAGE;
  }
  printf("%-20s %5s %3s %-13s %6s %4s %-14s %6s %6s %5s  %s\n", "name", "E", "k", "score", "renorm", "bias",
         "groups", "scale", "hidden", "dtype", "note");
  for (int i = 0; i < moeroute_preset_count(); i++) {
    const moeroute_preset* m = moeroute_preset_at(i);
    char groups[32] = "-";
    if (m->num_groups > 1)
      snprintf(groups, sizeof groups, "%d/%d/%s", m->num_groups, m->topk_groups, cli_group_score_name(m->group_score));
    printf("%-20s %5d %3d %-13s %6d %4s %-14s %6g %6d %5s  %s\n", m->name, m->num_experts, m->top_k,
           cli_score_name(m->score), m->renormalize, m->has_bias ? "yes" : "no", groups, (double)m->scale,
           m->model_dim, cli_dtype_name(m->router_dtype), m->note ? m->note : "");
  }
  return CLI_EXIT_OK;
}
