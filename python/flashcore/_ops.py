"""The PyTorch op: torch.ops.flashcore.attention, a torch.library custom op with a fake kernel.

The fake kernel gives torch.compile (and meta tensors) the output shapes, so that a compiled graph
holds the op as one node with no graph break; the real kernel launches the library on
torch.cuda.current_stream(), so the op can be captured in a CUDA graph once its kernel is compiled
(call it once before capturing). The library is reached through ctypes only: nothing here depends
on torch's C++ ABI.
"""
from typing import Optional, Tuple

import torch

from . import _api, _arguments, _binding
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


_SCALING_NAMES = tuple(_binding.SCALINGS)   # "head", "tensor", "given"


def _check_quantize_inputs(x, descale, descale_heads, scaling, cu_seqlens, max_seqlen, fake):
    """What the C struct cannot express (x's rank, dtype, device and last stride, the scaling's
    name, descale_heads against heads, cu_seqlens' and a given descale's type, shape and device);
    the library checks the rest (head_dim, alignment, strides, max_seqlen against the tokens) when
    the real kernel runs. cu_seqlens' contents are never read: the caller's contract. Returns
    (batch, descale_heads): descale's shape."""
    varlen = cu_seqlens is not None
    rank, form = (3, "[total_tokens, heads, head_dim]") if varlen else (4, "[batch, seq, heads, head_dim]")
    if x.dim() != rank:
        hint = ""
        if varlen and x.dim() == 4:
            hint = " (varlen: the sequences one after another along the first dimension)"
        elif not varlen and x.dim() == 3:
            hint = (" (3-D [total_tokens, heads, head_dim] is a varlen batch's: pass cu_seqlens and "
                    "max_seqlen)")
        raise ArgumentError(f"x must be {rank}-D {form}, not {tuple(x.shape)}{hint}")
    if x.dtype not in _DTYPES:
        raise ArgumentError(f"x is {x.dtype}: float16 and bfloat16 are quantized")
    if x.stride(-1) != 1:
        raise ArgumentError(f"x: the last dimension must be contiguous (stride 1), "
                            f"not stride {x.stride(-1)}")
    if scaling not in _SCALING_NAMES:
        raise ArgumentError(f"scaling must be 'head' (one descale per sequence and descale head), "
                            f"'tensor' (one for all) or 'given' (descale read), not {scaling!r}")
    heads = x.shape[-2]
    descale_heads = descale_heads or heads
    if descale_heads < 0 or heads % descale_heads:
        raise ArgumentError(f"descale_heads ({descale_heads}) must divide heads ({heads}): one "
                            "descale covers heads / descale_heads heads (for q with GQA: heads_kv, "
                            "as attention's q_descale is [batch, heads_kv])")
    if varlen:
        if cu_seqlens.dim() != 1 or cu_seqlens.shape[0] < 2 or cu_seqlens.dtype != torch.int32:
            raise ArgumentError(f"cu_seqlens must be 1-D int32 [batch + 1] with batch >= 1, not "
                                f"{list(cu_seqlens.shape)} {cu_seqlens.dtype}")
        if not cu_seqlens.is_contiguous():
            raise ArgumentError("cu_seqlens must be contiguous; pass a .contiguous() copy")
        if cu_seqlens.device != x.device:
            raise ArgumentError(f"cu_seqlens is on {cu_seqlens.device} but x is on {x.device}")
        if max_seqlen < 1:
            raise ArgumentError(f"a varlen x needs max_seqlen, the longest sequence's token count as "
                                f"a Python int (at least 1), not {max_seqlen}")
        batch = cu_seqlens.shape[0] - 1
    else:
        if max_seqlen:
            raise ArgumentError("max_seqlen belongs to a varlen x: pass it with cu_seqlens")
        batch = x.shape[0]
    if scaling == "given":
        if descale is None:
            raise ArgumentError(f"scaling='given' reads descale: pass a float32 [batch, "
                                f"descale_heads] = [{batch}, {descale_heads}] tensor")
        if (tuple(descale.shape) != (batch, descale_heads) or descale.dtype != torch.float32
                or not descale.is_contiguous()):
            raise ArgumentError(f"descale must be a contiguous float32 [batch, descale_heads] = "
                                f"[{batch}, {descale_heads}], not {tuple(descale.shape)} {descale.dtype}"
                                + ("" if descale.is_contiguous() else " (not contiguous)"))
        if descale.device != x.device:
            raise ArgumentError(f"descale is on {descale.device} but x is on {x.device}")
    elif descale is not None:
        raise ArgumentError(f"descale is read with scaling='given' only; scaling={scaling!r} writes "
                            "the descales it returns")
    allowed = ("cuda", "meta") if fake else ("cuda",)
    if x.device.type not in allowed:
        raise ArgumentError(f"x is on {x.device}: flashcore.quantize_fp8 runs on CUDA tensors")
    return batch, descale_heads


