/*
 * route.c - the smallest complete use of moeroute: route a batch of bf16
 * logits on the CPU (DeepSeek-R1's router) into the CK layout.
 *
 *   cc route.c $(pkg-config --cflags --libs moeroute) -o route && ./route
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#include <moeroute.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t to_bf16(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

int main(void) {
  moeroute_params p;
  moeroute_params_init(&p);
  const moeroute_preset* preset = moeroute_preset_find("deepseek-r1");
  moeroute_params_from_preset(&p, preset); /* E=256, k=8, grouped sigmoid with bias, scale 2.5 */
  p.num_tokens = 4;
  p.logits_dtype = MOEROUTE_DTYPE_BF16;
  p.layouts = MOEROUTE_LAYOUT_CK;

  moeroute_sizes sz = {sizeof sz};
  size_t ws_bytes = 0;
  if (moeroute_get_sizes(&p, &sz) || moeroute_cpu_workspace_size(MOEROUTE_OP_ROUTE, &p, &ws_bytes)) {
    fprintf(stderr, "%s\n", moeroute_last_error());
    return 1;
  }
  const int E = p.num_experts, T = (int)p.num_tokens;
  uint16_t* logits = malloc(sizeof(uint16_t) * (size_t)T * E);
  float* bias = malloc(sizeof(float) * E);
  srand(1);
  for (int i = 0; i < T * E; ++i) logits[i] = to_bf16(4.0f * rand() / (float)RAND_MAX - 2.0f);
  for (int e = 0; e < E; ++e) bias[e] = 0.01f * (float)(e % 7);

  moeroute_buffers b;
  moeroute_buffers_init(&b);
  b.logits = logits;
  b.bias = bias;
  b.topk_ids = malloc(sizeof(int32_t) * sz.topk_len);
  b.topk_weights = malloc(sizeof(float) * sz.topk_len);
  b.sorted_ids = malloc(sizeof(int32_t) * sz.ck_sorted_len);
  b.sorted_weights = malloc(sizeof(float) * sz.ck_sorted_len);
  b.sorted_expert_ids = malloc(sizeof(int32_t) * sz.ck_blocks_len);
  b.num_valid_ids = malloc(sizeof(int32_t) * 2);
  b.workspace = malloc(ws_bytes ? ws_bytes : 1);
  b.workspace_bytes = ws_bytes;

  moeroute_status st = moeroute_cpu_route(&p, &b);
  if (st != MOEROUTE_OK) {
    fprintf(stderr, "%s: %s\n", moeroute_status_string(st), moeroute_last_error());
    return 1;
  }
  printf("moeroute %s: token 0 -> experts", moeroute_version_string());
  for (int j = 0; j < p.top_k; ++j) printf(" %d(%.3f)", b.topk_ids[j], b.topk_weights[j]);
  int total = b.num_valid_ids[0];
  printf("\n%d padded rows in %d blocks of %d\n", total, total / p.unit_size, p.unit_size);

  /* A request outside the contract gets a status and a message, never a crash. */
  p.top_k = 40;
  st = moeroute_cpu_route(&p, &b);
  printf("top_k=40: %s (%s)\n", moeroute_status_string(st), moeroute_last_error());

  free(logits); free(bias); free(b.topk_ids); free(b.topk_weights); free(b.sorted_ids);
  free(b.sorted_weights); free(b.sorted_expert_ids); free(b.num_valid_ids); free(b.workspace);
  return total > 0 && st == MOEROUTE_ERR_BAD_SHAPE ? 0 : 1;
}
