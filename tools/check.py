"""GPU correctness check of FlashCore's attention, as shared/BENCH.md asks.

For each case: fresh randn inputs, out and lse poisoned with NaN, one call with lse and one without,
compared with attention computed in float64 from the same inputs. The error allowed is twice
PyTorch's own (the same attention in the input dtype, the standard way) plus 1e-5; the lse may be
off by 1e-3. Query rows that see no key must come out exactly 0 with lse -inf (their sink, with
sinks). Then the call is repeated and every output must be bit-identical to the first.

Four matrices: the base one (head dims x dtypes x causal x awkward shapes), the features one
(sliding windows, attention sinks, logit softcap, and their combinations with GQA, the LSE and
split-KV decode, on the same head dims and dtypes), the varlen one (random ragged batches and
seqused_k, with a CUDA-graph case: tools/check_varlen.py) and the paged one (random paged KV caches,
dense and varlen queries, with a CUDA-graph case: tools/check_paged.py); the last two are not part
of "all".

    python3 tools/check.py                          # ~440 cases, the selector's kernels
    python3 tools/check.py --quick                  # ~60 cases
    python3 tools/check.py --families reference,sm80,sm90,decode --matrix features
                                                    # each family forced (FC_FORCE_VARIANT), on
                                                    # the cases it takes
    python3 tools/check.py --matrix varlen --families sm80,decode --repeats 20
                                                    # ragged batches, seqused_k, a CUDA graph
    python3 tools/check.py --matrix paged --families decode --repeats 20
                                                    # paged KV caches (page sizes 1..256)

    python3 tools/check.py --kv-dtype e4m3 --families decode,sm80,reference
                                                    # an FP8 KV cache: K and V quantized to e4m3
                                                    # with per-(batch, K/V head) scales; the
                                                    # reference is computed on the dequantized
                                                    # K/V, PyTorch's own from them in q's dtype
    python3 tools/check.py --dtype e4m3 --out-dtype bf16,f16 --families sm90,reference
                                                    # FP8 attention: q, k and v quantized to e4m3
                                                    # with per-(batch, K/V head) scales, out in
                                                    # bf16 or f16; judged on the dequantized
                                                    # inputs, PyTorch's own from them in bf16,
                                                    # plus the bound of P's rounding to e4m3
    python3 tools/check.py --dtype e4m3 --quantize library --rotate --families sm90,reference
                                                    # FP8 attention on q, k and v drawn in bf16 and
                                                    # quantized by flashcore.quantize_fp8 (per
                                                    # (batch, K/V head) descales; --rotate: q and k
                                                    # rotated alike, a seed per case, v never);
                                                    # judged on the dequantized (rotated) inputs

FP8 attention's allowed error, per output element: 2 err_pt + 1e-5 (err_pt: PyTorch in bf16 on the
dequantized q, k, v) plus the bound of the kernel's rounding of P to e4m3 (half an ulp of e4m3's 3
mantissa bits, 2^-4 relative, and of its subnormal spacing under the row max's 2^8 scale, 2^-18
absolute, over a row sum of at least 1): 2^-4 sum_j w_j |v_jd| + 2^-18 sum_j |v_jd|, w the exact
softmax weights and v the dequantized values, j the row's visible keys.

With --quantize library the library's quantization is also held to e4m3's rounding: each dequantized
element of an unrotated tensor (v; q and k without --rotate) within 2^-4 |x| + 2^-10 descale of the
drawn bf16 x; q . k from the dequantized q and k (on up to 64 query rows and 64 keys per head) within
a relative RMS of QUANTIZED_SCORES_DRIFT of the drawn ones' (a rotation must keep the scores: q and k
rotated alike); and with --rotate, q and k moved (the rotation applied).

Prints one line per case and closes with the worst error / allowed and "N passed, M failed"; exits 1
if any case failed.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))   # also run as `python3 -m tools.check`
import package_path  # noqa: E402

package_path.use_repository_package_if_built()
import flashcore  # noqa: E402

HEAD_DIMS = (64, 96, 128, 192, 256)
QUICK_HEAD_DIMS = (64, 128)
DTYPE_NAMES = ("f16", "bf16")

ERROR_FACTOR = 2.0        # ours may be this many times PyTorch's own error ...
ERROR_SLACK = 1e-5        # ... plus this
LSE_TOLERANCE = 1e-3
QUICK_FIRST_CALL = False  # --quick-first-call
# FP8 attention rounds P to e4m3 for P V (FA3's form): per element, half an ulp of its 3 mantissa
# bits relative, and half its subnormal spacing (2^-9) under the row max's scale of 2^8 absolute.
P_RELATIVE_ROUNDING = 2.0 ** -4
P_ABSOLUTE_ROUNDING = 2.0 ** -18
# FP8 WGMMA adds each k-step of 32 e4m3 products into an accumulator keeping about 14 bits
# (DeepSeek-V3's measurement): a score is off by at most ceil(D / 32) 2^-14 scale sum_d |q_d k_d|, and
# the LSE (a smooth maximum) by the largest of those over the row's keys (src/reference_cpu_internal.h)
FP8_ACCUMULATION_ROUNDING = 2.0 ** -14
OUT_PAD = 8               # extra head_dim columns around out in the "strided" layout
REFERENCE_CHUNK_BYTES = 1 << 30   # float64 scores computed at once, per chunk of heads
# --quantize library: q . k of the dequantized inputs against the drawn bf16 ones', as a relative RMS
# (e4m3's rounding of q and k: about 0.035 for N(0, 1) values; q and k rotated apart: about 1.4), and
# the least relative RMS distance of a rotated q or k from the drawn one (a rotation: about 1.4)
QUANTIZED_SCORES_DRIFT = 0.15
ROTATION_MOVES = 0.5
SCORE_SAMPLES = 64        # query rows and keys per head on which the scores are compared


class Shape(NamedTuple):
    """One problem size. layout: "packed" (contiguous BSHD), "qkv" (q, k, v slices of one
    [B, S, 3, H, D] tensor), "strided" (q a transposed BHSD tensor, k/v slices of a [B, S, 2, H, D]
    tensor, out inside a wider buffer whose padding must stay untouched)."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_kv: int
    layout: str = "packed"
    softmax_scale: Optional[float] = None


