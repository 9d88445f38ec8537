# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""route / gate / sort: arrays in, arrays out, on the backend the arrays live on.

Host arrays (NumPy, torch CPU) run the CPU backend, synchronously. Device arrays
(torch CUDA, CuPy, __cuda_array_interface__, DLPack) run the CUDA backend on the
array's current stream: no copy, no synchronisation, no allocation by the library.

Every call is prepared once per distinct configuration (a "plan": the C params
struct, the output capacities, the workspace size) and cached, so that a repeated
call only reads the array addresses and calls the library.
"""
import collections
import ctypes

from . import _arrays as A
from . import _lib as L

__all__ = [
    "MoerouteError", "RouteResult", "GateResult", "route", "gate", "sort", "route_buffers",
    "gate_buffers", "sort_buffers", "models", "model_info", "Model", "version", "build_info",
    "cuda_device_count", "workspace_size",
]


class MoerouteError(RuntimeError):
    """A failing status of the C library.

    status: the moeroute_status value (int); name: its constant name
    ("MOEROUTE_ERR_BAD_SHAPE"); message: moeroute_last_error() of the call."""

    def __init__(self, status, message, name=None):
        self.status = int(status)
        self.name = name or _status_name(status)
        self.message = message
        RuntimeError.__init__(self, "%s: %s" % (self.name, message))

    def __reduce__(self):
        return (MoerouteError, (self.status, self.message, self.name))


def _status_name(status):
    s = L.status_string(int(status))
    return s.decode() if s else "MOEROUTE_STATUS_%d" % status


def _raise(status):
    msg = L.last_error()
    raise MoerouteError(status, msg.decode(errors="replace") if msg else "")


# ---- enums as strings ------------------------------------------------------------

_SCORES = {"softmax": L.SCORE_SOFTMAX, "sigmoid": L.SCORE_SIGMOID, "sqrt_softplus": L.SCORE_SQRT_SOFTPLUS}
_GROUP_SCORES = {"top2_sum": L.GROUP_SCORE_TOP2_SUM, "max": L.GROUP_SCORE_MAX}
_LAYOUTS = {"ck": L.LAYOUT_CK, "aiter": L.LAYOUT_CK, "vllm": L.LAYOUT_VLLM, "sglang": L.LAYOUT_VLLM,
            "both": L.LAYOUT_BOTH}
_DTYPE_CODES = {"float32": L.DTYPE_FP32, "bfloat16": L.DTYPE_BF16, "float16": L.DTYPE_FP16}
_DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "float32": "float32", "float": "float32",
                  "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "f16": "float16",
                  "float16": "float16", "half": "float16"}
_SCORE_NAMES = {v: k for k, v in _SCORES.items()}
_GROUP_SCORE_NAMES = {v: k for k, v in _GROUP_SCORES.items()}
_DTYPE_NAMES = {v: k for k, v in _DTYPE_CODES.items()}


def _enum(table, value, what):
    if isinstance(value, str):
        v = table.get(value.lower())
        if v is not None:
            return v
    raise ValueError("moeroute: %s must be one of %s, got %r" % (what, ", ".join(sorted(table)), value))


def _int(value, what):
    try:
        i = value.__index__()
    except AttributeError:
        raise TypeError("moeroute: %s must be an int, got %r" % (what, value)) from None
    return int(i)


# ---- presets ------------------------------------------------------------------------

Model = collections.namedtuple("Model", [
    "name", "num_experts", "top_k", "score", "renormalize", "has_bias", "num_groups", "topk_groups",
    "group_score", "scale", "model_dim", "router_dtype", "note"])


def _model_from(p):
    p = p.contents
    return Model(p.name.decode(), p.num_experts, p.top_k, _SCORE_NAMES.get(p.score, p.score),
                 bool(p.renormalize), bool(p.has_bias), p.num_groups, p.topk_groups,
                 _GROUP_SCORE_NAMES.get(p.group_score, p.group_score), p.scale, p.model_dim,
                 _DTYPE_NAMES.get(p.router_dtype, p.router_dtype), (p.note or b"").decode())


def models():
    """The compiled-in router presets (data/models.tsv), as a list of Model tuples."""
    return [_model_from(L.preset_at(i)) for i in range(L.preset_count())]


def model_info(name):
    """The Model tuple of preset `name`; ValueError for an unknown name."""
    p = L.preset_find(str(name).encode())
    if not p:
        raise ValueError("moeroute: unknown model %r; known: %s" % (name, ", ".join(m.name for m in models())))
    return _model_from(p)


def version():
    """The C library's version string, "MAJOR.MINOR.PATCH"."""
    return L.version_string().decode()


