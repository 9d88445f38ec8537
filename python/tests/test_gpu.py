# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""The CUDA backend through torch (and CuPy / DLPack where present): CUDA vs CPU,
drop-ins, streams, and capture in a torch CUDA graph with preallocated outputs.
Skipped without a GPU, without torch, or with a library built without CUDA."""
import numpy as np
import pytest

import moeroute
import reference as ref
from conftest import HAVE_TORCH_CUDA
from test_api import CONFIGS, SORTED, bf16_bits, make_logits

pytestmark = [
    pytest.mark.skipif(not HAVE_TORCH_CUDA, reason="needs torch with a CUDA GPU"),
    pytest.mark.skipif("cuda=OFF" in moeroute.build_info(), reason="library built without the CUDA backend"),
]

if HAVE_TORCH_CUDA:
    import torch


def to_cuda(a, dtype=None):
    """A NumPy array as a CUDA tensor; uint16 raw bits become a bfloat16 tensor."""
    if a is None:
        return None
    if a.dtype == np.uint16 and dtype == "bf16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def compare_cuda_to_cpu(r_cuda, logits, top_k, unit_size, layout="both", dtype=None, expert_mask=None, **kw):
    """ids (up to near-ties) and weights (1e-5) against the reference; the sorted layouts
    bit-exact against the CPU sort of the GPU's own top-k."""
    assert r_cuda.total is None and not r_cuda.is_trimmed
    h = r_cuda.numpy()
    ids, w, keys = ref.gate(logits, top_k, dtype=dtype, **kw)
    ref.assert_ids_match(h.topk_ids, ids, keys)
    np.testing.assert_allclose(h.topk_weights, w, rtol=1e-5, atol=1e-7)
    cpu = moeroute.sort(h.topk_ids, h.topk_weights, logits.shape[1], unit_size=unit_size, layout=layout,
                        expert_mask=expert_mask)
    for name in SORTED:
        want = getattr(cpu, name)
        got = getattr(h, name)
        if want is None:
            assert got is None, name
            continue
        if name == "sorted_weights":
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
    return h


def test_device_count():
    assert moeroute.cuda_device_count() == torch.cuda.device_count() > 0


@pytest.mark.parametrize("T", [1, 7, 100, 4096])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "%s-E%d-k%d-%s" % (c["kw"]["score"], c["E"], c["k"], c["dtype"]))
def test_cuda_route_matches_cpu(cfg, T, rng):
    logits = make_logits(rng, T, cfg["E"], cfg["dtype"])
    kw = dict(cfg["kw"])
    if cfg.get("bias"):
        kw["bias"] = (rng.standard_normal(cfg["E"]) * 0.1).astype(np.float32)
    dtype = "bf16" if cfg["dtype"] == "bf16" else None
    ckw = dict(kw)
    if "bias" in ckw:
        ckw["bias"] = to_cuda(kw["bias"])
    r = moeroute.route(to_cuda(logits, dtype), top_k=cfg["k"], unit_size=cfg["U"], **ckw)
    assert r.sorted_ids.is_cuda and r.sorted_ids.shape[0] == T * cfg["k"] + cfg["E"] * cfg["U"] - cfg["k"]
    h = compare_cuda_to_cpu(r, logits, cfg["k"], cfg["U"], dtype=dtype, **kw)
    # fused == unfused on the GPU, bit for bit
    g = moeroute.gate(to_cuda(logits, dtype), top_k=cfg["k"], **ckw)
    s = moeroute.sort(g.topk_ids, g.topk_weights, cfg["E"], unit_size=cfg["U"]).numpy()
    np.testing.assert_array_equal(A_np(g.topk_ids), h.topk_ids)
    np.testing.assert_array_equal(A_np(g.topk_weights).view(np.uint32), h.topk_weights.view(np.uint32))
    for name in SORTED:
        np.testing.assert_array_equal(getattr(s, name), getattr(h, name), err_msg=name)


def A_np(t):
    return t.detach().cpu().numpy()


def test_cuda_mask_moe_buf_layouts(rng):
    T, E, k, U = 300, 128, 8, 64
    logits = make_logits(rng, T, E, "bf16")
    mask = (rng.random(E) < 0.5).astype(np.int32)
    buf = torch.ones((T, 512), dtype=torch.bfloat16, device="cuda")
    for layout in ("ck", "vllm", "both"):
        buf.fill_(1)
        r = moeroute.route(to_cuda(logits, "bf16"), top_k=k, unit_size=U, layout=layout,
                           expert_mask=to_cuda(mask), moe_buf=buf)
        compare_cuda_to_cpu(r, logits, k, U, layout=layout, dtype="bf16", expert_mask=mask)
        torch.cuda.synchronize()
        assert not buf.any()


