# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Arrays of any framework, seen through one small descriptor.

moeroute never copies an input: it reads the address, dtype, shape and strides
of the caller's array and hands the address to the C library. Supported:
NumPy arrays (CPU backend), torch tensors (CPU or CUDA), CuPy arrays, and any
object with __cuda_array_interface__ or DLPack (__dlpack__ / __dlpack_device__).

Frameworks are imported lazily: moeroute itself needs only NumPy.
"""
import ctypes
import sys

import numpy as np

# Kinds of array. The kind decides the allocator of outputs and the stream.
NUMPY, TORCH, CUPY, CAI, DLPACK = "numpy", "torch", "cupy", "cai", "dlpack"

_NP_NAMES = {
    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32",
    "int64": "int64", "uint32": "uint32", "uint16": "uint16", "int16": "int16", "uint8": "uint8",
    "int8": "int8", "bool": "bool", "float64": "float64",
}
_CAI_TYPESTR = {
    "f4": "float32", "f2": "float16", "f8": "float64", "i4": "int32", "i8": "int64", "u4": "uint32",
    "u2": "uint16", "i2": "int16", "u1": "uint8", "i1": "int8", "b1": "bool",
}
ITEMSIZE = {
    "float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "uint32": 4, "uint16": 2,
    "int16": 2, "uint8": 1, "int8": 1, "bool": 1, "float64": 8,
}


class Desc(object):
    """What moeroute needs to know about one array (strides in elements)."""
    __slots__ = ("obj", "kind", "ptr", "dtype", "shape", "strides", "cuda", "device")

    def __init__(self, obj, kind, ptr, dtype, shape, strides, cuda, device):
        self.obj = obj
        self.kind = kind
        self.ptr = ptr
        self.dtype = dtype
        self.shape = shape
        self.strides = strides      # None means C-contiguous
        self.cuda = cuda
        self.device = device        # CUDA device ordinal, -1 for host / unknown

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self):
        if self.strides is None:
            return True
        expect = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expect:
                return False
            expect *= size
        return True


# ---- per-framework description ---------------------------------------------

_np_dtype_names = {}   # dtype object -> name (dtype.name is slow to compute)


def _np_dtype_name(dt):
    name = _np_dtype_names.get(dt)
    if name is None:
        name = _NP_NAMES.get(dt.name, dt.name)
        _np_dtype_names[dt] = name
    return name


def _desc_numpy(a):
    name = _np_dtype_name(a.dtype)
    strides = None
    if not a.flags.c_contiguous:
        itemsize = a.itemsize
        st = a.strides
        if any(s % itemsize for s in st):
            raise ValueError("moeroute: array strides are not a multiple of its item size")
        strides = tuple(s // itemsize for s in st)
    return Desc(a, NUMPY, a.ctypes.data, name, a.shape, strides, False, -1)


_torch_dtype_names = {}


def _torch_dtype_name(dt):
    name = _torch_dtype_names.get(dt)
    if name is None:
        name = str(dt).replace("torch.", "")
        _torch_dtype_names[dt] = name
    return name


def _desc_torch(t):
    strides = None if t.is_contiguous() else tuple(t.stride())
    cuda = t.is_cuda
    if not cuda and t.device.type != "cpu":
        raise TypeError("moeroute: torch tensors must be on the CPU or a CUDA device, not %s" % t.device)
    return Desc(t, TORCH, t.data_ptr(), _torch_dtype_name(t.dtype), t.shape, strides, cuda,
                t.get_device() if cuda else -1)


def _desc_cupy(a):
    name = _np_dtype_name(a.dtype)
    strides = None
    if not a.flags.c_contiguous:
        strides = tuple(s // a.itemsize for s in a.strides)
    return Desc(a, CUPY, a.data.ptr, name, tuple(a.shape), strides, True, a.device.id)


def _desc_cai(x):
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    name = _CAI_TYPESTR.get(typestr[1:])
    if name is None:
        raise TypeError("moeroute: unsupported __cuda_array_interface__ typestr %r" % typestr)
    shape = tuple(cai["shape"])
    st = cai.get("strides")
    strides = None
    if st is not None:
        size = ITEMSIZE[name]
        strides = tuple(s // size for s in st)
    ptr = cai["data"][0] or 0
    d = Desc(x, CAI, ptr, name, shape, strides, True, -1)
    if d.strides is not None and d.is_contiguous():
        d.strides = None
    return d


# DLPack (legacy "dltensor" capsule) read through ctypes.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DTYPES = {
    (2, 32): "float32", (2, 16): "float16", (4, 16): "bfloat16", (2, 64): "float64", (0, 32): "int32",
    (0, 64): "int64", (0, 16): "int16", (0, 8): "int8", (1, 32): "uint32", (1, 16): "uint16",
    (1, 8): "uint8", (6, 8): "bool",
}
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _desc_dlpack(x, stream=None):
    dev_type, dev_id = x.__dlpack_device__()
    if dev_type in (_DL_CPU, _DL_CUDA_HOST):
        return _desc_numpy(np.from_dlpack(x))
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise TypeError("moeroute: DLPack device type %d is neither CPU nor CUDA" % dev_type)
    # The producer makes the data ready on the stream the call will run on: CuPy's current
    # stream when CuPy is imported (as current_stream() says), else the legacy default (1).
    if stream is None:
        cupy = sys.modules.get("cupy")
        stream = cupy.cuda.get_current_stream().ptr if cupy is not None else 0
    capsule = x.__dlpack__(stream=stream if stream else 1)
    tensor = _DLTensor.from_address(_capsule_get(capsule, b"dltensor"))
    name = _DL_DTYPES.get((tensor.dtype.code, tensor.dtype.bits))
    if name is None or tensor.dtype.lanes != 1:
        raise TypeError("moeroute: unsupported DLPack dtype (code %d, bits %d)" % (tensor.dtype.code,
                                                                                  tensor.dtype.bits))
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = None
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
    d = Desc(x, DLPACK, (tensor.data or 0) + tensor.byte_offset, name, shape, strides, True, dev_id)
    if d.strides is not None and d.is_contiguous():
        d.strides = None
    # The capsule is not consumed: its destructor releases the producer's reference,
    # while x (held by the caller) keeps the memory alive.
    return d


_kinds = {}   # type -> describing function


def _kind_fn(tp, x):
    fn = _kinds.get(tp)
    if fn is not None:
        return fn
    if issubclass(tp, np.ndarray):
        fn = _desc_numpy
    elif "torch" in sys.modules and isinstance(x, sys.modules["torch"].Tensor):
        fn = _desc_torch
    elif "cupy" in sys.modules and isinstance(x, sys.modules["cupy"].ndarray):
        fn = _desc_cupy
    elif hasattr(x, "__cuda_array_interface__"):
        fn = _desc_cai
    elif hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        fn = _desc_dlpack
    else:
        raise TypeError("moeroute: expected a NumPy array, a torch tensor, a CuPy array or an object with "
                        "__cuda_array_interface__ or DLPack; got %s" % tp.__name__)
    _kinds[tp] = fn
    return fn


def describe(x, name):
    """Desc of x; TypeError naming the argument when x is no array."""
    try:
        return _kind_fn(type(x), x)(x)
    except TypeError as e:
        raise TypeError("%s (argument %r)" % (e, name)) from None


# ---- streams and devices ---------------------------------------------------------

def as_stream(stream):
    """An int stream handle from an int, None, a torch stream or a CuPy stream."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    raise TypeError("moeroute: stream must be an int handle, a torch.cuda.Stream or a cupy Stream")


