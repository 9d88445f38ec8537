# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""The golden cases of tests/golden/*/ (computed independently from the contract)
through the Python API: ids and sorted layouts exactly, weights to 1e-5 relative."""
import os
import shlex

import numpy as np
import pytest

import moeroute
from conftest import GOLDEN_DIR

CASES = sorted(d for d in os.listdir(GOLDEN_DIR) if os.path.isfile(os.path.join(GOLDEN_DIR, d, "args.txt"))) \
    if os.path.isdir(GOLDEN_DIR) else []


def parse_case(name):
    """(logits array, route kwargs, expected dict) of one golden folder."""
    folder = os.path.join(GOLDEN_DIR, name)
    with open(os.path.join(folder, "args.txt")) as f:
        argv = shlex.split(f.read())
    opts = {}
    for i in range(0, len(argv), 2):
        assert argv[i].startswith("--"), argv
        opts[argv[i][2:]] = argv[i + 1]
    logits = np.load(os.path.join(folder, opts.pop("logits")))
    kw = dict(top_k=int(opts.pop("topk")), score=opts.pop("score"), renormalize=opts.pop("renormalize") == "1",
              scale=float(opts.pop("scale")), unit_size=int(opts.pop("unit-size")), layout=opts.pop("layout"))
    dtype = opts.pop("dtype")
    if logits.dtype == np.uint16:
        kw["dtype"] = dtype
    else:
        assert logits.dtype == {"fp32": np.float32, "fp16": np.float16}[dtype]
    if "bias" in opts:
        kw["bias"] = np.load(os.path.join(folder, opts.pop("bias")))
    if "expert-mask" in opts:
        kw["expert_mask"] = np.load(os.path.join(folder, opts.pop("expert-mask")))
    if "groups" in opts:
        g, tg = opts.pop("groups").split(":")
        kw["num_groups"], kw["topk_groups"] = int(g), int(tg)
    if "group-score" in opts:
        kw["group_score"] = opts.pop("group-score")
    assert not opts, "unparsed options %s" % opts
    exp_dir = os.path.join(folder, "expected")
    expected = {f[:-4]: np.load(os.path.join(exp_dir, f)) for f in os.listdir(exp_dir) if f.endswith(".npy")}
    return logits, kw, expected


def compare(result, expected, name):
    for field, want in expected.items():
        got = getattr(result, field)
        assert got is not None, "%s: no %s" % (name, field)
        got = np.asarray(got)
        assert got.shape == want.shape, "%s: %s shape %s, expected %s" % (name, field, got.shape, want.shape)
        if field in ("topk_weights", "sorted_weights"):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=0, err_msg="%s: %s" % (name, field))
        else:
            np.testing.assert_array_equal(got, want, err_msg="%s: %s" % (name, field))


@pytest.mark.skipif(not CASES, reason="no golden cases found at %s" % GOLDEN_DIR)
@pytest.mark.parametrize("name", CASES)
def test_golden_route(name):
    logits, kw, expected = parse_case(name)
    compare(moeroute.route(logits, **kw), expected, name)


@pytest.mark.skipif(not CASES, reason="no golden cases found at %s" % GOLDEN_DIR)
@pytest.mark.parametrize("name", CASES)
def test_golden_gate_then_sort(name):
    logits, kw, expected = parse_case(name)
    sort_kw = {k: kw.pop(k) for k in ("unit_size", "layout", "expert_mask") if k in kw}
    g = moeroute.gate(logits, **kw)
    s = moeroute.sort(g.topk_ids, g.topk_weights, logits.shape[1], **sort_kw)
    compare(s, expected, name)


@pytest.mark.skipif(not CASES, reason="no golden cases found at %s" % GOLDEN_DIR)
@pytest.mark.parametrize("name", CASES)
def test_golden_torch_cpu(name):
    torch = pytest.importorskip("torch")
    logits, kw, expected = parse_case(name)
    if logits.dtype == np.uint16:
        t = torch.from_numpy(logits.view(np.int16)).view(torch.bfloat16)
        del kw["dtype"]
    else:
        t = torch.from_numpy(logits)
    for k in ("bias", "expert_mask"):
        if k in kw:
            kw[k] = torch.from_numpy(kw[k])
    r = moeroute.route(t, **kw)
    assert isinstance(r.sorted_ids, torch.Tensor)
    compare(r.numpy(), expected, name)