def test_cuda_strided_fp16_and_zero_tokens(rng):
    big = torch.randn(64, 300, device="cuda", dtype=torch.float16)
    view = big[:, 22:278]                       # E = 256, row stride 300
    r = moeroute.route(view, top_k=8, unit_size=32)
    compare_cuda_to_cpu(r, view.cpu().numpy(), 8, 32)
    z = moeroute.route(torch.empty((0, 64), device="cuda"), top_k=4, trim=True)
    assert z.total == 0 and z.sorted_ids.shape == (0,)


def test_cuda_streams(rng):
    logits = make_logits(rng, 50, 64)
    x = to_cuda(logits)
    want = moeroute.route(logits, top_k=6, unit_size=16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):              # runs on the current (side) stream
        r = moeroute.route(x, top_k=6, unit_size=16)
    side.synchronize()
    np.testing.assert_array_equal(r.numpy().sorted_ids, want.sorted_ids)
    other = torch.cuda.Stream()
    other.wait_stream(torch.cuda.current_stream())
    r2 = moeroute.route(x, top_k=6, unit_size=16, stream=other)        # an explicit stream
    other.synchronize()
    np.testing.assert_array_equal(r2.numpy().sorted_token_ids, want.sorted_token_ids)


def test_cuda_graph_capture(rng):
    T, E, k, U = 64, 256, 8, 64
    bias = to_cuda((rng.standard_normal(E) * 0.1).astype(np.float32))
    kw = dict(model="deepseek-r1", bias=bias, unit_size=U)
    static = torch.zeros((T, E), dtype=torch.float32, device="cuda")
    moe_buf = torch.ones((T, 128), dtype=torch.bfloat16, device="cuda")
    bufs = moeroute.route_buffers(static, **kw)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):              # warm-up outside capture (plans, lazy CUDA init)
        moeroute.route(static, out=bufs, moe_buf=moe_buf, **kw)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        res = moeroute.route(static, out=bufs, moe_buf=moe_buf, **kw)
    assert res is bufs
    bias_np = bias.cpu().numpy()
    for _ in range(3):
        logits = make_logits(rng, T, E)
        static.copy_(torch.from_numpy(logits))
        moe_buf.fill_(1)
        g.replay()
        torch.cuda.synchronize()
        assert not moe_buf.any()
        compare_cuda_to_cpu(bufs, logits, k, U, score="sigmoid", renormalize=True, scale=2.5, bias=bias_np,
                            num_groups=8, topk_groups=4, group_score="top2_sum")


