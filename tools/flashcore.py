"""ctypes binding to libflashcore (src/flashcore.h) for PyTorch tensors.

    from flashcore import Context
    with Context() as fc:
        out = fc.attention(q, k, v, causal=True)    # q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D]

The library is $FLASHCORE_LIB, else <repo>/build/src/libflashcore.so. It is loaded at the first
Context, and torch is imported inside the functions that need it, so this module imports (and
compiles) on a machine with neither.
"""
import ctypes
import os
import sys
from pathlib import Path

FC_OK = 0
FC_DEVICE_NONE = -1
FC_F16 = 0
FC_BF16 = 1
LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4}

PLAN_KERNEL_CHARS = 96
PLAN_REASON_CHARS = 256


class Options(ctypes.Structure):
    """struct fc_options."""

    _fields_ = [
        ("cache_path", ctypes.c_char_p),
        ("no_disk_cache", ctypes.c_int),
        ("log_level", ctypes.c_int),        # enum fc_log_level
        ("log_fn", ctypes.c_void_p),        # fc_log_fn; left NULL: log lines go to stderr
        ("log_user", ctypes.c_void_p),
        ("template_dir", ctypes.c_char_p),
    ]


Strides = ctypes.c_int64 * 3


class AttentionParams(ctypes.Structure):
    """struct fc_attention_params."""

    _fields_ = [
        ("dtype", ctypes.c_int),            # enum fc_dtype
        ("batch", ctypes.c_int),
        ("seqlen_q", ctypes.c_int),
        ("seqlen_k", ctypes.c_int),
        ("heads_q", ctypes.c_int),
        ("heads_kv", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("q", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("v", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),           # float *
        ("q_stride", Strides),
        ("k_stride", Strides),
        ("v_stride", Strides),
        ("o_stride", Strides),
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int),
    ]


class PlanInfo(ctypes.Structure):
    """struct fc_plan_info."""

    _fields_ = [
        ("kernel", ctypes.c_char * PLAN_KERNEL_CHARS),
        ("reason", ctypes.c_char * PLAN_REASON_CHARS),
        ("splits", ctypes.c_int),
    ]


class FlashCoreError(RuntimeError):
    """A call returned a status other than FC_OK.

    Attributes: status (its name, e.g. "FC_ERR_INVALID_ARG"), code (its value), message (the
    context's message for it, possibly "").
    """

    def __init__(self, status, code, message):
        super().__init__(f"{status}: {message}" if message else status)
        self.status = status
        self.code = code
        self.message = message


_library = None


def library_path():
    """$FLASHCORE_LIB if set, else <repo>/build/src/libflashcore.so, repo being tools/..."""
    override = os.environ.get("FLASHCORE_LIB")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "build" / "src" / "libflashcore.so"


def load_library():
    """Loads the shared library once and declares the signatures of its functions."""
    global _library
    if _library is not None:
        return _library
    lib = ctypes.CDLL(str(library_path()))
    signatures = {
        "fc_options_init": (None, [ctypes.POINTER(Options)]),
        "fc_attention_params_init": (None, [ctypes.POINTER(AttentionParams)]),
        "fc_context_create": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(Options),
                                             ctypes.POINTER(ctypes.c_void_p)]),
        "fc_attention_forward": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(AttentionParams),
                                                ctypes.c_void_p]),
        "fc_attention_plan": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(AttentionParams),
                                             ctypes.POINTER(PlanInfo)]),
        "fc_context_errmsg": (ctypes.c_char_p, [ctypes.c_void_p]),
        "fc_context_destroy": (None, [ctypes.c_void_p]),
        "fc_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "fc_version": (ctypes.c_char_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    _library = lib
    return lib


def version():
    """The library's "MAJOR.MINOR.PATCH"."""
    return load_library().fc_version().decode()


