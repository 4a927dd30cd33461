"""tools/check.py's varlen matrix (--matrix varlen): ragged batches and seqused_k, by BENCH.md's rule.

Each case is a random ragged batch (seeded: --seed gives the same cases): 1 to 64 sequences of 0 to
5000 tokens (most short or moderate, a few long, some empty), self-attention, a prefix before the
queries (chunked prefill) or independent key counts (rows that see no key), and decode-shaped
batches (a few queries per sequence against long keys); GQA 1/4/8, causal and not, fp16/bf16, the
head dims asked for, seqused_k in about half the cases (the keys past it NaN), a window in a few.
Packed q/k/v [tokens, heads, head_dim], or slices of one [tokens, 3, heads, head_dim] tensor.

The reference is tools/check.py's float64 one, per sequence (its keys cut at seqused_k); PyTorch's
error err_pt is the largest over the sequences. Tokens after the last sequence (slack in the packed
tensors) hold NaN in q, k and v and must keep their NaN in out and lse; out and lse are poisoned
before each call. One more case per family captures the call in a CUDA graph and replays it with new
values, and new lengths, written into the same tensors.
"""
import ctypes
import math
import random
from typing import NamedTuple, Optional

import check

LONGEST = 5000
MAX_SEQUENCES = 64
TOKENS_Q_CAP = 24000        # per case, so that one family's matrix runs in a few minutes
SCORES_CAP = 60_000_000     # sum over sequences of len_q * len_k: the reference's work
DECODE_ROWS = check.DECODE_ROWS   # the decode kernel's packed rows at most: max_seqlen_q * (heads_q / heads_kv)
TILE_EDGES = (63, 64, 65, 127, 128, 129, 255, 256, 257)
GQA = ((4, 4), (8, 2), (8, 1))   # (heads_q, heads_kv): ratios 1, 4, 8


class VarlenCase(NamedTuple):
    """One ragged batch. lens_q, lens_k: each sequence's query and key counts; used_k: seqused_k's
    values, or None; pad_q, pad_k: tokens of no sequence after the last one; layout "packed" or
    "qkv" (q, k, v slices of one tensor: lens_q == lens_k)."""

    dtype: str
    head_dim: int
    causal: bool
    heads_q: int
    heads_kv: int
    lens_q: tuple
    lens_k: tuple
    used_k: Optional[tuple] = None
    window: tuple = (-1, -1)
    pad_q: int = 0
    pad_k: int = 0
    layout: str = "packed"

    @property
    def max_seqlen_q(self):   # the library wants both maxima positive, even when every sequence is empty
        return max(1, max(self.lens_q))

    @property
    def max_seqlen_k(self):
        return max(1, max(self.lens_k))

    def keys_used(self, b):
        return self.lens_k[b] if self.used_k is None else self.used_k[b]

    def describe(self):
        extra = "".join((f" window={self.window}" if tuple(self.window) != (-1, -1) else "",
                         " +seqused_k" if self.used_k is not None else "",
                         f" {self.layout}" if self.layout != "packed" else ""))
        return (f"{self.dtype:<4} d{self.head_dim:<3} {'causal' if self.causal else 'full  '} "
                f"hq{self.heads_q} hkv{self.heads_kv} B={len(self.lens_q):<2} q={sum(self.lens_q)}"
                f"(max {max(self.lens_q)}) k={sum(self.lens_k)}(max {max(self.lens_k)}) "
                f"empty={sum(1 for n in self.lens_q if n == 0)} pad={self.pad_q}/{self.pad_k}{extra}")


def ragged_lengths(rng, count, long_ones):
    """count lengths: about 1/8 empty, 1/8 of 1..17, 1/8 at tile edges, most 18..600, and
    long_ones of 2000..5000."""
    lengths = []
    for _ in range(count):
        draw = rng.random()
        if draw < 0.125:
            lengths.append(0)
        elif draw < 0.25:
            lengths.append(rng.randint(1, 17))
        elif draw < 0.375:
            lengths.append(rng.choice(TILE_EDGES))
        else:
            lengths.append(rng.randint(18, 600))
    for index in rng.sample(range(count), min(long_ones, count)):
        lengths[index] = rng.randint(2000, LONGEST)
    return lengths


def sequence_count(rng):
    return rng.choice((1, rng.randint(2, 8), rng.randint(2, 8), rng.randint(9, MAX_SEQUENCES)))


