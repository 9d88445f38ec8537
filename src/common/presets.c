/*
 * presets.c - the routers of production MoE models (data/models.tsv, compiled
 * in; tests/test_presets checks this table against the file).
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include "internal.h"

#define SOFTMAX MOEROUTE_SCORE_SOFTMAX
#define SIGMOID MOEROUTE_SCORE_SIGMOID
#define SQRT_SOFTPLUS MOEROUTE_SCORE_SQRT_SOFTPLUS
#define TOP2 MOEROUTE_GROUP_SCORE_TOP2_SUM
#define MAXG MOEROUTE_GROUP_SCORE_MAX
#define FP32 MOEROUTE_DTYPE_FP32
#define BF16 MOEROUTE_DTYPE_BF16

/* name, E, k, score, renormalize, bias, G, topk_groups, group_score, scale, hidden, dtype, note */
static const moeroute_preset mr_presets[] = {
    {"deepseek-r1", 256, 8, SIGMOID, 1, 1, 8, 4, TOP2, 2.5f, 7168, FP32, "also DeepSeek-V3, V3.1, V3.2"},
    {"deepseek-r1-softmax", 256, 8, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 7168, BF16,
     "the seed's benchmark shape (softmax gating on DeepSeek-R1 sizes)"},
    {"deepseek-v2", 160, 6, SOFTMAX, 0, 0, 8, 3, MAXG, 16.0f, 5120, FP32,
     "no renormalize: weights need the full-row softmax"},
    {"deepseek-v4-flash", 256, 6, SQRT_SOFTPLUS, 1, 1, 1, 1, TOP2, 1.5f, 4096, FP32, ""},
    {"kimi-k2", 384, 8, SIGMOID, 1, 1, 1, 1, TOP2, 2.827f, 7168, FP32, "E not a power of two"},
    {"glm-4.5", 160, 8, SIGMOID, 1, 1, 1, 1, TOP2, 2.5f, 5120, FP32, "E not a power of two"},
    {"minimax-m2", 256, 8, SIGMOID, 1, 1, 1, 1, TOP2, 1.0f, 3072, FP32, ""},
    {"qwen3-235b", 128, 8, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 4096, BF16, "also Qwen3-30B-A3B (hidden 2048)"},
    {"qwen3-next", 512, 10, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 2048, BF16, "also Qwen3.5-397B (hidden 4096)"},
    {"qwen1.5-moe", 60, 4, SOFTMAX, 0, 0, 1, 1, TOP2, 1.0f, 2048, BF16, "E not a power of two, no renormalize"},
    {"gpt-oss-120b", 128, 4, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 2880, BF16,
     "top-k on logits then softmax over k == softmax + renormalize"},
    {"gpt-oss-20b", 32, 4, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 2880, BF16, ""},
    {"mixtral-8x7b", 8, 2, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 4096, BF16, ""},
    {"llama4-maverick", 128, 1, SIGMOID, 0, 0, 1, 1, TOP2, 1.0f, 5120, BF16, "weight applied to the expert input"},
    {"dbrx", 16, 4, SOFTMAX, 1, 0, 1, 1, TOP2, 1.0f, 6144, BF16, ""},
    {"olmoe", 64, 8, SOFTMAX, 0, 0, 1, 1, TOP2, 1.0f, 2048, BF16, ""},
    {"ernie-4.5-21b", 64, 6, SOFTMAX, 1, 1, 1, 1, TOP2, 1.0f, 2560, FP32, "softmax plus selection bias"},
};

int moeroute_preset_count(void) { return (int)(sizeof mr_presets / sizeof mr_presets[0]); }

const moeroute_preset* moeroute_preset_at(int index) {
  if (index < 0 || index >= moeroute_preset_count()) return NULL;
  return &mr_presets[index];
}

const moeroute_preset* moeroute_preset_find(const char* name) {
  if (!name) return NULL;
  for (int i = 0; i < moeroute_preset_count(); ++i)
    if (strcmp(mr_presets[i].name, name) == 0) return &mr_presets[i];
  return NULL;
}

moeroute_status moeroute_params_from_preset(moeroute_params* params, const moeroute_preset* preset) {
  mr_clear_error();
  if (!params || !preset)
    return mr_fail(MOEROUTE_ERR_NULL_POINTER, "moeroute_params_from_preset: %s is NULL", params ? "preset" : "params");
  if (params->struct_size != sizeof *params)
    return mr_fail(MOEROUTE_ERR_PARAMS_SIZE, "moeroute_params_from_preset: params->struct_size=%zu, expected %zu",
                   params->struct_size, sizeof *params);
  params->num_experts = preset->num_experts;
  params->top_k = preset->top_k;
  params->score = preset->score;
  params->renormalize = preset->renormalize;
  params->scale = preset->scale;
  params->num_groups = preset->num_groups;
  params->topk_groups = preset->topk_groups;
  params->group_score = preset->group_score;
  params->logits_dtype = preset->router_dtype;
  return MOEROUTE_OK;
}
