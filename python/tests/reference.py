# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""A small pure-NumPy reference of docs/routing-contract.md (plus the decisions of
docs/design.md), written from the contract, row by row, for the Python tests.

fp32 arithmetic throughout, like the library; exp/log may differ from the C library's
in the last bit, so weights compare to 1e-5 relative and ids exactly except where two
selection keys are within 1e-6 relative (the contract's allowance)."""
import numpy as np

FLT_MAX = np.float32(np.finfo(np.float32).max)
F32 = np.float32


def widen(logits, dtype=None):
    """logits as fp32; uint16/int16 arrays are raw bits of dtype ('bf16' or 'fp16')."""
    a = np.asarray(logits)
    if a.dtype in (np.uint16, np.int16):
        bits = a.view(np.uint16)
        if dtype in ("fp16", "float16"):
            return bits.view(np.float16).astype(np.float32)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def _scores(x, score):
    """Scores of one row x (fp32, +inf already clamped); nonfinite entries get 0."""
    finite = np.isfinite(x)
    s = np.zeros_like(x)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if score == "softmax":
            if finite.any():
                m = x[finite].max()
                e = np.exp(x[finite] - m).astype(F32)
                total = F32(0)
                for v in e:           # sequential fp32 sum (order differs from the library: within 1e-5)
                    total = F32(total + v)
                s[finite] = (e / total).astype(F32)
        elif score == "sigmoid":
            s[finite] = (F32(1) / (F32(1) + np.exp(-x[finite]))).astype(F32)
        elif score == "sqrt_softplus":
            xf = x[finite]
            s[finite] = np.sqrt(np.maximum(xf, F32(0)) + np.log1p(np.exp(-np.abs(xf)))).astype(F32)
        else:
            raise ValueError(score)
    return s, finite


def gate_row(x, top_k, score="softmax", renormalize=True, scale=1.0, bias=None, num_groups=1, topk_groups=1,
             group_score="top2_sum"):
    """(ids, weights, keys) of one row x (fp32)."""
    x = np.where(x == np.inf, FLT_MAX, x).astype(F32)
    E = x.shape[0]
    s, finite = _scores(x, score)
    b = np.zeros(E, F32) if bias is None else np.asarray(bias, F32)
    if score == "softmax" and bias is None:
        key = x.copy()
    else:
        key = (s + b).astype(F32)
    key = np.where(finite, key, -np.inf).astype(F32)
    if num_groups > 1:
        gval = np.where(finite, (s + b).astype(F32), -np.inf).astype(F32).reshape(num_groups, E // num_groups)
        gscore = np.empty(num_groups, F32)
        for g in range(num_groups):
            v = np.sort(gval[g])[::-1]
            if group_score == "top2_sum":
                gscore[g] = F32(v[0] + v[1]) if np.isfinite(v[1]) else -np.inf
            else:
                gscore[g] = v[0]
        keep = np.argsort(-gscore, kind="stable")[:topk_groups]
        mask = np.zeros(num_groups, bool)
        mask[keep] = True
        key = np.where(np.repeat(mask, E // num_groups), key, -np.inf).astype(F32)
    order = np.argsort(-key.astype(np.float64), kind="stable")
    ids = order[:top_k].astype(np.int32)
    w = np.where(np.isfinite(key[ids]), s[ids], F32(0)).astype(F32)
    if renormalize:
        total = F32(0)
        for v in w:
            total = F32(total + v)
        w = (w / max(total, F32(1e-20))).astype(F32)
    w = (w * F32(scale)).astype(F32)
    return ids, w, key


def gate(logits, top_k, dtype=None, **kw):
    x = widen(logits, dtype)
    T = x.shape[0]
    ids = np.zeros((T, top_k), np.int32)
    w = np.zeros((T, top_k), np.float32)
    keys = np.zeros(x.shape, np.float32)
    for t in range(T):
        ids[t], w[t], keys[t] = gate_row(x[t], top_k, **kw)
    return ids, w, keys


def sort(topk_ids, topk_weights, num_experts, unit_size, expert_mask=None):
    """Both layouts, valid range only: a dict of arrays named like the library's outputs."""
    topk_ids = np.asarray(topk_ids)
    T, k = topk_ids.shape
    E, U = num_experts, unit_size
    enabled = np.ones(E, bool) if expert_mask is None else np.asarray(expert_mask) != 0
    local = np.cumsum(enabled) - enabled          # enabled experts with a lower id
    entries = [[] for _ in range(E)]
    for t in range(T):
        for j in range(k):
            e = int(topk_ids[t, j])
            if 0 <= e < E and enabled[e]:
                entries[e].append((t, j))
    sorted_ids, sorted_w, sorted_tok, blocks = [], [], [], []
    sentinel = (k << 24) | T
    for e in range(E):
        c = len(entries[e])
        pad = -(-c // U) * U
        for t, j in entries[e]:
            sorted_ids.append((j << 24) | t)
            sorted_w.append(0.0 if topk_weights is None else topk_weights[t, j])
            sorted_tok.append(t * k + j)
        sorted_ids += [sentinel] * (pad - c)
        sorted_w += [0.0] * (pad - c)
        sorted_tok += [T * k] * (pad - c)
        blocks += [int(local[e])] * (pad // U)
    total = len(sorted_ids)
    return {
        "sorted_ids": np.array(sorted_ids, np.int32), "sorted_weights": np.array(sorted_w, np.float32),
        "sorted_expert_ids": np.array(blocks, np.int32), "num_valid_ids": np.array([total, T], np.int32),
        "sorted_token_ids": np.array(sorted_tok, np.int32), "expert_ids": np.array(blocks, np.int32),
        "num_tokens_post_pad": np.array([total], np.int32),
    }


def assert_ids_match(ids, ref_ids, keys, rel=1e-6):
    """ids == ref_ids except in rows where the differing picks are near-ties in keys."""
    ids = np.asarray(ids)
    bad = np.nonzero((ids != ref_ids).any(axis=1))[0]
    for t in bad:
        a, b = set(ids[t].tolist()), set(ref_ids[t].tolist())
        kth = keys[t][ref_ids[t][-1]]
        for e in a ^ b:
            v = keys[t][e]
            assert abs(v - kth) <= rel * max(abs(kth), 1e-30) or (np.isinf(v) and np.isinf(kth)), (
                "row %d: ids %s vs reference %s are no near-tie" % (t, ids[t], ref_ids[t]))
        # within the same set, a different order is a near-tie too
        if a == b:
            for x, y in zip(ids[t], ref_ids[t]):
                if x != y:
                    assert abs(keys[t][x] - keys[t][y]) <= rel * max(abs(keys[t][y]), 1e-30), (
                        "row %d: order %s vs reference %s" % (t, ids[t], ref_ids[t]))
    return bad