def prefill_case(rng, dtype, head_dim, causal, windowed=False):
    """Self-attention, a prefix before the queries, or independent key counts; a long sequence in
    about a third of them; a sliding window if windowed."""
    heads_q, heads_kv = rng.choice(GQA)
    while True:
        count = sequence_count(rng)
        lens_q = ragged_lengths(rng, count, long_ones=int(rng.random() < 0.35))
        form = rng.choice(("self", "prefix", "cross"))
        if form == "self":
            lens_k = list(lens_q)
        elif form == "prefix":
            lens_k = [n + rng.choice((0, rng.randint(1, 2000))) for n in lens_q]
        else:
            lens_k = ragged_lengths(rng, count, long_ones=int(rng.random() < 0.2))
        lens_k = [min(n, LONGEST) for n in lens_k]
        # NOTE: some query and some key: max_seqlen_q > 0 turns varlen on, and token totals are sizes
        if (0 < sum(lens_q) <= TOKENS_Q_CAP and sum(lens_k) > 0
                and sum(a * b for a, b in zip(lens_q, lens_k)) <= SCORES_CAP):
            break
    window = (-1, -1)
    if windowed:
        left = rng.choice((0, 16, rng.randint(1, 700)))
        window = (left, rng.choice((0, -1))) if causal else (left, rng.randint(0, 300))
    layout = "qkv" if form == "self" and heads_q == heads_kv else "packed"
    return finish(rng, dtype, head_dim, causal, heads_q, heads_kv, lens_q, lens_k, window, layout)


def decode_case(rng, dtype, head_dim, causal, windowed=False):
    """A few queries per sequence (as many as the decode kernel packs) against 0..5000 keys."""
    heads_q, heads_kv = rng.choice(GQA)
    rows = DECODE_ROWS // (heads_q // heads_kv)
    count = sequence_count(rng)
    lens_q = [rng.choice((0, 1, 1, 1, rng.randint(1, rows))) for _ in range(count)]
    lens_k = ragged_lengths(rng, count, long_ones=rng.choice((0, 1, 2)))
    window = (rng.randint(100, 3000), 0 if causal else -1) if windowed else (-1, -1)
    return finish(rng, dtype, head_dim, causal, heads_q, heads_kv, lens_q, lens_k, window, "packed")


def finish(rng, dtype, head_dim, causal, heads_q, heads_kv, lens_q, lens_k, window, layout):
    """seqused_k in about half the cases (0, all, or anything between), and slack tokens."""
    used_k = None
    if rng.random() < 0.5:
        used_k = tuple(rng.choice((0, n, rng.randint(0, n))) for n in lens_k)
    pad_q = rng.choice((0, rng.randint(1, 100)))
    pad_k = pad_q if layout == "qkv" else rng.choice((0, rng.randint(1, 100)))
    return VarlenCase(dtype, head_dim, causal, heads_q, heads_kv, tuple(lens_q), tuple(lens_k),
                      used_k, tuple(window), pad_q, pad_k, layout)


WINDOW_EVERY = 4   # every 4th head_dim x dtype x causal has a sliding window (both its cases)


def build_cases(head_dims, quick, seed):
    """A prefill-shaped and a decode-shaped case per head_dim x dtype x causal (quick: one of them,
    alternately), each drawn from its own seeded generator."""
    cases = []
    combos = [(head_dim, dtype, causal) for head_dim in head_dims for dtype in check.DTYPE_NAMES
              for causal in (False, True)]
    for index, (head_dim, dtype, causal) in enumerate(combos):
        rng = random.Random(f"{seed}-{head_dim}-{dtype}-{causal}")
        makers = (prefill_case, decode_case)
        if quick:
            makers = makers[index % 2:][:1]
        cases += [make(rng, dtype, head_dim, causal, windowed=index % WINDOW_EVERY == 1)
                  for make in makers]
    return cases


