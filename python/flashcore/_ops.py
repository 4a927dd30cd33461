"""The PyTorch op: torch.ops.flashcore.attention, a torch.library custom op with a fake kernel.

The fake kernel gives torch.compile (and meta tensors) the output shapes, so that a compiled graph
holds the op as one node with no graph break; the real kernel launches the library on
torch.cuda.current_stream(), so the op can be captured in a CUDA graph once its kernel is compiled
(call it once before capturing). The library is reached through ctypes only: nothing here depends
on torch's C++ ABI.
"""
from typing import Optional, Tuple

import torch

from . import _api, _binding
from ._binding import ArgumentError

_DTYPES = (torch.float16, torch.bfloat16)
_Q_DTYPES = _DTYPES + (torch.float8_e4m3fn,)   # e4m3: FP8 attention (k and v e4m3 too)


def _current_stream(device_index):
    """torch's current CUDA stream on a device, as a CUstream integer."""
    return torch.cuda.current_stream(device_index).cuda_stream


# NOTE: torch.cuda.current_stream() builds a Stream object per call (a few microseconds of host
# time per launch); the raw accessor inductor's generated code uses returns the same handle.
if hasattr(torch._C, "_cuda_getCurrentRawStream"):
    _current_stream = torch._C._cuda_getCurrentRawStream  # noqa: F811


def _check_inputs(q, k, v, fake, sinks=None, sequences=_binding.DENSE):
    """The checks the C struct cannot express, with messages naming the argument; the library
    checks the rest (GQA ratio, head_dim, stride alignment, the window's and softcap's rules,
    varlen's maxima against the token counts) when the real kernel runs. cu_seqlens',
    seqused_k's and page_table's contents are never read (no host synchronization): the caller's
    contract."""
    rank, form = ((3, "[total_tokens, heads, head_dim]") if sequences.varlen
                  else (4, "[batch, seq, heads, head_dim]"))
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        paged = sequences.paged and name != "q"
        if paged and tensor.dim() != 4:
            raise ArgumentError(f"{name} must be 4-D {_binding.PAGES_FORM}, not "
                                f"{tuple(tensor.shape)}" + _binding.rank_hint(tensor.dim(), False, True))
        if not paged and tensor.dim() != rank:
            raise ArgumentError(f"{name} must be {rank}-D {form}, not {tuple(tensor.shape)}"
                                + _binding.rank_hint(tensor.dim(), sequences.varlen))
        if name == "q" and tensor.dtype not in _Q_DTYPES:
            raise ArgumentError(f"{name} is {tensor.dtype}: float16 and bfloat16 are supported (and "
                                "float8_e4m3fn, with k and v e4m3 too: FP8 attention)")
        if tensor.device != q.device:
            raise ArgumentError(f"{name} is on {tensor.device} but q is on {q.device}")
        if tensor.stride(-1) != 1:
            raise ArgumentError(f"{name}: the last dimension must be contiguous (stride 1), "
                                f"not stride {tensor.stride(-1)}")
    _binding.kv_dtype_of(q.dtype, k.dtype, v.dtype)   # q's, an FP8 cache's e4m3, or FP8 attention's
    _binding.check_shapes(q.shape, k.shape, v.shape, sequences.varlen, sequences.paged)
    _binding.check_sequences(sequences, q.shape[0], q.device)
    allowed = ("cuda", "meta") if fake else ("cuda",)
    if q.device.type not in allowed:
        raise ArgumentError(f"the tensors are on {q.device}: flashcore.attention runs on CUDA "
                            "tensors")
    _binding.check_sinks(sinks, q.shape[-2], q.device)


def _descales(q, k, q_descale, k_descale, v_descale, sequences):
    """The FP8 scales as the library takes them, a _binding.Descales of float32 [batch, heads_kv]
    contiguous tensors (expanded where they broadcast) or None."""
    batch = sequences.varlen_batch() if sequences.varlen else q.shape[0]
    return _binding.descale_tensors(_binding.Descales(q_descale, k_descale, v_descale), q.dtype,
                                    k.dtype, batch, k.shape[-2], q.device)


_TORCH_DTYPES = {_binding.FC_F16: torch.float16, _binding.FC_BF16: torch.bfloat16}


def _out_dtype(q, out_dtype):
    """out's torch dtype: q's for a 16-bit q; FP8 attention's out_dtype, bfloat16 by default."""
    return _TORCH_DTYPES[_binding.out_dtype_of(_binding.q_dtype_code(q.dtype), out_dtype)]


def _sequences(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, page_table=None):
    """The op's arguments as _binding.Sequences (max_seqlen 0: dense, as in the C struct; with a
    page_table, max_seqlen_k 0: the table's width)."""
    if (cu_seqlens_q is None and cu_seqlens_k is None and not max_seqlen_q and not max_seqlen_k
            and page_table is None):
        return _binding.DENSE if seqused_k is None else _binding.Sequences(seqused_k=seqused_k)
    return _binding.sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q or None,
                                       max_seqlen_k or None, seqused_k, page_table)


