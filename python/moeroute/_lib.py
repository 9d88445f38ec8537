# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""ctypes view of include/moeroute.h: the library, its structs and prototypes.

The library is found, in order, at:
  1. $MOEROUTE_LIBRARY (a path to libmoeroute.so, or a folder holding it);
  2. the package's own lib/ (lib64/) folder, where `pip install ./python` puts it;
  3. the system's library path (ctypes.util.find_library("moeroute")).
"""
import ctypes
import ctypes.util
import glob
import os

# ---- constants of moeroute.h (fixed forever: statuses are append-only) -----

STATUS_NAMES = (
    "MOEROUTE_OK",
    "MOEROUTE_ERR_NULL_POINTER",
    "MOEROUTE_ERR_PARAMS_SIZE",
    "MOEROUTE_ERR_BAD_ENUM",
    "MOEROUTE_ERR_BAD_SHAPE",
    "MOEROUTE_ERR_BAD_STRIDE",
    "MOEROUTE_ERR_BAD_GROUPS",
    "MOEROUTE_ERR_BAD_VALUE",
    "MOEROUTE_ERR_WORKSPACE_TOO_SMALL",
    "MOEROUTE_ERR_MOE_BUF",
    "MOEROUTE_ERR_NOT_SUPPORTED",
    "MOEROUTE_ERR_NO_DEVICE",
    "MOEROUTE_ERR_CUDA",
    "MOEROUTE_ERR_INTERNAL",
)

DTYPE_FP32, DTYPE_BF16, DTYPE_FP16 = 0, 1, 2
SCORE_SOFTMAX, SCORE_SIGMOID, SCORE_SQRT_SOFTPLUS = 0, 1, 2
GROUP_SCORE_TOP2_SUM, GROUP_SCORE_MAX = 0, 1
LAYOUT_CK, LAYOUT_VLLM, LAYOUT_BOTH = 1, 2, 3
OP_ROUTE, OP_GATE, OP_SORT = 0, 1, 2

MAX_EXPERTS = 1024
CPU_MAX_EXPERTS = 1 << 20
MAX_TOPK = 32
MAX_UNIT_SIZE = 1024
CK_MAX_TOKENS = (1 << 24) - 1


class Params(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_tokens", ctypes.c_int64),
        ("num_experts", ctypes.c_int32),
        ("top_k", ctypes.c_int32),
        ("unit_size", ctypes.c_int32),
        ("logits_row_stride", ctypes.c_int64),
        ("logits_dtype", ctypes.c_int),
        ("score", ctypes.c_int),
        ("renormalize", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("num_groups", ctypes.c_int32),
        ("topk_groups", ctypes.c_int32),
        ("group_score", ctypes.c_int),
        ("layouts", ctypes.c_uint32),
        ("moe_buf_bytes", ctypes.c_size_t),
    ]


# Field order of moeroute_buffers; every pointer is a plain address (int) here.
BUFFER_FIELDS = (
    "logits", "bias", "expert_mask", "topk_ids", "topk_weights",
    "sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids",
    "sorted_token_ids", "expert_ids", "num_tokens_post_pad",
    "moe_buf", "workspace",
)


class Buffers(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in BUFFER_FIELDS] + [("workspace_bytes", ctypes.c_size_t)]


class Sizes(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("topk_len", ctypes.c_int64),
        ("ck_sorted_len", ctypes.c_int64),
        ("ck_blocks_len", ctypes.c_int64),
        ("vllm_sorted_len", ctypes.c_int64),
        ("vllm_blocks_len", ctypes.c_int64),
    ]


class Preset(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("num_experts", ctypes.c_int32),
        ("top_k", ctypes.c_int32),
        ("score", ctypes.c_int),
        ("renormalize", ctypes.c_int32),
        ("has_bias", ctypes.c_int32),
        ("num_groups", ctypes.c_int32),
        ("topk_groups", ctypes.c_int32),
        ("group_score", ctypes.c_int),
        ("scale", ctypes.c_float),
        ("model_dim", ctypes.c_int32),
        ("router_dtype", ctypes.c_int),
        ("note", ctypes.c_char_p),
    ]


def _candidates():
    env = os.environ.get("MOEROUTE_LIBRARY")
    if env:
        if os.path.isdir(env):
            hits = sorted(glob.glob(os.path.join(env, "libmoeroute.so*")) +
                          glob.glob(os.path.join(env, "libmoeroute.dylib")) +
                          glob.glob(os.path.join(env, "moeroute.dll")))
            if not hits:
                raise ImportError("moeroute: MOEROUTE_LIBRARY=%s is a folder without libmoeroute.so" % env)
            return [hits[0]], True
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    for sub in ("lib", "lib64", "bin"):
        d = os.path.join(here, sub)
        for pat in ("libmoeroute.so", "libmoeroute.so.*", "libmoeroute.dylib", "moeroute.dll"):
            found += sorted(glob.glob(os.path.join(d, pat)))
    sys_lib = ctypes.util.find_library("moeroute")
    if sys_lib:
        found.append(sys_lib)
    return found, False


def _load():
    paths, from_env = _candidates()
    errors = []
    for p in paths:
        try:
            return ctypes.CDLL(p), p
        except OSError as e:
            if from_env:
                raise ImportError("moeroute: cannot load MOEROUTE_LIBRARY=%s: %s" % (p, e)) from e
            errors.append("%s: %s" % (p, e))
    raise ImportError(
        "moeroute: the C library libmoeroute.so was not found. Install the package with "
        "`pip install ./python` (it builds the library with CMake), or point MOEROUTE_LIBRARY at a "
        "prebuilt libmoeroute.so." + ("" if not errors else " Tried: " + "; ".join(errors)))


lib, path = _load()

_P = ctypes.POINTER
_status = ctypes.c_int


def _proto(name, restype, *argtypes, optional=False):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        if not optional:
            raise ImportError("moeroute: %s lacks %s: not a moeroute library, or an incompatible one" % (path, name))
        return None
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


version_number = _proto("moeroute_version_number", ctypes.c_uint)
version_string = _proto("moeroute_version_string", ctypes.c_char_p)
build_info = _proto("moeroute_build_info", ctypes.c_char_p)
status_string = _proto("moeroute_status_string", ctypes.c_char_p, ctypes.c_int)
last_error = _proto("moeroute_last_error", ctypes.c_char_p)
params_init = _proto("moeroute_params_init", _status, _P(Params))
buffers_init = _proto("moeroute_buffers_init", _status, _P(Buffers))
get_sizes = _proto("moeroute_get_sizes", _status, _P(Params), _P(Sizes))
cpu_workspace_size = _proto("moeroute_cpu_workspace_size", _status, ctypes.c_int, _P(Params),
                            _P(ctypes.c_size_t))
cuda_workspace_size = _proto("moeroute_cuda_workspace_size", _status, ctypes.c_int, _P(Params),
                             _P(ctypes.c_size_t), optional=True)
cuda_device_count = _proto("moeroute_cuda_device_count", ctypes.c_int, optional=True)
cuda_supports = _proto("moeroute_cuda_supports", ctypes.c_int, ctypes.c_int, _P(Params), optional=True)
cpu_route = _proto("moeroute_cpu_route", _status, _P(Params), _P(Buffers))
cpu_gate = _proto("moeroute_cpu_gate", _status, _P(Params), _P(Buffers))
cpu_sort = _proto("moeroute_cpu_sort", _status, _P(Params), _P(Buffers))
cuda_route = _proto("moeroute_cuda_route", _status, _P(Params), _P(Buffers), ctypes.c_void_p, optional=True)
cuda_gate = _proto("moeroute_cuda_gate", _status, _P(Params), _P(Buffers), ctypes.c_void_p, optional=True)
cuda_sort = _proto("moeroute_cuda_sort", _status, _P(Params), _P(Buffers), ctypes.c_void_p, optional=True)
preset_count = _proto("moeroute_preset_count", ctypes.c_int)
preset_at = _proto("moeroute_preset_at", _P(Preset), ctypes.c_int)
preset_find = _proto("moeroute_preset_find", _P(Preset), ctypes.c_char_p)
params_from_preset = _proto("moeroute_params_from_preset", _status, _P(Params), _P(Preset))

CPU_OPS = (cpu_route, cpu_gate, cpu_sort)
HAVE_CUDA_ENTRY_POINTS = cuda_route is not None and cuda_workspace_size is not None
CUDA_OPS = (cuda_route, cuda_gate, cuda_sort)
