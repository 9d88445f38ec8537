# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""moeroute: the routing step of mixture-of-experts inference, from Python.

    import moeroute
    r = moeroute.route(logits, model="deepseek-r1", bias=bias, unit_size=64)
    r.topk_ids, r.topk_weights              # [T, k] int32 / fp32
    r.sorted_ids, r.sorted_expert_ids       # CK / aiter layout
    r.sorted_token_ids, r.expert_ids        # vLLM / SGLang layout

NumPy (or torch CPU) arrays run the CPU backend; GPU arrays (torch, CuPy, anything
with __cuda_array_interface__ or DLPack) run the CUDA backend on the array's current
stream, without copies or synchronisation. Drop-in replacements of engine functions
live in moeroute.vllm and moeroute.aiter. docs/python.md is the manual.
"""
from ._core import (GateResult, Model, MoerouteError, RouteResult, build_info, cuda_device_count, gate,
                    gate_buffers, model_info, models, route, route_buffers, sort, sort_buffers, version,
                    workspace_size)
from . import _lib
from . import aiter, vllm  # noqa: F401  (drop-ins: moeroute.vllm.*, moeroute.aiter.*)

try:  # the installed distribution's version (pyproject reads it from include/moeroute.h)
    from importlib.metadata import version as _dist_version
    __version__ = _dist_version("moeroute")
except Exception:  # a source checkout used through MOEROUTE_LIBRARY
    __version__ = version()
library_path = _lib.path

__all__ = [
    "route", "gate", "sort", "route_buffers", "gate_buffers", "sort_buffers", "workspace_size",
    "RouteResult", "GateResult", "MoerouteError", "models", "model_info", "Model", "version",
    "build_info", "cuda_device_count", "library_path", "__version__", "vllm", "aiter",
]
