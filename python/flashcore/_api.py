"""flashcore's functions that need no torch: the per-device contexts, info(), plan(), explain()."""
import os
import sys
import threading
from typing import NamedTuple, Optional

from . import _binding
from ._binding import FC_DEVICE_NONE, ArgumentError, FlashCoreError

_contexts = {}
_contexts_lock = threading.Lock()

# A problem small enough for every kernel family, planned by info() to tell the target arch.
_PROBE_SHAPE = (1, 128, 1, 64)


def context(device):
    """The process's shared Context for a CUDA ordinal (or FC_DEVICE_NONE), created at first use.

    Thread-safe. The FC_DEVICE_NONE one keeps no disk cache: it only plans. A creation that fails
    raises FlashCoreError and is tried again at the next call.
    """
    device = int(device)
    found = _contexts.get(device)
    if found is not None:
        return found
    with _contexts_lock:
        found = _contexts.get(device)
        if found is None:
            found = _binding.Context(device, no_disk_cache=device == FC_DEVICE_NONE)
            _contexts[device] = found
        return found


class Plan(NamedTuple):
    """What the selector chose for a problem (struct fc_plan_info), and for which device."""

    kernel: str              # readable variant name, e.g. "sm90_f16_d128_causal_..._sm_90a"
    reason: str              # why this kernel, and why faster ones were not taken
    splits: int              # CTAs along the keys per row block: > 1 for split-KV (decode, GQA-packed rows)
    device: Optional[int]    # the CUDA ordinal planned for; None: no GPU (FC_DEVICE_NONE)

    @property
    def arch(self):
        """The target in the kernel's name, e.g. "sm_90a"."""
        _, _, arch = self.kernel.rpartition("_sm_")
        return f"sm_{arch}" if arch else ""


def _plan_device(q, device):
    """The ordinal to plan for: device if given ("none" or None-like -1 for no GPU), else the CUDA
    tensor's own, else FC_DEVICE_NONE."""
    if device is None:
        if _binding.is_tensor(q) and getattr(q.device, "type", None) == "cuda":
            return q.device.index
        return FC_DEVICE_NONE
    if device == "none":
        return FC_DEVICE_NONE
    if isinstance(device, int):
        return device
    if getattr(device, "type", None) == "cuda":   # torch.device("cuda", n)
        return device.index if device.index is not None else 0
    raise ArgumentError(f"device must be a CUDA ordinal, a CUDA torch.device or 'none', "
                        f"not {device!r}")


def plan(q, k, v, *, causal=False, softmax_scale=None, return_lse=False, window=(-1, -1),
         sinks=None, softcap=None, dtype=None, device=None, cu_seqlens_q=None, cu_seqlens_k=None,
         max_seqlen_q=None, max_seqlen_k=None, seqused_k=None, page_table=None, kv_dtype=None,
         out_dtype=None):
    """Which kernel flashcore.attention() would run for these inputs, and why. Needs no GPU.

    q, k, v: tensors on any device (CUDA, CPU, meta: only sizes, strides and dtype are read), or
    [batch, seq, heads, head_dim] shapes of packed tensors with dtype= ("float16", "bfloat16",
    "float8_e4m3fn" for FP8 attention, or a torch dtype). window and softcap choose kernels (their
    compile-time switches); sinks is a run-time input of every kernel (accepted, not read). Varlen:
    q, k, v [total_tokens, heads, head_dim] (tensors or shapes), cu_seqlens_q/k tensors on any
    device or lists (only their length, batch + 1, is read) and max_seqlen_q/k ints; seqused_k: any
    [batch] tensor or list (its presence selects the per-sequence kernels). Paged: page_table, any
    [batch, pages_per_seq] tensor or that shape, with k and v [num_pages, page_size, heads_kv,
    head_dim] (tensors or shapes); max_seqlen_k as attention() takes it. kv_dtype: with shapes, k's
    and v's type when it is not dtype ("float8_e4m3fn": an FP8 KV cache); tensors give theirs.
    out_dtype: FP8 attention's output type, torch.bfloat16 (None, the default) or torch.float16
    (or their names). device: the CUDA ordinal to plan for (its arch and tuned winners); by default
    the tensors' CUDA device, else none: a device-less context, which plans for sm_90a with the
    heuristic alone. Returns a Plan; raises FlashCoreError if the problem is invalid or unsupported
    (the library's own message).
    """
    ordinal = _plan_device(q, device)
    kernel, reason, splits = context(ordinal).plan(
        q, k, v, causal=causal, softmax_scale=softmax_scale, return_lse=return_lse, dtype=dtype,
        window=window, sinks=sinks, softcap=softcap, cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
        seqused_k=seqused_k, page_table=page_table, kv_dtype=kv_dtype, out_dtype=out_dtype)
    return Plan(kernel, reason, splits, None if ordinal == FC_DEVICE_NONE else ordinal)


