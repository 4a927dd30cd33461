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
import re
import threading
from pathlib import Path
from typing import NamedTuple

FC_OK = 0
FC_ERR_INVALID_ARG = 1
FC_ERR_UNSUPPORTED = 2
FC_DEVICE_NONE = -1
FC_F16 = 0
FC_BF16 = 1
LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4}

PLAN_KERNEL_CHARS = 96
PLAN_REASON_CHARS = 256
LAUNCH_TEMPLATES_MAX = 512   # parameter structs kept per context for launch(), by problem
LIBRARY_NAME = "libflashcore.so"
POINTER_ALIGN_BYTES = 16
# What plan() passes for seqused_k and page_table: fc_attention_plan reads only whether they are NULL,
# never through them.
PLANNED_POINTER = POINTER_ALIGN_BYTES
C_INT_MAX = 2**31 - 1   # the struct's sizes are C ints

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
        # varlen and seqused_k (src/flashcore.h), added after 0.3.0; 0/NULL: a dense batch, all keys.
        ("cu_seqlens_q", ctypes.c_void_p),  # const int32_t *, [batch + 1]
        ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seqlen_q", ctypes.c_int),     # > 0: varlen
        ("max_seqlen_k", ctypes.c_int),
        ("seqused_k", ctypes.c_void_p),     # const int32_t *, [batch]; NULL: all keys
        # the paged KV cache (src/flashcore.h), added after the varlen fields; 0/NULL: not paged.
        ("page_size", ctypes.c_int),        # tokens per page; > 0: k and v are [num_pages, page_size, Hkv, D]
        ("page_table", ctypes.c_void_p),    # const int32_t *, [batch, page_table_stride]
        ("page_table_stride", ctypes.c_int),
        ("num_pages", ctypes.c_int),
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
    """The {batch, seq, head} strides of a [B, S, H, D] tensor in elements, as the C API wants; of
    a varlen [tokens, H, D] tensor, {0, token, head} (batch strides are 0 in varlen).

    A dimension of size 1 is never indexed, and torch may give it any stride: it gets the packed
    one instead, so that the library's stride rules (multiples of 8) judge only strides that matter.
    """
    last = len(tensor.shape) - 1
    if tensor.stride(last) != 1:
        raise ArgumentError(f"{name}: the last dimension must be contiguous (stride 1), "
                            f"not stride {tensor.stride(last)}")
    sizes = tuple(tensor.shape)
    packed = [1] * len(sizes)
    for dim in range(last - 1, -1, -1):
        packed[dim] = packed[dim + 1] * sizes[dim + 1]
    strides = []
    for size, stride, packed_stride in zip(sizes[:last], tensor.stride()[:last], packed):
        if size == 1:
            stride = packed_stride
        elif stride == 0:
            # NOTE: all three strides 0 mean "packed" to the library: a broadcast tensor would be
            # read wrongly, and a broadcast output written by several threads at once.
            raise ArgumentError(f"{name}: broadcast (stride 0) dimensions are not supported; "
                                "pass a .contiguous() copy")
        strides.append(stride)
    return tuple(strides) if len(strides) == 3 else (0, *strides)


def is_tensor(value):
    return all(hasattr(value, attribute) for attribute in ("shape", "stride", "dtype", "device"))


def rank_hint(rank, varlen, paged=False):
    """What a q, k or v of this rank is for, when it does not fit the form (dense 4-D, varlen 3-D,
    a paged cache's k and v 4-D)."""
    if paged:
        return (" (paged: page_table is given, so k and v are the cache's pages)" if rank == 3
                else "")
    if varlen and rank == 4:
        return " (varlen: the sequences one after another along the first dimension)"
    if not varlen and rank == 3:
        return (" (3-D [total_tokens, heads, head_dim] is a varlen batch's: pass cu_seqlens_q, "
                "cu_seqlens_k, max_seqlen_q and max_seqlen_k)")
    return ""


PAGES_FORM = "[num_pages, page_size, heads_kv, head_dim]"