# Run for every head_dim x dtype x causal. Seqlens below, at and above tile multiples, Sq == Sk and
# both Sq < Sk and Sq > Sk (causal: the first Sq - Sk query rows see no key), GQA ratios 1, 4, 8.
SHAPES = (
    Shape(1, 1, 1, 8, 8),
    Shape(3, 128, 128, 8, 2),
    Shape(1, 129, 129, 8, 8, "qkv"),
    Shape(3, 17, 129, 8, 8),
    Shape(1, 1000, 17, 8, 2),
    Shape(3, 17, 1, 8, 1),
    Shape(3, 1, 4097, 8, 1),
    Shape(1, 4097, 1000, 8, 8),
    Shape(3, 127, 128, 8, 2, "strided"),
    Shape(1, 1000, 1000, 8, 1, "packed", 0.3),
    Shape(1, 4097, 4097, 8, 2),
    # split-KV decode: many splits, 16 packed rows (causal per row), strided K/V
    Shape(2, 1, 20000, 32, 8),
    Shape(1, 2, 3000, 8, 1),
    Shape(2, 1, 777, 8, 2, "strided"),
    # few query rows: the decode kernel's 32-, 64- and 128-row tiles (27, 33 and 72 rows: partial ones)
    Shape(2, 16, 3000, 32, 8),
    Shape(3, 9, 2000, 12, 4, "strided"),
    Shape(1, 33, 1500, 8, 8),
    Shape(2, 16, 2500, 64, 8),
    Shape(1, 9, 1700, 64, 8, "strided"),
    # ... and the Hopper kernel's packed rows (a K/V head's query heads in each CTA's rows, which on
    # sm_90a take every GQA shape above, their keys split where the row blocks leave SMs idle; the
    # decode kernel through --families decode): 64 rows a CTA unsplit, strided q; large-batch decode
    # (64-key tiles)
    Shape(8, 16, 3000, 32, 8, "strided"),
    Shape(72, 1, 1500, 32, 8),
)

DECODE_ROWS = 128   # the decode kernel's packed rows at most: seqlen_q * (heads_q / heads_kv)

QUICK_SHAPES = (
    Shape(3, 129, 129, 8, 2),
    Shape(1, 1000, 17, 8, 8),
    Shape(1, 17, 1000, 8, 1, "strided"),
    Shape(2, 1, 20000, 32, 8),
)

# The features matrix, run for every head_dim x dtype: (causal, shape, window, sinks, softcap).
# Windows both sides, one side, through the causal switch, the diagonal alone, wider than the
# sequence, and leaving rows without a key (Sq > Sk); sinks N(0, 1), large positive (+20), and
# missing on some heads; softcaps 20-50 where they bite (scale 1: scores of std sqrt(head_dim));
# all three together with GQA, in prefill and in split-KV decode (16, 27, 64 and 128 packed rows,
# many splits).
_PREFILL = Shape(1, 1000, 1000, 8, 2)
_SHORT_Q = Shape(2, 129, 4097, 8, 1)
_LONG_Q = Shape(1, 1000, 300, 8, 8)            # causal or right-bounded: rows that see no key
_LARGE_SCORES = Shape(1, 1000, 1000, 8, 2, "packed", 1.0)
_DECODE = Shape(2, 1, 20000, 32, 8)
_DECODE_ROWS = Shape(1, 4, 777, 8, 2, "strided")
_FEW_ROWS = Shape(2, 16, 5000, 32, 8)         # 64 packed rows: the decode kernel's widest tile
_FEW_ROWS_GQA3 = Shape(1, 9, 3000, 12, 4, "strided")   # 27 packed rows
_FEW_ROWS_GQA8 = Shape(1, 16, 3000, 64, 8)    # 128 packed rows
FEATURES = (
    (True, _PREFILL, (256, -1), None, None),
    (False, _PREFILL, (100, 37), None, None),
    (False, _PREFILL, (-1, 0), None, None),
    (False, _PREFILL, (0, 0), None, None),
    (False, _SHORT_Q, (5000, 3000), None, None),
    (False, _SHORT_Q, (64, -1), None, None),
    (True, _LONG_Q, (10, 0), None, None),
    (False, _LONG_Q, (3, 2), (0.0, 1.0), None),
    (True, _PREFILL, (-1, -1), (0.0, 1.0), None),
    (False, _PREFILL, (-1, -1), (20.0, 1.0), None),
    (True, _PREFILL, (-1, -1), (-math.inf, 5.0), None),
    (True, _LARGE_SCORES, (-1, -1), None, 20.0),
    (False, _LARGE_SCORES, (-1, -1), None, 50.0),
    (True, _LARGE_SCORES, (128, 0), (0.0, 5.0), 30.0),
    (True, _DECODE, (4096, -1), (20.0, 1.0), 30.0),
    (True, _DECODE, (-1, -1), (0.0, 3.0), None),
    (False, _DECODE_ROWS, (300, 2), (0.0, 5.0), 50.0),
    (True, _FEW_ROWS, (2000, -1), (0.0, 3.0), 30.0),
    (False, _FEW_ROWS_GQA3, (500, 3), (20.0, 1.0), None),
    (True, _FEW_ROWS_GQA8, (1000, -1), (0.0, 3.0), 30.0),
)
QUICK_FEATURES = (
    (True, _PREFILL, (256, -1), None, None),
    (True, _LONG_Q, (10, 0), None, None),
    (False, _PREFILL, (-1, -1), (20.0, 1.0), None),
    (True, _LARGE_SCORES, (128, 0), (0.0, 5.0), 30.0),
    (True, _DECODE, (4096, -1), (20.0, 1.0), 30.0),
)


class Case(NamedTuple):
    """One check. window: (left, right) keys around each row's diagonal, -1 = unbounded. sinks:
    None, or (mean, std) of the per-head logits drawn for the case (std 0: all the mean; a mean
    of -inf: no sink on every other head). softcap: None or the cap."""

    dtype: str
    head_dim: int
    causal: bool
    shape: Shape
    window: tuple = (-1, -1)
    sinks: Optional[tuple] = None
    softcap: Optional[float] = None
    kv_dtype: Optional[str] = None   # "e4m3": an FP8 KV cache; None: q's dtype
    q_dtype: Optional[str] = None    # "e4m3": FP8 attention (q, k and v e4m3, out dtype); None: dtype
    quantize: Optional[str] = None   # FP8 attention: "library" (flashcore.quantize_fp8); None: ours
    rotate: bool = False             # with quantize "library": q and k rotated alike before quantizing

    def describe(self):
        s = self.shape
        scale = "" if s.softmax_scale is None else f" scale={s.softmax_scale}"
        extra = "".join((f" window={self.window}" if tuple(self.window) != (-1, -1) else "",
                         f" sinks={self.sinks}" if self.sinks is not None else "",
                         f" softcap={self.softcap:g}" if self.softcap is not None else "",
                         f" kv={self.kv_dtype}" if self.kv_dtype else "",
                         f" q/k/v={self.q_dtype}" if self.q_dtype else "",
                         self.quantization()))
        return (f"{self.dtype:<4} d{self.head_dim:<3} {'causal' if self.causal else 'full  '} "
                f"b{s.batch} sq{s.seqlen_q:<4} sk{s.seqlen_k:<4} hq{s.heads_q} hkv{s.heads_kv} "
                f"{s.layout:<7}{scale}{extra}")

    def quantization(self):
        """How the FP8 inputs were quantized, for describe (empty: quantize_e4m3, the default)."""
        if self.quantize != "library":
            return ""
        return " quantized by the library" + (", rotated" if self.rotate else "")


class Inputs(NamedTuple):
    q: object
    k: object
    v: object
    out: object       # what the library writes: a [B, Sq, Hq, D] view of storage
    storage: object   # the whole allocation around out, poisoned before each call
    guard: object     # the part of storage outside out (must stay NaN), or None