def _describe_problem(q, k, sequences):
    """The problem's sizes, as `fcjit explain` names them."""
    if sequences.paged:
        (num_pages, page_size, heads_kv, _) = _binding.sizes_and_strides(k, "k", paged=True)[0]
        pages = (f"paged page_size={page_size} pages={num_pages} table=[{{}}, "
                 f"{sequences.pages_per_sequence()}] Sk={sequences.paged_seqlen_k(page_size)}")
        if sequences.varlen:
            (batch, tokens_q, heads_q, head_dim) = _binding.sizes_and_strides(
                q, "q", sequences.varlen_batch())[0]
            return (f"varlen B={batch} tokens q={tokens_q} max Sq={sequences.max_seqlen_q} "
                    f"{pages.format(batch)} Hq={heads_q} Hkv={heads_kv} D={head_dim}")
        (batch, seqlen_q, heads_q, head_dim) = _binding.sizes_and_strides(q, "q")[0]
        return (f"B={batch} Sq={seqlen_q} {pages.format(batch)} Hq={heads_q} Hkv={heads_kv} "
                f"D={head_dim}")
    if sequences.varlen:
        (batch, tokens_q, heads_q, head_dim) = _binding.sizes_and_strides(
            q, "q", sequences.varlen_batch())[0]
        (_, tokens_k, heads_kv, _) = _binding.sizes_and_strides(k, "k", batch)[0]
        return (f"varlen B={batch} tokens q={tokens_q} k={tokens_k} max Sq={sequences.max_seqlen_q}"
                f" Sk={sequences.max_seqlen_k} Hq={heads_q} Hkv={heads_kv} D={head_dim}")
    (batch, seqlen_q, heads_q, head_dim) = _binding.sizes_and_strides(q, "q")[0]
    (_, seqlen_k, heads_kv, _) = _binding.sizes_and_strides(k, "k")[0]
    return f"B={batch} Sq={seqlen_q} Sk={seqlen_k} Hq={heads_q} Hkv={heads_kv} D={head_dim}"


def _fp8_features(kernel, tokens):
    """explain()'s words for a kernel's FP8 inputs (its name's "q8" and "kv8" tokens), or ()."""
    if "q8" in tokens:   # FP8 attention
        if kernel.startswith("sm90_"):
            return ("FP8 attention (q, K and V e4m3 on WGMMA; P rounded to e4m3 for P V)",)
        return ("FP8 attention (q, K and V e4m3, converted exactly as they are read; P in fp32)",)
    if "kv8" in tokens:
        return ("FP8 K/V (e4m3, dequantized in the kernel)",)
    return ()