def sizes_and_strides(value, name, varlen_batch=None, paged=False):
    """((B, S, H, D), {batch, seq, head} element strides) of a tensor, or of a 4-sequence of sizes
    (a packed tensor: strides (0, 0, 0)). varlen_batch: the number of sequences of a varlen call,
    whose tensors (or shapes) are [tokens, H, D]: then S is the token count and the batch stride 0.
    paged: a paged cache's k or v, [num_pages, page_size, Hkv, D] (its strides {page, token, head})
    whatever the form of q."""
    if paged:
        varlen_batch = None
        rank, form = 4, PAGES_FORM
    else:
        rank, form = (3, "[total_tokens, heads, head_dim]") if varlen_batch is not None else (
            4, "[batch, seq, heads, head_dim]")
    if is_tensor(value):
        if len(value.shape) != rank:
            raise ArgumentError(f"{name} must be {rank}-D {form}, not {tuple(value.shape)}"
                                + rank_hint(len(value.shape), varlen_batch is not None, paged))
        sizes = tuple(int(size) for size in value.shape)
        strides = _element_strides(value, name)
    else:
        try:
            sizes = tuple(int(size) for size in value)
        except (TypeError, ValueError):
            raise ArgumentError(f"{name} must be a tensor or a {form} shape, "
                                f"not {value!r}") from None
        if len(sizes) != rank:
            raise ArgumentError(f"{name} must be a {form} shape, not {sizes}"
                                + rank_hint(len(sizes), varlen_batch is not None, paged))
        strides = (0, 0, 0)
    return ((varlen_batch, *sizes) if varlen_batch is not None else sizes), strides


def check_shapes(q_sizes, k_sizes, v_sizes, varlen=False, paged=False):
    """That k and v are [B, Sk, Hkv, D] for q [B, Sq, Hq, D] (varlen: [tokens_k, Hkv, D] for q
    [tokens_q, Hq, D]; paged: both [num_pages, page_size, Hkv, D] with at least one page of at least
    one token); the library checks the rest."""
    if paged:
        head_dim = q_sizes[-1]
        if len(k_sizes) != 4 or k_sizes[3] != head_dim or tuple(v_sizes) != tuple(k_sizes):
            raise ArgumentError(f"k {tuple(k_sizes)} and v {tuple(v_sizes)} must both be "
                                f"[num_pages, page_size, heads_kv, {head_dim}] for q "
                                f"{tuple(q_sizes)} (paged)")
        if k_sizes[0] < 1 or k_sizes[1] < 1:
            raise ArgumentError(f"a paged cache needs at least one page of at least one token: k and "
                                f"v are {tuple(k_sizes)} {PAGES_FORM}")
        return
    if varlen:
        head_dim = q_sizes[-1]
        if k_sizes[-1] != head_dim or tuple(v_sizes) != tuple(k_sizes):
            raise ArgumentError(f"k {tuple(k_sizes)} and v {tuple(v_sizes)} must both be "
                                f"[total_k, heads_kv, {head_dim}] for q {tuple(q_sizes)} (varlen)")
        return
    batch, _, _, head_dim = q_sizes
    if (len(k_sizes) != 4 or k_sizes[0] != batch or k_sizes[3] != head_dim
            or tuple(v_sizes) != tuple(k_sizes)):
        raise ArgumentError(f"k {tuple(k_sizes)} and v {tuple(v_sizes)} must both be "
                            f"[{batch}, seqlen_k, heads_kv, {head_dim}] for q {tuple(q_sizes)}")


def lse_shape(q_sizes):
    """The log-sum-exp's shape for q's: [batch, heads_q, seqlen_q] for q [B, Sq, Hq, D], and
    [heads_q, total_q] for a varlen q [total_q, Hq, D] (FlashAttention's layout)."""
    if len(q_sizes) == 3:
        return (q_sizes[1], q_sizes[0])
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


class Sequences(NamedTuple):
    """A call's per-sequence arguments, src/flashcore.h's varlen and paging fields; the defaults are
    a dense batch that uses every key. cu_seqlens_q, cu_seqlens_k: int32 [batch + 1] tensors
    (varlen, both or neither; with a page_table, cu_seqlens_q alone); max_seqlen_q, max_seqlen_k:
    the longest sequence's query and key counts as host ints (0 when dense; a dense paged call may
    give max_seqlen_k alone); seqused_k: an int32 [batch] tensor or None; page_table: an int32
    [batch, pages_per_seq] tensor (k and v are then a paged cache) or None."""

    cu_seqlens_q: object = None
    cu_seqlens_k: object = None
    max_seqlen_q: int = 0
    max_seqlen_k: int = 0
    seqused_k: object = None
    page_table: object = None

    @property
    def varlen(self):
        return self.cu_seqlens_q is not None

    @property
    def paged(self):
        return self.page_table is not None

    @property
    def per_sequence(self):
        """Whether the kernels' per-sequence form runs (varlen, or seqused_k on a dense batch)."""
        return self.varlen or self.seqused_k is not None

    def varlen_batch(self):
        """The number of sequences of a varlen call: cu_seqlens_q's length less one."""
        return _length(self.cu_seqlens_q) - 1

    def pages_per_sequence(self):
        """page_table's width: the most pages a sequence can have."""
        return _page_table_shape(self.page_table)[1]

    def page_table_stride(self):
        """Elements between consecutive rows of page_table (its width when it is a shape, or has
        one row, whose stride torch leaves free)."""
        table = self.page_table
        if not is_tensor(table) or int(table.shape[0]) == 1:
            return self.pages_per_sequence()
        return int(table.stride(0))

    def paged_seqlen_k(self, page_size):
        """A paged call's seqlen_k, the longest sequence's key count: max_seqlen_k if given, else
        all that page_table's width holds (pages_per_seq * page_size)."""
        return self.max_seqlen_k or self.pages_per_sequence() * page_size

    def host_key(self):
        """What the parameter struct holds of them besides pointers (launch()'s cache key). The
        number of sequences is in it: a varlen batch's is not in q's shape (its token count)."""
        paging = (self.pages_per_sequence(), self.page_table_stride()) if self.paged else None
        return (self.varlen, self.varlen_batch() if self.varlen else None, self.max_seqlen_q,
                self.max_seqlen_k, self.seqused_k is not None, paging)


