"""The ctypes binding to libflashcore (src/flashcore.h): its structs, the library, errors, Context.

Nothing here imports torch at module level or loads the library at import: the library is loaded at
first use, and a tensor is anything with .shape, .stride(), .dtype, .device and .data_ptr(). The
library is found in this order:

1. $FLASHCORE_LIB, if set (a GPU host's carried copy, a development build);
2. libflashcore.so inside this package (what `pip install .` puts there);
3. <repository>/build/src/libflashcore.so, for the package used from a checkout (python/ on
   PYTHONPATH after `meson setup build && ninja -C build`).
"""
import ctypes
import math
import os
import threading
from pathlib import Path

FC_OK = 0
FC_ERR_INVALID_ARG = 1
FC_DEVICE_NONE = -1
FC_F16 = 0
FC_BF16 = 1
LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4}

PLAN_KERNEL_CHARS = 96
PLAN_REASON_CHARS = 256
LAUNCH_TEMPLATES_MAX = 512   # parameter structs kept per context for launch(), by problem
LIBRARY_NAME = "libflashcore.so"
POINTER_ALIGN_BYTES = 16

# dtype names accepted wherever a dtype is given without a tensor; torch dtypes are matched by
# their str() ("torch.float16"), so that this module needs no torch.
DTYPES = {
    "torch.float16": FC_F16, "float16": FC_F16, "f16": FC_F16, "fp16": FC_F16, "half": FC_F16,
    "torch.bfloat16": FC_BF16, "bfloat16": FC_BF16, "bf16": FC_BF16,
}
DTYPE_NAMES = {FC_F16: "f16", FC_BF16: "bf16"}


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
    """struct fc_attention_params (struct_size first: the library reads what it covers)."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),   # set by fc_attention_params_init_sized: this struct's size
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
        ("window_left", ctypes.c_int),      # -1: unbounded (fc_attention_params_init_sized's default)
        ("window_right", ctypes.c_int),
        ("sinks", ctypes.c_void_p),         # const float *, [heads_q]; NULL: none
        ("softcap", ctypes.c_float),        # 0: none
        # varlen and seqused_k (src/flashcore.h); 0/NULL: a dense batch. TODO: the op does not set them yet.
        ("cu_seqlens_q", ctypes.c_void_p),  # const int32_t *, [batch + 1]
        ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seqlen_q", ctypes.c_int),     # > 0: varlen
        ("max_seqlen_k", ctypes.c_int),
        ("seqused_k", ctypes.c_void_p),     # const int32_t *, [batch]; NULL: all keys
    ]


class MergeParams(ctypes.Structure):
    """struct fc_merge_params (struct_size first: the library reads what it covers)."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),            # enum fc_dtype
        ("batch", ctypes.c_int),
        ("seqlen", ctypes.c_int),
        ("heads", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("out_a", ctypes.c_void_p),
        ("out_b", ctypes.c_void_p),
        ("lse_a", ctypes.c_void_p),         # const float *
        ("lse_b", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),           # float *, NULL: not written
        ("a_stride", Strides),
        ("b_stride", Strides),
        ("o_stride", Strides),
    ]


class PlanInfo(ctypes.Structure):
    """struct fc_plan_info."""

    _fields_ = [
        ("kernel", ctypes.c_char * PLAN_KERNEL_CHARS),
        ("reason", ctypes.c_char * PLAN_REASON_CHARS),
        ("splits", ctypes.c_int),
    ]


class FlashCoreError(RuntimeError):
    """A FlashCore call failed.

    Attributes: status (the library's name for it, e.g. "FC_ERR_INVALID_ARG"), code (its value in
    enum fc_status), message (the library's message for it, possibly "").
    """

    def __init__(self, status, code, message):
        super().__init__(f"{status}: {message}" if message else status)
        self.status = status
        self.code = code
        self.message = message

    def __reduce__(self):
        return type(self), (self.status, self.code, self.message)


class ArgumentError(FlashCoreError, ValueError):
    """An argument the C struct cannot express (a tensor's dtype, device, rank or layout), refused
    in Python before any call into the library. Its status is FC_ERR_INVALID_ARG, and it is also a
    ValueError."""

    def __init__(self, message):
        super().__init__("FC_ERR_INVALID_ARG", FC_ERR_INVALID_ARG, message)

    def __reduce__(self):
        return type(self), (self.message,)


