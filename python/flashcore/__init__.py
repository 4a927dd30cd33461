"""FlashCore JIT from Python: run-time specialized fused attention for NVIDIA GPUs.

    import flashcore
    print(flashcore.info())                           # versions, library, GPU: no GPU needed
    out = flashcore.attention(q, k, v, causal=True)   # q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D]
    out = flashcore.attention(q, k, v, causal=True,   # varlen: q [total_q, Hq, D], k/v [total_k, Hkv, D]
                              cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=mq, max_seqlen_k=mk)
    out = flashcore.attention(q, k_pages, v_pages,    # paged: k/v [num_pages, page_size, Hkv, D]
                              page_table=table, seqused_k=lengths)   # table: int32 [B, pages_per_seq]
    out = flashcore.attention(q8, k8, v8, causal=True,   # FP8 attention: q, k, v float8_e4m3fn
                              q_descale=dq, k_descale=dk, v_descale=dv)   # [B, Hkv] float32; out bf16
    out, lse = flashcore.merge(out_a, lse_a, out_b, lse_b)   # two partial results, disjoint keys
    q8, dq = flashcore.quantize_fp8(q, descale_heads=Hkv, rotate=True)   # e4m3 and [B, Hkv] descales
    q_rot = flashcore.rotate(q)                       # q rotated alike, 16-bit (beside an FP8 cache)
    print(flashcore.explain(q, k, v, causal=True))    # which kernel, and why

The package holds libflashcore and calls it through ctypes: it depends on no torch C++ ABI and
imports without a GPU and without torch. When torch imports, flashcore.attention is the custom op
torch.ops.flashcore.attention (torch.compile and CUDA graphs take it); without torch, calling it
raises ImportError with the reason.
"""
from ._api import Info, Plan, context, explain, info, plan
from ._binding import (FC_DEVICE_NONE, ArgumentError, Context, FlashCoreError, PreparedAttention,
                       library_path, version)

try:
    import torch as _torch
except (ImportError, OSError) as _error:    # absent, or present but broken (a missing CUDA lib)
    _torch = None
    _TORCH_MISSING = f"PyTorch could not be imported: {_error}"
else:
    if hasattr(_torch, "library") and hasattr(_torch.library, "custom_op"):
        _TORCH_MISSING = None
    else:
        _TORCH_MISSING = f"torch {_torch.__version__} has no torch.library.custom_op (2.4 or later)"

if _TORCH_MISSING is None:
    from ._ops import attention, merge, quantize_fp8, rotate
else:
    def attention(q, k, v, *, causal=False, softmax_scale=None, return_lse=False, window=(-1, -1),
                  sinks=None, softcap=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
                  max_seqlen_k=None, seqused_k=None, page_table=None, k_descale=None, v_descale=None,
                  q_descale=None, out_dtype=None):
        """flashcore.attention needs PyTorch 2.4 or later; see the ImportError's message."""
        raise ImportError(f"flashcore.attention needs PyTorch: {_TORCH_MISSING}")

    def merge(out_a, lse_a, out_b, lse_b):
        """flashcore.merge needs PyTorch 2.4 or later; see the ImportError's message."""
        raise ImportError(f"flashcore.merge needs PyTorch: {_TORCH_MISSING}")

    def quantize_fp8(x, *, descale_heads=None, scaling="head", descale=None, rotate=False,
                     rotation_seed=0, cu_seqlens=None, max_seqlen=None):
        """flashcore.quantize_fp8 needs PyTorch 2.4 or later; see the ImportError's message."""
        raise ImportError(f"flashcore.quantize_fp8 needs PyTorch: {_TORCH_MISSING}")

    def rotate(x, *, rotation_seed=0):
        """flashcore.rotate needs PyTorch 2.4 or later; see the ImportError's message."""
        raise ImportError(f"flashcore.rotate needs PyTorch: {_TORCH_MISSING}")

__all__ = ["ArgumentError", "Context", "FC_DEVICE_NONE", "FlashCoreError", "Info", "Plan",
           "PreparedAttention", "attention", "context", "explain", "info", "library_path", "merge",
           "plan", "quantize_fp8", "rotate", "version"]


def __getattr__(name):
    # __version__ is the library's own ("MAJOR.MINOR.PATCH", from meson.build's project version),
    # read when first asked for, so that importing the package never loads the library.
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'flashcore' has no attribute {name!r}")
