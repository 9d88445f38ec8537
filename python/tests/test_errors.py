# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Bad arguments: Python-side checks raise TypeError / ValueError, the C library's
statuses raise MoerouteError with the status name and the library's message."""
import pickle

import numpy as np
import pytest

import moeroute
from moeroute import MoerouteError


@pytest.fixture
def logits(rng):
    return rng.standard_normal((8, 32)).astype(np.float32)


def test_library_status_errors(logits):
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=40)
    assert e.value.name == "MOEROUTE_ERR_BAD_SHAPE" and e.value.status == 4
    assert "top_k" in e.value.message and "top_k" in str(e.value)
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=4, num_groups=5, topk_groups=2)
    assert e.value.name == "MOEROUTE_ERR_BAD_GROUPS"
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=4, unit_size=0)
    assert e.value.name == "MOEROUTE_ERR_BAD_SHAPE"
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=4, scale=float("inf"))
    assert e.value.name == "MOEROUTE_ERR_BAD_VALUE"
    bias = np.zeros(32, np.float32)
    bias[3] = np.nan
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=4, score="sigmoid", bias=bias)
    assert e.value.name == "MOEROUTE_ERR_BAD_VALUE"
    mask = np.ones(32, np.int32)
    mask[0] = 2
    with pytest.raises(MoerouteError) as e:
        moeroute.route(logits, top_k=4, expert_mask=mask)
    assert e.value.name == "MOEROUTE_ERR_BAD_VALUE"
    with pytest.raises(MoerouteError) as e:
        moeroute.sort(np.zeros((2, 4), np.int32), None, 2)      # k > E
    assert e.value.name == "MOEROUTE_ERR_BAD_SHAPE"


def test_error_is_picklable_and_clears(logits):
    try:
        moeroute.route(logits, top_k=0)
    except MoerouteError as e:
        e2 = pickle.loads(pickle.dumps(e))
        assert (e2.status, e2.name, e2.message) == (e.status, e.name, e.message)
    moeroute.route(logits, top_k=2)       # a good call after a failing one works


def test_argument_types(logits):
    with pytest.raises(ValueError, match="2-D"):
        moeroute.route(logits[0], top_k=2)
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        moeroute.route(logits.astype(np.int32), top_k=2)
    with pytest.raises(TypeError, match="float64"):
        moeroute.route(logits.astype(np.float64), top_k=2)
    with pytest.raises(TypeError, match="dtype='bf16' needs"):
        moeroute.route(logits, top_k=2, dtype="bf16")
    with pytest.raises(ValueError, match="dtype must be"):
        moeroute.route(logits, top_k=2, dtype="int8")
    with pytest.raises(TypeError, match="argument 'logits'"):
        moeroute.route([[1.0, 2.0]], top_k=1)
    with pytest.raises(TypeError, match="top_k is required"):
        moeroute.route(logits)
    with pytest.raises(TypeError, match="top_k must be an int"):
        moeroute.route(logits, top_k=2.5)
    with pytest.raises(ValueError, match="score must be one of"):
        moeroute.route(logits, top_k=2, score="relu")
    with pytest.raises(ValueError, match="layout must be one of"):
        moeroute.route(logits, top_k=2, layout="triton")
    with pytest.raises(ValueError, match="group_score"):
        moeroute.route(logits, top_k=2, num_groups=4, topk_groups=2, group_score="sum")


def test_bias_mask_checks(logits):
    with pytest.raises(TypeError, match="bias must be float32"):
        moeroute.route(logits, top_k=2, bias=np.zeros(32, np.float64))
    with pytest.raises(ValueError, match=r"bias must have shape \(32,\)"):
        moeroute.route(logits, top_k=2, bias=np.zeros(31, np.float32))
    with pytest.raises(ValueError, match="bias must be contiguous"):
        moeroute.route(logits, top_k=2, bias=np.zeros(64, np.float32)[::2])
    with pytest.raises(TypeError, match="expert_mask must be int32"):
        moeroute.route(logits, top_k=2, expert_mask=np.ones(32, bool))


def test_out_checks(logits):
    bufs = moeroute.route_buffers(logits, top_k=4)
    good = {f: getattr(bufs, f) for f in ("sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids",
                                          "sorted_token_ids", "expert_ids", "num_tokens_post_pad")}
    bad = dict(good, sorted_ids=good["sorted_ids"][:-1])
    with pytest.raises(ValueError, match="out.sorted_ids must be 1-D with at least"):
        moeroute.route(logits, top_k=4, out=bad)
    bad = dict(good, expert_ids=good["expert_ids"].astype(np.int64))
    with pytest.raises(TypeError, match="out.expert_ids must be int32"):
        moeroute.route(logits, top_k=4, out=bad)
    bad = dict(good, topk_ids=np.zeros((8, 3), np.int32))
    with pytest.raises(ValueError, match=r"out.topk_ids must have shape \(8, 4\)"):
        moeroute.route(logits, top_k=4, out=bad)
    bad = dict(good)
    del bad["num_valid_ids"]
    with pytest.raises(ValueError, match="out has no num_valid_ids"):
        moeroute.route(logits, top_k=4, out=bad)
    bad = dict(good, sorted_token_ids=np.zeros(2 * len(good["sorted_token_ids"]), np.int32)[::2])
    with pytest.raises(ValueError, match="must be contiguous"):
        moeroute.route(logits, top_k=4, out=bad)
    need = moeroute.workspace_size("route", logits, top_k=4)
    if need:
        with pytest.raises(ValueError, match="workspace has"):
            moeroute.route(logits, top_k=4, workspace=np.zeros(need - 1, np.uint8))
    with pytest.raises(ValueError, match="out has no topk_ids"):
        moeroute.gate(logits, top_k=4, out={"topk_weights": np.zeros((8, 4), np.float32)})


def test_sort_checks():
    ids = np.zeros((4, 2), np.int32)
    with pytest.raises(TypeError, match="topk_ids must be int32"):
        moeroute.sort(ids.astype(np.int64), None, 8)
    with pytest.raises(ValueError, match="2-D"):
        moeroute.sort(ids.reshape(-1), None, 8)
    with pytest.raises(TypeError, match="topk_weights must be float32"):
        moeroute.sort(ids, np.zeros((4, 2), np.float16), 8)
    with pytest.raises(ValueError, match="like topk_ids"):
        moeroute.sort(ids, np.zeros((4, 3), np.float32), 8)
    with pytest.raises(MoerouteError) as e:
        moeroute.sort(ids, None, 0)
    assert e.value.name == "MOEROUTE_ERR_BAD_SHAPE"
