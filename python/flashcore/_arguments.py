"""Checking and shaping the arguments of an attention call before the library sees them:
sizes and strides, windows, sinks, varlen sequences and paged K/V. No torch import, no library load:
a tensor is anything with .shape, .stride(), .dtype, .device and .data_ptr()."""
import ctypes
from typing import NamedTuple

from ._structs import (FC_ERR_UNSUPPORTED, C_INT_MAX, DTYPES, KV_DTYPES, FC_DTYPE_SAME, FC_F16, FC_BF16,
                       FC_E4M3, AttentionParams, ArgumentError)

# torch's names of the enum fc_dtype values, for messages
TORCH_NAMES = {FC_F16: "torch.float16", FC_BF16: "torch.bfloat16", FC_E4M3: "torch.float8_e4m3fn"}


def fc_dtype(dtype):
    """enum fc_dtype of a 16-bit torch dtype or a name ("float16", "bf16", ...)."""
    code = DTYPES.get(str(dtype))
    if code is None:
        raise ArgumentError(f"dtype {dtype} is not supported (float16 and bfloat16 are)")
    return code


def q_dtype_code(dtype):
    """enum fc_dtype of q's type: FC_F16 or FC_BF16, or FC_E4M3 for FP8 attention (q, k and v
    torch.float8_e4m3fn); a torch dtype or a name ("bfloat16", "e4m3", ...)."""
    code = DTYPES.get(str(dtype), KV_DTYPES.get(str(dtype)))
    if code is None:
        raise ArgumentError(f"dtype {dtype} is not supported (float16 and bfloat16 are, and "
                            "float8_e4m3fn for FP8 attention: q, k and v all e4m3)")
    return code


def is_e4m3(dtype):
    """Whether a torch dtype or a name is e4m3 (torch.float8_e4m3fn)."""
    return KV_DTYPES.get(str(dtype)) == FC_E4M3


def out_dtype_of(q_code, out_dtype=None, out=None):
    """enum fc_dtype of out. A 16-bit q's out is q's dtype (out_dtype None or that dtype). FP8
    attention's (q_code FC_E4M3) is out_dtype, bfloat16 or float16; None: out's dtype when out is a
    16-bit tensor, else bfloat16 (FlashAttention-3's). out_dtype: a torch dtype or a name."""
    code = None
    if out_dtype is not None:
        code = DTYPES.get(str(out_dtype))
        if code is None:
            raise ArgumentError(f"out_dtype {out_dtype} is not supported: FP8 attention writes "
                                "torch.bfloat16 (the default) or torch.float16, and a 16-bit q's out "
                                "is q's dtype")
    if q_code != FC_E4M3:
        if code is not None and code != q_code:
            raise ArgumentError(f"out_dtype {out_dtype} with q {TORCH_NAMES[q_code]}: out is q's dtype; "
                                "another output type is FP8 attention's (q, k and v "
                                "torch.float8_e4m3fn)")
        return q_code
    if code is None and is_tensor(out):
        code = DTYPES.get(str(out.dtype))   # None: out is not 16-bit, and its check says so
    return FC_BF16 if code is None else code


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


def kv_dtype_of(q_dtype, k_dtype, v_dtype):
    """enum fc_dtype of K and V: FC_DTYPE_SAME when they are q's (FP8 attention: q, k and v all
    float8_e4m3fn), FC_E4M3 when both are float8_e4m3fn (an FP8 KV cache) beside a float16/bfloat16
    q."""
    code = q_dtype_code(q_dtype)
    if code == FC_E4M3:
        if is_e4m3(k_dtype) and is_e4m3(v_dtype):
            return FC_DTYPE_SAME
        raise ArgumentError(f"q is {q_dtype} (FP8 attention) but k is {k_dtype} and v is {v_dtype}: "
                            "FP8 attention takes q, k and v all torch.float8_e4m3fn (an FP8 KV cache "
                            "is k and v e4m3 beside a float16 or bfloat16 q)")
    if DTYPES.get(str(k_dtype)) == code and DTYPES.get(str(v_dtype)) == code:
        return FC_DTYPE_SAME
    if is_e4m3(k_dtype) and is_e4m3(v_dtype):
        return FC_E4M3
    for name, dtype in (("k", k_dtype), ("v", v_dtype)):
        if DTYPES.get(str(dtype)) != code and not is_e4m3(dtype):
            raise ArgumentError(f"{name} is {dtype} but q is {q_dtype} (k and v are q's dtype, or both "
                                "torch.float8_e4m3fn: an FP8 KV cache)")
    raise ArgumentError(f"k is {k_dtype} and v is {v_dtype}: an FP8 KV cache has both "
                        "torch.float8_e4m3fn")