def build_info():
    """The C library's build options, e.g. "cuda=ON cuda_arch=90 build=Release"."""
    return L.build_info().decode()


def cuda_device_count():
    """Usable CUDA devices seen by the library (0 without a CUDA build or a GPU)."""
    return L.cuda_device_count() if L.cuda_device_count is not None else 0


# ---- results ------------------------------------------------------------------------

_SORTED_FIELDS = ("sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids",
                  "sorted_token_ids", "expert_ids", "num_tokens_post_pad")
_ARRAY_FIELDS = ("topk_ids", "topk_weights") + _SORTED_FIELDS + ("moe_buf", "workspace")


class RouteResult(object):
    """Outputs of route() and sort().

    topk_ids [T, k] int32, topk_weights [T, k] fp32 (route: outputs; sort: the inputs);
    CK/aiter layout (layout 'ck' or 'both', else None):
      sorted_ids int32, sorted_weights fp32, sorted_expert_ids int32, num_valid_ids int32 [2];
    vLLM/SGLang layout (layout 'vllm' or 'both', else None):
      sorted_token_ids int32, expert_ids int32, num_tokens_post_pad int32 [1];
    moe_buf (the cleared buffer, if one was passed) and workspace (the scratch used).

    Host calls are synchronous and, by default (trim=None), trimmed: every sorted array
    holds exactly its valid range (`total` entries, `total // unit_size` blocks) and
    `total` is an int. Device calls never synchronise: the sorted arrays are the
    full-capacity buffers (entries past the valid range are unspecified), the totals
    live on the device (num_valid_ids[0] == num_tokens_post_pad[0]) and `total` is None;
    trimmed() synchronises and slices.
    """
    __slots__ = _ARRAY_FIELDS + ("num_tokens", "num_experts", "top_k", "unit_size", "total", "is_trimmed",
                                 "_sig", "_cbuf", "_ws")

    def __init__(self, num_tokens=0, num_experts=0, top_k=0, unit_size=0, **arrays):
        for f in _ARRAY_FIELDS:
            setattr(self, f, arrays.pop(f, None))
        if arrays:
            raise TypeError("RouteResult: unknown fields %s" % sorted(arrays))
        self.num_tokens = num_tokens
        self.num_experts = num_experts
        self.top_k = top_k
        self.unit_size = unit_size
        self.total = None
        self.is_trimmed = False
        self._sig = None
        self._cbuf = None
        self._ws = None

    def read_total(self):
        """The number of valid sorted rows (synchronises for device arrays)."""
        if self.total is not None:
            return self.total
        if self.num_valid_ids is not None:
            return A.read_int(self.num_valid_ids, 0)
        if self.num_tokens_post_pad is not None:
            return A.read_int(self.num_tokens_post_pad, 0)
        raise ValueError("RouteResult has neither num_valid_ids nor num_tokens_post_pad")

    def trimmed(self):
        """A RouteResult whose sorted arrays are views of exactly the valid range.
        Synchronises once for device arrays (it reads the total)."""
        if self.is_trimmed:
            return self
        total = self.read_total()
        blocks = total // self.unit_size if self.unit_size else 0
        r = RouteResult(self.num_tokens, self.num_experts, self.top_k, self.unit_size,
                        topk_ids=self.topk_ids, topk_weights=self.topk_weights, moe_buf=self.moe_buf,
                        workspace=self.workspace, num_valid_ids=self.num_valid_ids,
                        num_tokens_post_pad=self.num_tokens_post_pad)
        for f in ("sorted_ids", "sorted_weights", "sorted_token_ids"):
            a = getattr(self, f)
            setattr(r, f, None if a is None else a[:total])
        for f in ("sorted_expert_ids", "expert_ids"):
            a = getattr(self, f)
            setattr(r, f, None if a is None else a[:blocks])
        r.total = total
        r.is_trimmed = True
        return r

    def numpy(self):
        """A trimmed copy with every array as a NumPy array (synchronises)."""
        t = self.trimmed()
        r = RouteResult(t.num_tokens, t.num_experts, t.top_k, t.unit_size)
        for f in _ARRAY_FIELDS:
            if f != "workspace":
                setattr(r, f, A.to_host(getattr(t, f)))
        r.total = t.total
        r.is_trimmed = True
        return r

    def _asdict(self):
        return collections.OrderedDict((f, getattr(self, f)) for f in _ARRAY_FIELDS
                                       if getattr(self, f) is not None)

    def __repr__(self):
        parts = []
        for f, a in self._asdict().items():
            shape = tuple(getattr(a, "shape", ()))
            parts.append("%s=%s%s" % (f, type(a).__name__, list(shape)))
        return "RouteResult(T=%d, E=%d, k=%d, U=%d, total=%s, %s)" % (
            self.num_tokens, self.num_experts, self.top_k, self.unit_size, self.total, ", ".join(parts))