# NOTE: the arguments added after 0.2.0 (window, sinks, softcap) and after 0.3.0 (cu_seqlens_q/k,
# max_seqlen_q/k, seqused_k, then page_table, k_descale/v_descale, then q_descale/out_dtype) have
# defaults, so that a call of the op with 0.2.0's six arguments means what it meant. max_seqlen 0 is
# a dense batch, as in the C struct.
@torch.library.custom_op("flashcore::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
               softmax_scale: Optional[float], return_lse: bool, window_left: int = -1,
               window_right: int = -1, sinks: Optional[torch.Tensor] = None,
               softcap: Optional[float] = None, cu_seqlens_q: Optional[torch.Tensor] = None,
               cu_seqlens_k: Optional[torch.Tensor] = None, max_seqlen_q: int = 0,
               max_seqlen_k: int = 0, seqused_k: Optional[torch.Tensor] = None,
               page_table: Optional[torch.Tensor] = None, k_descale: Optional[torch.Tensor] = None,
               v_descale: Optional[torch.Tensor] = None, q_descale: Optional[torch.Tensor] = None,
               out_dtype: Optional[torch.dtype] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    sequences = _sequences(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                           page_table)
    _check_inputs(q, k, v, fake=False, sinks=sinks, sequences=sequences)
    descales = _descales(q, k, q_descale, k_descale, v_descale, sequences)
    # NOTE: varlen: tokens of no sequence are left as torch.empty gives them (FlashAttention's
    # convention; zeroing them would cost a pass over out): Context.attention(out=...) keeps them.
    out = torch.empty(q.shape, dtype=_out_dtype(q, out_dtype), device=q.device)
    lse = torch.empty(_binding.lse_shape(q.shape) if return_lse else (0,), dtype=torch.float32,
                      device=q.device)
    _api.context(q.device.index).launch(q, k, v, out, lse if return_lse else None, causal,
                                         softmax_scale, _current_stream(q.device.index),
                                         (window_left, window_right), sinks, softcap, sequences,
                                         descales)
    return out, lse


@_attention.register_fake
def _attention_fake(q, k, v, causal, softmax_scale, return_lse, window_left=-1, window_right=-1,
                    sinks=None, softcap=None, cu_seqlens_q=None, cu_seqlens_k=None,
                    max_seqlen_q=0, max_seqlen_k=0, seqused_k=None, page_table=None, k_descale=None,
                    v_descale=None, q_descale=None, out_dtype=None):
    sequences = _sequences(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                           page_table)
    _check_inputs(q, k, v, fake=True, sinks=sinks, sequences=sequences)
    _descales(q, k, q_descale, k_descale, v_descale, sequences)   # their errors at trace time too
    out = q.new_empty(q.shape, dtype=_out_dtype(q, out_dtype))
    lse = q.new_empty(_binding.lse_shape(q.shape) if return_lse else (0,), dtype=torch.float32)
    return out, lse


def attention(q, k, v, *, causal=False, softmax_scale=None, return_lse=False, window=(-1, -1),
              sinks=None, softcap=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
              max_seqlen_k=None, seqused_k=None, page_table=None, k_descale=None, v_descale=None,
              q_descale=None, out_dtype=None):
    """Fused attention on CUDA tensors: softmax(cap(scale * Q K^T) [+ mask], sinks) V.

    q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim]
    (heads_q a multiple of heads_kv: GQA/MQA); float16 or bfloat16 on one CUDA device, the last
    dimension contiguous, other strides free (multiples of 8 elements). Masks are bottom-right
    aligned: query i's diagonal is key d = i + seqlen_k - seqlen_q. causal: i sees keys j <= d.
    window: (left, right), i sees keys d - left <= j <= d + right, -1 = unbounded on that side
    (causal is right 0; causal=True takes right 0 or -1). sinks: None, or a float32 [heads_q]
    tensor on q's device: one logit per query head that joins each row's softmax denominator and
    receives no value (gpt-oss); the LSE includes it. softcap: None, or a positive cap: scores s
    become softcap * tanh(s / softcap) before masking (Gemma 2). softmax_scale: None =
    1/sqrt(head_dim). Returns out, a new contiguous [batch, seqlen_q, heads_q, head_dim] tensor
    in q's dtype (FP8 attention: out_dtype), or (out, lse) when return_lse, lse being float32
    [batch, heads_q, seqlen_q] (natural log; -inf for a row that sees no key, whose out is 0; its
    sink with sinks).

    Varlen (ragged) batches, FlashAttention's flash_attn_varlen_func form: q [total_q, heads_q,
    head_dim] and k, v [total_k, heads_kv, head_dim] hold the sequences one after another;
    cu_seqlens_q, cu_seqlens_k: int32 [batch + 1] CUDA tensors of their first tokens (from 0,
    non-decreasing); max_seqlen_q, max_seqlen_k: the longest sequence's query and key counts, as
    Python ints (never read back from the device: no synchronization, CUDA-graph capturable).
    Masks are per sequence. out is [total_q, heads_q, head_dim] and lse [heads_q, total_q]; tokens
    of no sequence (past cu_seqlens_q[batch]) are left unwritten (their values unspecified).
    seqused_k: an int32 [batch] CUDA tensor, the keys each sequence uses (a KV cache's filled
    length: flash_attn_with_kvcache's cache_seqlens), dense or varlen; keys past it are never read
    and may hold anything. The lengths are the caller's contract, as in FlashAttention.

    Paged KV cache, FlashAttention-3's flash_attn_with_kvcache(page_table=...) form: page_table, an
    int32 [batch, pages_per_seq] CUDA tensor (each row contiguous, its row stride free), holds the
    page ids of each sequence's keys in order, and k, v are the cache's pages, [num_pages,
    page_size, heads_kv, head_dim] (any page_size >= 1): sequence b's key j is page_table[b, j //
    page_size]'s slot j % page_size. Sequence b has seqused_k[b] keys if seqused_k is given, else
    seqlen_k keys, where seqlen_k is max_seqlen_k if given, else all that a row holds
    (pages_per_seq * page_size): a caller with seqused_k passes max_seqlen_k (its longest count)
    or lets the table's width bound it. q is dense [batch, seqlen_q, heads_q, head_dim] (decode:
    seqlen_q 1), or varlen with cu_seqlens_q, max_seqlen_q and max_seqlen_k (then no cu_seqlens_k).
    Slots and pages past a sequence's keys are never read. Page ids are the caller's contract.

    FP8 KV cache: k and v torch.float8_e4m3fn (q stays float16 or bfloat16, and so does out), in
    any of the forms above; k_descale, v_descale: their dequantization scales (FlashAttention-3's),
    float32 [batch, heads_kv] CUDA tensors, or anything that broadcasts to that (a [] or [1]
    tensor, or a float: one scale per tensor), None = 1. Attention is computed on k_descale * k and
    v_descale * v, dequantized in the kernel (the decode kernel for up to 16 query rows per K/V
    head, the sm80 kernel for prefill on sm_89 and later at head dims of multiples of 32, else the
    reference kernel).

    FP8 attention, FlashAttention-3's fp8 forward: q, k and v all torch.float8_e4m3fn (strides
    multiples of 16 elements, which are bytes; head_dim a multiple of 16), in any of the forms above;
    q_descale, k_descale, v_descale as above (q_descale per (batch, K/V head), shared by that head's
    query heads). Scores are softmax_scale * (q_descale q) . (k_descale k) from the e4m3 values
    exactly, out = softmax(...) (v_descale v) in out_dtype: torch.bfloat16 (the default) or
    torch.float16. The sm90 kernel rounds P to e4m3 for P V (at head_dim 64, 128, 192 and 256 on a
    dense batch; else the reference kernel, P in fp32). The LSE is float32 as above. A 16-bit q's out
    is q's dtype (out_dtype None or that) and it takes no q_descale.

    Runs on torch.cuda.current_stream(); works under torch.compile(fullgraph=True) and CUDA
    graph capture (after one call outside it, which compiles the kernel). Forward only: no
    autograd. Raises flashcore.FlashCoreError (ArgumentError, also a ValueError, for inputs
    refused before the library is called).
    """
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, torch.Tensor):
            raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
    for name, tensor in (("sinks", sinks), ("cu_seqlens_q", cu_seqlens_q),
                         ("cu_seqlens_k", cu_seqlens_k), ("seqused_k", seqused_k),
                         ("page_table", page_table)):
        if tensor is not None and not isinstance(tensor, torch.Tensor):
            raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
    window_left, window_right = _binding.window_pair(window)
    sequences = _binding.sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                            max_seqlen_k, seqused_k, page_table)
    out, lse = _attention(q, k, v, bool(causal),
                          None if softmax_scale is None else float(softmax_scale),
                          bool(return_lse), window_left, window_right, sinks,
                          None if softcap is None else float(softcap), sequences.cu_seqlens_q,
                          sequences.cu_seqlens_k, sequences.max_seqlen_q, sequences.max_seqlen_k,
                          sequences.seqused_k, sequences.page_table,
                          *(_float_scale(d, q.device) for d in (k_descale, v_descale, q_descale)),
                          _torch_dtype(out_dtype))
    return (out, lse) if return_lse else out