DENSE = Sequences()


def _first_size(value):
    """A tensor's or a shape's first size (a dense batch), or None if it has none."""
    try:
        return int(value.shape[0] if is_tensor(value) else tuple(value)[0])
    except (TypeError, ValueError, IndexError):
        return None


def _length(value):
    """The first dimension of a tensor, or len() of a sequence (planning takes lists)."""
    return int(value.shape[0]) if is_tensor(value) else len(value)


def _page_table_shape(value):
    """(batch, pages_per_seq) of a page table: a tensor's shape, or (planning) the shape itself."""
    return tuple(int(size) for size in (value.shape if is_tensor(value) else value))


def _host_length(name, value):
    """A max_seqlen: a host int (a Python int, numpy's, or torch.compile's SymInt), never a tensor."""
    # NOTE: ints first, by isinstance alone: torch.compile traces this (a SymInt counts as an int).
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if is_tensor(value):
        raise ArgumentError(f"{name} must be a Python int, not a tensor: FlashCore never reads a "
                            "length back from the device (that would synchronize with it and break "
                            "CUDA graph capture); pass the longest sequence's length as the host "
                            "knows it")
    if type(value).__name__ == "SymInt":   # torch.compile(dynamic=True) traces ints as SymInts
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ArgumentError(f"{name} must be a Python int (the longest sequence's length), "
                            f"not {value!r}")
    return int(value.__index__())


def sequence_arguments(cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                       seqused_k=None, page_table=None):
    """Sequences from attention()'s keyword arguments, with the rules of what goes with what (the
    tensors themselves are checked by check_sequences, once q's device and form are known)."""
    if page_table is not None:
        return _paged_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                                page_table)
    if cu_seqlens_q is None and cu_seqlens_k is None:
        if max_seqlen_q is not None or max_seqlen_k is not None:
            raise ArgumentError("max_seqlen_q and max_seqlen_k belong to a varlen batch: pass them "
                                "with cu_seqlens_q and cu_seqlens_k")
        return DENSE if seqused_k is None else Sequences(seqused_k=seqused_k)
    if cu_seqlens_q is None or cu_seqlens_k is None:
        raise ArgumentError("a varlen batch takes both cu_seqlens_q and cu_seqlens_k (int32 "
                            "[batch + 1] each), with max_seqlen_q and max_seqlen_k")
    if max_seqlen_q is None or max_seqlen_k is None:
        raise ArgumentError("a varlen batch needs max_seqlen_q and max_seqlen_k: the longest "
                            "sequence's query and key counts, as Python ints (the grid is sized from "
                            "them; the device's cu_seqlens are never read back)")
    return Sequences(cu_seqlens_q, cu_seqlens_k, _host_length("max_seqlen_q", max_seqlen_q),
                     _host_length("max_seqlen_k", max_seqlen_k), seqused_k)