def _default_device():
    """torch's current CUDA device when torch is already imported and sees a GPU, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0


def _fc_dtype(dtype):
    import torch

    dtypes = {torch.float16: FC_F16, torch.bfloat16: FC_BF16}
    if dtype not in dtypes:
        raise ValueError(f"dtype {dtype} is not supported (float16 and bfloat16 are)")
    return dtypes[dtype]


def _element_strides(tensor, name):
    """The {batch, seq, head} strides of a [B, S, H, D] tensor in elements, as the C API wants.

    A dimension of size 1 is never indexed, and torch may give it any stride: it gets the packed
    one instead, so that the library's stride rules (multiples of 8) judge only strides that matter.
    """
    if tensor.stride(3) != 1:
        raise ValueError(f"{name}: the last dimension must be contiguous (stride 1), "
                         f"not stride {tensor.stride(3)}")
    sizes = tensor.shape
    packed = (sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3])
    strides = []
    for size, stride, packed_stride in zip(sizes[:3], tensor.stride()[:3], packed):
        if size == 1:
            stride = packed_stride
        elif stride == 0:
            # NOTE: all three strides 0 mean "packed" to the library: a broadcast tensor would be
            # read wrongly, and a broadcast output written by several threads at once.
            raise ValueError(f"{name}: broadcast (stride 0) dimensions are not supported; "
                             "pass a .contiguous() copy")
        strides.append(stride)
    return Strides(*strides)


class PreparedAttention:
    """One attention call with its parameters built: calling it launches the kernel again.

    It launches on the stream that was current when it was prepared and keeps its tensors alive.
    Calling returns out, or (out, lse) when an lse was asked for. Benchmarks use it so that what
    they time is the library, not the building of the parameter struct in Python.
    """

    def __init__(self, context, params, stream, tensors, out, lse):
        self._context = context
        self._params = params
        self._params_ref = ctypes.byref(params)
        self._stream = stream
        self._tensors = tensors
        self.out = out
        self.lse = lse

    def __call__(self):
        context = self._context
        status = context._lib.fc_attention_forward(context._live_handle(), self._params_ref,
                                                   self._stream)
        context._check(status)
        return self.out if self.lse is None else (self.out, self.lse)


class Context:
    """A FlashCore context for one CUDA device: compiles, caches and launches kernels.

    device: a CUDA ordinal, or FC_DEVICE_NONE for a context that plans but launches nothing; None
    means torch's current device when torch is imported, else 0. cache_path, no_disk_cache and
    log_level ("off", "error", "warn", "info", "debug") set the fields of struct fc_options; None
    keeps the library's defaults (and its environment variables).
    """

    def __init__(self, device=None, *, cache_path=None, no_disk_cache=False, log_level=None):
        self._handle = None    # first, so that close() and __del__ work whatever fails below
        self._lib = load_library()
        self.device = _default_device() if device is None else int(device)
        options = Options()
        self._lib.fc_options_init(ctypes.byref(options))
        if cache_path is not None:
            self._cache_path = os.fsencode(cache_path)   # the struct only points at these bytes
            options.cache_path = self._cache_path
        options.no_disk_cache = int(bool(no_disk_cache))
        if log_level is not None:
            options.log_level = LOG_LEVELS[log_level]
        handle = ctypes.c_void_p()
        status = self._lib.fc_context_create(self.device, ctypes.byref(options),
                                             ctypes.byref(handle))
        # Like sqlite3_open, the context is set even on failure: it holds the message.
        self._handle = handle.value
        if status != FC_OK:
            error = self._error(status)
            self.close()
            raise error

    def close(self):
        """Destroys the context; later calls on it raise ValueError. Closing twice is harmless."""
        if self._handle is not None:
            self._lib.fc_context_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        self.close()

    def attention(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
                  lse=None):
        """Runs attention on torch's current stream of the tensors' device.

        q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim];
        float16 or bfloat16 on this context's device, last dimension contiguous, other strides
        free. causal: bottom-right aligned mask. softmax_scale: None (or 0) = 1/sqrt(head_dim).
        out: [B, Sq, Hq, D] in q's dtype, allocated like q if None. lse: a contiguous float32
        [B, Hq, Sq] to write the log-sum-exp into; allocated if None and return_lse.
        Returns out, or (out, lse) when return_lse or lse is given. Raises FlashCoreError.
        """
        return self.prepare(q, k, v, causal, softmax_scale, out, return_lse, lse)()

    def prepare(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
                lse=None):
        """Builds the call attention() would make, without launching it: see PreparedAttention."""
        import torch

        params, tensors, out, lse = self._bind(q, k, v, causal, softmax_scale, out, return_lse,
                                               lse, on_device=True)
        stream = torch.cuda.current_stream(q.device).cuda_stream
        return PreparedAttention(self, params, stream, tensors, out, lse)

    def plan(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
             lse=None):
        """Which kernel attention() would run with these arguments: (kernel_name, reason).

        Launches and compiles nothing; the tensors may be on any device (a FC_DEVICE_NONE context
        plans for CPU tensors). Raises FlashCoreError when the problem is invalid or unsupported.
        """
        params, _tensors, _out, _lse = self._bind(q, k, v, causal, softmax_scale, out, return_lse,
                                                  lse, on_device=False)
        info = PlanInfo()
        status = self._lib.fc_attention_plan(self._live_handle(), ctypes.byref(params),
                                             ctypes.byref(info))
        self._check(status, fallback_message=info.reason.decode(errors="replace"))
        return info.kernel.decode(errors="replace"), info.reason.decode(errors="replace")

    def _bind(self, q, k, v, causal, softmax_scale, out, return_lse, lse, on_device):
        """Checks what the C struct cannot express, allocates out/lse, fills AttentionParams."""
        import torch

        for name, tensor in (("q", q), ("k", k), ("v", v)):
            if tensor.dim() != 4:
                raise ValueError(f"{name} must be 4-D [batch, seq, heads, head_dim], "
                                 f"not {tuple(tensor.shape)}")
        batch, seqlen_q, heads_q, head_dim = q.shape
        _, seqlen_k, heads_kv, _ = k.shape
        if k.shape[0] != batch or k.shape[3] != head_dim or v.shape != k.shape:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must both be "
                             f"[{batch}, seqlen_k, heads_kv, {head_dim}] for q {tuple(q.shape)}")
        if on_device and (q.device.type != "cuda" or q.device.index != self.device):
            raise ValueError(f"the tensors are on {q.device}, the context on cuda:{self.device}")
        dtype = _fc_dtype(q.dtype)
        for name, tensor in (("k", k), ("v", v)):
            if tensor.dtype != q.dtype:
                raise ValueError(f"{name} is {tensor.dtype} but q is {q.dtype}")
        if out is None:
            out = torch.empty_like(q)
        if out.shape != q.shape or out.dtype != q.dtype:
            raise ValueError(f"out must be {tuple(q.shape)} {q.dtype}, "
                             f"not {tuple(out.shape)} {out.dtype}")
        if lse is None and return_lse:
            lse = torch.empty(batch, heads_q, seqlen_q, dtype=torch.float32, device=q.device)
        if lse is not None and (lse.shape != (batch, heads_q, seqlen_q)
                                or lse.dtype != torch.float32 or not lse.is_contiguous()):
            raise ValueError(f"lse must be a contiguous float32 [{batch}, {heads_q}, {seqlen_q}]")
        tensors = [q, k, v, out] + ([lse] if lse is not None else [])
        if any(tensor.device != q.device for tensor in tensors):
            raise ValueError("q, k, v, out and lse must be on one device")

        params = AttentionParams()
        self._lib.fc_attention_params_init(ctypes.byref(params))
        params.dtype = dtype
        params.batch, params.seqlen_q, params.seqlen_k = batch, seqlen_q, seqlen_k
        params.heads_q, params.heads_kv, params.head_dim = heads_q, heads_kv, head_dim
        params.q, params.k, params.v, params.out = (t.data_ptr() for t in (q, k, v, out))
        params.lse = lse.data_ptr() if lse is not None else None
        params.q_stride = _element_strides(q, "q")
        params.k_stride = _element_strides(k, "k")
        params.v_stride = _element_strides(v, "v")
        params.o_stride = _element_strides(out, "out")
        params.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
        params.causal = int(bool(causal))
        return params, tensors, out, lse

    def _live_handle(self):
        if self._handle is None:
            raise ValueError("the FlashCore context is closed")
        return self._handle

    def _error(self, status, fallback_message=""):
        name = self._lib.fc_status_name(status)
        name = name.decode() if name else f"status {status}"
        message = self._lib.fc_context_errmsg(self._handle) if self._handle is not None else None
        message = message.decode(errors="replace") if message else ""
        return FlashCoreError(name, status, message or fallback_message)

    def _check(self, status, fallback_message=""):
        if status != FC_OK:
            raise self._error(status, fallback_message)
