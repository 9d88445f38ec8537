# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Drop-in replacements of aiter's routing ops (same arguments, filled in place).

    from moeroute import aiter as mr
    mr.moe_sorting_fwd(topk_ids, topk_weights, sorted_token_ids, sorted_weights,
                       sorted_expert_ids, num_valid_ids, moe_buf, num_experts, unit_size)
    mr.topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, need_renorm)
    mr.topk_softmax_sorting_fwd(...)         # both in one launch (moeroute's fused route)
    mr.moe_sorting(topk_ids, topk_weights, num_experts, model_dim, moebuf_dtype)  # allocating

Written from the documented conventions of those functions, not from their code.
Differences that remain are listed in docs/python.md.
"""
from . import _arrays as A
from . import _core
from .vllm import _finish_topk, _topk_outputs, topk_softmax as _vllm_topk_softmax

__all__ = ["moe_sorting_fwd", "topk_softmax", "topk_softmax_sorting_fwd", "moe_sorting"]


def _ck_out(sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids):
    """The CK output dict; a 1-entry num_valid_ids (older aiter) gets a 2-entry scratch."""
    nv = A.describe(num_valid_ids, "num_valid_ids")
    scratch = None
    if nv.numel < 2:
        scratch = A.empty_like_shape(num_valid_ids, (2,), "int32")
    out = {"sorted_ids": sorted_token_ids, "sorted_weights": sorted_weights, "sorted_expert_ids": sorted_expert_ids,
           "num_valid_ids": scratch if scratch is not None else num_valid_ids}
    return out, scratch


def _ck_finish(num_valid_ids, scratch):
    if scratch is not None:
        A.copy_into(num_valid_ids, scratch[:1])


def moe_sorting_fwd(topk_ids, topk_weights, sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids,
                    moe_buf, num_experts, unit_size, local_expert_mask=None, num_local_tokens=None,
                    dispatch_policy=0, workspace=None):
    """aiter's moe_sorting_fwd: token slots of topk_ids [T, k] int32 grouped by expert, padded
    to unit_size, as (slot << 24) | t in sorted_token_ids (sentinel (k << 24) | T), their
    weights (from topk_weights [T, k] fp32) in sorted_weights, the (local) expert of each
    block in sorted_expert_ids, {total, T} in num_valid_ids; moe_buf (any dtype, or None)
    is zeroed. local_expert_mask: int32 [E] of 0/1 (expert parallelism). Capacities as
    aiter allocates them: T*k + E*unit_size - k rows, ceil(rows / unit_size) blocks.
    num_local_tokens (a device-side token count) is not supported; dispatch_policy is
    accepted and ignored (moeroute picks its own path). workspace: moeroute's scratch,
    allocated through the framework when None and needed (large T)."""
    if num_local_tokens is not None:
        raise NotImplementedError("moeroute: num_local_tokens is not supported (pass the first T rows instead)")
    out, scratch = _ck_out(sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids)
    _core.sort(topk_ids, topk_weights, int(num_experts), unit_size=int(unit_size), layout="ck",
               expert_mask=local_expert_mask, moe_buf=moe_buf, out=out, trim=False, workspace=workspace)
    _ck_finish(num_valid_ids, scratch)


def topk_softmax(topk_weights, topk_indices, token_expert_indices, gating_output, need_renorm=False):
    """aiter's topk_softmax (the same contract as vLLM's: see moeroute.vllm.topk_softmax)."""
    _vllm_topk_softmax(topk_weights, topk_indices, token_expert_indices, gating_output, need_renorm)


def topk_softmax_sorting_fwd(topk_weights, topk_ids, token_expert_indices, gating_output, need_renorm,
                             sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids, moe_buf,
                             unit_size, local_expert_mask=None, workspace=None):
    """topk_softmax followed by moe_sorting_fwd, fused into one moeroute route call."""
    ids, w, shape = _topk_outputs(topk_weights, topk_ids)
    out, scratch = _ck_out(sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids)
    out["topk_ids"] = ids
    out["topk_weights"] = w
    _core.route(gating_output, top_k=shape[1], score="softmax", renormalize=bool(need_renorm), scale=1.0,
                expert_mask=local_expert_mask, moe_buf=moe_buf, unit_size=int(unit_size), layout="ck", out=out,
                trim=False, workspace=workspace)
    _ck_finish(num_valid_ids, scratch)
    _finish_topk(topk_weights, topk_ids, token_expert_indices, ids, w, shape)


def moe_sorting(topk_ids, topk_weights, num_experts, model_dim, moebuf_dtype, block_size=32, expert_mask=None):
    """aiter's allocating wrapper: returns (sorted_ids, sorted_weights, sorted_expert_ids,
    num_valid_ids, moe_buf) with moe_buf a fresh zeroed [T, model_dim] array of moebuf_dtype
    (a torch dtype for torch input, a NumPy/CuPy dtype otherwise)."""
    d = A.describe(topk_ids, "topk_ids")
    T = d.shape[0]
    if d.kind == A.TORCH:
        import torch
        moe_buf = torch.empty((T, int(model_dim)), dtype=moebuf_dtype, device=topk_ids.device)
    else:
        import numpy as np
        xp = np if not d.cuda else __import__("cupy")
        moe_buf = xp.empty((T, int(model_dim)), dtype=np.dtype(moebuf_dtype))
    r = _core.sort(topk_ids, topk_weights, int(num_experts), unit_size=int(block_size), layout="ck",
                   expert_mask=expert_mask, moe_buf=moe_buf, trim=False)
    return r.sorted_ids, r.sorted_weights, r.sorted_expert_ids, r.num_valid_ids, moe_buf