def _paged_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, page_table):
    """sequence_arguments() with a page_table: FlashAttention-3's flash_attn_with_kvcache (dense q)
    and varlen-with-page_table (cu_seqlens_q, no cu_seqlens_k) forms."""
    if cu_seqlens_k is not None:
        raise ArgumentError("a paged cache takes no cu_seqlens_k: sequence b's keys are the pages of "
                            "page_table's row b, as many as seqused_k[b] (else max_seqlen_k, or all "
                            "that the row holds)")
    if max_seqlen_k is not None:
        max_seqlen_k = _host_length("max_seqlen_k", max_seqlen_k)
    if cu_seqlens_q is None:
        if max_seqlen_q is not None:
            raise ArgumentError("max_seqlen_q belongs to a varlen batch: pass it with cu_seqlens_q "
                                "(a dense paged call takes max_seqlen_k alone, or neither)")
        return Sequences(max_seqlen_k=max_seqlen_k or 0, seqused_k=seqused_k,
                         page_table=page_table)
    if max_seqlen_q is None or max_seqlen_k is None:
        raise ArgumentError("a varlen batch on a paged cache needs max_seqlen_q and max_seqlen_k: "
                            "the longest sequence's query and key counts, as Python ints (the grid "
                            "is sized from them; the device's lengths are never read back)")
    return Sequences(cu_seqlens_q, None, _host_length("max_seqlen_q", max_seqlen_q), max_seqlen_k,
                     seqused_k, page_table)


def _check_index_tensor(name, tensor, shape, device, planning):
    """An int32 index tensor: contiguous, of `shape`, on `device` (planning: any sequence whose
    length is shape[0], on any device: only the length counts)."""
    if planning and not is_tensor(tensor):
        try:
            length = len(tensor)
        except TypeError:
            raise ArgumentError(f"{name} must be an int32 tensor (or, to plan, a sequence) of "
                                f"{list(shape)}, not {type(tensor).__name__}") from None
        if (length,) != tuple(shape):
            raise ArgumentError(f"{name} must have {shape[0]} entries, not {length}")
        return
    if not is_tensor(tensor):
        raise ArgumentError(f"{name} must be a torch.Tensor of int32, not {type(tensor).__name__}")
    if str(tensor.dtype) != "torch.int32":
        raise ArgumentError(f"{name} must be int32 (FlashAttention's cu_seqlens and seqused_k), "
                            f"not {tensor.dtype}")
    if tuple(tensor.shape) != tuple(shape):
        raise ArgumentError(f"{name} must be {list(shape)}, not {list(tensor.shape)}")
    if not tensor.is_contiguous():
        raise ArgumentError(f"{name} must be contiguous; pass a .contiguous() copy")
    if not planning and tensor.device != device:
        raise ArgumentError(f"{name} is on {tensor.device} but q is on {device}")


def check_sequences(sequences, batch, device, planning=False):
    """That the index tensors are int32, contiguous, of the batch's sizes and on q's device (the
    tensors' ranks are sizes_and_strides' and the op's to check). batch: the dense
    batch (q.shape[0]); varlen's is cu_seqlens_q's length less one. Their contents are on the device,
    never read: the caller's contract (src/flashcore.h)."""
    if sequences.varlen:
        cu_seqlens_q = sequences.cu_seqlens_q
        if is_tensor(cu_seqlens_q) and len(cu_seqlens_q.shape) != 1:
            raise ArgumentError(f"cu_seqlens_q must be 1-D int32 [batch + 1], not "
                                f"{list(cu_seqlens_q.shape)}")
        if is_tensor(cu_seqlens_q) or (planning and hasattr(cu_seqlens_q, "__len__")):
            batch = sequences.varlen_batch()
            if batch < 1:
                raise ArgumentError(f"cu_seqlens_q must be int32 [batch + 1] with batch >= 1, "
                                    f"not [{batch + 1}]")
        _check_index_tensor("cu_seqlens_q", sequences.cu_seqlens_q, (batch + 1,), device, planning)
        if sequences.cu_seqlens_k is not None:   # None: paged
            _check_index_tensor("cu_seqlens_k", sequences.cu_seqlens_k, (batch + 1,), device, planning)
    if sequences.seqused_k is not None:
        _check_index_tensor("seqused_k", sequences.seqused_k, (batch,), device, planning)
    if sequences.paged:
        check_page_table(sequences.page_table, batch, device, planning)


