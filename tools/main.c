/*
 * main.c - the `moeroute` command: route a batch from .npy files, verify every
 * backend and path against the CPU reference, benchmark, and report the build.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "cli.h"

static const char* const main_usage =
    "usage: moeroute <command> [options]\n"
    "\n"
    "MoE routing (gating + sorting) for CPU and NVIDIA GPUs.\n"
    "\n"
    "commands:\n"
    "  route    route one batch of logits (.npy) and write the outputs as .npy files\n"
    "  verify   check every backend and path against the CPU reference on random shapes\n"
    "  bench    time routing: CPU per-call, CUDA fused vs unfused (kernel/graph/eager)\n"
    "  info     library version, build options and CUDA devices\n"
    "  models   the compiled-in model presets\n"
    "\n"
    "  moeroute <command> --help   options of a command\n"
    "  moeroute --version          the version\n";

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(main_usage, stderr);
    return CLI_EXIT_USAGE;
  }
  const char* cmd = argv[1];
  if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
    fputs(main_usage, stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("moeroute %s\n", moeroute_version_string());
    return CLI_EXIT_OK;
  }
  static const struct {
    const char* name;
    int (*run)(int, char**);
  } commands[] = {{"route", cmd_route}, {"verify", cmd_verify}, {"bench", cmd_bench},
                  {"info", cmd_info},   {"models", cmd_models}};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 2, argv + 2);
  cli_error("unknown command '%s' (moeroute --help lists them)", cmd);
  return CLI_EXIT_USAGE;
}
