# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""examples/moe_layer.py runs and agrees with its reference MoE layer."""
import importlib.util
import os

import pytest

from conftest import HAVE_TORCH_CUDA

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "moe_layer.py")


def load_example():
    if not os.path.isfile(EXAMPLE):
        pytest.skip("examples/moe_layer.py not found")
    spec = importlib.util.spec_from_file_location("moe_layer_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_numpy():
    assert load_example().main(["--tokens", "24"]) == 0


def test_example_torch_cpu():
    pytest.importorskip("torch")
    assert load_example().main(["--backend", "torch", "--tokens", "24"]) == 0


@pytest.mark.skipif(not HAVE_TORCH_CUDA, reason="needs torch with CUDA")
def test_example_torch_cuda():
    assert load_example().main(["--backend", "torch", "--device", "cuda", "--tokens", "64"]) == 0
