# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Array kinds without a GPU: DLPack-only objects, torch CPU tensors, and the plumbing of
__cuda_array_interface__ arrays up to the library's CUDA entry point (which, with no GPU,
answers NO_DEVICE, or NOT_SUPPORTED in a build without CUDA)."""
import numpy as np
import pytest

import moeroute
from moeroute import _arrays as A
import reference as ref


class DLPackOnly(object):
    """An array that speaks DLPack and nothing else (host memory)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeDeviceArray(object):
    """Claims to be CUDA memory through __cuda_array_interface__ v3 (backed by host memory:
    only used where the library refuses before touching memory)."""

    def __init__(self, a, stream=None):
        self._a = a
        self.__cuda_array_interface__ = {
            "shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False), "strides": None,
            "version": 3, "stream": stream}


def test_dlpack_host_array(rng):
    logits = rng.standard_normal((9, 32)).astype(np.float32)
    r = moeroute.route(DLPackOnly(logits), top_k=4, unit_size=8)
    want = moeroute.route(logits, top_k=4, unit_size=8)
    np.testing.assert_array_equal(r.sorted_ids, want.sorted_ids)
    assert isinstance(r.sorted_ids, np.ndarray)


def test_cai_descriptor_and_stream():
    a = np.zeros((4, 8), np.float16)
    d = A.describe(FakeDeviceArray(a, stream=1234), "x")
    assert (d.kind, d.cuda, d.dtype, tuple(d.shape), d.strides, d.ptr) == ("cai", True, "float16", (4, 8), None,
                                                                          a.ctypes.data)
    assert A.current_stream(d) == 1234
    d = A.describe(FakeDeviceArray(a, stream=None), "x")
    assert A.current_stream(d) in (0, None) or isinstance(A.current_stream(d), int)
    assert A.as_stream(None) is None and A.as_stream(7) == 7

    class S(object):
        cuda_stream = 99
    assert A.as_stream(S()) == 99
    with pytest.raises(TypeError):
        A.as_stream("default")


@pytest.mark.skipif(moeroute.cuda_device_count() > 0, reason="a GPU is present: the fake device array would be used")
def test_cai_reaches_cuda_backend(rng):
    T, E, k = 4, 16, 2
    logits = FakeDeviceArray(rng.standard_normal((T, E)).astype(np.float32), stream=1)
    host = moeroute.route(rng.standard_normal((T, E)).astype(np.float32), top_k=k, trim=False)
    out = {f: FakeDeviceArray(getattr(host, f)) for f in (
        "topk_ids", "topk_weights", "sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids",
        "sorted_token_ids", "expert_ids", "num_tokens_post_pad")}
    with pytest.raises(moeroute.MoerouteError) as e:
        moeroute.route(logits, top_k=k, out=out, workspace=FakeDeviceArray(np.zeros(1 << 20, np.uint8)))
    assert e.value.name in ("MOEROUTE_ERR_NO_DEVICE", "MOEROUTE_ERR_NOT_SUPPORTED"), e.value
    # mixing host and device arrays is refused before the library is called
    with pytest.raises(ValueError, match="host"):
        moeroute.route(logits, top_k=k, bias=np.zeros(E, np.float32))


def test_torch_cpu_tensors(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((13, 64)).astype(np.float32)
    t = torch.from_numpy(x)
    r = moeroute.route(t, top_k=6, unit_size=16)
    assert isinstance(r.topk_ids, torch.Tensor) and r.topk_ids.dtype == torch.int32
    want = moeroute.route(x, top_k=6, unit_size=16)
    for f in ("topk_ids", "sorted_ids", "sorted_token_ids", "expert_ids", "num_valid_ids"):
        np.testing.assert_array_equal(getattr(r, f).numpy(), getattr(want, f), err_msg=f)
    # bf16 tensors: the bits are what the library reads
    tb = t.to(torch.bfloat16)
    rb = moeroute.route(tb, top_k=6, unit_size=16)
    bits = tb.view(torch.int16).numpy().view(np.uint16)
    ids, w, keys = ref.gate(bits, 6, dtype="bf16")
    ref.assert_ids_match(rb.topk_ids.numpy(), ids, keys)
    # a strided tensor view and the vLLM drop-in on torch tensors
    big = torch.from_numpy(rng.standard_normal((13, 80)).astype(np.float32))
    r2 = moeroute.route(big[:, 8:72], top_k=6)
    want2 = moeroute.route(big[:, 8:72].contiguous().numpy(), top_k=6)
    np.testing.assert_array_equal(r2.topk_ids.numpy(), want2.topk_ids)
    from moeroute import vllm as mr_vllm
    T, k = 13, 6
    w = torch.empty((T, k), dtype=torch.float32)
    ids64 = torch.empty((T, k), dtype=torch.int64)
    tei = torch.empty((T, k), dtype=torch.int32)
    mr_vllm.topk_softmax(w, ids64, tei, t, True)
    np.testing.assert_array_equal(ids64.numpy(), want.topk_ids)
    np.testing.assert_array_equal(tei.numpy(), np.arange(k)[None, :] * T + np.arange(T)[:, None])