def _check_rotate_input(x, fake):
    """x for flashcore.rotate: 4-D or 3-D (any rows of head_dim), float16/bfloat16, last dimension
    contiguous, on CUDA; the library checks head_dim, alignment and strides."""
    if x.dim() not in (3, 4):
        raise ArgumentError(f"x must be 4-D [batch, seq, heads, head_dim] or 3-D [total_tokens, heads, "
                            f"head_dim], not {tuple(x.shape)}")
    if x.dtype not in _DTYPES:
        raise ArgumentError(f"x is {x.dtype}: float16 and bfloat16 are rotated")
    if x.stride(-1) != 1:
        raise ArgumentError(f"x: the last dimension must be contiguous (stride 1), "
                            f"not stride {x.stride(-1)}")
    allowed = ("cuda", "meta") if fake else ("cuda",)
    if x.device.type not in allowed:
        raise ArgumentError(f"x is on {x.device}: flashcore.rotate runs on CUDA tensors")


# NOTE: a custom op's output may not alias an input: with scaling "given" the op returns an empty
# descale, and quantize_fp8 returns the given one. rotation_seed is a uint64 in the C struct and an
# int64 here: quantize_fp8 and rotate pass it as two's complement, Context.quantize takes it back.
@torch.library.custom_op("flashcore::quantize_fp8", mutates_args=())
def _quantize_fp8(x: torch.Tensor, descale: Optional[torch.Tensor] = None, descale_heads: int = 0,
                  scaling: str = "head", rotate: bool = False, rotation_seed: int = 0,
                  cu_seqlens: Optional[torch.Tensor] = None, max_seqlen: int = 0
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    batch, descale_heads = _check_quantize_inputs(x, descale, descale_heads, scaling, cu_seqlens,
                                                  max_seqlen, fake=False)
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    written = torch.empty((batch, descale_heads) if scaling != "given" else (0,), dtype=torch.float32,
                          device=x.device)
    _api.context(x.device.index).quantize(x, out, descale if scaling == "given" else written,
                                           descale_heads, scaling, rotate, rotation_seed, cu_seqlens,
                                           max_seqlen, _current_stream(x.device.index))
    return out, written


@_quantize_fp8.register_fake
def _quantize_fp8_fake(x, descale=None, descale_heads=0, scaling="head", rotate=False, rotation_seed=0,
                       cu_seqlens=None, max_seqlen=0):
    batch, descale_heads = _check_quantize_inputs(x, descale, descale_heads, scaling, cu_seqlens,
                                                  max_seqlen, fake=True)
    return (x.new_empty(x.shape, dtype=torch.float8_e4m3fn),
            x.new_empty((batch, descale_heads) if scaling != "given" else (0,), dtype=torch.float32))


@torch.library.custom_op("flashcore::rotate", mutates_args=())
def _rotate(x: torch.Tensor, rotation_seed: int = 0) -> torch.Tensor:
    _check_rotate_input(x, fake=False)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    # a 3-D x is rows all the same: one sequence of tokens
    x4, out4 = (x, out) if x.dim() == 4 else (x.unsqueeze(0), out.unsqueeze(0))
    _api.context(x.device.index).quantize(x4, out4, None, 0, "head", True, rotation_seed, None, 0,
                                           _current_stream(x.device.index))
    return out


@_rotate.register_fake
def _rotate_fake(x, rotation_seed=0):
    _check_rotate_input(x, fake=True)
    return x.new_empty(x.shape)


def _is_int(value):
    """A host int: a Python int (not a bool), or torch.compile's SymInt."""
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, torch.SymInt)


def _seed(rotation_seed):
    """rotation_seed, a uint64, as the ops' int64 (two's complement)."""
    if not _is_int(rotation_seed):
        raise ArgumentError(f"rotation_seed must be an int in [0, 2**64), not {rotation_seed!r}")
    if isinstance(rotation_seed, torch.SymInt):   # traced: already an int64
        return rotation_seed
    if not 0 <= rotation_seed <= _binding.UINT64_MAX:
        raise ArgumentError(f"rotation_seed must be an int in [0, 2**64) (a uint64), not {rotation_seed}")
    return rotation_seed - 2**64 if rotation_seed >= 2**63 else rotation_seed