def test_cuda_graph_capture_dropins(rng):
    from moeroute import aiter as mr_aiter
    from moeroute import vllm as mr_vllm
    T, E, k, U = 32, 64, 6, 16
    static = torch.zeros((T, E), dtype=torch.bfloat16, device="cuda")
    dev = dict(device="cuda")
    cap = T * k + E * (U - 1)
    w = torch.empty((T, k), dtype=torch.float32, **dev)
    ids = torch.empty((T, k), dtype=torch.int32, **dev)
    tei = torch.empty((T, k), dtype=torch.int32, **dev)
    sti = torch.empty(cap, dtype=torch.int32, **dev)
    eids = torch.empty((cap + U - 1) // U, dtype=torch.int32, **dev)
    ntpp = torch.empty(1, dtype=torch.int32, **dev)
    ck_cap = T * k + E * U - k
    ck = (torch.empty(ck_cap, dtype=torch.int32, **dev), torch.empty(ck_cap, dtype=torch.float32, **dev),
          torch.empty((ck_cap + U - 1) // U, dtype=torch.int32, **dev), torch.empty(2, dtype=torch.int32, **dev))

    def step():
        mr_vllm.topk_softmax(w, ids, tei, static, True)
        mr_vllm.moe_align_block_size(ids, E, U, sti, eids, ntpp)
        mr_aiter.moe_sorting_fwd(ids, w, ck[0], ck[1], ck[2], ck[3], None, E, U)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    for _ in range(2):
        logits = make_logits(rng, T, E)
        static.copy_(torch.from_numpy(logits).to(torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        x = static.float().cpu().numpy()
        hw, hi, ht = (np.zeros((T, k), np.float32), np.zeros((T, k), np.int32), np.zeros((T, k), np.int32))
        mr_vllm.topk_softmax(hw, hi, ht, x, True)
        np.testing.assert_array_equal(A_np(ids), hi)
        np.testing.assert_allclose(A_np(w), hw, rtol=1e-5)
        np.testing.assert_array_equal(A_np(tei), ht)
        hs, he, hn = np.zeros(cap, np.int32), np.zeros((cap + U - 1) // U, np.int32), np.zeros(1, np.int32)
        mr_vllm.moe_align_block_size(A_np(ids), E, U, hs, he, hn)
        np.testing.assert_array_equal(A_np(sti), hs)          # whole capacity, tails included
        np.testing.assert_array_equal(A_np(eids), he)
        np.testing.assert_array_equal(A_np(ntpp), hn)
        want = moeroute.sort(A_np(ids), A_np(w), E, unit_size=U, layout="ck")
        total = int(A_np(ck[3])[0])
        assert total == want.total and int(A_np(ck[3])[1]) == T
        np.testing.assert_array_equal(A_np(ck[0])[:total], want.sorted_ids)
        np.testing.assert_array_equal(A_np(ck[1])[:total], want.sorted_weights)
        np.testing.assert_array_equal(A_np(ck[2])[:total // U], want.sorted_expert_ids)


def test_cuda_dropins_int64_and_fused(rng):
    from moeroute import vllm as mr_vllm
    T, E, k, U = 200, 128, 4, 32
    logits = make_logits(rng, T, E, "bf16")
    x = to_cuda(logits, "bf16")
    cap = T * k + E * (U - 1)

    def bufs(ids_dtype):
        return (torch.empty((T, k), dtype=torch.float32, device="cuda"),
                torch.empty((T, k), dtype=ids_dtype, device="cuda"),
                torch.empty((T, k), dtype=torch.int32, device="cuda"),
                torch.empty(cap, dtype=torch.int32, device="cuda"),
                torch.empty((cap + U - 1) // U, dtype=torch.int32, device="cuda"),
                torch.empty(1, dtype=torch.int32, device="cuda"))
    a = bufs(torch.int64)
    mr_vllm.topk_softmax(a[0], a[1], a[2], x, True)
    mr_vllm.moe_align_block_size(a[1], E, U, a[3], a[4], a[5])
    b = bufs(torch.int32)
    mr_vllm.topk_softmax_align_block_size(b[0], b[1], b[2], x, True, U, b[3], b[4], b[5])
    for p, q in zip(a, b):
        np.testing.assert_array_equal(A_np(p).astype(np.int64) if p.dtype != torch.float32 else A_np(p),
                                      A_np(q).astype(np.int64) if q.dtype != torch.float32 else A_np(q))


def test_cuda_argument_errors(rng):
    x = torch.randn(4, 64, device="cuda")
    with pytest.raises(ValueError, match="host"):
        moeroute.route(x, top_k=4, bias=torch.zeros(64))
    with pytest.raises(moeroute.MoerouteError) as e:
        moeroute.route(x, top_k=40)
    assert e.value.name == "MOEROUTE_ERR_BAD_SHAPE"
    with pytest.raises(moeroute.MoerouteError) as e:
        moeroute.route(torch.randn(4, 1025, device="cuda"), top_k=4)     # the CUDA backend's E limit
    assert e.value.name in ("MOEROUTE_ERR_BAD_SHAPE", "MOEROUTE_ERR_NOT_SUPPORTED")


def test_cupy_and_dlpack(rng):
    logits = make_logits(rng, 33, 64)
    want = moeroute.route(logits, top_k=6, unit_size=16)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        r = moeroute.route(cupy.asarray(logits), top_k=6, unit_size=16)
        assert isinstance(r.sorted_ids, cupy.ndarray)
        np.testing.assert_array_equal(r.numpy().sorted_ids, want.sorted_ids)

    class DLPackOnly(object):
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()
    torch.cuda.synchronize()
    r = moeroute.route(DLPackOnly(to_cuda(logits)), top_k=6, unit_size=16)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(r.numpy().sorted_ids, want.sorted_ids)


def test_bf16_tensor_matches_raw_bits(rng):
    x = (rng.standard_normal((16, 128)) * 2).astype(np.float32)
    bits = bf16_bits(x)
    a = moeroute.route(to_cuda(bits, "bf16"), top_k=8).numpy()
    b = moeroute.route(torch.from_numpy(bits.view(np.int16)).cuda(), top_k=8, dtype="bf16").numpy()
    np.testing.assert_array_equal(a.sorted_ids, b.sorted_ids)
    c = moeroute.route(bits, top_k=8, dtype="bf16")
    np.testing.assert_array_equal(a.topk_ids, c.topk_ids)