_libraries = {}   # resolved path -> the loaded library
_library_lock = threading.Lock()


def library_candidates():
    """Where the library is looked for, in order (see the module's docstring)."""
    override = os.environ.get("FLASHCORE_LIB")
    if override:
        return [Path(override)]
    package = Path(__file__).resolve().parent
    return [package / LIBRARY_NAME, package.parent.parent / "build" / "src" / LIBRARY_NAME]


def library_path():
    """The libflashcore.so that is (or would be) loaded; FileNotFoundError if there is none."""
    candidates = library_candidates()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(candidate) for candidate in candidates)
    raise FileNotFoundError(
        f"libflashcore.so not found (tried {tried}): install the package with `pip install .`, "
        "build the repository with `meson setup build && ninja -C build`, or set FLASHCORE_LIB")


def load_library(path=None):
    """Loads the shared library once and declares the signatures of its functions.

    path: another libflashcore.so to load beside the default one (benchmarks compare two builds in
    one process); None: the one library_path() finds.
    """
    with _library_lock:
        path = Path(path).resolve() if path is not None else library_path().resolve()
        if str(path) in _libraries:
            return _libraries[str(path)]
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as error:
            raise OSError(f"{path} could not be loaded: {error}") from error
        signatures = {
            "fc_options_init": (None, [ctypes.POINTER(Options)]),
            "fc_attention_params_init": (None, [ctypes.POINTER(AttentionParams)]),   # 0.2.0's
            "fc_context_create": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(Options),
                                                 ctypes.POINTER(ctypes.c_void_p)]),
            "fc_attention_forward": (ctypes.c_int, [ctypes.c_void_p,
                                                    ctypes.POINTER(AttentionParams),
                                                    ctypes.c_void_p]),
            "fc_attention_plan": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(AttentionParams),
                                                 ctypes.POINTER(PlanInfo)]),
            "fc_merge_params_init": (None, [ctypes.POINTER(MergeParams)]),
            "fc_attention_merge": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(MergeParams),
                                                  ctypes.c_void_p]),
            "fc_context_errmsg": (ctypes.c_char_p, [ctypes.c_void_p]),
            "fc_context_destroy": (None, [ctypes.c_void_p]),
            "fc_status_name": (ctypes.c_char_p, [ctypes.c_int]),
            "fc_version": (ctypes.c_char_p, []),
        }
        # NOTE: optional: a 0.2.0 library (a benchmark's baseline build) has no sized initializer;
        # its callers' structs end where 0.2.0's did, which its own initializer fills.
        if hasattr(lib, "fc_attention_params_init_sized"):
            signatures["fc_attention_params_init_sized"] = (
                None, [ctypes.POINTER(AttentionParams), ctypes.c_size_t])
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        lib.fc_path = path
        _libraries[str(path)] = lib
        return lib


def version():
    """The library's "MAJOR.MINOR.PATCH"."""
    return load_library().fc_version().decode()


def status_name(code):
    """The library's name for a status code, e.g. "FC_ERR_INVALID_ARG"."""
    name = load_library().fc_status_name(code)
    return name.decode() if name else f"status {code}"


def fc_dtype(dtype):
    """enum fc_dtype of a torch dtype or a name ("float16", "bf16", ...)."""
    code = DTYPES.get(str(dtype))
    if code is None:
        raise ArgumentError(f"dtype {dtype} is not supported (float16 and bfloat16 are)")
    return code