def _torch_dtype(value):
    """out_dtype as the op takes it: a torch dtype (a name such as "bfloat16" or "f16" becomes one),
    or None; a type that is not 16-bit is left for the op's check to refuse by name."""
    if value is None or isinstance(value, torch.dtype):
        return value
    code = _binding.DTYPES.get(str(value))
    if code is None:
        raise ArgumentError(f"out_dtype {value!r} is not supported: torch.bfloat16 (FP8 attention's "
                            "default) or torch.float16")
    return _TORCH_DTYPES[code]


def _float_scale(value, device):
    """A per-tensor scale given as a number, as the op takes it: a float32 [] tensor."""
    if value is None or isinstance(value, torch.Tensor):
        return value
    try:
        return torch.tensor(float(value), dtype=torch.float32, device=device)
    except (TypeError, ValueError):
        raise ArgumentError(f"a descale must be a float or a float32 tensor, not "
                            f"{type(value).__name__}") from None


def _check_merge_inputs(out_a, lse_a, out_b, lse_b, fake):
    """What the C struct cannot express; the library checks alignment, strides and head_dim."""
    for name, tensor in (("out_a", out_a), ("out_b", out_b)):
        if tensor.dim() != 4:
            raise ArgumentError(f"{name} must be 4-D [batch, seq, heads, head_dim], "
                                f"not {tuple(tensor.shape)}")
        if tensor.dtype not in _DTYPES:
            raise ArgumentError(f"{name} is {tensor.dtype}: float16 and bfloat16 are supported")
        if tensor.stride(3) != 1:
            raise ArgumentError(f"{name}: the last dimension must be contiguous (stride 1), "
                                f"not stride {tensor.stride(3)}")
    if out_b.shape != out_a.shape or out_b.dtype != out_a.dtype:
        raise ArgumentError(f"out_b is {tuple(out_b.shape)} {out_b.dtype}, "
                            f"out_a {tuple(out_a.shape)} {out_a.dtype}")
    shape = _binding.lse_shape(out_a.shape)
    for name, lse in (("lse_a", lse_a), ("lse_b", lse_b)):
        if (tuple(lse.shape) != tuple(shape) or lse.dtype != torch.float32
                or not lse.is_contiguous()):
            raise ArgumentError(f"{name} must be a contiguous float32 {list(shape)}, "
                                f"not {tuple(lse.shape)} {lse.dtype}")
    tensors = (out_a, lse_a, out_b, lse_b)
    if any(tensor.device != out_a.device for tensor in tensors):
        raise ArgumentError("out_a, lse_a, out_b and lse_b must be on one device")
    allowed = ("cuda", "meta") if fake else ("cuda",)
    if out_a.device.type not in allowed:
        raise ArgumentError(f"the tensors are on {out_a.device}: flashcore.merge runs on CUDA "
                            "tensors")