def check_page_table(table, batch, device, planning=False):
    """That a page table is an int32 [batch, pages_per_seq] tensor (pages_per_seq >= 1) on q's
    device, its rows contiguous and not overlapping (its row stride is page_table_stride); planning:
    a tensor on any device, or its [batch, pages_per_seq] shape. Page ids are never read: they are
    the caller's contract (in range [0, num_pages) for every page a sequence's keys reach)."""
    form = f"[{batch}, pages_per_seq]" if batch is not None else "[batch, pages_per_seq]"
    if not is_tensor(table):
        if not planning:
            raise ArgumentError(f"page_table must be a torch.Tensor of int32 {form}, "
                                f"not {type(table).__name__}")
        try:
            shape = tuple(int(size) for size in table)
        except (TypeError, ValueError):
            raise ArgumentError(f"page_table must be an int32 tensor (or, to plan, its shape) of "
                                f"{form}, not {table!r}") from None
    else:
        shape = tuple(int(size) for size in table.shape)
        if str(table.dtype) != "torch.int32":
            raise ArgumentError(f"page_table must be int32 (FlashAttention's page_table), "
                                f"not {table.dtype}")
    if len(shape) != 2:
        raise ArgumentError(f"page_table must be 2-D {form} (a row of page ids per sequence), "
                            f"not {list(shape)}")
    if (batch is not None and shape[0] != batch) or shape[1] < 1:
        raise ArgumentError(f"page_table must be {form} with pages_per_seq >= 1, not {list(shape)}")
    if not is_tensor(table):
        return
    rows, width = shape
    if width > 1 and table.stride(1) != 1:
        raise ArgumentError(f"page_table: each row must be contiguous (stride 1 along the pages), "
                            f"not stride {table.stride(1)}; pass a .contiguous() copy")
    if rows > 1 and table.stride(0) < width:
        raise ArgumentError(f"page_table: its row stride ({table.stride(0)}) must be at least its "
                            f"width ({width}): rows may not overlap; pass a .contiguous() copy")
    if rows > 1 and table.stride(0) > C_INT_MAX:
        raise ArgumentError(f"page_table: its row stride ({table.stride(0)}) does not fit a C int")
    if not planning and table.device != device:
        raise ArgumentError(f"page_table is on {table.device} but q is on {device}")


def library_takes_sequences(lib):
    """False for a library whose struct ends before the varlen fields, as far as can be told
    without a call: 0.2.0's (no sized initializer). 0.3.0's has the initializer but not the fields:
    it refuses them itself (FC_ERR_UNSUPPORTED), and Context words that refusal."""
    return hasattr(lib, "fc_attention_params_init_sized")


def paged_sizes(sequences, k_sizes):
    """(page_size, num_pages, page_table_stride, seqlen_k) of a paged call, with k [num_pages,
    page_size, Hkv, D]; seqlen_k is max_seqlen_k, else all that page_table's width holds. Checked
    against page_table's width and against the struct's C ints."""
    num_pages, page_size = k_sizes[0], k_sizes[1]
    width = sequences.pages_per_sequence()
    seqlen_k = sequences.paged_seqlen_k(page_size)
    if isinstance(seqlen_k, int) and sequences.max_seqlen_k:
        if seqlen_k < 1:
            raise ArgumentError(f"max_seqlen_k must be at least 1 with a paged cache, not {seqlen_k}")
        if seqlen_k > width * page_size:
            raise ArgumentError(f"max_seqlen_k ({seqlen_k}) is more keys than page_table's rows hold: "
                                f"{width} pages of {page_size} tokens ({width * page_size})")
    for name, value in (("num_pages", num_pages), ("page_size", page_size),
                        ("seqlen_k (max_seqlen_k, else pages_per_seq * page_size)", seqlen_k)):
        if isinstance(value, int) and value > C_INT_MAX:
            raise ArgumentError(f"{name} ({value}) does not fit a C int")
    return page_size, num_pages, sequences.page_table_stride(), seqlen_k


def library_takes_paging(context):
    """Whether a context's library has the paged-cache fields (page_size and after), asked once
    per context: a plan of a struct with page_size set is refused by a library that predates them
    with "does not know" (src/problem.c's fc_read_struct), and by anything else otherwise."""
    known = getattr(context, "_takes_paging", None)
    if known is not None:
        return known
    lib = context._lib
    if not library_takes_sequences(lib):
        known = False
    else:
        params = AttentionParams()
        lib.fc_attention_params_init_sized(ctypes.byref(params), ctypes.sizeof(params))
        params.page_size = 1
        status = lib.fc_attention_plan(context._live_handle(), ctypes.byref(params), None)
        message = lib.fc_context_errmsg(context._handle) or b""
        known = not (status == FC_ERR_UNSUPPORTED and b"does not know" in message)
    context._takes_paging = known
    return known