def descale_tensor(value, name, batch, heads_kv, device):
    """An FP8 tensor's q_descale / k_descale / v_descale as the library takes it: a contiguous
    float32 [batch, heads_kv] tensor on the tensors' device (None stays None: a scale of 1). A float,
    or a float32 tensor that broadcasts to [batch, heads_kv] (a per-tensor [] or [1] scale), is
    expanded into a new tensor."""
    import torch

    if value is None:
        return None
    if not isinstance(value, torch.Tensor):
        try:
            value = torch.full((batch, heads_kv), float(value), dtype=torch.float32, device=device)
        except (TypeError, ValueError):
            raise ArgumentError(f"{name} must be a float or a float32 tensor of [batch, heads_kv] "
                                f"scales, not {type(value).__name__}") from None
    if value.dtype != torch.float32:
        raise ArgumentError(f"{name} must be float32, not {value.dtype}")
    if value.device != device:
        raise ArgumentError(f"{name} is on {value.device} but q is on {device}")
    if tuple(value.shape) != (batch, heads_kv) or not value.is_contiguous():
        try:
            value = value.expand(batch, heads_kv).contiguous()
        except RuntimeError:
            raise ArgumentError(f"{name} must be [batch, heads_kv] = [{batch}, {heads_kv}] (or broadcast "
                                f"to it), not {tuple(value.shape)}") from None
    return value


class Descales(NamedTuple):
    """The dequantization scales of an FP8 call (FlashAttention-3's q_descale, k_descale,
    v_descale): float32 [batch, heads_kv] tensors, or None (1)."""

    q: object = None
    k: object = None
    v: object = None


NO_DESCALES = Descales()


def descale_tensors(descales, q_dtype, k_dtype, batch, heads_kv, device):
    """Descales as the library takes them (descale_tensor each), from a Descales of what the caller
    gave. k_descale and v_descale are refused unless k and v are e4m3 (an FP8 KV cache, or FP8
    attention), q_descale unless q is (FP8 attention)."""
    if descales.q is not None and not is_e4m3(q_dtype):
        raise ArgumentError(f"q_descale scales FP8 attention's q: q is {q_dtype}, not "
                            "torch.float8_e4m3fn (a 16-bit q takes no scale)")
    if (descales.k is not None or descales.v is not None) and not is_e4m3(k_dtype):
        raise ArgumentError(f"k_descale and v_descale scale an FP8 KV cache (or FP8 attention's k and "
                            f"v): k and v are {k_dtype}, not torch.float8_e4m3fn")
    if all(d is None for d in descales):
        return NO_DESCALES
    return Descales(*(descale_tensor(d, name, batch, heads_kv, device)
                      for d, name in zip(descales, ("q_descale", "k_descale", "v_descale"))))


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


def predates_fp8_attention_message(lib, detail=""):
    """What a library without FP8 attention's fields (out_dtype, q_descale) is told."""
    version = lib.fc_version().decode()
    return (f"{lib.fc_path} (FlashCore {version}) predates FP8 attention (q, k and v e4m3): its "
            "fc_attention_params ends before out_dtype and q_descale; use a library built with them "
            "(src/flashcore.h)" + (f" (the library said: {detail})" if detail else ""))