@torch.library.custom_op("flashcore::merge", mutates_args=())
def _merge(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
           ) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_merge_inputs(out_a, lse_a, out_b, lse_b, fake=False)
    out = torch.empty(out_a.shape, dtype=out_a.dtype, device=out_a.device)
    lse = torch.empty(lse_a.shape, dtype=torch.float32, device=out_a.device)
    _api.context(out_a.device.index).merge(out_a, lse_a, out_b, lse_b, out, lse,
                                            _current_stream(out_a.device.index))
    return out, lse


@_merge.register_fake
def _merge_fake(out_a, lse_a, out_b, lse_b):
    _check_merge_inputs(out_a, lse_a, out_b, lse_b, fake=True)
    return out_a.new_empty(out_a.shape), lse_a.new_empty(lse_a.shape)


def merge(out_a, lse_a, out_b, lse_b):
    """Merges two partial attention results of the same queries over disjoint sets of keys.

    out_a, out_b: [batch, seq, heads, head_dim] float16/bfloat16 (last dimension contiguous), as
    flashcore.attention returns them; lse_a, lse_b: their float32 [batch, heads, seq] LSEs
    (return_lse=True). Returns (out, lse) of attention over both key sets: lse = log(exp(lse_a) +
    exp(lse_b)), out = exp(lse_a - lse) out_a + exp(lse_b - lse) out_b, computed in float32. A
    part with LSE -inf (no key) weighs 0. The building block of context-parallel (ring)
    attention (tools/ring_attention.py). Runs on torch.cuda.current_stream(); a custom op like
    attention (torch.compile, CUDA graphs). Raises flashcore.FlashCoreError.
    """
    for name, tensor in (("out_a", out_a), ("lse_a", lse_a), ("out_b", out_b), ("lse_b", lse_b)):
        if not isinstance(tensor, torch.Tensor):
            raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
    return _merge(out_a, lse_a, out_b, lse_b)