def predates_paging_message(lib, detail="", sequences_too=False):
    """What a library without the paged-cache fields is told (sequences_too: nor the varlen ones)."""
    version = lib.fc_version().decode()
    if sequences_too:
        return (f"{lib.fc_path} (FlashCore {version}) predates varlen batches, seqused_k and the paged "
                "KV cache: its fc_attention_params ends before cu_seqlens_q/cu_seqlens_k, "
                "max_seqlen_q/max_seqlen_k, seqused_k, page_size, page_table, page_table_stride and "
                "num_pages; use a library built with them (src/flashcore.h)"
                + (f" (the library said: {detail})" if detail else ""))
    return (f"{lib.fc_path} (FlashCore {version}) predates the paged KV cache: its "
            "fc_attention_params ends before page_size, page_table, page_table_stride and num_pages; "
            "use a library built with them (src/flashcore.h)"
            + (f" (the library said: {detail})" if detail else ""))


def predates_sequences_message(lib, detail=""):
    """What a library without the varlen fields is told."""
    version = lib.fc_version().decode()
    return (f"{lib.fc_path} (FlashCore {version}) predates varlen batches and seqused_k: its "
            "fc_attention_params ends before cu_seqlens_q/cu_seqlens_k, max_seqlen_q/max_seqlen_k "
            "and seqused_k; use a library built with them (src/flashcore.h)"
            + (f" (the library said: {detail})" if detail else ""))