_torch_raw_stream = None


def _torch_stream(device):
    global _torch_raw_stream
    if _torch_raw_stream is None:
        torch = sys.modules["torch"]
        fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _torch_raw_stream = fast if fast is not None else (
            lambda dev: torch.cuda.current_stream(dev).cuda_stream)
    return _torch_raw_stream(device)


def current_stream(d):
    """The stream a call on device array d runs on (the array's framework's current stream)."""
    kind = d.kind
    if kind == TORCH:
        return _torch_stream(d.device)
    if kind == CUPY:
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    if kind == CAI:
        s = d.obj.__cuda_array_interface__.get("stream")
        if s is not None:
            return s
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return cupy.cuda.get_current_stream().ptr
    return 0


class DeviceGuard(object):
    """Makes d's device the current CUDA device for the call (the C library launches on
    the current device). Only torch and CuPy arrays say which device they live on."""
    __slots__ = ("ctx",)

    def __init__(self, d):
        self.ctx = None
        if d.kind == TORCH:
            torch = sys.modules["torch"]
            if torch.cuda.current_device() != d.device:
                self.ctx = torch.cuda.device(d.device)
        elif d.kind == CUPY:
            cupy = sys.modules["cupy"]
            if cupy.cuda.runtime.getDevice() != d.device:
                self.ctx = cupy.cuda.Device(d.device)

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
        return False


def needs_device_switch(d):
    if d.kind == TORCH:
        return sys.modules["torch"].cuda.current_device() != d.device
    if d.kind == CUPY:
        return sys.modules["cupy"].cuda.runtime.getDevice() != d.device
    return False


# ---- allocation ------------------------------------------------------------------

_TORCH_DT = {}


def _torch_dtype(name):
    dt = _TORCH_DT.get(name)
    if dt is None:
        dt = getattr(sys.modules["torch"], name)
        _TORCH_DT[name] = dt
    return dt


