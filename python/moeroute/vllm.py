# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Drop-in replacements of vLLM's / SGLang's routing ops (same arguments, filled in place).

    from moeroute import vllm as mr
    mr.topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize)
    mr.moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids,
                            experts_ids, num_tokens_post_pad)
    mr.topk_softmax_align_block_size(...)     # both in one launch (moeroute's fused route)

Written from the documented conventions of those functions, not from their code.
Differences that remain (deterministic order within an expert, tail values, ...)
are listed in docs/python.md.
"""
from . import _arrays as A
from . import _core

__all__ = ["topk_softmax", "moe_align_block_size", "topk_softmax_align_block_size", "EXPERT_IDS_TAIL"]

# Value written to experts_ids blocks past num_tokens_post_pad (vLLM: -1 "inactive" in recent
# versions, 0 in older ones; no consumer reads them).
EXPERT_IDS_TAIL = -1


def _topk_outputs(topk_weights, topk_ids):
    """The (ids, weights) arrays the library writes: the caller's when they are int32 /
    float32 and contiguous, else scratch arrays copied back afterwards."""
    ids_d = A.describe(topk_ids, "topk_ids")
    w_d = A.describe(topk_weights, "topk_weights")
    if len(w_d.shape) != 2 or tuple(ids_d.shape) != tuple(w_d.shape):
        raise ValueError("moeroute: topk_weights and topk_ids must both be [num_tokens, topk], got %s and %s" % (
            tuple(w_d.shape), tuple(ids_d.shape)))
    if ids_d.dtype not in ("int32", "int64", "uint32", "int16"):
        raise TypeError("moeroute: topk_ids must be an integer array, got %s" % ids_d.dtype)
    if w_d.dtype not in ("float32", "float16", "bfloat16"):
        raise TypeError("moeroute: topk_weights must be float32, float16 or bfloat16, got %s" % w_d.dtype)
    ids = topk_ids if ids_d.dtype == "int32" and ids_d.is_contiguous() else A.empty_like_shape(
        topk_ids, tuple(ids_d.shape), "int32")
    w = topk_weights if w_d.dtype == "float32" and w_d.is_contiguous() else A.empty_like_shape(
        topk_weights, tuple(w_d.shape), "float32")
    return ids, w, tuple(w_d.shape)


def _finish_topk(topk_weights, topk_ids, token_expert_indices, ids, w, shape):
    if ids is not topk_ids:
        A.copy_into(topk_ids, ids)
    if w is not topk_weights:
        A.copy_into(topk_weights, w)
    if token_expert_indices is not None:
        T, k = shape
        A.copy_into(token_expert_indices, A.slot_major_indices(token_expert_indices, T, k))


def topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False,
                 e_score_correction_bias=None):
    """vLLM's topk_softmax: softmax over gating_output [T, E] (fp32/fp16/bf16), the top-k
    experts per row into topk_ids [T, k] (int32, or int64/uint32 through a copy) and their
    probabilities into topk_weights [T, k] (fp32, or 16-bit through a copy), renormalised
    to sum 1 when renormalize; token_expert_indices [T, k] (or None) gets j * T + t.
    e_score_correction_bias (fp32 [E]) selects on softmax + bias, weights stay unbiased."""
    ids, w, shape = _topk_outputs(topk_weights, topk_ids)
    _core.gate(gating_output, top_k=shape[1], score="softmax", renormalize=bool(renormalize), scale=1.0,
               bias=e_score_correction_bias, out=(ids, w))
    _finish_topk(topk_weights, topk_ids, token_expert_indices, ids, w, shape)


def _align_outputs(T, k, num_experts, block_size, sorted_token_ids, experts_ids, num_tokens_post_pad, pad):
    capacity = T * k + num_experts * (block_size - 1)
    # Blocks past the last valid one are never written, so the floor is enough capacity
    # (some callers allocate capacity // block_size blocks).
    min_lens = {"sorted_token_ids": capacity, "expert_ids": capacity // block_size, "num_tokens_post_pad": 1}
    out = {"sorted_token_ids": sorted_token_ids, "expert_ids": experts_ids,
           "num_tokens_post_pad": num_tokens_post_pad}
    for name, a in out.items():            # checked before the fills below write anything
        d = A.describe(a, name)
        if d.dtype != "int32" or len(d.shape) != 1 or not d.is_contiguous() or d.shape[0] < min_lens[name]:
            raise (TypeError if d.dtype != "int32" else ValueError)(
                "moeroute: %s must be a contiguous 1-D int32 array of at least %d entries, got %s %s" % (
                    "experts_ids" if name == "expert_ids" else name, min_lens[name], d.dtype, tuple(d.shape)))
    if pad:
        # vLLM's capacity semantics: every entry past the valid range holds the pad value.
        A.fill(sorted_token_ids, T * k)
        A.fill(experts_ids, EXPERT_IDS_TAIL)
    return out, min_lens


def moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids, experts_ids, num_tokens_post_pad,
                         cumsum_buffer=None, pad_sorted_token_ids=True, workspace=None):
    """vLLM's (and SGLang's) moe_align_block_size: the flat slots t*k + j of topk_ids [T, k]
    grouped by expert, each expert padded to block_size, into sorted_token_ids (capacity
    >= T*k + E*(block_size-1), pad value T*k), the expert of each block into experts_ids,
    and the padded total into num_tokens_post_pad[0]. Ids >= num_experts are dropped.
    topk_ids other than int32 go through an int32 copy. SGLang's cumsum_buffer is not
    needed (ignored); pad_sorted_token_ids=False leaves entries past the total untouched.
    workspace: moeroute's scratch (see moeroute.workspace_size('sort', ...)); allocated
    through the framework when None and needed (large T)."""
    ids = topk_ids
    d = A.describe(topk_ids, "topk_ids")
    if d.dtype != "int32" or not d.is_contiguous():
        ids = A.astype(topk_ids, "int32")
    shape = tuple(d.shape)
    if len(shape) == 1:
        ids = ids.reshape(shape[0], 1)
        shape = (shape[0], 1)
    T, k = shape
    out, min_lens = _align_outputs(T, k, int(num_experts), int(block_size), sorted_token_ids, experts_ids,
                                   num_tokens_post_pad, pad_sorted_token_ids)
    _core.sort(ids, None, int(num_experts), unit_size=int(block_size), layout="vllm", out=out, trim=False,
               workspace=workspace, _min_lens=min_lens)


def topk_softmax_align_block_size(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize,
                                  block_size, sorted_token_ids, experts_ids, num_tokens_post_pad,
                                  e_score_correction_bias=None, pad_sorted_token_ids=True, workspace=None):
    """topk_softmax followed by moe_align_block_size, fused into one moeroute route call
    (one launch at decode sizes). Same outputs as the two calls in sequence."""
    ids, w, shape = _topk_outputs(topk_weights, topk_ids)
    T, E = A.describe(gating_output, "gating_output").shape
    out, min_lens = _align_outputs(T, shape[1], E, int(block_size), sorted_token_ids, experts_ids,
                                   num_tokens_post_pad, pad_sorted_token_ids)
    out["topk_ids"] = ids
    out["topk_weights"] = w
    _core.route(gating_output, top_k=shape[1], score="softmax", renormalize=bool(renormalize), scale=1.0,
                bias=e_score_correction_bias, unit_size=int(block_size), layout="vllm", out=out, trim=False,
                workspace=workspace, _min_lens=min_lens)
    _finish_topk(topk_weights, topk_ids, token_expert_indices, ids, w, shape)