class PreparedAttention:
    """One attention call with its parameters built: calling it launches the kernel again.

    It launches on the stream that was current when it was prepared and keeps its tensors alive.
    Calling returns out, or (out, lse) when an lse was asked for. Benchmarks use it so that what
    they time is the library, not the building of the parameter struct in Python.
    """

    def __init__(self, context, params, stream, tensors, out, lse, sequences=DENSE):
        self._context = context
        self._sequences = sequences
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
        context._check(status, sequences=self._sequences)
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
                  lse=None, *, window=(-1, -1), sinks=None, softcap=None, cu_seqlens_q=None,
                  cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, seqused_k=None,
                  page_table=None):
        """Runs attention on torch's current stream of the tensors' device.

        q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim];
        float16 or bfloat16 on this context's device, last dimension contiguous, other strides
        free. causal: bottom-right aligned mask. softmax_scale: None (or 0) = 1/sqrt(head_dim).
        out: [B, Sq, Hq, D] in q's dtype, allocated like q if None. lse: a contiguous float32
        [B, Hq, Sq] to write the log-sum-exp into; allocated if None and return_lse.
        window: (left, right) keys a query row sees around its diagonal, -1 = unbounded.
        sinks: a contiguous float32 [heads_q] tensor of logits joining each row's denominator, or
        None. softcap: None (or 0) = none, else scores s become softcap * tanh(s / softcap).
        Varlen (FlashAttention's flash_attn_varlen_func form): cu_seqlens_q, cu_seqlens_k int32
        [batch + 1] tensors on the device, max_seqlen_q, max_seqlen_k Python ints; q, out
        [total_q, Hq, D], k, v [total_k, Hkv, D], lse [Hq, total_q]. Tokens of no sequence and rows
        of empty sequences keep what out and lse held. seqused_k: an int32 [batch] tensor, the keys
        each sequence uses (a KV cache's filled length), dense or varlen; keys past it are never read.
        Paged KV cache (FlashAttention's flash_attn_with_kvcache/varlen page_table form): page_table
        an int32 [batch, pages_per_seq] tensor on the device (rows contiguous; its row stride is
        free), k, v [num_pages, page_size, Hkv, D]; sequence b's key j is in page
        page_table[b, j // page_size], slot j % page_size. Its key count is seqused_k[b] if given,
        else seqlen_k: max_seqlen_k if given, else pages_per_seq * page_size (all the row holds).
        Dense q [B, Sq, Hq, D], or varlen q with cu_seqlens_q, max_seqlen_q and max_seqlen_k (no
        cu_seqlens_k). Page ids are the caller's contract.
        Returns out, or (out, lse) when return_lse or lse is given. Raises FlashCoreError.
        """
        return self.prepare(q, k, v, causal, softmax_scale, out, return_lse, lse, window=window,
                            sinks=sinks, softcap=softcap, cu_seqlens_q=cu_seqlens_q,
                            cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
                            max_seqlen_k=max_seqlen_k, seqused_k=seqused_k,
                            page_table=page_table)()

    def prepare(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
                lse=None, stream=None, *, window=(-1, -1), sinks=None, softcap=None,
                cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                seqused_k=None, page_table=None):
        """Builds the call attention() would make, without launching it: see PreparedAttention.

        stream: a CUstream as an int; None = torch's current stream on the tensors' device. The
        prepared call reads cu_seqlens, seqused_k and page_table at each launch: new contents
        written into the same tensors (within max_seqlen_q/max_seqlen_k, the token counts and
        page_table's width) take effect.
        """
        import torch

        sequences = sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                       seqused_k, page_table)
        params, tensors, out, lse = self._bind(q, k, v, causal, softmax_scale, out, return_lse,
                                               lse, window, sinks, softcap, sequences)
        if stream is None:
            stream = torch.cuda.current_stream(q.device).cuda_stream
        return PreparedAttention(self, params, stream, tensors, out, lse, sequences)

    def plan(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
             lse=None, dtype=None, *, window=(-1, -1), sinks=None, softcap=None, cu_seqlens_q=None,
             cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, seqused_k=None,
             page_table=None):
        """Which kernel attention() would run with these arguments: (kernel, reason, splits).

        q, k, v (and out): tensors on any device (their sizes, strides and dtype count), or
        [batch, seq, heads, head_dim] shapes (packed; varlen: [total_tokens, heads, head_dim])
        with dtype given. cu_seqlens_q/k and seqused_k: tensors on any device or sequences (only
        their lengths count); max_seqlen_q/k: ints. page_table: a tensor on any device or its
        [batch, pages_per_seq] shape, with k and v (tensors or shapes) [num_pages, page_size,
        heads_kv, head_dim]. return_lse, lse and sinks are accepted for symmetry with attention()
        and change no plan (sinks are a run-time input of every kernel); window, softcap, varlen,
        seqused_k and paging do. Compiles and launches nothing. Raises FlashCoreError when the
        problem is invalid or unsupported.
        """
        if dtype is None:
            if not is_tensor(q):
                raise ArgumentError("dtype is needed when q, k and v are shapes")
            dtype = q.dtype
        elif is_tensor(q) and fc_dtype(dtype) != fc_dtype(q.dtype):
            raise ArgumentError(f"dtype {dtype} but q is {q.dtype}")
        sequences = sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                       seqused_k, page_table)
        batch = _first_size(q)
        check_sequences(sequences, batch, None, planning=True)
        params = self._params(q, k, v, fc_dtype(dtype), causal, softmax_scale, window, softcap,
                              sequences)
        if out is not None:
            params.o_stride = Strides(*sizes_and_strides(
                out, "out", sequences.varlen_batch() if sequences.varlen else None)[1])
        # Planning reads no tensor: the pointers stay NULL (fc_attention_plan checks the shape
        # rules), but for seqused_k, whose presence selects the kernels' per-sequence form, and
        # page_table, which a paged problem requires.
        if sequences.seqused_k is not None:
            params.seqused_k = PLANNED_POINTER
        if sequences.paged:
            params.page_table = PLANNED_POINTER
        info = PlanInfo()
        status = self._lib.fc_attention_plan(self._live_handle(), ctypes.byref(params),
                                             ctypes.byref(info))
        self._check(status, fallback_message=info.reason.decode(errors="replace"),
                    sequences=sequences)
        return (info.kernel.decode(errors="replace"), info.reason.decode(errors="replace"),
                info.splits)

    def launch(self, q, k, v, out, lse, causal, softmax_scale, stream, window=(-1, -1), sinks=None,
               softcap=None, sequences=DENSE):
        """Launches attention of checked tensors on stream: the op's path, with less host work.

        The caller has checked what attention() checks (torch tensors of one dtype on this
        context's device, matching shapes, sinks, the Sequences' tensors) and allocated out (and
        lse, or None). The parameter struct of each new problem (sizes, strides, dtype, causal,
        window, scale, softcap, lse or not, varlen's maxima and batch, seqused_k or not,
        page_table's width and row stride) is built once and kept; a call copies it and sets the
        pointers (sinks', cu_seqlens', seqused_k's and page_table's too).
        The library validates every call.
        """
        key = (q.dtype, q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(),
               out.stride(), causal, softmax_scale, lse is None, window, softcap,
               sequences.host_key())
        template = self._templates.get(key)
        if template is None:
            template = self._params(q, k, v, fc_dtype(q.dtype), causal, softmax_scale, window,
                                    softcap, sequences)
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
        if sequences.per_sequence or sequences.paged:
            _set_sequence_pointers(params, sequences)
        status = self._lib.fc_attention_forward(self._live_handle(), ctypes.byref(params), stream)
        if status != FC_OK:
            raise self._error(status, sequences=sequences)

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

    def _params(self, q, k, v, dtype, causal, softmax_scale, window=(-1, -1), softcap=None,
                sequences=DENSE):
        """AttentionParams for the sizes, strides and options, with no pointers set."""
        varlen_batch = sequences.varlen_batch() if sequences.varlen else None
        (q_sizes, q_strides), (k_sizes, k_strides), (v_sizes, v_strides) = (
            sizes_and_strides(value, name, varlen_batch, paged=sequences.paged and name != "q")
            for value, name in ((q, "q"), (k, "k"), (v, "v")))
        check_shapes(q_sizes, k_sizes, v_sizes, sequences.varlen, sequences.paged)
        if softmax_scale is not None and not math.isfinite(float(softmax_scale)):
            raise ArgumentError(f"softmax_scale must be finite (None selects 1/sqrt(head_dim)), "
                                f"not {softmax_scale}")
        paging = paged_sizes(sequences, k_sizes) if sequences.paged else None
        if paging is not None and not library_takes_sequences(self._lib):
            raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                 predates_paging_message(self._lib))
        if sequences.per_sequence and not library_takes_sequences(self._lib):
            raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                 predates_sequences_message(self._lib))
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
        params.max_seqlen_q, params.max_seqlen_k = sequences.max_seqlen_q, sequences.max_seqlen_k
        if paging is not None:
            # NOTE: paged, seqlen_k is the longest key count, not k's second size (the page size);
            # varlen's max_seqlen_k is that same count, and a dense call's stays 0.
            (params.page_size, params.num_pages, params.page_table_stride,
             params.seqlen_k) = paging
            params.max_seqlen_k = params.seqlen_k if sequences.varlen else 0
        return params

    def _bind(self, q, k, v, causal, softmax_scale, out, return_lse, lse, window=(-1, -1), sinks=None,
              softcap=None, sequences=DENSE):
        """Checks what the C struct cannot express, allocates out/lse, fills AttentionParams."""
        import torch

        for name, tensor in (("q", q), ("k", k), ("v", v)):
            if not isinstance(tensor, torch.Tensor):
                raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
        dtype = fc_dtype(q.dtype)
        for name, tensor in (("k", k), ("v", v)):
            if tensor.dtype != q.dtype:
                raise ArgumentError(f"{name} is {tensor.dtype} but q is {q.dtype}")
        check_sequences(sequences, q.shape[0] if q.dim() else 0, q.device)
        params = self._params(q, k, v, dtype, causal, softmax_scale, window, softcap, sequences)
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
        check_sinks(sinks, q.shape[-2], q.device)
        tensors += [sinks] if sinks is not None else []
        tensors += [t for t in (sequences.cu_seqlens_q, sequences.cu_seqlens_k, sequences.seqused_k,
                                sequences.page_table) if t is not None]
        params.q, params.k, params.v, params.out = (t.data_ptr() for t in (q, k, v, out))
        params.lse = lse.data_ptr() if lse is not None else None
        params.sinks = sinks.data_ptr() if sinks is not None else None
        _set_sequence_pointers(params, sequences)
        params.o_stride = Strides(*_element_strides(out, "out"))
        return params, tensors, out, lse

    def _live_handle(self):
        if self._handle is None:
            raise ValueError("the FlashCore context is closed")
        return self._handle

    def _error(self, status, fallback_message="", sequences=DENSE):
        name = self._lib.fc_status_name(status)
        name = name.decode() if name else f"status {status}"
        message = self._lib.fc_context_errmsg(self._handle) if self._handle is not None else None
        message = (message.decode(errors="replace") if message else "") or fallback_message
        # NOTE: a library that predates the varlen fields (0.3.0) or the paging ones refuses the
        # struct's nonzero bytes it does not know, which names a byte; say which fields those are.
        if ((sequences.per_sequence or sequences.paged) and status == FC_ERR_UNSUPPORTED
                and "does not know" in message):
            byte = re.search(r"byte (\d+) of", message)
            paging_byte = byte is None or int(byte.group(1)) >= AttentionParams.page_size.offset
            if sequences.paged:
                message = predates_paging_message(self._lib, message, sequences_too=not paging_byte)
            else:
                message = predates_sequences_message(self._lib, message)
        return FlashCoreError(name, status, message)

    def _check(self, status, fallback_message="", sequences=DENSE):
        if status != FC_OK:
            raise self._error(status, fallback_message, sequences)


def _set_sequence_pointers(params, sequences):
    """The device pointers of cu_seqlens, seqused_k and page_table (NULL where absent)."""
    params.cu_seqlens_q, params.cu_seqlens_k, params.seqused_k, params.page_table = (
        None if tensor is None else tensor.data_ptr()
        for tensor in (sequences.cu_seqlens_q, sequences.cu_seqlens_k, sequences.seqused_k,
                       sequences.page_table))


def _default_device():
    """torch's current CUDA device when torch is already imported and sees a GPU, else 0."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0
