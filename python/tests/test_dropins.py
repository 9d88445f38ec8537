# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""The vLLM / SGLang / aiter drop-ins (CPU backend, NumPy arrays) against their documented
conventions and the contract."""
import numpy as np
import pytest

import moeroute
import reference as ref
from moeroute import aiter as mr_aiter
from moeroute import vllm as mr_vllm


def softmax_topk(logits, k, renormalize):
    """The engines' definition: softmax over the full row, the k largest, optionally renormalised."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids = np.argsort(-p, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, ids, axis=1)
    if renormalize:
        w /= w.sum(axis=1, keepdims=True)
    return ids, w


@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
def test_topk_softmax(renormalize, ids_dtype, rng):
    T, E, k = 23, 64, 6
    logits = rng.standard_normal((T, E)).astype(np.float32)
    topk_weights = np.full((T, k), -1, np.float32)
    topk_ids = np.full((T, k), -1, ids_dtype)
    tei = np.full((T, k), -1, np.int32)
    assert mr_vllm.topk_softmax(topk_weights, topk_ids, tei, logits, renormalize) is None
    ids, w = softmax_topk(logits, k, renormalize)
    np.testing.assert_array_equal(topk_ids, ids)
    np.testing.assert_allclose(topk_weights, w, rtol=1e-5)
    # vLLM: token_expert_indices[t, j] = j * T + t (slot-major source row)
    np.testing.assert_array_equal(tei, np.arange(k)[None, :] * T + np.arange(T)[:, None])
    # aiter's topk_softmax is the same function
    w2, ids2 = np.zeros_like(topk_weights), np.zeros((T, k), np.int32)
    mr_aiter.topk_softmax(w2, ids2, None, logits, renormalize)
    np.testing.assert_array_equal(ids2, topk_ids)