def explain(q, k, v, *, causal=False, softmax_scale=None, return_lse=False, window=(-1, -1),
            sinks=None, softcap=None, dtype=None, device=None, cu_seqlens_q=None,
            cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, seqused_k=None,
            page_table=None, kv_dtype=None, out_dtype=None):
    """plan()'s answer as text, in the manner of `fcjit explain`: the problem, the device, the
    kernel, the split count, the selector's reason and the kernel's mask and score features."""
    sequences = _binding.sequence_arguments(cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                            max_seqlen_k, seqused_k, page_table)
    chosen = plan(q, k, v, causal=causal, softmax_scale=softmax_scale, return_lse=return_lse,
                  window=window, sinks=sinks, softcap=softcap, dtype=dtype, device=device,
                  cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
                  max_seqlen_k=max_seqlen_k, seqused_k=seqused_k, page_table=page_table,
                  kv_dtype=kv_dtype, out_dtype=out_dtype)
    q_code = _binding.q_dtype_code(q.dtype if dtype is None else dtype)
    dtype_name = _binding.DTYPE_NAMES[q_code]
    tokens = chosen.kernel.split("_")
    if q_code == _binding.FC_E4M3:   # FP8 attention: q, k and v e4m3
        out_code = _binding.out_dtype_of(q_code, out_dtype)
        dtype_name += f" (q, K, V; out {_binding.DTYPE_NAMES[out_code]})"
    elif "kv8" in tokens:
        dtype_name += " (K/V e4m3)"
    scale = "" if softmax_scale is None else f" scale={softmax_scale:g}"
    options = "".join((f" window={tuple(window)}" if tuple(window) != (-1, -1) else "",
                       f" softcap={softcap:g}" if softcap else "", " +sinks" if sinks is not None else "",
                       " +seqused_k" if seqused_k is not None else ""))
    target = "no GPU" if chosen.device is None else f"cuda:{chosen.device}"
    features = ", ".join((("causal" if "causal" in tokens else "no causal mask"),
                          ("sliding window" if "win" in tokens else "no window"),
                          ("softcap" if "cap" in tokens else "no softcap"),
                          ("sinks (run time)" if sinks is not None else "no sinks"))
                         + (("per-sequence lengths (varlen, seqused_k)",) if "var" in tokens else ())
                         + (("paged K/V",) if sequences.paged else ())
                         + _fp8_features(chosen.kernel, tokens))
    lines = [f"{_describe_problem(q, k, sequences)} "
             f"{dtype_name}{' causal' if causal else ''}{options}{scale}"
             f"{' +lse' if return_lse else ''} on {target} ({chosen.arch})",
             f"  kernel:   {chosen.kernel}",
             f"  features: {features}"]
    if chosen.splits > 1:
        lines.append(f"  splits:   {chosen.splits} CTAs along the keys per row block, "
                     "then a combine kernel")
    lines.append(f"  why:      {chosen.reason}")
    if chosen.device is None:
        lines.append("  tuning:   none without a GPU: the heuristic's choice (tuned winners are "
                     "per GPU)")
    return "\n".join(lines)


class Info(dict):
    """A dict of facts about the installation; str() gives them one per line."""

    def __str__(self):
        width = max(len(key) for key in self)
        return "\n".join(f"{key:<{width}}  {value}" for key, value in self.items())


def _cache_path():
    """Where a context's default kernel cache is, by the rule src/flashcore.h documents."""
    # TODO(C side): the library does not report the path it resolved; this repeats its rule.
    if os.environ.get("FC_TUNING_DB"):
        return os.environ["FC_TUNING_DB"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "flashcore", "tuning.db")


def info(device=0):
    """What this installation has: versions, the library's path, and whether a context for the
    GPU (and one with no GPU, for planning) can be created, with the library's reason if not.

    Works without a GPU and without torch. The GPU's arch is read off a plan for it.
    """
    facts = Info()
    facts["flashcore"] = _binding.version()
    facts["library"] = str(_binding.load_library().fc_path)
    facts["package"] = os.path.dirname(os.path.abspath(__file__))
    torch = sys.modules.get("torch")
    missing = getattr(sys.modules.get(__package__), "_TORCH_MISSING", None)
    if missing:
        facts["torch"] = f"none: {missing}"
    else:
        facts["torch"] = torch.__version__ if torch is not None else "not imported"
    try:
        gpu_plan = plan(_PROBE_SHAPE, _PROBE_SHAPE, _PROBE_SHAPE, dtype="float16", device=device)
        facts["gpu"] = f"cuda:{device} ({gpu_plan.arch})"
    except FlashCoreError as error:
        facts["gpu"] = f"none: {error}"
    try:
        none_plan = plan(_PROBE_SHAPE, _PROBE_SHAPE, _PROBE_SHAPE, dtype="float16", device="none")
        facts["planning"] = f"ok without a GPU (for {none_plan.arch})"
    except FlashCoreError as error:
        facts["planning"] = f"failed: {error}"
    facts["cache"] = _cache_path()
    return facts
