#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""A small mixture-of-experts layer built on moeroute, checked against a plain reference.

The layer, as an inference engine runs it:
  1. router GEMM            logits = x @ W_router^T                          [T, E]
  2. moeroute.route         top-k experts and weights per token, and the token slots
                            grouped by expert and padded to the block size U
  3. expert GEMMs           block by block over the sorted layout: block b holds U rows
                            of one expert (block -> expert id), each row a (token, slot)
                            or a padding row; gather the tokens, run the expert's SwiGLU MLP
  4. weighted combine       out[token] += weight(token, slot) * expert_output

Step 3 runs twice, once from the vLLM/SGLang layout (sorted_token_ids = t*k + slot,
expert_ids, topk_weights) and once from the CK/aiter layout (sorted_ids = slot<<24 | t,
sorted_weights, sorted_expert_ids). Both must match the reference: a per-token loop that
routes with the model's published recipe written out by hand (DeepSeek-V3/R1: sigmoid
scores, selection bias, 8 groups scored by their top-2 sum, 4 groups kept, renormalise,
scale 2.5; GPT-OSS: top-4 on the logits, softmax over those four).

    python examples/moe_layer.py                      # NumPy, CPU backend
    python examples/moe_layer.py --backend torch      # torch on the CPU
    python examples/moe_layer.py --backend torch --device cuda