def _element_strides(tensor, name):
    """The {batch, seq, head} strides of a [B, S, H, D] tensor in elements, as the C API wants.

    A dimension of size 1 is never indexed, and torch may give it any stride: it gets the packed
    one instead, so that the library's stride rules (multiples of 8) judge only strides that matter.
    """
    if tensor.stride(3) != 1:
        raise ArgumentError(f"{name}: the last dimension must be contiguous (stride 1), "
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
            raise ArgumentError(f"{name}: broadcast (stride 0) dimensions are not supported; "
                                "pass a .contiguous() copy")
        strides.append(stride)
    return tuple(strides)


def is_tensor(value):
    return all(hasattr(value, attribute) for attribute in ("shape", "stride", "dtype", "device"))


def sizes_and_strides(value, name):
    """((B, S, H, D), {batch, seq, head} element strides) of a tensor, or of a 4-sequence of sizes
    (a packed tensor: strides (0, 0, 0))."""
    if is_tensor(value):
        if len(value.shape) != 4:
            raise ArgumentError(f"{name} must be 4-D [batch, seq, heads, head_dim], "
                                f"not {tuple(value.shape)}")
        return tuple(int(size) for size in value.shape), _element_strides(value, name)
    try:
        sizes = tuple(int(size) for size in value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a tensor or a [batch, seq, heads, head_dim] shape, "
                            f"not {value!r}") from None
    if len(sizes) != 4:
        raise ArgumentError(f"{name} must be a [batch, seq, heads, head_dim] shape, not {sizes}")
    return sizes, (0, 0, 0)


def check_shapes(q_sizes, k_sizes, v_sizes):
    """That k and v are [B, Sk, Hkv, D] for q [B, Sq, Hq, D]; the library checks the rest."""
    batch, _, _, head_dim = q_sizes
    if k_sizes[0] != batch or k_sizes[3] != head_dim or tuple(v_sizes) != tuple(k_sizes):
        raise ArgumentError(f"k {tuple(k_sizes)} and v {tuple(v_sizes)} must both be "
                            f"[{batch}, seqlen_k, heads_kv, {head_dim}] for q {tuple(q_sizes)}")


def lse_shape(q_sizes):
    """[batch, heads_q, seqlen_q]: the log-sum-exp's shape for q [B, Sq, Hq, D]."""
    return (q_sizes[0], q_sizes[2], q_sizes[1])


def window_pair(window):
    """(window_left, window_right) from window=(left, right): Python ints, -1 = unbounded (the
    library checks the rest: each >= -1, causal with right 0 or -1)."""
    try:
        left, right = window
    except (TypeError, ValueError):
        raise ArgumentError(f"window must be a pair (left, right) of key counts, -1 = unbounded, "
                            f"not {window!r}") from None
    for side, value in (("left", left), ("right", right)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"window's {side} bound must be an int (-1 = unbounded), not {value!r}")
    return int(left), int(right)


def check_sinks(sinks, heads_q, device):
    """That sinks, if given, is a contiguous float32 [heads_q] tensor on the tensors' device."""
    if sinks is None:
        return
    if not is_tensor(sinks):
        raise ArgumentError(f"sinks must be a float32 tensor of [heads_q] logits, not {type(sinks).__name__}")
    if (tuple(sinks.shape) != (heads_q,) or str(sinks.dtype) != "torch.float32"
            or not sinks.is_contiguous()):
        raise ArgumentError(f"sinks must be a contiguous float32 [{heads_q}] (one per query head), "
                            f"not {tuple(sinks.shape)} {sinks.dtype}")
    if sinks.device != device:
        raise ArgumentError(f"sinks is on {sinks.device} but q is on {device}")


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
    means torch's current device when torch is imported and sees a GPU, else 0. cache_path,
    no_disk_cache and log_level ("off", "error", "warn", "info", "debug") set the fields of struct
    fc_options; None keeps the library's defaults (and its environment variables). library: the
    path of another libflashcore.so to use (a benchmark's baseline build); None: the default one.
    Thread-safe, like the C context. flashcore.attention() keeps one per device for itself.
    """

    def __init__(self, device=None, *, cache_path=None, no_disk_cache=False, log_level=None,
                 library=None):
        self._handle = None    # first, so that close() and __del__ work whatever fails below
        self._lib = load_library(library)
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
        self._templates = {}   # launch(): problem key -> AttentionParams without pointers
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
                  lse=None, *, window=(-1, -1), sinks=None, softcap=None):
        """Runs attention on torch's current stream of the tensors' device.

        q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim];
        float16 or bfloat16 on this context's device, last dimension contiguous, other strides
        free. causal: bottom-right aligned mask. softmax_scale: None (or 0) = 1/sqrt(head_dim).
        out: [B, Sq, Hq, D] in q's dtype, allocated like q if None. lse: a contiguous float32
        [B, Hq, Sq] to write the log-sum-exp into; allocated if None and return_lse.
        window: (left, right) keys a query row sees around its diagonal, -1 = unbounded.
        sinks: a contiguous float32 [heads_q] tensor of logits joining each row's denominator, or
        None. softcap: None (or 0) = none, else scores s become softcap * tanh(s / softcap).
        Returns out, or (out, lse) when return_lse or lse is given. Raises FlashCoreError.
        """
        return self.prepare(q, k, v, causal, softmax_scale, out, return_lse, lse, window=window,
                            sinks=sinks, softcap=softcap)()

    def prepare(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
                lse=None, stream=None, *, window=(-1, -1), sinks=None, softcap=None):
        """Builds the call attention() would make, without launching it: see PreparedAttention.

        stream: a CUstream as an int; None = torch's current stream on the tensors' device.
        """
        import torch

        params, tensors, out, lse = self._bind(q, k, v, causal, softmax_scale, out, return_lse,
                                               lse, window, sinks, softcap)
        if stream is None:
            stream = torch.cuda.current_stream(q.device).cuda_stream
        return PreparedAttention(self, params, stream, tensors, out, lse)

    def plan(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
             lse=None, dtype=None, *, window=(-1, -1), sinks=None, softcap=None):
        """Which kernel attention() would run with these arguments: (kernel, reason, splits).

        q, k, v (and out): tensors on any device (their sizes, strides and dtype count), or
        [batch, seq, heads, head_dim] shapes (packed) with dtype given. return_lse, lse and sinks
        are accepted for symmetry with attention() and change no plan (sinks are a run-time
        input of every kernel); window and softcap do. Compiles and launches nothing. Raises
        FlashCoreError when the problem is invalid or unsupported.
        """
        if dtype is None:
            if not is_tensor(q):
                raise ArgumentError("dtype is needed when q, k and v are shapes")
            dtype = q.dtype
        elif is_tensor(q) and fc_dtype(dtype) != fc_dtype(q.dtype):
            raise ArgumentError(f"dtype {dtype} but q is {q.dtype}")
        params = self._params(q, k, v, fc_dtype(dtype), causal, softmax_scale, window, softcap)
        if out is not None:
            params.o_stride = Strides(*sizes_and_strides(out, "out")[1])
        # Planning reads no tensor: the pointers stay NULL (fc_attention_plan checks the shape rules).
        info = PlanInfo()
        status = self._lib.fc_attention_plan(self._live_handle(), ctypes.byref(params),
                                             ctypes.byref(info))
        self._check(status, fallback_message=info.reason.decode(errors="replace"))
        return (info.kernel.decode(errors="replace"), info.reason.decode(errors="replace"),
                info.splits)

    def launch(self, q, k, v, out, lse, causal, softmax_scale, stream, window=(-1, -1), sinks=None,
               softcap=None):
        """Launches attention of checked tensors on stream: the op's path, with less host work.

        The caller has checked what attention() checks (torch tensors of one dtype on this
        context's device, matching shapes, sinks) and allocated out (and lse, or None). The
        parameter struct of each new problem (sizes, strides, dtype, causal, window, scale,
        softcap, lse or not) is built once and kept; a call copies it and sets the pointers
        (sinks' too). The library validates every call.
        """
        key = (q.dtype, q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(),
               out.stride(), causal, softmax_scale, lse is None, window, softcap)
        template = self._templates.get(key)
        if template is None:
            template = self._params(q, k, v, fc_dtype(q.dtype), causal, softmax_scale, window,
                                    softcap)
            template.o_stride = Strides(*_element_strides(out, "out"))
            if len(self._templates) >= LAUNCH_TEMPLATES_MAX:
                self._templates.clear()
            self._templates[key] = template
        params = AttentionParams.from_buffer_copy(template)
        params.q, params.k, params.v, params.out = (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                                    out.data_ptr())
        if lse is not None:
            params.lse = lse.data_ptr()
        if sinks is not None:
            params.sinks = sinks.data_ptr()
        status = self._lib.fc_attention_forward(self._live_handle(), ctypes.byref(params), stream)
        if status != FC_OK:
            raise self._error(status)

    def merge(self, out_a, lse_a, out_b, lse_b, out, lse, stream):
        """Launches fc_attention_merge on stream: out and lse (None: not written) get the merge
        of two partial results of the same queries over disjoint keys. The caller has checked
        that the tensors are CUDA tensors of this context's device with matching shapes
        (flashcore.merge does); the library checks the rest (alignment, strides, head_dim)."""
        params = MergeParams()
        self._lib.fc_merge_params_init(ctypes.byref(params))
        params.dtype = fc_dtype(out_a.dtype)
        params.batch, params.seqlen, params.heads, params.head_dim = out_a.shape
        params.out_a, params.out_b = out_a.data_ptr(), out_b.data_ptr()
        params.out = out.data_ptr()
        params.lse_a, params.lse_b = lse_a.data_ptr(), lse_b.data_ptr()
        params.lse = lse.data_ptr() if lse is not None else None
        params.a_stride = Strides(*_element_strides(out_a, "out_a"))
        params.b_stride = Strides(*_element_strides(out_b, "out_b"))
        params.o_stride = Strides(*_element_strides(out, "out"))
        status = self._lib.fc_attention_merge(self._live_handle(), ctypes.byref(params), stream)
        if status != FC_OK:
            raise self._error(status)

    def _params(self, q, k, v, dtype, causal, softmax_scale, window=(-1, -1), softcap=None):
        """AttentionParams for the sizes, strides and options, with no pointers set."""
        (q_sizes, q_strides), (k_sizes, k_strides), (v_sizes, v_strides) = (
            sizes_and_strides(value, name) for value, name in ((q, "q"), (k, "k"), (v, "v")))
        check_shapes(q_sizes, k_sizes, v_sizes)
        if softmax_scale is not None and not math.isfinite(float(softmax_scale)):
            raise ArgumentError(f"softmax_scale must be finite (None selects 1/sqrt(head_dim)), "
                                f"not {softmax_scale}")
        params = AttentionParams()
        if hasattr(self._lib, "fc_attention_params_init_sized"):
            self._lib.fc_attention_params_init_sized(ctypes.byref(params), ctypes.sizeof(params))
        else:   # 0.2.0: the fields after causal stay unread (and must stay unset)
            self._lib.fc_attention_params_init(ctypes.byref(params))
        params.dtype = dtype
        params.batch, params.seqlen_q, params.heads_q, params.head_dim = q_sizes
        params.seqlen_k, params.heads_kv = k_sizes[1], k_sizes[2]
        params.q_stride = Strides(*q_strides)
        params.k_stride = Strides(*k_strides)
        params.v_stride = Strides(*v_strides)
        if softcap is not None and not math.isfinite(float(softcap)):
            raise ArgumentError(f"softcap must be finite (None: no softcap), not {softcap}")
        params.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
        params.causal = int(bool(causal))
        params.window_left, params.window_right = window_pair(window)
        params.softcap = 0.0 if softcap is None else float(softcap)
        return params

    def _bind(self, q, k, v, causal, softmax_scale, out, return_lse, lse, window=(-1, -1), sinks=None,
              softcap=None):
        """Checks what the C struct cannot express, allocates out/lse, fills AttentionParams."""
        import torch

        for name, tensor in (("q", q), ("k", k), ("v", v)):
            if not isinstance(tensor, torch.Tensor):
                raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
        dtype = fc_dtype(q.dtype)
        for name, tensor in (("k", k), ("v", v)):
            if tensor.dtype != q.dtype:
                raise ArgumentError(f"{name} is {tensor.dtype} but q is {q.dtype}")
        params = self._params(q, k, v, dtype, causal, softmax_scale, window, softcap)
        if q.device.type != "cuda" or q.device.index != self.device:
            raise ArgumentError(f"the tensors are on {q.device}, the context on cuda:{self.device}")
        if out is None:
            out = torch.empty_like(q)
        if out.shape != q.shape or out.dtype != q.dtype:
            raise ArgumentError(f"out must be {tuple(q.shape)} {q.dtype}, "
                                f"not {tuple(out.shape)} {out.dtype}")
        shape = lse_shape(q.shape)
        if lse is None and return_lse:
            lse = torch.empty(shape, dtype=torch.float32, device=q.device)
        if lse is not None and (tuple(lse.shape) != shape or lse.dtype != torch.float32
                                or not lse.is_contiguous()):
            raise ArgumentError(f"lse must be a contiguous float32 {list(shape)}")
        tensors = [q, k, v, out] + ([lse] if lse is not None else [])
        if any(tensor.device != q.device for tensor in tensors):
            raise ArgumentError("q, k, v, out and lse must be on one device")
        check_sinks(sinks, q.shape[2], q.device)
        tensors += [sinks] if sinks is not None else []
        params.q, params.k, params.v, params.out = (t.data_ptr() for t in (q, k, v, out))
        params.lse = lse.data_ptr() if lse is not None else None
        params.sinks = sinks.data_ptr() if sinks is not None else None
        params.o_stride = Strides(*_element_strides(out, "out"))
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


def _default_device():
    """torch's current CUDA device when torch is already imported and sees a GPU, else 0."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0