def torch_dtype(name):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[name]


def make_inputs(case, device, input_dtype=None):
    """Fresh randn q, k, v and an output buffer laid out as case.shape.layout says. input_dtype: q,
    k and v's torch dtype if not the case's (out's stays the case's)."""
    import torch

    s, d = case.shape, case.head_dim
    out_options = {"dtype": torch_dtype(case.dtype), "device": device}
    options = out_options if input_dtype is None else {"dtype": input_dtype, "device": device}
    if s.layout == "packed":
        q = torch.randn(s.batch, s.seqlen_q, s.heads_q, d, **options)
        k = torch.randn(s.batch, s.seqlen_k, s.heads_kv, d, **options)
        v = torch.randn(s.batch, s.seqlen_k, s.heads_kv, d, **options)
        out = torch.empty_like(q, dtype=out_options["dtype"])
        return Inputs(q, k, v, out, out, None)
    if s.layout == "qkv":
        if s.seqlen_q != s.seqlen_k or s.heads_q != s.heads_kv:
            raise ValueError(f"layout qkv needs seqlen_q == seqlen_k and heads_q == heads_kv: {s}")
        q, k, v = torch.randn(s.batch, s.seqlen_q, 3, s.heads_q, d, **options).unbind(2)
        out = torch.empty(s.batch, s.seqlen_q, s.heads_q, d, **out_options)
        return Inputs(q, k, v, out, out, None)
    if s.layout == "strided":
        q = torch.randn(s.batch, s.heads_q, s.seqlen_q, d, **options).transpose(1, 2)
        k, v = torch.randn(s.batch, s.seqlen_k, 2, s.heads_kv, d, **options).unbind(2)
        storage = torch.empty(s.batch, s.seqlen_q, s.heads_q, d + OUT_PAD, **out_options)
        return Inputs(q, k, v, storage[..., :d], storage, storage[..., d:])
    raise ValueError(f"unknown layout {s.layout!r}")


E4M3_MAX = 448.0   # torch.float8_e4m3fn's largest finite value