class GateResult(object):
    """Outputs of gate(): .topk_ids [T, k] int32 and .topk_weights [T, k] fp32; unpacks as
    (topk_ids, topk_weights). .workspace is the scratch the call used (reusable)."""
    __slots__ = ("topk_ids", "topk_weights", "workspace")

    def __init__(self, topk_ids, topk_weights, workspace=None):
        self.topk_ids = topk_ids
        self.topk_weights = topk_weights
        self.workspace = workspace

    def __iter__(self):
        return iter((self.topk_ids, self.topk_weights))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.topk_ids, self.topk_weights)[i]

    def __repr__(self):
        return "GateResult(topk_ids=%r, topk_weights=%r)" % (self.topk_ids, self.topk_weights)


# ---- plans --------------------------------------------------------------------------

class _Plan(object):
    __slots__ = ("op", "cuda", "params", "T", "E", "k", "U", "layouts", "lens", "ws_bytes", "fn",
                 "sig", "needs_bias", "model")


_plans = {}
_MAX_PLANS = 1024


def _make_plan(op, cuda, T, E, stride, dtype_code, top_k, score, renormalize, scale, num_groups,
               topk_groups, group_score, unit_size, layout, moe_buf_bytes, model, device):
    p = L.Params()
    L.params_init(p)
    plan = _Plan()
    plan.needs_bias = False
    plan.model = model
    if model is not None:
        info = model_info(model)
        st = L.params_from_preset(p, L.preset_find(info.name.encode()))
        if st:
            _raise(st)
        if E != info.num_experts:
            raise ValueError("moeroute: model %r has %d experts, the input has %d" % (model, info.num_experts, E))
        plan.needs_bias = info.has_bias
    p.num_tokens = T
    p.num_experts = E
    if top_k is not None:
        p.top_k = _int(top_k, "top_k")
    elif model is None:
        raise TypeError("moeroute: top_k is required (or a model=)")
    if score is not None:
        p.score = _enum(_SCORES, score, "score")
    if renormalize is not None:
        p.renormalize = 1 if renormalize else 0
    if scale is not None:
        p.scale = float(scale)
    if num_groups is not None:
        p.num_groups = _int(num_groups, "num_groups")
    if topk_groups is not None:
        p.topk_groups = _int(topk_groups, "topk_groups")
    if group_score is not None:
        p.group_score = _enum(_GROUP_SCORES, group_score, "group_score")
    p.unit_size = _int(unit_size, "unit_size")
    if op != L.OP_GATE:
        p.layouts = _enum(_LAYOUTS, layout, "layout")
    p.logits_row_stride = 0 if stride == E else stride
    p.logits_dtype = dtype_code
    p.moe_buf_bytes = moe_buf_bytes
    sizes = L.Sizes()
    sizes.struct_size = ctypes.sizeof(L.Sizes)
    st = L.get_sizes(p, sizes)
    if st:
        _raise(st)
    ws = ctypes.c_size_t(0)
    if cuda and not L.HAVE_CUDA_ENTRY_POINTS:
        raise MoerouteError(10, "%s has no CUDA entry points: it was built without the CUDA backend" % L.path)
    st = (L.cuda_workspace_size if cuda else L.cpu_workspace_size)(op, p, ctypes.byref(ws))
    if st:
        _raise(st)
    plan.op = op
    plan.cuda = cuda
    plan.params = p
    plan.T, plan.E, plan.k, plan.U = T, E, p.top_k, p.unit_size
    plan.layouts = p.layouts if op != L.OP_GATE else 0
    plan.lens = {
        "topk_ids": (T, p.top_k), "topk_weights": (T, p.top_k),
        "sorted_ids": sizes.ck_sorted_len, "sorted_weights": sizes.ck_sorted_len,
        "sorted_expert_ids": sizes.ck_blocks_len, "num_valid_ids": 2,
        "sorted_token_ids": sizes.vllm_sorted_len, "expert_ids": sizes.vllm_blocks_len,
        "num_tokens_post_pad": 1,
    }
    plan.ws_bytes = ws.value
    plan.fn = (L.CUDA_OPS if cuda else L.CPU_OPS)[op]
    plan.sig = (op != L.OP_GATE, cuda, device, T, E, plan.k, plan.U, plan.layouts)
    return plan