Prints the max relative error of each router and layout; exits 1 above --tolerance.
"""
import argparse
import sys

import numpy as np

import moeroute


class Backend(object):
    """The handful of array operations that NumPy and torch spell differently."""

    def __init__(self, name, device):
        self.name = name
        if name == "torch":
            import torch
            self.torch = torch
            self.device = torch.device(device)
            torch.backends.cuda.matmul.allow_tf32 = False   # fp32 GEMMs: the 1e-4 check needs them

    def asarray(self, a):
        if self.name == "numpy":
            return np.asarray(a)
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def numpy(self, a):
        return a if self.name == "numpy" else a.cpu().numpy()

    def zeros(self, shape):
        if self.name == "numpy":
            return np.zeros(shape, np.float32)
        return self.torch.zeros(shape, dtype=self.torch.float32, device=self.device)

    def exp(self, a):
        return np.exp(a) if self.name == "numpy" else self.torch.exp(a)

    def topk_indices(self, v, k):
        """Indices of the k largest per row, largest first (inputs are tie-free)."""
        if self.name == "numpy":
            return np.argsort(-v, axis=1, kind="stable")[:, :k]
        return self.torch.topk(v, k, dim=1).indices

    def take(self, v, idx):
        return np.take_along_axis(v, idx, axis=1) if self.name == "numpy" else self.torch.gather(v, 1, idx)


class MoELayer(object):
    """Router weights and E SwiGLU experts (W_gate_up [E, 2F, H], W_down [E, H, F])."""

    def __init__(self, xp, rng, hidden, ffn, num_experts, with_bias):
        s = 1.0 / np.sqrt(hidden)
        self.xp = xp
        self.num_experts = num_experts
        self.w_router = xp.asarray((rng.standard_normal((num_experts, hidden)) * s).astype(np.float32))
        self.w_gate_up = xp.asarray((rng.standard_normal((num_experts, 2 * ffn, hidden)) * s).astype(np.float32))
        self.w_down = xp.asarray((rng.standard_normal((num_experts, hidden, ffn)) / np.sqrt(ffn)).astype(np.float32))
        self.bias = xp.asarray((rng.standard_normal(num_experts) * 0.05).astype(np.float32)) if with_bias else None
        self.ffn = ffn

    def expert(self, e, x):
        """SwiGLU MLP of expert e on rows x [n, H]."""
        h = x @ self.w_gate_up[e].T
        gate, up = h[:, :self.ffn], h[:, self.ffn:]
        return (gate / (1.0 + self.xp.exp(-gate)) * up) @ self.w_down[e].T

    # -- the engine's path: moeroute's sorted layouts, one block of U rows at a time --

    def forward_vllm_layout(self, x, r):
        """From sorted_token_ids (t*k + slot, pad T*k), expert_ids and topk_weights."""
        T, k, U = r.num_tokens, r.top_k, r.unit_size
        out = self.xp.zeros(tuple(x.shape))
        total = r.read_total()                     # device results: one sync, as an engine's host loop would
        sorted_token_ids = r.sorted_token_ids[:total]
        weights = r.topk_weights.reshape(-1)
        for b in range(total // U):
            e = int(r.expert_ids[b])                # the block's expert (local id == global id: no mask)
            rows = sorted_token_ids[b * U:(b + 1) * U]
            rows = rows[rows < T * k]               # drop padding rows
            tokens = rows // k                      # distinct within a block: an expert is picked once per token
            y = self.expert(e, x[tokens])
            out[tokens] += weights[rows][:, None] * y
        return out

    def forward_ck_layout(self, x, r):
        """From sorted_ids ((slot << 24) | t, sentinel (k << 24) | T), sorted_weights and
        sorted_expert_ids."""
        T, U = r.num_tokens, r.unit_size
        out = self.xp.zeros(tuple(x.shape))
        total = r.read_total()
        for b in range(total // U):
            e = int(r.sorted_expert_ids[b])
            packed = r.sorted_ids[b * U:(b + 1) * U]
            w = r.sorted_weights[b * U:(b + 1) * U]
            tokens = packed & 0xFFFFFF
            keep = tokens < T                       # the sentinel's token field is T
            tokens, w = tokens[keep], w[keep]
            out[tokens] += w[:, None] * self.expert(e, x[tokens])
        return out

    # -- the reference: every token on its own, routing written out from the model's recipe --

    def forward_reference(self, x, route_ref):
        ids, w = route_ref(x @ self.w_router.T)
        ids_np, w_np = self.xp.numpy(ids), self.xp.numpy(w)
        out = self.xp.zeros(tuple(x.shape))
        for t in range(x.shape[0]):
            for j in range(ids_np.shape[1]):
                out[t] += float(w_np[t, j]) * self.expert(int(ids_np[t, j]), x[t:t + 1])[0]
        return out


def deepseek_reference(xp, layer, top_k=8, num_groups=8, topk_groups=4, scale=2.5):
    """DeepSeek-V3/R1 routing ("noaux_tc"): sigmoid scores; selection on score + bias; groups
    ranked by the sum of their two best; top-k inside the kept groups; weights are the
    unbiased scores, renormalised, times the routed scaling factor."""
    def route(logits):
        scores = 1.0 / (1.0 + xp.exp(-logits))
        sel = scores + layer.bias[None, :]
        T, E = sel.shape
        grouped = sel.reshape(T, num_groups, E // num_groups)
        top2 = xp.take(grouped.reshape(T * num_groups, -1), xp.topk_indices(grouped.reshape(T * num_groups, -1), 2))
        group_score = top2.sum(-1).reshape(T, num_groups)
        keep = xp.topk_indices(group_score, topk_groups)
        allowed = xp.numpy(xp.zeros((T, num_groups))).astype(bool)
        np.put_along_axis(allowed, xp.numpy(keep), True, axis=1)
        allowed = np.repeat(allowed, E // num_groups, axis=1)
        masked = np.where(allowed, xp.numpy(sel), -np.inf).astype(np.float32)
        ids = xp.asarray(np.argsort(-masked, axis=1, kind="stable")[:, :top_k])
        w = xp.take(scores, ids)
        w = w / w.sum(-1, keepdims=True) * scale if xp.name == "numpy" else w / w.sum(-1, keepdim=True) * scale
        return ids, w
    return route


def gptoss_reference(xp, top_k=4):
    """GPT-OSS / Mixtral routing: top-k on the logits, softmax over the k picked."""
    def route(logits):
        ids = xp.topk_indices(logits, top_k)
        picked = xp.take(logits, ids)
        if xp.name == "numpy":
            e = np.exp(picked - picked.max(-1, keepdims=True))
            return ids, e / e.sum(-1, keepdims=True)
        e = xp.torch.exp(picked - picked.max(-1, keepdim=True).values)
        return ids, e / e.sum(-1, keepdim=True)
    return route


def max_rel_err(a, b, xp):
    a, b = xp.numpy(a).astype(np.float64), xp.numpy(b).astype(np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["numpy", "torch"], default="numpy")
    ap.add_argument("--device", default="cpu", help="torch device (cpu or cuda)")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--ffn", type=int, default=32)
    ap.add_argument("--unit-size", type=int, default=16)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.backend == "numpy" and args.device != "cpu":
        ap.error("the NumPy backend runs on the CPU")

    xp = Backend(args.backend, args.device)
    rng = np.random.default_rng(args.seed)
    x = xp.asarray(rng.standard_normal((args.tokens, args.hidden)).astype(np.float32))
    U = args.unit_size
    print("moeroute %s (%s), backend %s on %s, T=%d, H=%d, F=%d, U=%d" % (
        moeroute.version(), moeroute.build_info(), args.backend, args.device, args.tokens, args.hidden, args.ffn, U))

    worst = 0.0
    for name in ("deepseek-r1", "gpt-oss-20b"):
        m = moeroute.model_info(name)
        layer = MoELayer(xp, rng, args.hidden, args.ffn, m.num_experts, with_bias=m.has_bias)
        logits = x @ layer.w_router.T                                   # 1. router GEMM (fp32 logits)
        r = moeroute.route(logits, model=name, bias=layer.bias, unit_size=U)   # 2. routing, both layouts
        ref_route = deepseek_reference(xp, layer) if name == "deepseek-r1" else gptoss_reference(xp)
        reference = layer.forward_reference(x, ref_route)
        for layout, forward in (("vllm", layer.forward_vllm_layout), ("ck", layer.forward_ck_layout)):
            out = forward(x, r)                                          # 3. + 4. expert GEMMs, combine
            err = max_rel_err(out, reference, xp)
            worst = max(worst, err)
            print("%-12s E=%-3d k=%d %-14s layout=%-4s blocks=%-3d max rel err %.3e" % (
                name, m.num_experts, m.top_k, "(%s%s)" % (m.score, "+bias" if m.has_bias else ""), layout,
                r.read_total() // U, err))
    ok = worst <= args.tolerance
    print("%s: worst max relative error %.3e (tolerance %.1e)" % ("PASS" if ok else "FAIL", worst, args.tolerance))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