def allocator(d):
    """A function empty(shape, dtype_name) -> (array, address) allocating like d
    (same framework, same device). Generic CUDA arrays get CuPy, else torch."""
    kind = d.kind
    if not d.cuda:
        if kind == TORCH:
            torch = sys.modules["torch"]

            def empty(shape, name):
                a = torch.empty(shape, dtype=_torch_dtype(name))
                return a, a.data_ptr()
            return empty

        def empty(shape, name):
            a = np.empty(shape, dtype=name)
            return a, a.ctypes.data
        return empty
    if kind in (CAI, DLPACK):
        if "cupy" in sys.modules or _try_import("cupy"):
            kind = CUPY
        elif "torch" in sys.modules or _try_import("torch"):
            kind = TORCH
        else:
            raise TypeError("moeroute: cannot allocate outputs for a %s array without CuPy or torch; "
                            "pass out= (and workspace=)" % d.kind)
    if kind == TORCH:
        torch = sys.modules["torch"]
        device = torch.device("cuda", d.device if d.device >= 0 else torch.cuda.current_device())

        def empty(shape, name):
            a = torch.empty(shape, dtype=_torch_dtype(name), device=device)
            return a, a.data_ptr()
        return empty
    cupy = sys.modules["cupy"]

    def empty(shape, name):
        a = cupy.empty(shape, dtype=name)
        return a, a.data.ptr
    return empty


def _try_import(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


# ---- host reads, fills and slices of output arrays ----------------------------

def to_host(a):
    """A NumPy copy of any array (synchronises for device arrays)."""
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        return a
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.detach().cpu()
        if a.dtype == torch.bfloat16:
            return a.view(torch.int16).numpy().view(np.uint16)
        return a.numpy()
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray):
        return cupy.asnumpy(a)
    if hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a)
        except Exception:
            pass
    if hasattr(a, "__cuda_array_interface__"):
        if cupy is None and not _try_import("cupy"):
            raise TypeError("moeroute: reading a __cuda_array_interface__ array needs CuPy")
        return sys.modules["cupy"].asnumpy(sys.modules["cupy"].asarray(a))
    raise TypeError("moeroute: cannot read %s on the host" % type(a).__name__)


def read_int(a, index):
    """a[index] as a Python int (synchronises for device arrays)."""
    if isinstance(a, np.ndarray):
        return int(a[index])
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        if not a.is_cuda and a.dtype == torch.int32 and a.is_contiguous():
            return ctypes.c_int32.from_address(a.data_ptr() + 4 * index).value   # cheaper than .item()
        return int(a[index].item())
    return int(to_host(a)[index])


def fill(a, value, stream=None):
    """Set every element of output array a to value, asynchronously on the device: on
    stream when given (an int handle), else on the framework's current stream."""
    if isinstance(a, np.ndarray):
        a.fill(value)
        return
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        if stream is None or not a.is_cuda:
            a.fill_(value)
        else:
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=a.device)):
                a.fill_(value)
        return
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray):
        if stream is None:
            a.fill(value)
        else:
            with cupy.cuda.ExternalStream(stream):
                a.fill(value)
        return
    raise TypeError("moeroute: cannot fill a %s array (use torch or CuPy arrays)" % type(a).__name__)


def copy_into(dst, src):
    """dst[...] = src with a cast, in dst's framework (asynchronous on the device)."""
    if isinstance(dst, np.ndarray):
        np.copyto(dst, to_host(src), casting="unsafe")
        return
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dst, torch.Tensor):
        dst.copy_(src)
        return
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(dst, cupy.ndarray):
        dst[...] = cupy.asarray(src).astype(dst.dtype, copy=False)
        return
    raise TypeError("moeroute: cannot write into a %s array (use NumPy, torch or CuPy)" % type(dst).__name__)


def astype(a, name):
    """a as dtype `name` in its own framework (a copy unless it already is)."""
    if isinstance(a, np.ndarray):
        return np.ascontiguousarray(a, dtype=name)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        return a.to(_torch_dtype(name)).contiguous()
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray):
        return cupy.ascontiguousarray(a, dtype=name)
    raise TypeError("moeroute: cannot convert a %s array to %s; pass %s" % (type(a).__name__, name, name))


def empty_like_shape(a, shape, name):
    """A new array of `shape` and dtype `name` in a's framework and device."""
    return allocator(describe(a, "array"))(shape, name)[0]


def slot_major_indices(like, num_tokens, top_k):
    """[T, k] array with [t, j] = j * T + t, in like's framework and device."""
    if isinstance(like, np.ndarray):
        return (np.arange(top_k, dtype=np.int64)[None, :] * num_tokens +
                np.arange(num_tokens, dtype=np.int64)[:, None])
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return torch.arange(num_tokens * top_k, dtype=like.dtype, device=like.device).view(top_k, num_tokens).t()
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(like, cupy.ndarray):
        return cupy.arange(num_tokens * top_k, dtype=like.dtype).reshape(top_k, num_tokens).T
    raise TypeError("moeroute: cannot fill token_expert_indices of type %s" % type(like).__name__)