def family_takes(family, case):
    """Whether a forced family takes a case: sm90 head dims in multiples of 32, sm80 and decode of
    16, decode at most DECODE_ROWS packed rows (max_seqlen_q * heads_q / heads_kv)."""
    if family in (None, "reference"):
        return True
    if family == "sm90":
        return case.head_dim % 32 == 0
    packed = case.max_seqlen_q * (case.heads_q // case.heads_kv)
    return case.head_dim % 16 == 0 and (family != "decode" or packed <= DECODE_ROWS)


class VarlenInputs(NamedTuple):
    q: object
    k: object
    v: object
    out: object
    lse: object
    cu_seqlens_q: object
    cu_seqlens_k: object
    seqused_k: object   # or None


def allocate(case, device):
    """Tensors for the case's token counts (the packed sequences, then the slack)."""
    import torch

    options = {"dtype": check.torch_dtype(case.dtype), "device": device}
    tokens_q, tokens_k = sum(case.lens_q) + case.pad_q, sum(case.lens_k) + case.pad_k
    d = case.head_dim
    if case.layout == "qkv":
        assert case.lens_q == case.lens_k and tokens_q == tokens_k and case.heads_q == case.heads_kv
        q, k, v = torch.empty(tokens_q, 3, case.heads_q, d, **options).unbind(1)
    else:
        q = torch.empty(tokens_q, case.heads_q, d, **options)
        k, v = (torch.empty(tokens_k, case.heads_kv, d, **options) for _ in range(2))
    index = {"dtype": torch.int32, "device": device}
    batch = len(case.lens_q)
    return VarlenInputs(q, k, v, torch.empty(tokens_q, case.heads_q, d, **options),
                        torch.empty(case.heads_q, tokens_q, dtype=torch.float32, device=device),
                        torch.empty(batch + 1, **index), torch.empty(batch + 1, **index),
                        torch.empty(batch, **index) if case.used_k is not None else None)


def starts(lengths):
    """cu_seqlens: 0, then the running sums."""
    total, out = 0, [0]
    for n in lengths:
        total += n
        out.append(total)
    return out


def load(case, inputs, magnitude=1.0):
    """Fresh randn q, k, v written into the inputs' tensors (x magnitude), NaN in the tokens of no
    sequence and in each sequence's keys past seqused_k; the lengths into the index tensors."""
    import torch

    for tensor in (inputs.q, inputs.k, inputs.v):
        tensor.copy_(torch.randn(tensor.shape, dtype=tensor.dtype, device=tensor.device) * magnitude)
    cu_q, cu_k = starts(case.lens_q), starts(case.lens_k)
    inputs.q[cu_q[-1]:] = math.nan
    unread = torch.ones(inputs.k.shape[0], dtype=torch.bool)
    for b in range(len(case.lens_k)):
        unread[cu_k[b]:cu_k[b] + case.keys_used(b)] = False
    unread = unread.to(inputs.k.device)
    inputs.k[unread] = math.nan   # "qkv": views of one tensor, written in place all the same
    inputs.v[unread] = math.nan
    inputs.cu_seqlens_q.copy_(torch.tensor(cu_q, dtype=torch.int32))
    inputs.cu_seqlens_k.copy_(torch.tensor(cu_k, dtype=torch.int32))
    if inputs.seqused_k is not None:
        inputs.seqused_k.copy_(torch.tensor(case.used_k, dtype=torch.int32))


def call_kwargs(case, inputs, max_seqlen_q=None, max_seqlen_k=None):
    return {"causal": case.causal, "window": tuple(case.window),
            "cu_seqlens_q": inputs.cu_seqlens_q, "cu_seqlens_k": inputs.cu_seqlens_k,
            "max_seqlen_q": max_seqlen_q or case.max_seqlen_q,
            "max_seqlen_k": max_seqlen_k or case.max_seqlen_k, "seqused_k": inputs.seqused_k}


def reference(case, inputs):
    """Float64 out [tokens_q, Hq, D] and lse [Hq, tokens_q] (NaN on the slack), err_pt (the
    largest over the sequences), and has_key [tokens_q] (False on the slack), computed per
    sequence by check.reference on its own query rows and first keys_used keys."""
    import torch

    q, k, v = inputs.q, inputs.k, inputs.v
    tokens_q, heads_q, head_dim = q.shape
    out = torch.full((tokens_q, heads_q, head_dim), math.nan, dtype=torch.float64, device=q.device)
    lse = torch.full((heads_q, tokens_q), math.nan, dtype=torch.float64, device=q.device)
    has_key = torch.zeros(tokens_q, dtype=torch.bool, device=q.device)
    scale = ctypes.c_float(1.0 / math.sqrt(head_dim)).value   # the library's default, as fp32
    cu_q, cu_k = starts(case.lens_q), starts(case.lens_k)
    err_pt = 0.0
    for b, len_q in enumerate(case.lens_q):
        rows = slice(cu_q[b], cu_q[b] + len_q)
        used = case.keys_used(b)
        if len_q == 0:
            continue
        if used == 0:   # no key at all: out 0, lse -inf (check.reference needs one key)
            out[rows], lse[:, rows] = 0.0, -math.inf
            continue
        keys = slice(cu_k[b], cu_k[b] + used)
        out_b, lse_b, err_b, has_b = check.reference(q[rows][None], k[keys][None], v[keys][None],
                                                     case.causal, scale, window=tuple(case.window))
        out[rows], lse[:, rows], has_key[rows] = out_b[0], lse_b[0], has_b
        err_pt = max(err_pt, err_b)
    return out, lse, err_pt, has_key


def judge(case, outs, lse, ref, poisoned=True):
    """The failures of outputs against the reference: outs, (name, out) pairs; lse, the LSE of the
    first; poisoned: they were NaN before the call, so the slack tokens must still be (the op's
    own outputs start as torch.empty: their slack is not judged). Returns (row stats, failures)."""
    import torch

    ref_out, ref_lse, err_pt, has_key = ref
    tokens = sum(case.lens_q)
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    failures, stats = [], {"err_pt": err_pt, "bound": bound}
    for index, (name, out) in enumerate(outs):
        err = check.max_abs_diff(out[:tokens], ref_out[:tokens])
        stats["err" if index == 0 else f"err_{name}"] = err
        if not bool(torch.isfinite(out[:tokens]).all()):
            failures.append(f"{name}: NaN/Inf in a sequence's tokens (or an element left unwritten)")
        if poisoned and not bool(torch.isnan(out[tokens:]).all()):
            failures.append(f"{name}: wrote into tokens of no sequence")
        if not bool((out[:tokens][~has_key[:tokens]] == 0).all()):
            failures.append(f"{name}: a row that sees no key is not exactly 0")
        if not err <= bound:
            failures.append(f"{name}: err {err:.3g} > {bound:.3g}")
    lse_err = check.max_abs_diff(lse[:, :tokens][:, has_key[:tokens]],
                                 ref_lse[:, :tokens][:, has_key[:tokens]])
    stats["lse_err"] = lse_err
    stats["rows_without_key"] = int((~has_key[:tokens]).sum())
    if not bool(torch.isfinite(lse[:, :tokens][:, has_key[:tokens]]).all()) or not lse_err <= check.LSE_TOLERANCE:
        failures.append(f"lse err {lse_err:.3g} > {check.LSE_TOLERANCE:g}")
    if not bool(torch.isneginf(lse[:, :tokens][:, ~has_key[:tokens]]).all()):
        failures.append("lse is not -inf on a row that sees no key")
    if poisoned and not bool(torch.isnan(lse[:, tokens:]).all()):
        failures.append("lse written in tokens of no sequence")
    return stats, failures


def case_row(case, repeats):
    return {"form": "varlen", "dtype": case.dtype, "head_dim": case.head_dim, "causal": case.causal,
            "heads_q": case.heads_q, "heads_kv": case.heads_kv, "lens_q": list(case.lens_q),
            "lens_k": list(case.lens_k), "used_k": None if case.used_k is None else list(case.used_k),
            "window": list(case.window), "pad_q": case.pad_q, "pad_k": case.pad_k,
            "layout": case.layout, "repeats": repeats}


def run_case(context, case, repeats):
    """Checks one case (with the LSE and without, then the repeats); returns its JSON row."""
    import torch

    device = torch.device("cuda", context.device)
    inputs = allocate(case, device)
    load(case, inputs)
    return run_loaded(context, inputs, call_kwargs(case, inputs), device, repeats, case_row(case, repeats),
                      lambda outs, lse: judge(case, outs, lse, reference(case, inputs)))


def run_loaded(context, inputs, kwargs, device, repeats, row, judge_outputs):
    """The checking of a case whose inputs are loaded (this module's and check_paged's): its kernel
    into row, a call with the LSE and one without on poisoned outputs, judge_outputs(outs, lse) ->
    (stats, failures), then the repeats, bit for bit; returns row, completed."""
    import torch

    failures = []

    def poisoned_call(with_lse):
        inputs.out.fill_(math.nan)
        inputs.lse.fill_(math.nan)
        context.attention(inputs.q, inputs.k, inputs.v, out=inputs.out,
                          lse=inputs.lse if with_lse else None, **kwargs)
        torch.cuda.synchronize(device)

    try:
        row["kernel"] = context.plan(inputs.q, inputs.k, inputs.v, lse=inputs.lse, **kwargs)[0]
        poisoned_call(with_lse=True)
        first_out, first_lse = inputs.out.clone(), inputs.lse.clone()
        poisoned_call(with_lse=False)
        out_no_lse = inputs.out.clone()
    except check.flashcore.FlashCoreError as error:
        row.update(passed=False, failures=[str(error)])
        return row

    stats, failures = judge_outputs((("out", first_out), ("without lse", out_no_lse)), first_lse)
    row.update(stats)
    try:
        for run in range(2, repeats + 1):
            poisoned_call(with_lse=True)
            if not (check.bit_equal(inputs.out, first_out) and check.bit_equal(inputs.lse, first_lse)):
                failures.append(f"not deterministic: run {run} differs from run 1")
                break
    except check.flashcore.FlashCoreError as error:
        failures.append(f"run {run}: {error}")
    row.update(passed=not failures, failures=failures)
    return row


def graph_case(family):
    """The CUDA-graph case: decode-shaped for the decode family, else a ragged prefill with a
    prefix, seqused_k and empty sequences; f16, d128, GQA 4, causal."""
    if family == "decode":
        lens_q, lens_k = (1, 0, 1, 2, 1, 1), (3000, 7, 0, 129, 1, 4999)
    else:
        lens_q, lens_k = (129, 0, 1, 700, 64, 300), (200, 5, 0, 1000, 63, 300)
    used_k = tuple(max(0, n - 3) for n in lens_k)
    return VarlenCase("f16", 128, True, 8, 2, lens_q, lens_k, used_k, (-1, -1), 17, 9)


def replay_checked(context, graph, inputs, kwargs, replay, row, judged):
    """Replay `replay` of the call captured in graph, on the new contents of inputs: out and lse
    poisoned, the graph replayed, the same call made eagerly into fresh tensors; the replay judged
    (judged(outs, lse) -> (stats, failures)) and compared with the eager call bit for bit. The
    stats go into row as replay<replay>_* (the first replay's also as err, err_pt, lse_err).
    Returns the failures. tools/check_paged.py's graph case takes it too."""
    import torch

    device = inputs.out.device
    inputs.out.fill_(math.nan)
    inputs.lse.fill_(math.nan)
    graph.replay()
    torch.cuda.synchronize(device)
    out, lse = inputs.out.clone(), inputs.lse.clone()
    eager_out = torch.full_like(out, math.nan)
    eager_lse = torch.full_like(lse, math.nan)
    context.attention(inputs.q, inputs.k, inputs.v, out=eager_out, lse=eager_lse, **kwargs)
    torch.cuda.synchronize(device)
    stats, found = judged((("replayed out", out),), lse)
    row.update({f"replay{replay}_{key}": value for key, value in stats.items()})
    for key in ("err", "err_pt", "lse_err"):
        row.setdefault(key, stats[key])
    failures = [f"replay {replay}: {failure}" for failure in found]
    if not (check.bit_equal(out, eager_out) and check.bit_equal(lse, eager_lse)):
        failures.append(f"replay {replay}: differs from the eager call on the same inputs")
    return failures


def run_graph_case(context, family, replays=3, seed=0):
    """Captures one call in a CUDA graph (after a call outside it, which compiles the kernel), then
    per replay writes new q, k, v and new lengths (a reshuffle of the same sequences' counts, within
    the captured maxima and token counts) into the same tensors, replays, and judges the result:
    by the rule against the reference, and bit for bit against an eager call on the same inputs."""
    import torch

    case = graph_case(family)
    device = torch.device("cuda", context.device)
    inputs = allocate(case, device)
    load(case, inputs)
    kwargs = call_kwargs(case, inputs)   # the captured maxima stay: later lengths fit under them
    row = dict(case_row(case, replays), form="varlen-cuda-graph")
    failures = []
    rng = random.Random(f"graph-{seed}")
    try:
        context.attention(inputs.q, inputs.k, inputs.v, out=inputs.out, lse=inputs.lse, **kwargs)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            context.attention(inputs.q, inputs.k, inputs.v, out=inputs.out, lse=inputs.lse, **kwargs)
        row["kernel"] = context.plan(inputs.q, inputs.k, inputs.v, lse=inputs.lse, **kwargs)[0]
        for replay in range(replays):
            order = list(range(len(case.lens_q)))
            rng.shuffle(order)
            lens_q = tuple(case.lens_q[i] for i in order)
            lens_k = tuple(case.lens_k[i] for i in order)
            used_k = tuple(rng.randint(0, n) for n in lens_k)
            replayed = case._replace(lens_q=lens_q, lens_k=lens_k, used_k=used_k)
            load(replayed, inputs)
            failures += replay_checked(context, graph, inputs, kwargs, replay, row,
                                       lambda outs, lse: judge(replayed, outs, lse, reference(replayed, inputs)))
    except check.flashcore.FlashCoreError as error:
        failures.append(str(error))
    row.update(passed=not failures, failures=failures)
    return case, row