def test_topk_softmax_bf16_and_bias(rng):
    T, E, k = 8, 32, 4
    x = rng.standard_normal((T, E)).astype(np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    logits = bits.view(ml_dtypes.bfloat16)
    w, ids = np.zeros((T, k), np.float32), np.zeros((T, k), np.int32)
    bias = (rng.standard_normal(E) * 0.05).astype(np.float32)
    mr_vllm.topk_softmax(w, ids, None, logits, True, e_score_correction_bias=bias)
    rids, rw, keys = ref.gate(bits, k, dtype="bf16", score="softmax", renormalize=True, bias=bias)
    ref.assert_ids_match(ids, rids, keys)
    np.testing.assert_allclose(w, rw, rtol=1e-5)


def check_vllm_align(topk_ids, E, U, sorted_token_ids, experts_ids, num_tokens_post_pad, expert_tail=-1):
    T, k = topk_ids.shape
    want = ref.sort(topk_ids, None, E, U)
    total = int(num_tokens_post_pad[0])
    assert total == int(want["num_tokens_post_pad"][0])
    np.testing.assert_array_equal(sorted_token_ids[:total], want["sorted_token_ids"])
    np.testing.assert_array_equal(experts_ids[:total // U], want["expert_ids"])
    assert (sorted_token_ids[total:] == T * k).all()          # vLLM pads the whole capacity
    assert (experts_ids[total // U:] == expert_tail).all()
    # the invariants vLLM's consumers rely on
    flat = topk_ids.reshape(-1)
    valid = sorted_token_ids[:total][sorted_token_ids[:total] < T * k]
    assert sorted(valid.tolist()) == [i for i in range(T * k) if 0 <= flat[i] < E]
    for b in range(total // U):
        rows = sorted_token_ids[b * U:(b + 1) * U]
        rows = rows[rows < T * k]
        assert (flat[rows] == experts_ids[b]).all()


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
def test_moe_align_block_size(ids_dtype, rng):
    T, k, E, U = 50, 4, 16, 16
    topk_ids = rng.integers(0, E, size=(T, k)).astype(ids_dtype)
    cap = T * k + E * (U - 1)
    sorted_token_ids = np.full(cap, 12345, np.int32)
    experts_ids = np.full(-(-cap // U), 777, np.int32)
    ntpp = np.zeros(1, np.int32)
    mr_vllm.moe_align_block_size(topk_ids, E, U, sorted_token_ids, experts_ids, ntpp)
    check_vllm_align(topk_ids, E, U, sorted_token_ids, experts_ids, ntpp)


def test_moe_align_block_size_capacities(rng):
    T, k, E, U = 7, 2, 8, 4
    topk_ids = rng.integers(0, E, size=(T, k)).astype(np.int32)
    cap = T * k + E * (U - 1)
    # pad_sorted_ids-style capacity (rounded up) and floor-sized block array are both fine
    sti = np.zeros(-(-cap // U) * U, np.int32)
    eids = np.zeros(cap // U, np.int32)
    ntpp = np.zeros(1, np.int32)
    mr_vllm.moe_align_block_size(topk_ids, E, U, sti, eids, ntpp)
    check_vllm_align(topk_ids, E, U, sti, eids, ntpp)
    with pytest.raises(ValueError, match="sorted_token_ids"):
        mr_vllm.moe_align_block_size(topk_ids, E, U, np.zeros(cap - 1, np.int32), eids, ntpp)
    with pytest.raises(TypeError, match="int32"):
        mr_vllm.moe_align_block_size(topk_ids, E, U, sti.astype(np.int64), eids, ntpp)
    # an id >= num_experts is dropped (vLLM skips it too)
    bad = topk_ids.copy()
    bad[0, 0] = E
    mr_vllm.moe_align_block_size(bad, E, U, sti, eids, ntpp)
    assert 0 not in sti[:ntpp[0]].tolist()


def test_fused_vllm_equals_two_steps(rng):
    T, E, k, U = 19, 32, 4, 8
    logits = rng.standard_normal((T, E)).astype(np.float32)
    cap = T * k + E * (U - 1)

    def bufs():
        return (np.zeros((T, k), np.float32), np.zeros((T, k), np.int32), np.zeros((T, k), np.int32),
                np.zeros(cap, np.int32), np.zeros(-(-cap // U), np.int32), np.zeros(1, np.int32))
    a = bufs()
    mr_vllm.topk_softmax(a[0], a[1], a[2], logits, True)
    mr_vllm.moe_align_block_size(a[1], E, U, a[3], a[4], a[5])
    b = bufs()
    mr_vllm.topk_softmax_align_block_size(b[0], b[1], b[2], logits, True, U, b[3], b[4], b[5])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    check_vllm_align(b[1], E, U, b[3], b[4], b[5])


def aiter_bufs(T, k, E, U, moe_dim=16, nvalid=2):
    cap = T * k + E * U - k
    return dict(sorted_token_ids=np.full(cap, -5, np.int32), sorted_weights=np.full(cap, -5, np.float32),
                sorted_expert_ids=np.full(-(-cap // U), -5, np.int32), num_valid_ids=np.zeros(nvalid, np.int32),
                moe_buf=np.ones((T, moe_dim), np.float32))


@pytest.mark.parametrize("masked", [False, True])
def test_moe_sorting_fwd(masked, rng):
    T, k, E, U = 33, 8, 64, 32
    logits = rng.standard_normal((T, E)).astype(np.float32)
    g = moeroute.gate(logits, top_k=k)
    mask = (rng.random(E) < 0.5).astype(np.int32) if masked else None
    b = aiter_bufs(T, k, E, U)
    mr_aiter.moe_sorting_fwd(g.topk_ids, g.topk_weights, b["sorted_token_ids"], b["sorted_weights"],
                             b["sorted_expert_ids"], b["num_valid_ids"], b["moe_buf"], E, U, mask)
    want = ref.sort(g.topk_ids, g.topk_weights, E, U, mask)
    total = int(b["num_valid_ids"][0])
    assert list(b["num_valid_ids"]) == [total, T] and total == int(want["num_valid_ids"][0])
    np.testing.assert_array_equal(b["sorted_token_ids"][:total], want["sorted_ids"])
    np.testing.assert_array_equal(b["sorted_weights"][:total], want["sorted_weights"])
    np.testing.assert_array_equal(b["sorted_expert_ids"][:total // U], want["sorted_expert_ids"])
    assert not b["moe_buf"].any()


def test_moe_sorting_fwd_old_num_valid_ids_and_fused(rng):
    T, k, E, U = 12, 4, 16, 8
    logits = rng.standard_normal((T, E)).astype(np.float32)
    w, ids, tei = np.zeros((T, k), np.float32), np.zeros((T, k), np.int32), np.zeros((T, k), np.int32)
    b = aiter_bufs(T, k, E, U, nvalid=1)
    mr_aiter.topk_softmax_sorting_fwd(w, ids, tei, logits, True, b["sorted_token_ids"], b["sorted_weights"],
                                      b["sorted_expert_ids"], b["num_valid_ids"], b["moe_buf"], U)
    want = moeroute.route(logits, top_k=k, unit_size=U, layout="ck")
    np.testing.assert_array_equal(ids, want.topk_ids)
    assert int(b["num_valid_ids"][0]) == want.total
    np.testing.assert_array_equal(b["sorted_token_ids"][:want.total], want.sorted_ids)
    assert not b["moe_buf"].any()
    with pytest.raises(NotImplementedError):
        mr_aiter.moe_sorting_fwd(ids, w, b["sorted_token_ids"], b["sorted_weights"], b["sorted_expert_ids"],
                                 b["num_valid_ids"], b["moe_buf"], E, U, None, np.array([T], np.int32))


def test_moe_sorting_allocating(rng):
    T, k, E, U = 10, 2, 8, 4
    ids = rng.integers(0, E, size=(T, k)).astype(np.int32)
    w = rng.random((T, k)).astype(np.float32)
    sorted_ids, sorted_w, sorted_eids, nvalid, moe_buf = mr_aiter.moe_sorting(ids, w, E, 24, np.float16, U)
    want = ref.sort(ids, w, E, U)
    total = int(nvalid[0])
    np.testing.assert_array_equal(sorted_ids[:total], want["sorted_ids"])
    assert moe_buf.shape == (T, 24) and moe_buf.dtype == np.float16 and not moe_buf.any()