def _get_plan(key):
    plan = _plans.get(key)
    if plan is None:
        plan = _make_plan(*key)
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        _plans[key] = plan
    return plan


# ---- argument checks ----------------------------------------------------------------

def _check_same_device(ref, d, name):
    if d.cuda != ref.cuda:
        raise ValueError("moeroute: %s is on the %s but the %s input is on the %s" % (
            name, "GPU" if d.cuda else "host", "first", "GPU" if ref.cuda else "host"))
    if d.cuda and d.device >= 0 and ref.device >= 0 and d.device != ref.device:
        raise ValueError("moeroute: %s is on cuda:%d but the first input is on cuda:%d" % (name, d.device, ref.device))


def _vector(ref, x, name, dtype, length):
    d = A.describe(x, name)
    _check_same_device(ref, d, name)
    if d.dtype != dtype:
        raise TypeError("moeroute: %s must be %s, got %s" % (name, dtype, d.dtype))
    if d.numel != length or len(d.shape) != 1:
        raise ValueError("moeroute: %s must have shape (%d,), got %s" % (name, length, tuple(d.shape)))
    if not d.is_contiguous():
        raise ValueError("moeroute: %s must be contiguous" % name)
    return d.ptr


def _bytes_of(ref, x, name):
    d = A.describe(x, name)
    _check_same_device(ref, d, name)
    if not d.is_contiguous():
        raise ValueError("moeroute: %s must be contiguous" % name)
    return d.ptr, d.numel * A.ITEMSIZE.get(d.dtype, 1)


def _logits_dtype(d, dtype):
    if dtype is None:
        code = _DTYPE_CODES.get(d.dtype)
        if code is None:
            raise TypeError("moeroute: logits must be float32, float16 or bfloat16 (or raw 16-bit bits with "
                            "dtype='bf16'/'fp16'), got %s" % d.dtype)
        return code
    name = _DTYPE_ALIASES.get(str(dtype).lower()) if isinstance(dtype, str) else None
    if name is None:
        raise ValueError("moeroute: dtype must be 'fp32', 'bf16' or 'fp16', got %r" % (dtype,))
    if d.dtype != name and not (name != "float32" and d.dtype in ("uint16", "int16")):
        raise TypeError("moeroute: dtype=%r needs %s logits%s, got %s" % (
            dtype, name, "" if name == "float32" else " or raw bits in uint16/int16", d.dtype))
    return _DTYPE_CODES[name]


def _output(ref, out, name, dtype, want):
    """The address of out's array `name`, checked against the capacity `want`
    (an int: 1-D length at least want; a tuple: exact 2-D shape); 0 when absent."""
    a = out.get(name) if isinstance(out, dict) else getattr(out, name, None)
    if a is None:
        return None, 0
    d = A.describe(a, name)
    _check_same_device(ref, d, name)
    if d.dtype != dtype:
        raise TypeError("moeroute: out.%s must be %s, got %s" % (name, dtype, d.dtype))
    if not d.is_contiguous():
        raise ValueError("moeroute: out.%s must be contiguous" % name)
    if isinstance(want, tuple):
        if tuple(d.shape) != want:
            raise ValueError("moeroute: out.%s must have shape %s, got %s" % (name, want, tuple(d.shape)))
    elif len(d.shape) != 1 or d.shape[0] < want:
        raise ValueError("moeroute: out.%s must be 1-D with at least %d entries, got shape %s" % (
            name, want, tuple(d.shape)))
    return a, d.ptr


_INT32_OUT = {"topk_ids", "sorted_ids", "sorted_expert_ids", "num_valid_ids", "sorted_token_ids", "expert_ids",
              "num_tokens_post_pad"}