def quantize_e4m3(x, heads_kv=None, per_tensor=False, random_range=True):
    """x [B, S, H, D] as FP8 holds it: (float8_e4m3fn contiguous, float32 [B, heads_kv] descales,
    the dequantized values in float32, exact). A scale per (batch, group of H // heads_kv heads):
    heads_kv None is H (an FP8 cache's per-head scales); for q, the K/V head count (FA3's
    q_descale: a K/V head's query heads share one). per_tensor: one scale for all of x (still given
    as [B, heads_kv]). Each group's largest |x| maps to a random fraction (0.5-1) of e4m3's range
    (random_range: the scales differ from group to group), else to 448 (amax / 448, the usual)."""
    import torch

    batch, seqlen, heads, dim = x.shape
    heads_kv = heads_kv or heads
    grouped = x.float().reshape(batch, seqlen, heads_kv, heads // heads_kv, dim)
    if per_tensor:
        amax = grouped.abs().amax().clamp(min=1e-6).reshape(1, 1)
    else:
        amax = grouped.abs().amax(dim=(1, 3, 4)).clamp(min=1e-6)           # [B, Hkv]
    fraction = 0.5 + 0.5 * torch.rand_like(amax) if random_range else 1.0
    scale = (amax / (E4M3_MAX * fraction)).expand(batch, heads_kv).contiguous()
    per_head = scale.repeat_interleave(heads // heads_kv, dim=1)[:, None, :, None]   # [B, 1, H, 1]
    quantized = (x.float() / per_head).to(torch.float8_e4m3fn).contiguous()
    exact = quantized.float() * per_head
    return quantized, scale, exact


def e4m3_inputs(q, k, v, heads_kv, per_tensor=False):
    """q, k and v as FP8 attention takes them, each quantized by quantize_e4m3 (descale amax / 448,
    per (batch, K/V head), or per tensor): ([q8, k8, v8], {"q_descale": ..., "k_descale": ...,
    "v_descale": ...}), the descales float32 [B, heads_kv]."""
    quantized = [quantize_e4m3(x, heads_kv, per_tensor=per_tensor, random_range=False)[:2] for x in (q, k, v)]
    return [x8 for x8, _ in quantized], {f"{name}_descale": d for name, (_, d) in zip("qkv", quantized)}


def e4m3_in_layout(quantized, like):
    """quantized's e4m3 codes in a tensor with like's sizes and strides (the case's layout: a slice
    of a wider buffer, a transposed q), moved as bytes."""
    import torch

    placed = torch.empty_strided(like.shape, like.stride(), dtype=torch.float8_e4m3fn, device=like.device)
    placed.view(torch.uint8).copy_(quantized.view(torch.uint8))
    return placed


class LibraryQuantized(NamedTuple):
    """q, k and v as flashcore.quantize_fp8 quantized them (--quantize library)."""

    codes: tuple      # (q8, k8, v8) in the case's layout
    descales: dict    # {"q_descale": ..., "k_descale": ..., "v_descale": ...}, float32 [B, Hkv]
    exact: tuple      # (q, k, v) dequantized, float64 [B, S, H, D] (q and k rotated with rotate)
    rotation_seed: Optional[int]   # q's and k's (None: not rotated)


def rotation_seed_draw():
    """A rotation seed in [0, 2**64 - 1), from torch's CPU generator (torch.manual_seed's)."""
    import torch

    return int(torch.randint(-2**63, 2**63 - 1, ())) + 2**63


def dequantized(x8, descale):
    """x8's values in float64: x8 [B, S, H, D] times its descale [B, G], G dividing H (descale g
    covering heads g H / G onwards, quantize_fp8's layout)."""
    per_head = descale.double().repeat_interleave(x8.shape[2] // descale.shape[1], dim=1)
    return x8.double() * per_head[:, None, :, None]


def quantize_by_library(case, q, k, v):
    """q, k and v (16-bit, in the case's layout) quantized by flashcore.quantize_fp8 with descales
    per (batch, K/V head) (q's shared by a K/V head's query heads), q and k rotated alike with a seed
    drawn here when case.rotate, v never: a LibraryQuantized. Raises flashcore.FlashCoreError."""
    heads_kv = case.shape.heads_kv
    seed = rotation_seed_draw() if case.rotate else None
    codes, descales, exact = [], {}, []
    for name, x in (("q", q), ("k", k), ("v", v)):
        rotate = case.rotate and name != "v"
        x8, descale = flashcore.quantize_fp8(x, descale_heads=heads_kv, rotate=rotate,
                                             rotation_seed=seed if rotate else 0)
        codes.append(e4m3_in_layout(x8, x))
        descales[f"{name}_descale"] = descale
        exact.append(dequantized(x8, descale))
    return LibraryQuantized(tuple(codes), descales, tuple(exact), seed)


def sampled(x, dim, count):
    """x at up to count evenly spaced indices along dim, in order (all of x if it has no more)."""
    import torch

    size = x.shape[dim]
    if size <= count:
        return x
    index = torch.linspace(0, size - 1, count, device=x.device).round().long().unique()
    return x.index_select(dim, index)


def relative_rms(got, expected):
    """||got - expected|| / ||expected|| in float64 (0 when both are 0 or empty, inf when only
    expected is)."""
    norm = expected.double().norm().item()
    diff = (got.double() - expected.double()).norm().item()
    return diff / norm if norm else (0.0 if diff == 0 else math.inf)


def library_quantization_failures(case, drawn, quantized):
    """--quantize library: whether flashcore.quantize_fp8 gave e4m3's rounding of the drawn bf16
    (q, k, v), and a rotation keeping q . k. Returns (the row's fields, failures): each unrotated
    element within (2^-4 |x| + 2^-10 descale)(1 + 2^-10) of x (half an e4m3 step, normal or
    subnormal, and fp32's rounding of x / descale); q . k on up to SCORE_SAMPLES query rows and keys
    per head within a relative RMS of QUANTIZED_SCORES_DRIFT of the drawn one's; rotated q and k at a
    relative RMS distance of at least ROTATION_MOVES from the drawn ones."""
    import torch

    fields, failures = {}, []
    exact = dict(zip("qkv", quantized.exact))
    x_of = dict(zip("qkv", drawn))
    for name in "qkv":
        rotated = case.rotate and name != "v"
        x = x_of[name].double()
        if rotated:
            moved = relative_rms(exact[name], x)
            fields[f"{name}_rotation_moved"] = moved
            if not moved >= ROTATION_MOVES:
                failures.append(f"quantize_fp8(rotate=True) left {name} unrotated (its dequantized values "
                                f"{moved:.3g} from the drawn ones, relative RMS)")
            continue
        descale = quantized.descales[f"{name}_descale"].double()
        per_head = descale.repeat_interleave(x.shape[2] // descale.shape[1], dim=1)[:, None, :, None]
        allowed = (x.abs() * 2.0 ** -4 + per_head * 2.0 ** -10) * (1 + 2.0 ** -10)
        excess = ((exact[name] - x).abs() / allowed).max().item() if x.numel() else 0.0
        fields[f"{name}_quantization_ratio"] = excess
        if not excess <= 1.0:
            failures.append(f"quantize_fp8: a dequantized {name} is {excess:.3g} times e4m3's rounding "
                            "from the drawn value")
        del x, per_head, allowed
    group = case.shape.heads_q // case.shape.heads_kv

    def scores(q, k):
        q = sampled(q, 1, SCORE_SAMPLES).double()
        k = sampled(k, 1, SCORE_SAMPLES).double().repeat_interleave(group, dim=2)
        return torch.einsum("bqhd,bkhd->bhqk", q, k)

    drift = relative_rms(scores(exact["q"], exact["k"]), scores(x_of["q"], x_of["k"]))
    fields["quantized_scores_drift"] = drift
    if not drift <= QUANTIZED_SCORES_DRIFT:
        failures.append(f"q . k of the quantized{' and rotated' if case.rotate else ''} q and k is "
                        f"{drift:.3g} from the drawn ones' (relative RMS; allowed {QUANTIZED_SCORES_DRIFT})")
    return fields, failures


def visible_keys(seqlen_q, seqlen_k, causal, device, window=(-1, -1)):
    """[Sq, Sk] bool: query i sees key j iff j is within the window around its diagonal
    d = i + Sk - Sq (bottom-right aligned): d - left <= j <= d + right, -1 = unbounded on that
    side; causal is right 0."""
    import torch

    left, right = window
    right = 0 if causal else right
    rows = torch.arange(seqlen_q, device=device)[:, None]
    cols = torch.arange(seqlen_k, device=device)[None, :]
    diagonal = rows + (seqlen_k - seqlen_q)
    visible = torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=device)
    if right >= 0:
        visible &= cols <= diagonal + right
    if left >= 0:
        visible &= cols >= diagonal - left
    return visible


def capped(scores, softcap):
    """Logit soft-capping: softcap * tanh(scores / softcap), in the scores' dtype; None: as they are."""
    import torch

    return scores if softcap is None else softcap * torch.tanh(scores / softcap)


def attention_float64(q, k, v, visible, has_key, scale, sinks=None, softcap=None, p_bound=False):
    """Exact-ish attention of (h, Sq, D) q and (h, Sk, D) k/v: (out float64, lse float64 (h, Sq)).

    sinks: (h,) logits that join each row's denominator and bring no value (may be -inf: none);
    softcap: scores s become softcap * tanh(s / softcap) before masking. Rows with no visible key
    get out 0 and lse -inf (their sink, with sinks), the library's convention, without a NaN.
    p_bound: also the bound of FP8 attention's rounding of P (h, Sq, D), a third item:
    P_RELATIVE_ROUNDING sum_j w_j |v_jd| + P_ABSOLUTE_ROUNDING sum_j |v_jd| over the visible keys j,
    w the softmax weights; and the bound of its scores' accumulation on the LSE (h, Sq), a fourth:
    ceil(D / 32) FP8_ACCUMULATION_ROUNDING scale max_j sum_d |q_d k_jd| over the visible keys j.
    """
    import torch

    scores = capped(torch.matmul(q.double(), k.double().transpose(1, 2)).mul_(scale), softcap)
    scores.masked_fill_(~visible, -math.inf)
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(has_key[:, None], row_max, -math.inf)
    sink = None if sinks is None else sinks.double()[:, None, None]        # (h, 1, 1)
    if sink is not None:
        row_max = torch.maximum(row_max, sink)
    finite = torch.isfinite(row_max)
    row_max = torch.where(finite, row_max, 0.0)               # no key, no sink: a max of nothing
    probs = scores.sub_(row_max).exp_()                       # masked keys: exp(-inf) = 0
    row_sum = probs.sum(dim=-1, keepdim=True)                 # no key: 0
    if sink is not None:
        row_sum = row_sum + (sink - row_max).exp()            # -inf: 0
    denominator = torch.where(row_sum > 0, row_sum, 1.0)
    out = torch.matmul(probs, v.double()) / denominator
    lse = torch.where(row_sum > 0, row_max + row_sum.log(), -math.inf).squeeze(-1)
    if not p_bound:
        return out, lse
    magnitude = v.double().abs()
    bound = (torch.matmul(probs, magnitude).div_(denominator).mul_(P_RELATIVE_ROUNDING)
             + torch.matmul(visible.double(), magnitude).mul_(P_ABSOLUTE_ROUNDING))
    del probs
    products = torch.matmul(q.double().abs(), k.double().abs().transpose(1, 2))   # sum_d |q_d k_jd|
    products.masked_fill_(~visible, 0.0)
    steps = (q.shape[-1] + 31) // 32
    lse_bound = products.amax(dim=-1).mul_(steps * FP8_ACCUMULATION_ROUNDING * abs(scale))
    return out, lse, bound, lse_bound


def attention_pytorch(q, k, v, causal, visible, scale, sinks=None, softcap=None):
    """The same attention in the input dtype, the standard way (nothing upcast): PyTorch's error.
    A sink joins the softmax as one more column, gpt-oss's torch.cat([S, sinks])."""
    import torch

    scores = capped(torch.matmul(q, k.transpose(1, 2)) * scale, softcap)
    if causal:
        scores = scores.masked_fill(~visible, -math.inf)
    if sinks is None:
        return torch.matmul(torch.softmax(scores, dim=-1), v)
    column = sinks.to(scores.dtype)[:, None, None].expand(-1, scores.shape[1], 1)
    probs = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    return torch.matmul(probs, v)


def lse_pytorch(q, k, visible, scale, sinks=None, softcap=None):
    """The LSE PyTorch gets in the input dtype (scores as attention_pytorch makes them, then
    torch.logsumexp in fp32, a sink as one more column), (h, Sq) float32."""
    import torch

    scores = capped(torch.matmul(q, k.transpose(1, 2)) * scale, softcap).float()
    scores = scores.masked_fill(~visible, -math.inf)
    if sinks is not None:
        column = sinks.float()[:, None, None].expand(-1, scores.shape[1], 1)
        scores = torch.cat([scores, column], dim=-1)
    return torch.logsumexp(scores, dim=-1)


def lse_limit(lse_err_pt):
    """The LSE's allowance: LSE_TOLERANCE, or in FP8 attention (lse_err_pt given) twice PyTorch's own
    LSE error in bf16 if that is more: FP8 WGMMA accumulates Q K^T in less than fp32 (about 14 bits
    kept, DeepSeek-V3's report), so the LSE is held to PyTorch's error as out is."""
    return LSE_TOLERANCE if lse_err_pt is None else max(LSE_TOLERANCE, ERROR_FACTOR * lse_err_pt)


def reference(q, k, v, causal, scale, visible=None, window=(-1, -1), sinks=None, softcap=None,
              exact_kv=None, exact_q=None, p_bound=False):
    """Float64 out [B, Sq, Hq, D] and lse [B, Hq, Sq], err_pt, and has_key [Sq].

    Computed per batch and chunk of heads to bound the float64 scores' memory. err_pt is PyTorch's
    max abs error over the rows that see a key (PyTorch gives NaN on the others). visible: an
    [Sq, Sk] bool mask of any other shape of visibility (then causal and window are ignored).
    sinks: float32 [Hq] logits or None; softcap: None or the cap (see attention_float64).
    exact_kv: (k, v) for the float64 attention when k and v (then PyTorch's inputs) are rounded
    copies of them (an FP8 cache's dequantized values in q's dtype); exact_q likewise for q (FP8
    attention's). p_bound: also FP8 attention's bound of P's rounding [B, Sq, Hq, D] float64, a fifth
    item (attention_float64), PyTorch's own LSE error (lse_pytorch against the float64 one, over
    the rows that see a key), a sixth, and the bound of the scores' accumulation on the LSE [B, Hq,
    Sq] float64 (attention_float64), a seventh.
    """
    import torch

    batch, seqlen_q, heads_q, head_dim = q.shape
    seqlen_k, heads_kv = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    if visible is None:
        visible = visible_keys(seqlen_q, seqlen_k, causal, q.device, window)
    causal = not bool(visible.all())   # attention_pytorch masks only when some key is hidden
    has_key = visible.any(dim=1)
    out = torch.empty(batch, seqlen_q, heads_q, head_dim, dtype=torch.float64, device=q.device)
    lse = torch.empty(batch, heads_q, seqlen_q, dtype=torch.float64, device=q.device)
    bound = torch.empty_like(out) if p_bound else None
    lse_bound = torch.zeros_like(lse) if p_bound else None
    err_pt = lse_err_pt = 0.0
    heads_per_chunk = max(1, REFERENCE_CHUNK_BYTES // (seqlen_q * seqlen_k * 8))
    for b in range(batch):
        for first in range(0, heads_q, heads_per_chunk):
            heads = torch.arange(first, min(first + heads_per_chunk, heads_q), device=q.device)
            qh = q[b].index_select(1, heads).transpose(0, 1)             # (h, Sq, D)
            kh = k[b].index_select(1, heads // group).transpose(0, 1)    # (h, Sk, D)
            vh = v[b].index_select(1, heads // group).transpose(0, 1)
            sinks_h = None if sinks is None else sinks.index_select(0, heads)
            k64, v64 = (kh, vh) if exact_kv is None else (
                t[b].index_select(1, heads // group).transpose(0, 1) for t in exact_kv)
            q64 = qh if exact_q is None else exact_q[b].index_select(1, heads).transpose(0, 1)
            out_h, lse_h, *bound_h = attention_float64(q64, k64, v64, visible, has_key, scale,
                                                       sinks_h, softcap, p_bound)
            if p_bound:
                bound[b, :, first:first + len(heads)] = bound_h[0].transpose(0, 1)
                lse_bound[b, first:first + len(heads)] = bound_h[1]
            out_pt = attention_pytorch(qh, kh, vh, causal, visible, scale, sinks_h, softcap)
            err_pt = max(err_pt, max_abs_diff(out_pt[:, has_key], out_h[:, has_key]))
            if p_bound:
                lse_pt = lse_pytorch(qh, kh, visible, scale, sinks_h, softcap)
                lse_err_pt = max(lse_err_pt, max_abs_diff(lse_pt[:, has_key], lse_h[:, has_key]))
            out[b, :, first:first + len(heads)] = out_h.transpose(0, 1)
            lse[b, first:first + len(heads)] = lse_h
            del out_h, lse_h, out_pt, bound_h
    if p_bound:
        return out, lse, err_pt, has_key, bound, lse_err_pt, lse_bound
    return out, lse, err_pt, has_key


def lse_excess(lse, ref_lse, lse_bound, has_key):
    """FP8 attention: the largest |lse - ref_lse| less the row's accumulation bound, over the rows
    that see a key (lse [B, Hq, Sq]); judged against lse_limit in the LSE error's place."""
    excess = (lse[:, :, has_key].double() - ref_lse[:, :, has_key]).abs() - lse_bound[:, :, has_key]
    return excess.max().item() if excess.numel() else 0.0


def bit_equal(a, b):
    """True when a and b hold the same bits (unlike torch.equal: NaN matches NaN, -0 not 0)."""
    import torch

    as_int = {2: torch.int16, 4: torch.int32}[a.element_size()]
    return torch.equal(a.view(as_int), b.view(as_int))


def max_abs_diff(a, b):
    """max |a - b| in float64; 0 for empty tensors."""
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def worst_ratio(got, expected, allowed):
    """max |got - expected| / allowed in float64 (allowed: a number, or a tensor per element); 0 for
    empty tensors, NaN where got has one."""
    if not got.numel():
        return 0.0
    return (got.double() - expected.double()).abs().div_(allowed).max().item()


def effective_scale(case):
    """The softmax scale as the library sees it: a float32, 1/sqrt(head_dim) by default."""
    scale = case.shape.softmax_scale or 1.0 / math.sqrt(case.head_dim)
    return ctypes.c_float(scale).value


def make_sinks(case, device):
    """The case's float32 [Hq] sinks: mean + std * randn; a mean of -inf: every other head has
    none (-inf), the rest N(0, std). None without sinks."""
    import torch

    if case.sinks is None:
        return None
    mean, std = case.sinks
    sinks = torch.randn(case.shape.heads_q, dtype=torch.float32, device=device) * std
    if mean == -math.inf:
        sinks[::2] = -math.inf
        return sinks
    return sinks + mean


def context_device(context):
    """The torch device a context runs on."""
    import torch

    return torch.device("cuda", context.device)


def run_case(context, case, repeats):
    """Checks one case; returns its JSON row (with "passed" and the list of "failures")."""
    import torch

    device = context_device(context)
    library = case.quantize == "library"   # q, k, v drawn in bf16, quantized by flashcore.quantize_fp8
    inputs = make_inputs(case, device, torch.bfloat16) if library else make_inputs(case, device)
    q, k, v, out = inputs.q, inputs.k, inputs.v, inputs.out
    s = case.shape
    sinks = make_sinks(case, device)
    lse = torch.empty(s.batch, s.heads_q, s.seqlen_q, dtype=torch.float32, device=device)
    kwargs = {"causal": case.causal, "softmax_scale": case.shape.softmax_scale, "out": out,
              "window": tuple(case.window), "sinks": sinks, "softcap": case.softcap}
    exact_kv = exact_q = None
    quantized = quantize_error = None
    if library:   # FP8 attention on the library's codes and descales, as below
        try:
            quantized = quantize_by_library(case, q, k, v)
        except flashcore.FlashCoreError as error:
            quantize_error = f"quantize_fp8: {error}"
        else:
            exact_q, exact_kv = quantized.exact[0], quantized.exact[1:]
            q, k, v = quantized.codes
            kwargs.update(out_dtype=torch_dtype(case.dtype), **quantized.descales)
    elif case.kv_dtype or case.q_dtype:   # ours reads e4m3 k, v (and q); the references their values
        (k8, k_scale, k_exact), (v8, v_scale, v_exact) = quantize_e4m3(k), quantize_e4m3(v)
        exact_kv = (k_exact, v_exact)
        k, v = e4m3_in_layout(k8, k), e4m3_in_layout(v8, v)
        kwargs.update(k_descale=k_scale, v_descale=v_scale)
    if case.q_dtype and not library:   # FP8 attention: q's scales per (batch, K/V head); out in
        q8, q_scale, exact_q = quantize_e4m3(q, s.heads_kv)   # the case's dtype
        q = e4m3_in_layout(q8, q)
        kwargs.update(q_descale=q_scale, out_dtype=torch_dtype(case.dtype))
    row = {**case.shape._asdict(), "dtype": case.dtype, "head_dim": case.head_dim,
           "causal": case.causal, "window": list(case.window), "sinks": case.sinks,
           "softcap": case.softcap, "kv_dtype": case.kv_dtype, "q_dtype": case.q_dtype,
           "repeats": repeats}
    if library:
        row.update(quantize="library", rotate=case.rotate,
                   rotation_seed=None if quantized is None else quantized.rotation_seed)
    if quantize_error is not None:
        row.update(passed=False, failures=[quantize_error])
        return row
    failures = []
    if library:
        fields, failures = library_quantization_failures(case, (inputs.q, inputs.k, inputs.v), quantized)
        row.update(fields)

    def poisoned_call(with_lse):
        """Runs ours on NaN-filled out and lse; False if it wrote outside out."""
        inputs.storage.fill_(math.nan)
        lse.fill_(math.nan)
        context.attention(q, k, v, lse=lse if with_lse else None, **kwargs)
        torch.cuda.synchronize(device)
        return inputs.guard is None or bool(torch.isnan(inputs.guard).all())

    try:
        row["kernel"] = context.plan(q, k, v, lse=lse, **kwargs)[0]
        guard_intact = poisoned_call(with_lse=True)
        first_out, first_lse = out.clone(), lse.clone()
        if QUICK_FIRST_CALL:   # the first call's kernel judged above, the planned one from here
            context.wait_compiles()
        guard_intact &= poisoned_call(with_lse=False)
        out_no_lse = out.clone()
    except flashcore.FlashCoreError as error:
        row.update(passed=False, failures=[str(error)])
        return row

    # PyTorch's inputs: the dequantized values rounded to q's dtype (FP8 attention: to bf16)
    pytorch_dtype = torch.bfloat16 if case.q_dtype else q.dtype
    ref_q = q if exact_q is None else exact_q.to(pytorch_dtype)
    ref_k, ref_v = (k, v) if exact_kv is None else (t.to(pytorch_dtype) for t in exact_kv)
    ref_out, ref_lse, err_pt, has_key, *p_bound = reference(
        ref_q, ref_k, ref_v, case.causal, effective_scale(case), window=tuple(case.window),
        sinks=sinks, softcap=case.softcap, exact_kv=exact_kv, exact_q=exact_q,
        p_bound=bool(case.q_dtype))
    bound = ERROR_FACTOR * err_pt + ERROR_SLACK
    # per element: the bound, plus P's rounding's in FP8 attention
    allowed = bound + p_bound[0] if p_bound else bound
    err = max_abs_diff(first_out, ref_out)
    err_no_lse = max_abs_diff(out_no_lse, ref_out)
    ratios = [worst_ratio(o, ref_out, allowed) for o in (first_out, out_no_lse)]
    ratio = math.nan if any(math.isnan(r) for r in ratios) else max(ratios)
    lse_err = max_abs_diff(first_lse[:, :, has_key], ref_lse[:, :, has_key])
    row.update(err=err, err_pt=err_pt, bound=bound, err_no_lse=err_no_lse, lse_err=lse_err,
               ratio=ratio, rows_without_key=int((~has_key).sum()))
    if p_bound:
        row["p_bound_max"] = p_bound[0].max().item() if p_bound[0].numel() else 0.0

    if not bool(torch.isfinite(first_out).all()) or not bool(torch.isfinite(out_no_lse).all()):
        failures.append("NaN/Inf in out (or an element left unwritten)")
    if not guard_intact:
        failures.append("wrote outside out")
    if not all(bool((o[:, ~has_key] == 0).all()) for o in (first_out, out_no_lse)):
        failures.append("a row that sees no key is not exactly 0")
    if p_bound:   # judged per element
        if not ratio <= 1.0:
            failures.append(f"err / (bound + P's rounding bound) {ratio:.3g} > 1 (err {err:.3g}, "
                            f"err without lse {err_no_lse:.3g}, bound {bound:.3g})")
    else:
        if not err <= bound:
            failures.append(f"err {err:.3g} > {bound:.3g}")
        if not err_no_lse <= bound:
            failures.append(f"err without lse {err_no_lse:.3g} > {bound:.3g}")
    lse_allowed = lse_limit(p_bound[1] if p_bound else None)
    lse_judged = lse_excess(first_lse, ref_lse, p_bound[2], has_key) if p_bound else lse_err
    if p_bound:
        row["lse_excess"] = lse_judged
    if not bool(torch.isfinite(first_lse[:, :, has_key]).all()) or not lse_judged <= lse_allowed:
        failures.append(f"lse err {lse_err:.3g} (past the accumulation bound: {lse_judged:.3g}) > {lse_allowed:.3g}"
                        if p_bound else f"lse err {lse_err:.3g} > {lse_allowed:.3g}")
    keyless_lse = first_lse[:, :, ~has_key]
    if sinks is None and not bool(torch.isneginf(keyless_lse).all()):
        failures.append("lse is not -inf on a row that sees no key")
    if sinks is not None and keyless_lse.numel():   # their sink, or -inf where a head has none
        expected = sinks[None, :, None].expand_as(keyless_lse)
        none = torch.isneginf(expected)
        if not (bool(torch.isneginf(keyless_lse[none]).all())
                and max_abs_diff(keyless_lse[~none], expected[~none]) <= LSE_TOLERANCE):
            failures.append("lse is not the sink on a row that sees no key")
    del ref_out, ref_lse, p_bound, allowed

    try:
        if QUICK_FIRST_CALL:   # the repeats compare the planned kernel's runs with each other
            poisoned_call(with_lse=True)
            first_out, first_lse = out.clone(), lse.clone()
        for run in range(2, repeats + 1):
            poisoned_call(with_lse=True)
            if not (bit_equal(out, first_out) and bit_equal(lse, first_lse)):
                failures.append(f"not deterministic: run {run} differs from run 1")
                break
    except flashcore.FlashCoreError as error:
        failures.append(f"run {run}: {error}")

    row.update(passed=not failures, failures=failures)
    return row


def random_matrix(matrix):
    """The module of a randomly drawn matrix (its build_cases, family_takes, run_case and
    run_graph_case), or None for the base and features ones."""
    if matrix == "varlen":
        import check_varlen

        return check_varlen
    if matrix == "paged":
        import check_paged

        return check_paged
    return None


def build_cases(head_dims, quick, matrix="all", seed=0, kv_dtype=None, q_dtype=None,
                out_dtypes=("bf16",), quantize=None, rotate=False):
    """The base matrix (head dims x dtypes x causal x shapes) and the features one (head dims x
    dtypes x FEATURES), or one of them, or the varlen or paged one (drawn from seed). q_dtype
    "e4m3": FP8 attention, whose dtypes are out_dtypes (the output's, and the inputs' before
    quantization, but with quantize "library": q, k and v drawn in bf16 and quantized by
    flashcore.quantize_fp8, q and k rotated alike with rotate)."""
    module = random_matrix(matrix)
    if module is not None:
        return module.build_cases(head_dims, quick, seed)
    shapes = QUICK_SHAPES if quick else SHAPES
    dtypes = out_dtypes if q_dtype else DTYPE_NAMES
    base = [Case(dtype, head_dim, causal, shape)
            for head_dim in head_dims for dtype in dtypes for causal in (False, True)
            for shape in shapes]
    features = [Case(dtype, head_dim, causal, shape, window, sinks, softcap)
                for head_dim in head_dims for dtype in dtypes
                for causal, shape, window, sinks, softcap in (QUICK_FEATURES if quick else FEATURES)]
    cases = {"all": base + features, "base": base, "features": features}[matrix]
    library = quantize == "library"   # else None: quantize_e4m3's (the default, "python")
    return [case._replace(kv_dtype=kv_dtype, q_dtype=q_dtype, quantize="library" if library else None,
                          rotate=library and rotate) for case in cases]


def packs_gqa(family):
    """Whether an FC_FORCE_VARIANT value asks for the sm90 kernel's GQA-packed rows (its g1)."""
    return family is not None and family.startswith("sm90:") and "g1" in family.partition(":")[2]


def family_takes(family, case):
    """Whether a forced family takes a case (None: the selector's choice takes every case): sm90
    head dims in multiples of 32 (its packed rows, g1: dense 16-bit GQA of 2 to 64 query heads a K/V
    head), sm80 and decode of 16, decode at most DECODE_ROWS packed query rows."""
    s = case.shape
    if family in (None, "reference"):
        return True
    if packs_gqa(family):
        return (case.head_dim % 32 == 0 and not case.q_dtype and not case.kv_dtype
                and 2 <= s.heads_q // s.heads_kv <= 64)
    if case.q_dtype:   # FP8 attention: the sm90 kernel (head_dim 64, 128, 192, 256) and reference
        return family == "sm90" and case.head_dim % 64 == 0
    if case.kv_dtype and family not in ("decode", "sm80"):   # FP8 K/V: decode, sm80 and reference
        return False
    if family == "sm90":
        return case.head_dim % 32 == 0
    packed = s.seqlen_q * (s.heads_q // s.heads_kv)
    multiple = 32 if case.kv_dtype else 16
    return case.head_dim % multiple == 0 and (family != "decode" or packed <= DECODE_ROWS)


def format_row(case, row):
    verdict = "PASS"
    if not row["passed"]:
        verdict = f"FAIL {'; '.join(row['failures'])} [{row.get('kernel', 'no kernel')}]"
    if "err" not in row:
        return f"{case.describe()}  {verdict}"
    # the varlen and paged matrices' rows (check_varlen.judge) give their bound, not a ratio
    ratio = f" err/allowed {row['ratio']:.2f}" if "ratio" in row else ""
    return (f"{case.describe()}  err {row['err']:.2e} err_pt {row['err_pt']:.2e} "
            f"lse {row['lse_err']:.2e}{ratio}  {verdict}")


def out_dtype_list(text):
    names = text.split(",")
    unknown = set(names) - set(DTYPE_NAMES)
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown output types {sorted(unknown)}: use bf16, f16")
    return names


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small matrix (~24 cases)")
    parser.add_argument("--head-dims", type=lambda text: [int(x) for x in text.split(",")],
                        help="comma-separated head dims (default 64,96,128,192,256; "
                             "--quick: 64,128)")
    parser.add_argument("--repeats", type=int, default=100,
                        help="runs of each case that must be bit-identical (default 100)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed (default 0)")
    parser.add_argument("--json", metavar="PATH", help="write every case's row here")
    parser.add_argument("--matrix", choices=("all", "base", "features", "varlen", "paged"),
                        default="all",
                        help="the base matrix, the features one (windows, sinks, softcap), both "
                             "(all), the varlen one (ragged batches, seqused_k, a CUDA graph) or the "
                             "paged one (paged KV caches, dense and varlen queries, a CUDA graph)")
    parser.add_argument("--kv-dtype", choices=("e4m3",),
                        help="K and V as an FP8 cache (base and features matrices): e4m3 with "
                             "per-(batch, K/V head) scales, judged on the dequantized values")
    parser.add_argument("--dtype", choices=("e4m3",),
                        help="FP8 attention (base and features matrices): q, k and v e4m3 with "
                             "per-(batch, K/V head) scales, judged on the dequantized values, "
                             "PyTorch's own error from them in bf16, plus P's rounding bound")
    parser.add_argument("--out-dtype", type=out_dtype_list, default=["bf16"],
                        help="with --dtype e4m3: the output's types, comma-separated bf16 and/or "
                             "f16 (default bf16)")
    parser.add_argument("--quantize", choices=("python", "library"), default="python",
                        help="with --dtype e4m3: how q, k and v become e4m3: python (the default: "
                             "drawn in the output's type and quantized here, scales at a random "
                             "fraction of e4m3's range) or library (drawn in bf16 and quantized by "
                             "flashcore.quantize_fp8, descales amax / 448 per (batch, K/V head); "
                             "also checks the library's quantization)")
    parser.add_argument("--rotate", action="store_true",
                        help="with --quantize library: q and k rotated alike before quantizing "
                             "(quantize_fp8(rotate=True), a rotation_seed drawn per case; v never)")
    parser.add_argument("--quick-first-call", action="store_true",
                        help="check the quick first call too (base and features matrices): contexts "
                             "without a disk cache and with it on, so that a case whose planned "
                             "kernel is new is first run by the quick kernel; that call's out and "
                             "lse are judged, then the context waits for the planned kernel, whose "
                             "out is judged (the call without lse) and whose runs must be "
                             "bit-identical. Default: off, every call the planned kernel")
    parser.add_argument("--families", type=lambda text: text.split(","), default=None,
                        help="comma-separated families to force in turn through FC_FORCE_VARIANT "
                             "(reference, sm80, sm90, decode, or any FC_FORCE_VARIANT value), each "
                             "on the cases it takes (default: FC_FORCE_VARIANT's value where the "
                             "environment sets it, else the selector's choice)")
    args = parser.parse_args(argv)
    if args.families is None:   # the environment's forced variant, as every other tool takes it
        args.families = [os.environ.get("FC_FORCE_VARIANT") or None]
    if args.quantize == "library" and args.dtype != "e4m3":
        parser.error("--quantize library: FP8 attention's inputs only; pass --dtype e4m3 too")
    if args.rotate and args.quantize != "library":
        parser.error("--rotate: the library's quantization rotates; pass --quantize library (and "
                     "--dtype e4m3) too")
    return args


def forced_context(device, family):
    """A context with FC_FORCE_VARIANT set to family (read when a context is created), or the
    selector's when family is None. With --quick-first-call, a context that keeps no disk cache
    (so that every case's first kernel is cold) with the quick first call on."""
    saved = os.environ.pop("FC_FORCE_VARIANT", None)
    try:
        if family is not None:
            os.environ["FC_FORCE_VARIANT"] = family
        if QUICK_FIRST_CALL:
            return flashcore.Context(device, no_disk_cache=True, quick_first_call=True)
        return flashcore.Context(device, quick_first_call=False)
    finally:
        os.environ.pop("FC_FORCE_VARIANT", None)
        if saved is not None:
            os.environ["FC_FORCE_VARIANT"] = saved


def main(argv=None):
    args = parse_args(argv)
    global QUICK_FIRST_CALL
    QUICK_FIRST_CALL = args.quick_first_call
    if QUICK_FIRST_CALL and args.matrix not in ("base", "features"):
        print("--quick-first-call: the base and features matrices", flush=True)
        return 2
    if args.kv_dtype and args.matrix in ("varlen", "paged"):
        print(f"--kv-dtype: the base and features matrices (not {args.matrix}); an FP8 cache's varlen "
              "and paged forms are in the gpu suite", flush=True)
        return 2
    if args.dtype and (args.kv_dtype or args.matrix in ("varlen", "paged")):
        print("--dtype e4m3: the base and features matrices, without --kv-dtype (FP8 attention's k "
              "and v are e4m3 already; its varlen form is in the gpu suite)", flush=True)
        return 2
    import torch

    torch.cuda.set_device(args.device)
    torch.manual_seed(args.seed)
    head_dims = args.head_dims or (QUICK_HEAD_DIMS if args.quick else HEAD_DIMS)
    cases = build_cases(head_dims, args.quick, args.matrix, args.seed, args.kv_dtype, args.dtype,
                        args.out_dtype, args.quantize, args.rotate)
    drawn = random_matrix(args.matrix)
    takes = drawn.family_takes if drawn else family_takes
    run = drawn.run_case if drawn else run_case
    if args.matrix == "paged":
        with flashcore.Context(args.device) as probe:
            if not flashcore._binding.library_takes_paging(probe):
                print(flashcore._binding.predates_paging_message(probe._lib), flush=True)
                return 1
    print(f"FlashCore {flashcore.version()} ({flashcore.library_path()}) on "
          f"{torch.cuda.get_device_name(args.device)}, "
          f"torch {torch.__version__}: {len(cases)} cases, {args.repeats} runs each", flush=True)

    rows = []
    for family in args.families:
        taken = [case for case in cases if takes(family and family.split(":")[0], case)]
        if family is not None:
            print(f"--- FC_FORCE_VARIANT={family}: {len(taken)} of the {len(cases)} cases", flush=True)
        with forced_context(args.device, family) as context:
            for case in taken:
                start = time.perf_counter()
                row = run(context, case, args.repeats)
                row["seconds"] = round(time.perf_counter() - start, 3)
                row["forced"] = family
                rows.append(row)
                print(format_row(case, row), flush=True)
                torch.cuda.empty_cache()
            if drawn:
                start = time.perf_counter()
                case, row = drawn.run_graph_case(context, family and family.split(":")[0],
                                                 seed=args.seed)
                row["seconds"] = round(time.perf_counter() - start, 3)
                row["forced"] = family
                rows.append(row)
                replayed = "new lengths" + (" and page tables" if args.matrix == "paged" else "")
                print(f"CUDA graph, replayed with {replayed}: {format_row(case, row)}", flush=True)

    passed = sum(row["passed"] for row in rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    judged = [row for row in rows if "ratio" in row]
    if judged:
        worst = max(judged, key=lambda row: -math.inf if math.isnan(row["ratio"]) else row["ratio"])
        nan = sum(math.isnan(row["ratio"]) for row in judged)
        dtype = f"e4m3->{worst['dtype']}" if worst.get("q_dtype") else worst["dtype"]
        print(f"worst error / allowed: {worst['ratio']:.3f} ({dtype} d{worst['head_dim']} "
              f"b{worst['batch']} sq{worst['seqlen_q']} sk{worst['seqlen_k']} hq{worst['heads_q']} "
              f"hkv{worst['heads_kv']}{' causal' if worst['causal'] else ''}, {worst.get('kernel', '?')})"
              + (f"; {nan} cases with NaN" if nan else ""), flush=True)
    print(f"{passed} passed, {len(rows) - passed} failed", flush=True)
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