def quantize_fp8(x, *, descale_heads=None, scaling="head", descale=None, rotate=False, rotation_seed=0,
                 cu_seqlens=None, max_seqlen=None):
    """Quantizes a 16-bit tensor to FP8 e4m3 for FP8 attention (or an FP8 KV cache), on the GPU.

    x: [batch, seq, heads, head_dim] float16/bfloat16 on a CUDA device (last dimension contiguous,
    other strides multiples of 8 elements; head_dim a multiple of 16 up to 256). Returns (x8,
    descale): x8 a new contiguous torch.float8_e4m3fn tensor of x's shape, x8 = e4m3(x / descale)
    rounded to nearest and saturated to +-448, and descale float32 [batch, descale_heads], the
    layout flashcore.attention's q_descale, k_descale and v_descale take (x ~ descale * x8).
    descale_heads (None: heads) divides heads: descale head g covers heads g * heads /
    descale_heads onwards; for q with GQA pass heads_kv (attention's q_descale is per K/V head).
    scaling: "head" (the default), descale = amax / 448 of each (sequence, descale head)'s values
    (1 where they are all 0); "tensor", one amax / 448 for the whole tensor, in every entry;
    "given", descale (a contiguous float32 [batch, descale_heads] tensor on x's device: calibrated,
    static scales) is read, not written, and returned as is (values past 448 * descale saturate).

    rotate: each row of head_dim values is first rotated, R x with R = H diag(s) / sqrt(n): H the
    Sylvester Hadamard matrix of order n (the largest power of two dividing head_dim, applied to
    each n-element block) and s a +-1 sign per dimension drawn from rotation_seed (an int in [0,
    2**64)). R is orthogonal: q and k rotated with the same seed keep every score q . k, while an
    outlier dimension's magnitude is spread over n, so the amax, and the quantization step, falls
    (the FA3 paper's "incoherent processing"). Do not rotate v (attention's out would come out
    rotated). flashcore.rotate rotates a 16-bit q alike without quantizing it.

    Varlen: x [total_tokens, heads, head_dim] with cu_seqlens, an int32 [batch + 1] CUDA tensor of
    the sequences' first tokens, and max_seqlen, the longest one's token count as a Python int
    (never read back from the device); descale is then per sequence, [len(cu_seqlens) - 1,
    descale_heads], and tokens of no sequence (past cu_seqlens[batch]) are left unwritten.

    Two kernels (the amax, then the quantization) on torch.cuda.current_stream(); needs sm_89 or
    newer. A custom op (torch.ops.flashcore.quantize_fp8) like attention: torch.compile, CUDA graphs
    (after one call outside the capture). Raises flashcore.FlashCoreError (ArgumentError for inputs
    refused before the library is called).
    """
    for name, tensor in (("x", x), ("descale", descale), ("cu_seqlens", cu_seqlens)):
        if (tensor is not None or name == "x") and not isinstance(tensor, torch.Tensor):
            raise ArgumentError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
    if descale_heads is not None and (not _is_int(descale_heads) or descale_heads < 1):
        raise ArgumentError(f"descale_heads must be a positive int dividing heads (None: heads), "
                            f"not {descale_heads!r}")
    if cu_seqlens is not None and max_seqlen is None:
        raise ArgumentError("a varlen x needs max_seqlen: the longest sequence's token count, as a "
                            "Python int (the device's cu_seqlens are never read back)")
    if cu_seqlens is None and max_seqlen is not None:
        raise ArgumentError("max_seqlen belongs to a varlen x: pass it with cu_seqlens")
    max_seqlen = 0 if max_seqlen is None else _arguments._host_length("max_seqlen", max_seqlen)
    x8, written = _quantize_fp8(x, descale, descale_heads or 0, scaling, bool(rotate), _seed(rotation_seed),
                                cu_seqlens, max_seqlen)
    return x8, (descale if scaling == "given" else written)


def rotate(x, *, rotation_seed=0):
    """x rotated as flashcore.quantize_fp8(rotate=True) rotates it, without quantizing: a new
    contiguous tensor of x's shape and 16-bit dtype, each row of head_dim values R x (rounded to x's
    dtype). x: [batch, seq, heads, head_dim] or [total_tokens, heads, head_dim] (every row is
    rotated alike), float16/bfloat16 on a CUDA device, the last dimension contiguous, head_dim a
    multiple of 16 up to 256. With the seed that quantized k, it rotates a 16-bit q beside an FP8
    KV cache (q . k unchanged). Runs on torch.cuda.current_stream(); a custom op
    (torch.ops.flashcore.rotate). Raises flashcore.FlashCoreError.
    """
    if not isinstance(x, torch.Tensor):
        raise ArgumentError(f"x must be a torch.Tensor, not {type(x).__name__}")
    return _rotate(x, _seed(rotation_seed))