_CK_FIELDS = ("sorted_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids")
_VLLM_FIELDS = ("sorted_token_ids", "expert_ids", "num_tokens_post_pad")
_OPTIONAL = {"topk_ids", "topk_weights", "sorted_weights"}


def _out_fields(plan):
    fields = []
    if plan.op != L.OP_SORT:
        fields += ["topk_ids", "topk_weights"]
    if plan.op != L.OP_GATE:
        if plan.layouts & L.LAYOUT_CK:
            fields += list(_CK_FIELDS)
        if plan.layouts & L.LAYOUT_VLLM:
            fields += list(_VLLM_FIELDS)
    return fields


def _bind_outputs(plan, ref, out, result, cbuf, min_lens=None):
    """Fill result's arrays and cbuf's output pointers from out (checked against the
    capacities, or min_lens where given) or, where out is None, from fresh allocations
    like ref."""
    empty = None if out is not None else A.allocator(ref)
    for f in _out_fields(plan):
        dtype = "int32" if f in _INT32_OUT else "float32"
        want = plan.lens[f]
        if min_lens is not None and f in min_lens:
            want = min_lens[f]
        if out is None:
            a, ptr = empty(want, dtype)
        else:
            a, ptr = _output(ref, out, f, dtype, want)
            if a is None and (f not in _OPTIONAL or plan.op == L.OP_GATE):
                raise ValueError("moeroute: out has no %s (needed by this call)" % f)
        setattr(result, f, a)
        setattr(cbuf, f, ptr or None)


def _bind_workspace(plan, ref, workspace, out_ws, cbuf):
    """Set cbuf's workspace; returns the workspace array (or None)."""
    need = plan.ws_bytes
    if workspace is not None:
        ptr, nbytes = _bytes_of(ref, workspace, "workspace")
        if nbytes < need:
            raise ValueError("moeroute: workspace has %d bytes, this call needs %d" % (nbytes, need))
        cbuf.workspace = ptr or None
        cbuf.workspace_bytes = nbytes
        return workspace
    if need == 0:
        cbuf.workspace = None
        cbuf.workspace_bytes = 0
        return None
    if out_ws is not None:
        ptr, nbytes = out_ws
        if nbytes >= need:
            cbuf.workspace = ptr
            cbuf.workspace_bytes = nbytes
            return None
    a, ptr = A.allocator(ref)(need, "uint8")
    cbuf.workspace = ptr
    cbuf.workspace_bytes = need
    return a


def _call(plan, ref, cbuf, stream):
    if plan.cuda:
        s = A.as_stream(stream) if stream is not None else A.current_stream(ref)
        if A.needs_device_switch(ref):
            with A.DeviceGuard(ref):
                st = plan.fn(plan.params, cbuf, s or None)
        else:
            st = plan.fn(plan.params, cbuf, s or None)
    else:
        st = plan.fn(plan.params, cbuf)
    if st:
        _raise(st)


# ---- the three operations ----------------------------------------------------------

def _logits_plan(op, logits, top_k, score, renormalize, scale, num_groups, topk_groups, group_score,
                 unit_size, layout, moe_buf, model, dtype):
    d = A.describe(logits, "logits")
    shape = d.shape
    if len(shape) != 2:
        raise ValueError("moeroute: logits must be 2-D [num_tokens, num_experts], got shape %s" % (tuple(shape),))
    T, E = shape
    stride = E
    if d.strides is not None:
        if E > 1 and d.strides[1] != 1:
            raise ValueError("moeroute: logits rows must be contiguous (stride 1 along the experts)")
        if T > 1:
            stride = d.strides[0]
            if stride < E:
                raise ValueError("moeroute: logits row stride %d is smaller than num_experts %d" % (stride, E))
    code = _logits_dtype(d, dtype)
    mb_ptr, mb_bytes = (None, 0) if moe_buf is None else _bytes_of(d, moe_buf, "moe_buf")
    plan = _get_plan((op, d.cuda, T, E, stride, code, top_k, score, renormalize, scale, num_groups, topk_groups,
                      group_score, unit_size, layout, mb_bytes, model, d.device))
    return d, plan, mb_ptr


def _prepared(out, plan):
    return out is not None and type(out) is RouteResult and out._sig == plan.sig and out._cbuf is not None


def _finish(plan, ref, result, trim):
    if trim is None:
        trim = not ref.cuda
    if trim and plan.op != L.OP_GATE:
        return result.trimmed()
    return result


