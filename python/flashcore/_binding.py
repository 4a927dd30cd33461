"""The ctypes binding to libflashcore (src/flashcore.h): the library and Context (its structs and
errors are in _structs.py, the argument checks in _arguments.py).

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

# The constants, structs and errors, and the argument checks, live in their own modules; these
# names are this module's too (the package and its tests reach them as _binding.NAME).
from ._structs import (FC_OK, FC_ERR_INVALID_ARG, FC_ERR_UNSUPPORTED, FC_DEVICE_NONE, FC_F16,
                       FC_BF16, LOG_LEVELS, PLAN_KERNEL_CHARS, PLAN_REASON_CHARS,
                       LAUNCH_TEMPLATES_MAX, LIBRARY_NAME, POINTER_ALIGN_BYTES, PLANNED_POINTER,
                       C_INT_MAX, DTYPES, DTYPE_NAMES, Options, Strides, AttentionParams,
                       MergeParams, PlanInfo, FlashCoreError, ArgumentError, FC_E4M3,
                       FC_DTYPE_SAME, KV_DTYPES, QuantizeParams, FC_SCALE_PER_HEAD,
                       FC_SCALE_PER_TENSOR, FC_SCALE_GIVEN, SCALINGS, UINT64_MAX)
from ._arguments import (fc_dtype, _element_strides, _first_size, is_tensor, rank_hint, PAGES_FORM,
                         sizes_and_strides, check_shapes, lse_shape, window_pair, check_sinks,
                         Sequences, DENSE, sequence_arguments, check_sequences,
                         library_takes_sequences, paged_sizes, library_takes_paging,
                         predates_paging_message, predates_sequences_message, kv_dtype_of,
                         descale_tensors, q_dtype_code, out_dtype_of, is_e4m3, Descales, NO_DESCALES,
                         predates_fp8_attention_message)

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
        # NOTE: optional too: a library older than fc_quantize still loads (Context.quantize says
        # what it lacks).
        if hasattr(lib, "fc_quantize"):
            signatures["fc_quantize_params_init"] = (None, [ctypes.POINTER(QuantizeParams)])
            signatures["fc_quantize"] = (ctypes.c_int, [ctypes.c_void_p,
                                                        ctypes.POINTER(QuantizeParams),
                                                        ctypes.c_void_p])
        # NOTE: optional too: a library older than the quick first call (a benchmark's baseline)
        # compiles every kernel before its first launch; Context says so where asked.
        if hasattr(lib, "fc_context_wait_compiles"):
            signatures["fc_context_wait_compiles"] = (ctypes.c_int, [ctypes.c_void_p])
            signatures["fc_context_set_quick_first_call"] = (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int])
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
    quick_first_call: False turns the quick first call off for this context (fc_attention_forward's
    documentation: a kernel in neither cache is first served by one that compiles in a fraction of
    the time while it compiles on a worker thread); None keeps the library's default (on, unless
    FC_QUICK_FIRST_CALL=0). Thread-safe, like the C context. flashcore.attention() keeps one per
    device for itself (flashcore.context(device)).
    """

    def __init__(self, device=None, *, cache_path=None, no_disk_cache=False, log_level=None,
                 library=None, quick_first_call=None):
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
        if quick_first_call is not None:
            self.set_quick_first_call(quick_first_call)

    def set_quick_first_call(self, enabled):
        """Turns the quick first call on or off (fc_context_set_quick_first_call). A library older
        than it compiles every kernel before its first launch: off is then what it does already."""
        if not hasattr(self._lib, "fc_context_set_quick_first_call"):
            if enabled:
                raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                     f"{self._lib.fc_path} has no quick first call")
            return
        self._check(self._lib.fc_context_set_quick_first_call(self._live_handle(), int(bool(enabled))))

    def wait_compiles(self):
        """Blocks until the kernels the quick first call queued are compiled (fc_context_wait_compiles):
        before timing, so that what is timed is the planned kernel. Raises FlashCoreError if one of
        them failed to compile. A library older than the quick first call has none to wait for."""
        if hasattr(self._lib, "fc_context_wait_compiles"):
            self._check(self._lib.fc_context_wait_compiles(self._live_handle()))

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
                  page_table=None, k_descale=None, v_descale=None, q_descale=None, out_dtype=None):
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
        FP8 KV cache: k and v torch.float8_e4m3fn (q and out stay float16/bfloat16), dense, varlen
        or paged; k_descale, v_descale: their dequantization scales (FA3's), float32 [batch, heads_kv]
        tensors on the device or anything that broadcasts to that (a float: per tensor), None = 1.
        FP8 attention (FlashAttention-3's fp8 forward): q, k and v all torch.float8_e4m3fn (strides
        in elements, which are bytes: multiples of 16), q_descale, k_descale and v_descale as above
        (q_descale per (batch, K/V head), shared by the head's query heads); out in out_dtype,
        torch.bfloat16 (the default; out's dtype when out is given) or torch.float16. A 16-bit q's
        out is q's dtype (out_dtype None or that) and it takes no q_descale.
        Returns out, or (out, lse) when return_lse or lse is given. Raises FlashCoreError.
        """
        return self.prepare(q, k, v, causal, softmax_scale, out, return_lse, lse, window=window,
                            sinks=sinks, softcap=softcap, cu_seqlens_q=cu_seqlens_q,
                            cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
                            max_seqlen_k=max_seqlen_k, seqused_k=seqused_k,
                            page_table=page_table, k_descale=k_descale, v_descale=v_descale,
                            q_descale=q_descale, out_dtype=out_dtype)()

    def prepare(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
                lse=None, stream=None, *, window=(-1, -1), sinks=None, softcap=None,
                cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                seqused_k=None, page_table=None, k_descale=None, v_descale=None, q_descale=None,
                out_dtype=None):
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
                                               lse, window, sinks, softcap, sequences,
                                               Descales(q_descale, k_descale, v_descale), out_dtype)
        if stream is None:
            stream = torch.cuda.current_stream(q.device).cuda_stream
        return PreparedAttention(self, params, stream, tensors, out, lse, sequences)

    def plan(self, q, k, v, causal=False, softmax_scale=None, out=None, return_lse=False,
             lse=None, dtype=None, *, window=(-1, -1), sinks=None, softcap=None, cu_seqlens_q=None,
             cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, seqused_k=None,
             page_table=None, kv_dtype=None, k_descale=None, v_descale=None, q_descale=None,
             out_dtype=None):
        """Which kernel attention() would run with these arguments: (kernel, reason, splits).

        q, k, v (and out): tensors on any device (their sizes, strides and dtype count), or
        [batch, seq, heads, head_dim] shapes (packed; varlen: [total_tokens, heads, head_dim])
        with dtype given. cu_seqlens_q/k and seqused_k: tensors on any device or sequences (only
        their lengths count); max_seqlen_q/k: ints. page_table: a tensor on any device or its
        [batch, pages_per_seq] shape, with k and v (tensors or shapes) [num_pages, page_size,
        heads_kv, head_dim]. return_lse, lse, sinks, q_descale, k_descale and v_descale are accepted
        for symmetry with attention() and change no plan (run-time inputs of every kernel); window,
        softcap, varlen, seqused_k and paging do. dtype: q's ("float8_e4m3fn" or "e4m3": FP8
        attention). kv_dtype: k's and v's type when they are shapes (None: dtype; "float8_e4m3fn" or
        a torch dtype beside a 16-bit dtype: an FP8 KV cache); with tensors, theirs. out_dtype: FP8
        attention's output type (None: out's, else torch.bfloat16), as attention() takes it.
        Compiles and launches nothing. Raises FlashCoreError when the problem is invalid or
        unsupported.
        """
        if dtype is None:
            if not is_tensor(q):
                raise ArgumentError("dtype is needed when q, k and v are shapes")
            dtype = q.dtype
        elif is_tensor(q) and q_dtype_code(dtype) != q_dtype_code(q.dtype):
            raise ArgumentError(f"dtype {dtype} but q is {q.dtype}")
        sequences = sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                       seqused_k, page_table)
        batch = _first_size(q)
        check_sequences(sequences, batch, None, planning=True)
        if is_tensor(k) and is_tensor(v):
            kv_code = kv_dtype_of(dtype, k.dtype, v.dtype)
        else:
            kv_code = kv_dtype_of(dtype, dtype if kv_dtype is None else kv_dtype,
                                  dtype if kv_dtype is None else kv_dtype)
        q_code = q_dtype_code(dtype)
        params = self._params(q, k, v, q_code, causal, softmax_scale, window, softcap, sequences,
                              kv_code, out_dtype_of(q_code, out_dtype, out))
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
               softcap=None, sequences=DENSE, descales=NO_DESCALES):
        """Launches attention of checked tensors on stream: the op's path, with less host work.

        The caller has checked what attention() checks (torch tensors of one dtype on this
        context's device, matching shapes, sinks, the Sequences' tensors) and allocated out (and
        lse, or None) in the output type (FP8 attention: bfloat16 or float16). The parameter struct
        of each new problem (sizes, strides, dtype, causal, window, scale, softcap, lse or not,
        varlen's maxima and batch, seqused_k or not, page_table's width and row stride, K/V's type,
        out's type) is built once and kept; a call copies it and sets the pointers (sinks',
        cu_seqlens', seqused_k's, page_table's and the FP8 descales', a Descales whose tensors the
        caller made float32 [batch, heads_kv] contiguous tensors).
        The library validates every call.
        """
        key = (q.dtype, k.dtype, out.dtype, q.shape, q.stride(), k.shape, k.stride(), v.shape,
               v.stride(), out.stride(), causal, softmax_scale, lse is None, window, softcap,
               sequences.host_key())
        template = self._templates.get(key)
        if template is None:
            q_code = q_dtype_code(q.dtype)
            template = self._params(q, k, v, q_code, causal, softmax_scale, window, softcap,
                                    sequences, kv_dtype_of(q.dtype, k.dtype, v.dtype),
                                    out_dtype_of(q_code, out.dtype))
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
        _set_descale_pointers(params, descales)
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

    def quantize(self, x, out, descale, descale_heads=0, scaling=FC_SCALE_PER_HEAD, rotate=False,
                 rotation_seed=0, cu_seqlens=None, max_seqlen=0, stream=None):
        """Launches fc_quantize on stream: out = e4m3(R x / descale), R the seeded Hadamard rotation
        with rotate (else 1), and descale float32 [batch, descale_heads] written (scaling
        FC_SCALE_PER_HEAD or FC_SCALE_PER_TENSOR, or "head" / "tensor") or read (FC_SCALE_GIVEN,
        "given"). With out of x's 16-bit dtype, out = R x only (rotate set, descale None).

        x: [batch, seq, heads, head_dim] float16/bfloat16, or varlen [tokens, heads, head_dim] with
        cu_seqlens (int32 [batch + 1]) and max_seqlen > 0; descale_heads 0: heads; rotation_seed an
        int in [0, 2**64) (a negative one is taken modulo 2**64). The caller has checked that the
        tensors are CUDA tensors of this context's device with matching shapes
        (flashcore.quantize_fp8 and flashcore.rotate do); the library checks the rest (head_dim,
        descale_heads, alignment, strides, varlen's sizes)."""
        if not hasattr(self._lib, "fc_quantize"):
            raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                 f"{self._lib.fc_path} (FlashCore {self._lib.fc_version().decode()}) "
                                 "predates fc_quantize (flashcore.quantize_fp8, flashcore.rotate); "
                                 "use a library built with it (src/flashcore.h)")
        params = QuantizeParams()
        self._lib.fc_quantize_params_init(ctypes.byref(params))
        params.dtype = fc_dtype(x.dtype)
        params.out_dtype = FC_E4M3 if is_e4m3(out.dtype) else fc_dtype(out.dtype)
        rank = 3 if cu_seqlens is not None else 4
        if len(x.shape) != rank or tuple(out.shape) != tuple(x.shape):
            raise ArgumentError(f"x must be {rank}-D ({'varlen, with' if rank == 3 else 'dense, without'} "
                                f"cu_seqlens) and out of its shape, not {tuple(x.shape)} and "
                                f"{tuple(out.shape)}")
        if cu_seqlens is not None:
            params.batch = int(cu_seqlens.shape[0]) - 1
            params.seqlen, params.heads, params.head_dim = (int(size) for size in x.shape)
            params.cu_seqlens = cu_seqlens.data_ptr()
        else:
            params.batch, params.seqlen, params.heads, params.head_dim = (int(size) for size in x.shape)
        params.max_seqlen = int(max_seqlen or 0)
        params.descale_heads = int(descale_heads or 0)
        params.in_, params.out = x.data_ptr(), out.data_ptr()
        params.descale = descale.data_ptr() if descale is not None else None
        params.in_stride = Strides(*_element_strides(x, "x"))
        params.out_stride = Strides(*_element_strides(out, "out"))
        if isinstance(scaling, str) and scaling not in SCALINGS:
            raise ArgumentError(f"scaling must be one of {', '.join(map(repr, SCALINGS))} or an enum "
                                f"fc_quantize_scaling value, not {scaling!r}")
        params.scaling = SCALINGS.get(scaling, scaling)
        params.rotate = int(bool(rotate))
        params.rotation_seed = int(rotation_seed) & UINT64_MAX
        status = self._lib.fc_quantize(self._live_handle(), ctypes.byref(params), stream)
        if status != FC_OK:
            raise self._error(status)

    def _params(self, q, k, v, dtype, causal, softmax_scale, window=(-1, -1), softcap=None,
                sequences=DENSE, kv_dtype=FC_DTYPE_SAME, out_dtype=FC_DTYPE_SAME):
        """AttentionParams for the sizes, strides and options, with no pointers set. dtype: q's
        enum fc_dtype (FC_E4M3: FP8 attention, whose out_dtype, FC_BF16 or FC_F16, is set)."""
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
        if kv_dtype != FC_DTYPE_SAME:
            if not hasattr(self._lib, "fc_attention_params_init_sized"):
                raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                     "this libflashcore predates FP8 K/V (kv_dtype)")
            params.kv_dtype = kv_dtype
        if dtype == FC_E4M3:
            if not hasattr(self._lib, "fc_attention_params_init_sized"):
                raise FlashCoreError("FC_ERR_UNSUPPORTED", FC_ERR_UNSUPPORTED,
                                     predates_fp8_attention_message(self._lib))
            # NOTE: set only for FP8 attention: a library older than the field refuses its
            # nonzero bytes, and FC_DTYPE_SAME (the default) is -1
            params.out_dtype = FC_BF16 if out_dtype == FC_DTYPE_SAME else out_dtype
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
              softcap=None, sequences=DENSE, descales=NO_DESCALES, out_dtype=None):
        """Checks what the C struct cannot express, allocates out/lse, fills AttentionParams."""
        import torch

        for name, tensor in (("q", q), ("k", k), ("v", v)):
            if not isinstance(tensor, torch.Tensor):
                raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
        dtype = q_dtype_code(q.dtype)
        kv_dtype = kv_dtype_of(q.dtype, k.dtype, v.dtype)
        out_code = out_dtype_of(dtype, out_dtype, out)
        check_sequences(sequences, q.shape[0] if q.dim() else 0, q.device)
        params = self._params(q, k, v, dtype, causal, softmax_scale, window, softcap, sequences,
                              kv_dtype, out_code)
        if q.device.type != "cuda" or q.device.index != self.device:
            raise ArgumentError(f"the tensors are on {q.device}, the context on cuda:{self.device}")
        out_torch_dtype = {FC_F16: torch.float16, FC_BF16: torch.bfloat16}[out_code]
        if out is None:
            out = torch.empty(q.shape, dtype=out_torch_dtype, device=q.device)
        if out.shape != q.shape or out.dtype != out_torch_dtype:
            raise ArgumentError(f"out must be {tuple(q.shape)} {out_torch_dtype}, "
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
        batch = sequences.varlen_batch() if sequences.varlen else params.batch
        descales = descale_tensors(descales, q.dtype, k.dtype, batch, params.heads_kv, q.device)
        tensors += [d for d in descales if d is not None]
        _set_descale_pointers(params, descales)
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
        # NOTE: a library that predates the varlen fields (0.3.0), the paging ones or FP8
        # attention's refuses the struct's nonzero bytes it does not know, which names a byte; say
        # which fields those are.
        unknown = re.search(r"does not know: byte (\d+) of", message)
        if (status == FC_ERR_UNSUPPORTED and unknown
                and int(unknown.group(1)) >= AttentionParams.out_dtype.offset):
            return FlashCoreError(name, status, predates_fp8_attention_message(self._lib, message))
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


def _set_descale_pointers(params, descales):
    """The device pointers of the FP8 descales (NULL where None)."""
    params.q_descale, params.k_descale, params.v_descale = (
        None if tensor is None else tensor.data_ptr() for tensor in descales)


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
