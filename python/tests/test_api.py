# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""route / gate / sort on the CPU backend against the NumPy reference of the contract."""
import numpy as np
import pytest

import moeroute
import reference as ref

SORTED = ("sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids", "sorted_token_ids", "expert_ids",
          "num_tokens_post_pad")


def bf16_bits(x):
    """fp32 -> bf16 raw bits (round to nearest even), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def make_logits(rng, T, E, dtype="fp32", spread=3.0):
    x = (rng.standard_normal((T, E)) * spread).astype(np.float32)
    if dtype == "bf16":
        return bf16_bits(x)
    if dtype == "fp16":
        return x.astype(np.float16)
    return x


def check_route(r, logits, top_k, unit_size=32, layout="both", dtype=None, expert_mask=None, **kw):
    E = logits.shape[1]
    ids, w, keys = ref.gate(logits, top_k, dtype=dtype, **kw)
    ref.assert_ids_match(r.topk_ids, ids, keys)
    np.testing.assert_allclose(r.topk_weights, w, rtol=1e-5, atol=1e-7)
    # the sort is exact for the library's own top-k
    s = ref.sort(r.topk_ids, r.topk_weights, E, unit_size, expert_mask)
    want = []
    if layout in ("ck", "both"):
        want += SORTED[:4]
    if layout in ("vllm", "both"):
        want += SORTED[4:]
    for name in want:
        got = getattr(r, name)
        if name == "sorted_weights":
            np.testing.assert_array_equal(got.view(np.uint32), s[name].view(np.uint32), err_msg=name)
        else:
            np.testing.assert_array_equal(got, s[name], err_msg=name)
    for name in set(SORTED) - set(want):
        assert getattr(r, name) is None
    assert r.total == int(s["num_valid_ids"][0])
    return ids, w


CONFIGS = [
    dict(T=37, E=64, k=6, U=16, dtype="bf16", kw=dict(score="softmax", renormalize=True)),
    dict(T=20, E=60, k=4, U=8, dtype="fp32", kw=dict(score="softmax", renormalize=False)),
    dict(T=16, E=32, k=4, U=32, dtype="fp16", kw=dict(score="softmax", renormalize=True)),
    dict(T=33, E=256, k=8, U=64, dtype="fp32", bias=True,
         kw=dict(score="sigmoid", renormalize=True, scale=2.5, num_groups=8, topk_groups=4, group_score="top2_sum")),
    dict(T=9, E=160, k=6, U=32, dtype="bf16",
         kw=dict(score="softmax", renormalize=False, scale=16.0, num_groups=8, topk_groups=3, group_score="max")),
    dict(T=17, E=256, k=6, U=32, dtype="fp32", bias=True, kw=dict(score="sqrt_softplus", renormalize=True, scale=1.5)),
    dict(T=5, E=128, k=1, U=128, dtype="bf16", kw=dict(score="sigmoid", renormalize=False)),
    dict(T=11, E=64, k=6, U=16, dtype="fp32", bias=True, kw=dict(score="softmax", renormalize=True)),
    dict(T=3, E=8, k=8, U=1, dtype="fp32", kw=dict(score="softmax", renormalize=True)),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "%s-E%d-k%d-%s" % (c["kw"]["score"], c["E"], c["k"], c["dtype"]))
def test_route_matches_reference(cfg, rng):
    logits = make_logits(rng, cfg["T"], cfg["E"], cfg["dtype"])
    kw = dict(cfg["kw"])
    if cfg.get("bias"):
        kw["bias"] = (rng.standard_normal(cfg["E"]) * 0.1).astype(np.float32)
    dtype = "bf16" if cfg["dtype"] == "bf16" else None
    r = moeroute.route(logits, top_k=cfg["k"], unit_size=cfg["U"], dtype=dtype, **kw)
    check_route(r, logits, cfg["k"], unit_size=cfg["U"], dtype=dtype, **kw)
    # gate alone and sort alone give the same as the fused route
    g = moeroute.gate(logits, top_k=cfg["k"], dtype=dtype, **kw)
    np.testing.assert_array_equal(g.topk_ids, r.topk_ids)
    np.testing.assert_array_equal(g.topk_weights, r.topk_weights)
    ids, w = g
    s = moeroute.sort(ids, w, cfg["E"], unit_size=cfg["U"])
    for name in SORTED:
        np.testing.assert_array_equal(getattr(s, name), getattr(r, name), err_msg=name)


@pytest.mark.parametrize("layout", ["ck", "vllm", "both"])
def test_layouts(layout, rng):
    logits = make_logits(rng, 25, 32)
    r = moeroute.route(logits, top_k=4, unit_size=8, layout=layout)
    check_route(r, logits, 4, unit_size=8, layout=layout)


def test_strided_logits(rng):
    big = make_logits(rng, 12, 80)
    logits = big[:, 5:69]                      # row stride 80 > E = 64
    assert not logits.flags.c_contiguous
    r = moeroute.route(logits, top_k=6, unit_size=16)
    check_route(r, np.ascontiguousarray(logits), 6, unit_size=16)
    with pytest.raises(ValueError, match="rows must be contiguous"):
        moeroute.route(big[:, ::2], top_k=4)


def test_expert_mask(rng):
    logits = make_logits(rng, 30, 32)
    mask = (rng.random(32) < 0.5).astype(np.int32)
    r = moeroute.route(logits, top_k=5, unit_size=8, expert_mask=mask)
    check_route(r, logits, 5, unit_size=8, expert_mask=mask)
    assert r.sorted_expert_ids.max(initial=0) < mask.sum()


def test_zero_tokens():
    logits = np.zeros((0, 16), np.float32)
    moe_buf = np.ones((0, 8), np.float32)
    r = moeroute.route(logits, top_k=4, moe_buf=moe_buf)
    assert r.total == 0 and r.topk_ids.shape == (0, 4)
    assert r.sorted_ids.shape == (0,) and r.sorted_token_ids.shape == (0,)
    assert list(r.num_valid_ids) == [0, 0]


def test_moe_buf_cleared(rng):
    logits = make_logits(rng, 6, 16)
    buf = np.full((6, 24), 7, np.float16)
    r = moeroute.route(logits, top_k=2, moe_buf=buf)
    assert r.moe_buf is buf and not buf.any()
    buf[:] = 3
    g = moeroute.gate(logits, top_k=2)
    assert buf.all()                           # gate never touches moe_buf
    moeroute.sort(g.topk_ids, g.topk_weights, 16, moe_buf=buf)
    assert not buf.any()


def test_nonfinite_and_ties():
    x = np.array([[np.nan, -np.inf, 1.0, 1.0, np.inf, 0.5, np.inf, 2.0],
                  [np.nan] * 8,
                  [-np.inf] * 6 + [0.0, 1.0],
                  [0.0] * 8], np.float32)
    r = moeroute.route(x, top_k=3, unit_size=4)
    check_route(r, x, 3, unit_size=4)
    assert r.topk_ids[0].tolist() == [4, 6, 7]             # +inf ties FLT_MAX, lower index first
    assert r.topk_ids[1].tolist() == [0, 1, 2] and not r.topk_weights[1].any()
    assert r.topk_ids[2].tolist()[:2] == [7, 6] and r.topk_weights[2, 2] == 0
    assert r.topk_ids[3].tolist() == [0, 1, 2]
    assert np.isfinite(r.topk_weights).all()


def test_bf16_ml_dtypes_and_raw_bits(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = make_logits(rng, 7, 32)
    bits = bf16_bits(x)
    a = moeroute.route(bits, top_k=4, dtype="bf16")
    b = moeroute.route(bits.view(ml_dtypes.bfloat16), top_k=4)
    np.testing.assert_array_equal(a.topk_ids, b.topk_ids)
    np.testing.assert_array_equal(a.sorted_ids, b.sorted_ids)


def test_trim_and_full_capacity(rng):
    logits = make_logits(rng, 10, 32)
    full = moeroute.route(logits, top_k=4, unit_size=16, trim=False)
    assert not full.is_trimmed
    assert full.sorted_ids.shape == (10 * 4 + 32 * 16 - 4,)
    assert full.sorted_token_ids.shape == (10 * 4 + 32 * 15,)
    assert full.sorted_expert_ids.shape == (-(-(10 * 4 + 32 * 16 - 4) // 16),)
    t = full.trimmed()
    assert t.is_trimmed and t.total == full.read_total() == full.total
    assert t.sorted_ids.shape == (t.total,) and t.expert_ids.shape == (t.total // 16,)
    assert np.shares_memory(t.sorted_ids, full.sorted_ids)
    trimmed = moeroute.route(logits, top_k=4, unit_size=16)
    np.testing.assert_array_equal(trimmed.sorted_ids, t.sorted_ids)
    n = t.numpy()
    assert isinstance(n.sorted_ids, np.ndarray)


def test_out_buffers_reused(rng):
    logits = make_logits(rng, 12, 64)
    bufs = moeroute.route_buffers(logits, top_k=6, unit_size=16)
    assert bufs.sorted_ids.shape[0] == 12 * 6 + 64 * 16 - 6
    for _ in range(3):
        logits = make_logits(rng, 12, 64)
        r = moeroute.route(logits, top_k=6, unit_size=16, out=bufs)
        assert np.shares_memory(r.sorted_ids, bufs.sorted_ids)
        assert np.shares_memory(r.topk_ids, bufs.topk_ids)
        check_route(r, logits, 6, unit_size=16)
    # the same buffers as a plain dict (checked each call), with an explicit workspace
    ws = np.empty(moeroute.workspace_size("route", logits, top_k=6, unit_size=16), np.uint8)
    d = {f: getattr(bufs, f) for f in ("topk_ids", "topk_weights") + SORTED}
    r = moeroute.route(logits, top_k=6, unit_size=16, out=d, workspace=ws)
    check_route(r, logits, 6, unit_size=16)
    assert r.workspace is ws


def test_out_dict_without_optional_outputs(rng):
    logits = make_logits(rng, 8, 16)
    full = moeroute.route_buffers(logits, top_k=2, unit_size=4, layout="vllm")
    out = {"sorted_token_ids": full.sorted_token_ids, "expert_ids": full.expert_ids,
           "num_tokens_post_pad": full.num_tokens_post_pad}
    r = moeroute.route(logits, top_k=2, unit_size=4, layout="vllm", out=out)
    assert r.topk_ids is None
    want = moeroute.route(logits, top_k=2, unit_size=4, layout="vllm")
    np.testing.assert_array_equal(r.sorted_token_ids, want.sorted_token_ids)


def test_gate_out_and_buffers(rng):
    logits = make_logits(rng, 9, 32)
    gb = moeroute.gate_buffers(logits, top_k=3)
    ids, w = gb
    g = moeroute.gate(logits, top_k=3, out=gb)
    assert g.topk_ids is ids and g.topk_weights is w
    r = ref.gate(logits, 3)
    ref.assert_ids_match(ids, r[0], r[2])
    g2 = moeroute.gate(logits, top_k=3, out=(np.empty((9, 3), np.int32), np.empty((9, 3), np.float32)))
    np.testing.assert_array_equal(g2.topk_ids, ids)


def test_sort_inputs(rng):
    T, k, E = 40, 3, 20
    ids = rng.integers(-2, E + 3, size=(T, k)).astype(np.int32)   # out-of-range ids are dropped
    w = rng.random((T, k)).astype(np.float32)
    s = moeroute.sort(ids, w, E, unit_size=4)
    want = ref.sort(ids, w, E, 4)
    for name in SORTED:
        np.testing.assert_array_equal(getattr(s, name), want[name], err_msg=name)
    assert s.topk_ids is ids and s.topk_weights is w
    # no weights: no sorted weights, the rest unchanged
    s2 = moeroute.sort(ids, None, E, unit_size=4)
    assert s2.sorted_weights is None
    np.testing.assert_array_equal(s2.sorted_ids, s.sorted_ids)
    sb = moeroute.sort_buffers(ids, E, unit_size=4)
    s3 = moeroute.sort(ids, None, E, unit_size=4, out=sb)
    np.testing.assert_array_equal(s3.sorted_ids, s.sorted_ids)
    s4 = moeroute.sort(ids, w, E, unit_size=4, out=sb)          # the bundle kept its sorted_weights
    np.testing.assert_array_equal(s4.sorted_weights, s.sorted_weights)


def test_presets(rng):
    ms = moeroute.models()
    names = [m.name for m in ms]
    assert "deepseek-r1" in names and "gpt-oss-120b" in names
    ds = moeroute.model_info("deepseek-r1")
    assert (ds.num_experts, ds.top_k, ds.score, ds.num_groups, ds.topk_groups, ds.has_bias) == (
        256, 8, "sigmoid", 8, 4, True)
    logits = make_logits(rng, 6, 256)
    bias = (rng.standard_normal(256) * 0.1).astype(np.float32)
    r = moeroute.route(logits, model="deepseek-r1", bias=bias, unit_size=32)
    check_route(r, logits, 8, unit_size=32, score="sigmoid", renormalize=True, scale=2.5, bias=bias, num_groups=8,
                topk_groups=4, group_score="top2_sum")
    # explicit arguments override the preset
    r2 = moeroute.route(logits, model="deepseek-r1", bias=bias, scale=1.0)
    np.testing.assert_allclose(r2.topk_weights * np.float32(2.5), r.topk_weights, rtol=1e-6)
    with pytest.raises(ValueError, match="bias"):
        moeroute.route(logits, model="deepseek-r1")
    with pytest.raises(ValueError, match="unknown model"):
        moeroute.route(logits, model="no-such-model")
    with pytest.raises(ValueError, match="256 experts"):
        moeroute.route(logits[:, :128], model="deepseek-r1", bias=bias[:128])


def test_version():
    assert moeroute.version() == moeroute.__version__
    assert "cuda=" in moeroute.build_info()
    assert moeroute.cuda_device_count() >= 0