def route(logits, top_k=None, *, score=None, renormalize=None, scale=None, bias=None, num_groups=None,
          topk_groups=None, group_score=None, expert_mask=None, unit_size=32, layout="both", moe_buf=None,
          model=None, dtype=None, out=None, workspace=None, stream=None, trim=None, _min_lens=None):
    """Gate and sort in one call: logits [T, E] -> top-k experts and weights, and the token
    slots grouped by expert, padded to unit_size, in the chosen layout(s).

    logits: [T, E] float32 / float16 / bfloat16 (or uint16 raw bits with dtype='bf16'),
      rows contiguous (a row stride larger than E is fine). Host array -> CPU backend;
      device array -> CUDA backend on the array's current stream (or `stream`).
    top_k, score ('softmax' | 'sigmoid' | 'sqrt_softplus'), renormalize, scale, num_groups,
      topk_groups, group_score ('top2_sum' | 'max'): the router; None takes the model
      preset's value (model='deepseek-r1', see models()) or the library default
      (softmax, renormalize=True, scale=1, no groups).
    bias: float32 [E] selection bias or None. expert_mask: int32 [E] of 0/1 or None.
    unit_size: the grouped GEMM's block size U. layout: 'ck' (aiter), 'vllm' (SGLang), 'both'.
    moe_buf: an array cleared to zero by the call (the MoE output buffer), or None.
    out: a RouteResult (from route_buffers() or an earlier call) or a dict of output arrays
      to fill instead of allocating; workspace: a scratch array (bytes) to use (on CUDA
      16-byte aligned, as fresh torch / CuPy allocations are).
      For CUDA graph capture pass both (route_buffers() makes them).
    trim: slice the sorted arrays to their valid range; default True for host arrays,
      False for device arrays (trimming reads the total: it synchronises).
    Returns a RouteResult.
    """
    d, plan, mb_ptr = _logits_plan(L.OP_ROUTE, logits, top_k, score, renormalize, scale, num_groups,
                                   topk_groups, group_score, unit_size, layout, moe_buf, model, dtype)
    return _run_logits(plan, d, bias, expert_mask, moe_buf, mb_ptr, out, workspace, stream, trim, _min_lens)


def _run_logits(plan, d, bias, expert_mask, moe_buf, mb_ptr, out, workspace, stream, trim, min_lens=None):
    E = plan.E
    if bias is not None:
        bias_ptr = _vector(d, bias, "bias", "float32", E)
    elif plan.needs_bias:
        raise ValueError("moeroute: model %r selects with a bias: pass bias= (float32 [%d])" % (plan.model, E))
    else:
        bias_ptr = None
    mask_ptr = None if expert_mask is None else _vector(d, expert_mask, "expert_mask", "int32", E)
    if _prepared(out, plan):
        result = out
        cbuf = out._cbuf
        ws = out._ws
        if workspace is not None or ws is None or ws[1] < plan.ws_bytes:
            _bind_workspace(plan, d, workspace, ws, cbuf)
        else:
            cbuf.workspace = ws[0]
            cbuf.workspace_bytes = ws[1]
    else:
        cbuf = L.Buffers()
        result = RouteResult(plan.T, E, plan.k, plan.U)
        _bind_outputs(plan, d, out, result, cbuf, min_lens)
        ws_arr = _bind_workspace(plan, d, workspace, None, cbuf)
        result.workspace = workspace if workspace is not None else ws_arr
    cbuf.logits = d.ptr or None
    cbuf.bias = bias_ptr
    cbuf.expert_mask = mask_ptr
    if plan.op != L.OP_GATE:
        cbuf.moe_buf = mb_ptr or None
    _call(plan, d, cbuf, stream)
    if plan.op == L.OP_GATE:
        return GateResult(result.topk_ids, result.topk_weights, result.workspace)
    result.moe_buf = moe_buf
    if not d.cuda:
        result.total = None
        result.total = result.read_total()
    return _finish(plan, d, result, trim)


