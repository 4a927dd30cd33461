"""The C API's constants, structs and errors as ctypes sees them (src/flashcore.h)."""
import ctypes

FC_OK = 0
FC_ERR_INVALID_ARG = 1
FC_ERR_UNSUPPORTED = 2
FC_DEVICE_NONE = -1
FC_F16 = 0
FC_BF16 = 1
FC_E4M3 = 2
FC_DTYPE_SAME = -1   # kv_dtype and out_dtype: dtype's
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
DTYPE_NAMES = {FC_F16: "f16", FC_BF16: "bf16", FC_E4M3: "e4m3"}
# K/V types besides q's: FP8 e4m3 (torch.float8_e4m3fn), an FP8 KV cache; as q's type too, FP8 attention
# (q, k and v e4m3, out 16-bit).
KV_DTYPES = {"torch.float8_e4m3fn": FC_E4M3, "float8_e4m3fn": FC_E4M3, "e4m3": FC_E4M3, "fp8": FC_E4M3}
# enum fc_quantize_scaling: where fc_quantize's descales come from, by flashcore.quantize_fp8's names.
FC_SCALE_PER_HEAD = 0
FC_SCALE_PER_TENSOR = 1
FC_SCALE_GIVEN = 2
SCALINGS = {"head": FC_SCALE_PER_HEAD, "tensor": FC_SCALE_PER_TENSOR, "given": FC_SCALE_GIVEN}
UINT64_MAX = 2**64 - 1   # fc_quantize_params' rotation_seed is a uint64_t


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
        # an FP8 KV cache (src/flashcore.h), added after the paging fields; FC_DTYPE_SAME/NULL: none.
        ("kv_dtype", ctypes.c_int),         # enum fc_dtype: FC_E4M3 for e4m3 k and v
        ("k_descale", ctypes.c_void_p),     # const float *, [batch, heads_kv]; NULL: 1
        ("v_descale", ctypes.c_void_p),
        # FP8 attention (src/flashcore.h), added after the FP8 cache fields; FC_DTYPE_SAME/NULL: none.
        ("out_dtype", ctypes.c_int),        # enum fc_dtype: dtype FC_E4M3's out, FC_BF16 (default) or FC_F16
        ("q_descale", ctypes.c_void_p),     # const float *, [batch, heads_kv]; NULL: 1 (dtype FC_E4M3 only)
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


class QuantizeParams(ctypes.Structure):
    """struct fc_quantize_params (struct_size first: the library reads what it covers)."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),            # enum fc_dtype: in's, FC_F16 or FC_BF16
        ("out_dtype", ctypes.c_int),        # FC_E4M3 (init's default), or dtype: rotation only
        ("batch", ctypes.c_int),
        ("seqlen", ctypes.c_int),           # varlen: the total token count
        ("heads", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("descale_heads", ctypes.c_int),    # dividing heads; 0: heads
        ("in_", ctypes.c_void_p),           # the C field `in` (a Python keyword)
        ("out", ctypes.c_void_p),
        ("descale", ctypes.c_void_p),       # float *, [batch, descale_heads]; NULL: rotation only
        ("in_stride", Strides),
        ("out_stride", Strides),
        ("scaling", ctypes.c_int),          # enum fc_quantize_scaling
        ("rotate", ctypes.c_int),
        ("rotation_seed", ctypes.c_uint64),
        ("cu_seqlens", ctypes.c_void_p),    # const int32_t *, [batch + 1]; NULL: dense
        ("max_seqlen", ctypes.c_int),       # > 0: varlen
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