def gate(logits, top_k=None, *, score=None, renormalize=None, scale=None, bias=None, num_groups=None,
         topk_groups=None, group_score=None, model=None, dtype=None, out=None, workspace=None, stream=None):
    """Gating only: logits [T, E] -> GateResult(topk_ids [T, k] int32, topk_weights [T, k] fp32).
    Arguments as route(); out: (topk_ids, topk_weights) to fill."""
    d, plan, _ = _logits_plan(L.OP_GATE, logits, top_k, score, renormalize, scale, num_groups, topk_groups,
                              group_score, 32, "both", None, model, dtype)
    if isinstance(out, GateResult) and workspace is None:
        workspace = out.workspace
    if out is not None and not isinstance(out, (dict, RouteResult)):
        ids, weights = tuple(out)[:2]
        out = {"topk_ids": ids, "topk_weights": weights}
    return _run_logits(plan, d, bias, None, None, None, out, workspace, stream, False)


def sort(topk_ids, topk_weights, num_experts, *, unit_size=32, layout="both", expert_mask=None, moe_buf=None,
         out=None, workspace=None, stream=None, trim=None, _min_lens=None):
    """Sorting only: topk_ids [T, k] int32 (and topk_weights [T, k] fp32, or None when no
    sorted_weights are wanted) -> RouteResult with the chosen layout(s).
    Ids outside [0, num_experts) and ids of masked experts are dropped. Other arguments
    as route()."""
    d = A.describe(topk_ids, "topk_ids")
    if d.dtype != "int32":
        raise TypeError("moeroute: topk_ids must be int32, got %s (convert it first)" % d.dtype)
    if len(d.shape) != 2:
        raise ValueError("moeroute: topk_ids must be 2-D [num_tokens, top_k], got shape %s" % (tuple(d.shape),))
    if not d.is_contiguous():
        raise ValueError("moeroute: topk_ids must be contiguous")
    T, k = d.shape
    E = _int(num_experts, "num_experts")
    w_ptr = None
    if topk_weights is not None:
        w = A.describe(topk_weights, "topk_weights")
        _check_same_device(d, w, "topk_weights")
        if w.dtype != "float32":
            raise TypeError("moeroute: topk_weights must be float32, got %s" % w.dtype)
        if tuple(w.shape) != (T, k) or not w.is_contiguous():
            raise ValueError("moeroute: topk_weights must be contiguous with shape %s like topk_ids" % ((T, k),))
        w_ptr = w.ptr or None
    mb_ptr, mb_bytes = (None, 0) if moe_buf is None else _bytes_of(d, moe_buf, "moe_buf")
    plan = _get_plan((L.OP_SORT, d.cuda, T, E, E, L.DTYPE_FP32, k, None, None, None, None, None, None,
                      unit_size, layout, mb_bytes, None, d.device))
    mask_ptr = None if expert_mask is None else _vector(d, expert_mask, "expert_mask", "int32", E)
    if _prepared(out, plan):
        result = out
        cbuf = out._cbuf
        ws = out._ws
        if workspace is not None or ws is None or ws[1] < plan.ws_bytes:
            _bind_workspace(plan, d, workspace, ws, cbuf)
        else:
            cbuf.workspace, cbuf.workspace_bytes = ws
    else:
        cbuf = L.Buffers()
        result = RouteResult(T, E, k, plan.U)
        _bind_outputs(plan, d, out, result, cbuf, _min_lens)
        ws_arr = _bind_workspace(plan, d, workspace, None, cbuf)
        result.workspace = workspace if workspace is not None else ws_arr
    # No weights in: no sorted weights out (a bundle gets its pointer back afterwards).
    saved_sw = cbuf.sorted_weights if w_ptr is None else None
    cbuf.topk_ids = d.ptr or None
    cbuf.topk_weights = w_ptr
    cbuf.expert_mask = mask_ptr
    cbuf.moe_buf = mb_ptr
    if saved_sw:
        cbuf.sorted_weights = None
        try:
            _call(plan, d, cbuf, stream)
        finally:
            cbuf.sorted_weights = saved_sw
        if result is not out:
            result.sorted_weights = None
    else:
        _call(plan, d, cbuf, stream)
    result.topk_ids = topk_ids
    result.topk_weights = topk_weights
    result.moe_buf = moe_buf
    if not d.cuda:
        result.total = None
        result.total = result.read_total()
    return _finish(plan, d, result, trim)


# ---- preallocated buffers (CUDA graph capture) ---------------------------------

def _prepare(plan, ref, result):
    cbuf = L.Buffers()
    _bind_outputs(plan, ref, None, result, cbuf)
    if plan.ws_bytes:
        a, ptr = A.allocator(ref)(plan.ws_bytes, "uint8")
        result.workspace = a
        result._ws = (ptr, plan.ws_bytes)
    else:
        result._ws = (None, 0)
    cbuf.workspace, cbuf.workspace_bytes = result._ws
    result._sig = plan.sig
    result._cbuf = cbuf
    return result


def route_buffers(logits, top_k=None, *, score=None, renormalize=None, scale=None, bias=None, num_groups=None,
                  topk_groups=None, group_score=None, expert_mask=None, unit_size=32, layout="both", moe_buf=None,
                  model=None, dtype=None, out=None, workspace=None, stream=None, trim=None):
    """Allocates every output and the workspace of route() for logits' shape, dtype and
    device (full capacity, like the logits' framework) and returns them as a RouteResult
    to pass as out= (e.g. before CUDA graph capture). Takes route()'s arguments; bias,
    expert_mask and the like are ignored. A bundle is tied to its configuration: with
    another one, route() checks it like any other out= arrays."""
    d, plan, _ = _logits_plan(L.OP_ROUTE, logits, top_k, score, renormalize, scale, num_groups, topk_groups,
                              group_score, unit_size, layout, moe_buf, model, dtype)
    return _prepare(plan, d, RouteResult(plan.T, plan.E, plan.k, plan.U))


def gate_buffers(logits, top_k=None, *, score=None, renormalize=None, scale=None, bias=None, num_groups=None,
                 topk_groups=None, group_score=None, model=None, dtype=None, out=None, workspace=None,
                 stream=None):
    """GateResult of fresh topk_ids / topk_weights (and .workspace) for gate(out=..., workspace=...)."""
    d, plan, _ = _logits_plan(L.OP_GATE, logits, top_k, score, renormalize, scale, num_groups, topk_groups,
                              group_score, 32, "both", None, model, dtype)
    r = _prepare(plan, d, RouteResult(plan.T, plan.E, plan.k, plan.U))
    return GateResult(r.topk_ids, r.topk_weights, r.workspace)


def sort_buffers(topk_ids, num_experts, *, unit_size=32, layout="both", expert_mask=None, moe_buf=None,
                 out=None, workspace=None, stream=None, trim=None):
    """Outputs and workspace of sort() for topk_ids' shape and device, as a RouteResult for out=."""
    d = A.describe(topk_ids, "topk_ids")
    if len(d.shape) != 2:
        raise ValueError("moeroute: topk_ids must be 2-D [num_tokens, top_k]")
    T, k = d.shape
    E = _int(num_experts, "num_experts")
    mb_bytes = 0 if moe_buf is None else _bytes_of(d, moe_buf, "moe_buf")[1]
    plan = _get_plan((L.OP_SORT, d.cuda, T, E, E, L.DTYPE_FP32, k, None, None, None, None, None, None,
                      unit_size, layout, mb_bytes, None, d.device))
    return _prepare(plan, d, RouteResult(T, E, k, plan.U))


def workspace_size(op, logits_or_topk_ids, **kwargs):
    """Workspace bytes op ('route' | 'gate' | 'sort') needs for these arrays and arguments
    (same keywords as the op; sort needs num_experts=)."""
    op = op.lower()
    if op == "sort":
        d = A.describe(logits_or_topk_ids, "topk_ids")
        T, k = d.shape
        mb = kwargs.get("moe_buf")
        mb_bytes = 0 if mb is None else _bytes_of(d, mb, "moe_buf")[1]
        E = _int(kwargs["num_experts"], "num_experts")
        plan = _get_plan((L.OP_SORT, d.cuda, T, E, E, L.DTYPE_FP32, k,
                          None, None, None, None, None, None, kwargs.get("unit_size", 32),
                          kwargs.get("layout", "both"), mb_bytes, None, d.device))
        return plan.ws_bytes
    opc = {"route": L.OP_ROUTE, "gate": L.OP_GATE}.get(op)
    if opc is None:
        raise ValueError("moeroute: op must be 'route', 'gate' or 'sort', got %r" % op)
    g = kwargs.get
    _, plan, _ = _logits_plan(opc, logits_or_topk_ids, g("top_k"), g("score"), g("renormalize"), g("scale"),
                              g("num_groups"), g("topk_groups"), g("group_score"), g("unit_size", 32),
                              g("layout", "both"), g("moe_buf"), g("model"), g("dtype"))
    return plan.ws_bytes
