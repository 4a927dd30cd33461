"""tools/check.py's paged matrix (--matrix paged): a paged KV cache, by BENCH.md's rule.

Each case is a random paged cache (seeded: --seed gives the same cases): k and v [num_pages,
page_size, heads_kv, head_dim] (or slices of one [num_pages, 2, page_size, ...] tensor, FlashInfer's
layout: a page stride of twice the page), page sizes 1, 7, 16, 64, 128 and 256 in turn, each
sequence's pages drawn from a random permutation of all of them, with spare pages no sequence uses.
Two forms: FlashAttention-3's flash_attn_with_kvcache (dense q [batch, seqlen_q, ...]: decode,
few-query rows or chunked prefill against up to ~5000 keys) and varlen-with-page_table (ragged
queries of 0..2000 tokens, 1..32 sequences, keys up to ~5000); seqused_k in about half the cases
(each sequence's own key count; without it every sequence has seqlen_k keys), max_seqlen_k given or
left to the table's width; page tables wider than needed and with a row stride past their width;
GQA 1/4/8, causal and not, fp16/bf16, the head dims asked for; inputs x3 (a peaked softmax) in every
fourth head_dim x dtype x causal.

Spare pages, the slots past each sequence's last key, page-table entries past a sequence's pages and
the table's padding (entries pointing at spare pages) are such that any read past a sequence's keys
brings NaN into the output. The reference is tools/check.py's float64 one per sequence, on its keys
gathered from the pages into one contiguous tensor; out and lse are poisoned before each call (the
varlen slack must keep its NaN), and judged as tools/check_varlen.py judges. One more case per
family captures the call in a CUDA graph and replays it with new values, a new page permutation
written into the same page table, and new lengths.
"""
import ctypes
import math
import random
from typing import NamedTuple, Optional

import check
import check_varlen

PAGE_SIZES = (1, 7, 16, 64, 128, 256)
LONGEST_K = 5000
LARGE_EVERY = 4             # every 4th head_dim x dtype x causal has inputs x3 (BENCH.md's large magnitudes)
LONGEST_Q = 2000
MAX_SEQUENCES = 32
TOKENS_Q_CAP = 16000        # per case, so that one family's matrix runs in about three minutes
SCORES_CAP = 40_000_000     # sum over sequences of len_q * keys: the reference's work
DECODE_ROWS = check_varlen.DECODE_ROWS   # the decode kernel's packed rows
GQA = check_varlen.GQA


class PagedCase(NamedTuple):
    """One paged problem. lens_q: each sequence's query count (dense: all seqlen_q); keys: each
    sequence's key count (seqused_k's values when used_k, else all seqlen_k); max_seqlen_k: what the
    call passes (None: the table's width decides, seqlen_k = width * page_size); width: the page
    table's pages per sequence; row_pad: its storage's extra columns (its row stride is width +
    row_pad); spare_pages: pages no sequence uses; pad_q: varlen's tokens of no sequence; layout
    "pages" (k and v each their own tensor) or "kv" (slices of one); magnitude: the inputs' scale (3:
    large scores, a peaked softmax)."""

    dtype: str
    head_dim: int
    causal: bool
    heads_q: int
    heads_kv: int
    page_size: int
    varlen: bool
    lens_q: tuple
    keys: tuple
    used_k: bool
    max_seqlen_k: Optional[int]
    width: int
    row_pad: int = 0
    spare_pages: int = 1
    pad_q: int = 0
    layout: str = "pages"
    magnitude: float = 1.0

    @property
    def batch(self):
        return len(self.lens_q)

    @property
    def seqlen_k(self):
        """The call's seqlen_k: max_seqlen_k, else all that a row of the table holds."""
        return self.max_seqlen_k or self.width * self.page_size

    @property
    def max_seqlen_q(self):   # varlen: the library wants it positive even when every sequence is empty
        return max(1, max(self.lens_q))

    def keys_used(self, b):
        return self.keys[b] if self.used_k else self.seqlen_k

    def pages_used(self, b):
        return -(-self.keys_used(b) // self.page_size)

    @property
    def num_pages(self):
        return sum(self.pages_used(b) for b in range(self.batch)) + self.spare_pages

    def describe(self):
        form = (f"varlen B={self.batch:<2} q={sum(self.lens_q)}(max {max(self.lens_q)})" if self.varlen
                else f"dense  B={self.batch:<2} sq={self.lens_q[0]}")
        keys = f"k={sum(self.keys_used(b) for b in range(self.batch))}(Sk {self.seqlen_k})"
        extra = "".join((" +seqused_k" if self.used_k else "",
                         " max_k" if self.max_seqlen_k else " max_k=table",
                         f" {self.layout}" if self.layout != "pages" else "",
                         f" x{self.magnitude:g}" if self.magnitude != 1.0 else "",
                         f" rowpad={self.row_pad}" if self.row_pad else ""))
        return (f"{self.dtype:<4} d{self.head_dim:<3} {'causal' if self.causal else 'full  '} "
                f"hq{self.heads_q} hkv{self.heads_kv} page={self.page_size:<3} {form} {keys} "
                f"pages={self.num_pages} width={self.width}{extra}")


def key_count(rng):
    """A sequence's key count: 0, 1..17, a page or tile edge, 18..1500, or 2000..LONGEST_K."""
    draw = rng.random()
    if draw < 0.08:
        return 0
    if draw < 0.2:
        return rng.randint(1, 17)
    if draw < 0.35:
        return rng.choice(check_varlen.TILE_EDGES)
    if draw < 0.85:
        return rng.randint(18, 1500)
    return rng.randint(2000, LONGEST_K)


def table_width(rng, seqlen_k, page_size):
    """Pages per sequence: enough for seqlen_k keys, sometimes a few more."""
    return max(1, -(-seqlen_k // page_size)) + rng.choice((0, 0, rng.randint(1, 3)))


def finish(rng, dtype, head_dim, causal, heads_q, heads_kv, page_size, varlen, lens_q, keys, pad_q=0):
    """seqused_k in about half the cases; max_seqlen_k given or left to the table; the table's
    width, row padding, spare pages and the cache's layout."""
    used_k = rng.random() < 0.5
    longest = max(1, max(keys))
    if used_k:
        max_seqlen_k = longest if varlen or rng.random() < 0.5 else None
        width = table_width(rng, longest, page_size)
    else:   # every sequence has seqlen_k keys
        max_seqlen_k = longest if varlen or rng.random() < 0.6 else None
        width = table_width(rng, longest, page_size) if max_seqlen_k else max(1, -(-longest // page_size))
        keys = [max_seqlen_k or width * page_size] * len(lens_q)
    row_pad = rng.choice((0, 0, rng.randint(1, 8)))
    layout = rng.choice(("pages", "pages", "kv"))
    return PagedCase(dtype, head_dim, causal, heads_q, heads_kv, page_size, varlen, tuple(lens_q),
                     tuple(keys), used_k, max_seqlen_k, width, row_pad, rng.randint(1, 20), pad_q,
                     layout)


def scores(lens_q, keys):
    return sum(q * k for q, k in zip(lens_q, keys))


def dense_case(rng, dtype, head_dim, causal, page_size, decode):
    """flash_attn_with_kvcache's form: a batch of 1..32 sequences of seqlen_q queries each (decode:
    as many as the decode kernel packs) against their own key counts."""
    heads_q, heads_kv = rng.choice(GQA)
    rows = DECODE_ROWS // (heads_q // heads_kv)
    while True:
        batch = rng.choice((1, rng.randint(2, 8), rng.randint(2, 8), rng.randint(9, MAX_SEQUENCES)))
        seqlen_q = (rng.choice((1, 1, rng.randint(1, rows))) if decode
                    else rng.choice((rng.randint(2, 17), rng.randint(18, 600), rng.randint(1000, LONGEST_Q))))
        keys = [key_count(rng) for _ in range(batch)]
        if batch * seqlen_q <= TOKENS_Q_CAP and scores([seqlen_q] * batch, [max(keys)] * batch) <= SCORES_CAP:
            break
    return finish(rng, dtype, head_dim, causal, heads_q, heads_kv, page_size, False,
                  [seqlen_q] * batch, keys)


def varlen_case(rng, dtype, head_dim, causal, page_size, decode):
    """varlen queries against a paged cache: ragged 0..2000 queries (decode: 0..a few) per sequence,
    each with a prefix of cached keys or its own key count."""
    heads_q, heads_kv = rng.choice(GQA)
    rows = DECODE_ROWS // (heads_q // heads_kv)
    while True:
        count = rng.choice((1, rng.randint(2, 8), rng.randint(9, MAX_SEQUENCES)))
        if decode:
            lens_q = [rng.choice((0, 1, 1, 1, rng.randint(1, rows))) for _ in range(count)]
        else:
            long_ones = int(rng.random() < 0.3)
            lens_q = [min(n, LONGEST_Q) for n in check_varlen.ragged_lengths(rng, count, long_ones)]
        if rng.random() < 0.6:   # chunked prefill: the new queries after a cached prefix
            keys = [min(LONGEST_K, n + rng.choice((0, rng.randint(1, 3000)))) for n in lens_q]
        else:
            keys = [key_count(rng) for _ in lens_q]
        # NOTE: at least one query: max_seqlen_q > 0 is what turns varlen on, so a batch of empty
        # sequences only is not a varlen problem the API can state
        if 0 < sum(lens_q) <= TOKENS_Q_CAP and scores(lens_q, [max(keys)] * count) <= SCORES_CAP:
            break
    return finish(rng, dtype, head_dim, causal, heads_q, heads_kv, page_size, True, lens_q, keys,
                  pad_q=rng.choice((0, rng.randint(1, 50))))


def build_cases(head_dims, quick, seed):
    """A dense and a varlen case per head_dim x dtype x causal (quick: one of them, alternately),
    each from its own seeded generator; one of the two decode-shaped, in turn; the page sizes in
    turn over the cases."""
    cases = []
    combos = [(head_dim, dtype, causal) for head_dim in head_dims for dtype in check.DTYPE_NAMES
              for causal in (False, True)]
    for index, (head_dim, dtype, causal) in enumerate(combos):
        rng = random.Random(f"paged-{seed}-{head_dim}-{dtype}-{causal}")
        makers = ((0, dense_case), (1, varlen_case))
        if quick:
            makers = makers[index % 2:][:1]
        for which, make in makers:
            page_size = PAGE_SIZES[(2 * index + which) % len(PAGE_SIZES)]
            case = make(rng, dtype, head_dim, causal, page_size, decode=(index + which) % 2 == 0)
            cases.append(case._replace(magnitude=3.0) if index % LARGE_EVERY == 3 else case)
    return cases


def family_takes(family, case):
    """Whether a forced family takes a case: as tools/check_varlen.py says, on its longest query
    count (decode: at most DECODE_ROWS packed rows)."""
    if family in (None, "reference"):
        return True
    if family == "sm90":   # whole lines; head_dim 64's plain schedule: TMA boxes of a multiple of 8 tokens only
        return case.head_dim % 64 == 0 and (case.head_dim >= 128 or case.page_size % 8 == 0)
    packed = max(case.lens_q) * (case.heads_q // case.heads_kv)
    return case.head_dim % 16 == 0 and (family != "decode" or packed <= DECODE_ROWS)


class PagedInputs(NamedTuple):
    q: object            # dense [B, Sq, Hq, D] or varlen [tokens_q, Hq, D]
    k: object            # [num_pages, page_size, Hkv, D]
    v: object
    out: object          # like q
    lse: object          # dense [B, Hq, Sq] or varlen [Hq, tokens_q]
    page_table: object   # [B, width], a view of a [B, width + row_pad] tensor
    table_storage: object
    cu_seqlens_q: object  # varlen, or None
    seqused_k: object    # or None


def allocate(case, device):
    """Tensors for the case's sizes (contents: load())."""
    import torch

    options = {"dtype": check.torch_dtype(case.dtype), "device": device}
    d, batch = case.head_dim, case.batch
    if case.varlen:
        tokens_q = sum(case.lens_q) + case.pad_q
        q = torch.empty(tokens_q, case.heads_q, d, **options)
        lse = torch.empty(case.heads_q, tokens_q, dtype=torch.float32, device=device)
    else:
        q = torch.empty(batch, case.lens_q[0], case.heads_q, d, **options)
        lse = torch.empty(batch, case.heads_q, case.lens_q[0], dtype=torch.float32, device=device)
    shape = (case.num_pages, case.page_size, case.heads_kv, d)
    if case.layout == "kv":
        k, v = torch.empty(shape[0], 2, *shape[1:], **options).unbind(1)
    else:
        k, v = (torch.empty(shape, **options) for _ in range(2))
    index = {"dtype": torch.int32, "device": device}
    storage = torch.empty(batch, case.width + case.row_pad, **index)
    return PagedInputs(q, k, v, torch.empty_like(q), lse, storage[:, :case.width], storage,
                       torch.empty(batch + 1, **index) if case.varlen else None,
                       torch.empty(batch, **index) if case.used_k else None)


def page_rows(case, rng):
    """Each sequence's page ids (a random permutation of all pages dealt out in turn) and the spare
    pages: (rows, spare)."""
    order = list(range(case.num_pages))
    rng.shuffle(order)
    rows, taken = [], 0
    for b in range(case.batch):
        rows.append(order[taken:taken + case.pages_used(b)])
        taken += case.pages_used(b)
    return rows, order[taken:]


def load(case, inputs, rng, magnitude=1.0):
    """Fresh randn q, k, v (x magnitude); a new page permutation into the page table, whose entries
    past a sequence's pages, and padding, name spare pages; NaN in the spare pages, in the slots
    past each sequence's last key and in varlen's slack tokens; the lengths into the index tensors.
    Returns the page rows (each sequence's page ids in order)."""
    import torch

    for tensor in (inputs.q, inputs.k, inputs.v):
        tensor.copy_(torch.randn(tensor.shape, dtype=tensor.dtype, device=tensor.device) * magnitude)
    rows, spare = page_rows(case, rng)
    table = [[*row, *(rng.choice(spare) for _ in range(case.width + case.row_pad - len(row)))]
             for row in rows]
    inputs.table_storage.copy_(torch.tensor(table, dtype=torch.int32))
    unread = torch.zeros(case.num_pages, case.page_size, dtype=torch.bool)
    unread[spare] = True
    for b, row in enumerate(rows):
        filled = case.keys_used(b) - (len(row) - 1) * case.page_size   # keys in its last page
        if row and filled < case.page_size:
            unread[row[-1], filled:] = True
    unread = unread.to(inputs.k.device)
    inputs.k[unread] = math.nan   # "kv": views of one tensor, written in place all the same
    inputs.v[unread] = math.nan
    if case.varlen:
        cu_q = check_varlen.starts(case.lens_q)
        inputs.q[cu_q[-1]:] = math.nan
        inputs.cu_seqlens_q.copy_(torch.tensor(cu_q, dtype=torch.int32))
    if inputs.seqused_k is not None:
        inputs.seqused_k.copy_(torch.tensor(case.keys, dtype=torch.int32))
    return rows


def call_kwargs(case, inputs, max_seqlen_k=None):
    kwargs = {"causal": case.causal, "page_table": inputs.page_table, "seqused_k": inputs.seqused_k}
    if case.varlen:
        kwargs.update(cu_seqlens_q=inputs.cu_seqlens_q, max_seqlen_q=case.max_seqlen_q,
                      max_seqlen_k=max_seqlen_k or case.seqlen_k)
    elif max_seqlen_k or case.max_seqlen_k:
        kwargs["max_seqlen_k"] = max_seqlen_k or case.max_seqlen_k
    return kwargs


def gather_keys(case, inputs, rows, b):
    """Sequence b's keys and values as contiguous [keys_used, Hkv, D] tensors, from its pages."""
    import torch

    ids = torch.tensor(rows[b], dtype=torch.long, device=inputs.k.device)
    used = case.keys_used(b)
    return tuple(cache.index_select(0, ids).reshape(-1, case.heads_kv, case.head_dim)[:used]
                 for cache in (inputs.k, inputs.v))


def flat(case, out, lse):
    """Outputs in varlen's layout ([tokens, Hq, D] and [Hq, tokens]): a dense case's rows in order."""
    if case.varlen:
        return out, lse
    batch, seqlen_q, heads_q, head_dim = out.shape
    return (out.reshape(batch * seqlen_q, heads_q, head_dim),
            lse.permute(1, 0, 2).reshape(heads_q, batch * seqlen_q))


def reference(case, inputs, rows):
    """Float64 out [tokens_q, Hq, D] and lse [Hq, tokens_q] in varlen's layout (a dense case's rows
    in order; NaN on varlen's slack), err_pt (the largest over the sequences), and has_key
    [tokens_q]: check.reference per sequence on its query rows and its keys gathered from the pages."""
    import torch

    q = inputs.q if case.varlen else inputs.q.reshape(-1, case.heads_q, case.head_dim)
    tokens_q = q.shape[0]
    out = torch.full((tokens_q, case.heads_q, case.head_dim), math.nan, dtype=torch.float64, device=q.device)
    lse = torch.full((case.heads_q, tokens_q), math.nan, dtype=torch.float64, device=q.device)
    has_key = torch.zeros(tokens_q, dtype=torch.bool, device=q.device)
    scale = ctypes.c_float(1.0 / math.sqrt(case.head_dim)).value   # the library's default, as fp32
    cu_q = check_varlen.starts(case.lens_q)
    err_pt = 0.0
    for b, len_q in enumerate(case.lens_q):
        rows_b = slice(cu_q[b], cu_q[b] + len_q)
        if len_q == 0:
            continue
        if case.keys_used(b) == 0:   # no key at all: out 0, lse -inf (check.reference needs one key)
            out[rows_b], lse[:, rows_b] = 0.0, -math.inf
            continue
        k_b, v_b = gather_keys(case, inputs, rows, b)
        out_b, lse_b, err_b, has_b = check.reference(q[rows_b][None], k_b[None], v_b[None],
                                                     case.causal, scale)
        out[rows_b], lse[:, rows_b], has_key[rows_b] = out_b[0], lse_b[0], has_b
        err_pt = max(err_pt, err_b)
    return out, lse, err_pt, has_key


def judge(case, outs, lse, ref, poisoned=True):
    """check_varlen.judge on the outputs in varlen's layout: outs, (name, out) pairs; lse, the
    first's."""
    flat_outs = [(name, flat(case, out, lse)[0]) for name, out in outs]
    return check_varlen.judge(case, flat_outs, flat(case, outs[0][1], lse)[1], ref, poisoned)


def case_row(case, repeats):
    row = {"form": "paged-varlen" if case.varlen else "paged", "repeats": repeats}
    row.update({key: (list(value) if isinstance(value, tuple) else value)
                for key, value in case._asdict().items()})
    row["num_pages"] = case.num_pages
    return row


def context_device(context):
    """The torch device of a context's GPU."""
    import torch

    return torch.device("cuda", context.device)


def run_case(context, case, repeats):
    """Checks one case (with the LSE and without, then the repeats); returns its JSON row."""
    device = context_device(context)
    inputs = allocate(case, device)
    rows = load(case, inputs, random.Random(f"load-{case}"), case.magnitude)
    return check_varlen.run_loaded(context, inputs, call_kwargs(case, inputs), device, repeats,
                                   case_row(case, repeats),
                                   lambda outs, lse: judge(case, outs, lse, reference(case, inputs, rows)))


def graph_case(family):
    """The CUDA-graph case: f16, d128, GQA 4, causal, pages of 16, seqused_k; decode-shaped and
    dense for the decode family, else a varlen chunked prefill. Spare pages enough for every
    sequence to fill its table row, so that any new lengths fit the same cache."""
    if family == "decode":
        lens_q, keys = (2,) * 6, (3000, 7, 0, 129, 1, 4999)
    else:
        lens_q, keys = (129, 0, 1, 700, 64, 300), (200, 5, 0, 1000, 63, 300)
    width = -(-max(keys) // 16)
    spare = len(lens_q) * width - sum(-(-n // 16) for n in keys) + 3
    return PagedCase("f16", 128, True, 8, 2, 16, family != "decode", lens_q, keys, True, max(keys),
                     width, 5, spare, 0 if family == "decode" else 17)


def replayed_case(case, rng):
    """New lengths for a graph replay: seqused_k anything up to the captured max_seqlen_k; varlen's
    query counts reshuffled among the sequences (the same total). As many pages in all: spare ones
    make up the difference."""
    order = list(range(case.batch))
    rng.shuffle(order)
    lens_q = tuple(case.lens_q[i] for i in order) if case.varlen else case.lens_q
    keys = tuple(rng.choice((0, case.seqlen_k, rng.randint(0, case.seqlen_k)))
                 for _ in range(case.batch))
    replayed = case._replace(lens_q=lens_q, keys=keys)
    return replayed._replace(spare_pages=case.num_pages - replayed.num_pages + replayed.spare_pages)


def run_graph_case(context, family, replays=3, seed=0):
    """Captures one call in a CUDA graph (after a call outside it, which compiles the kernel), then
    per replay writes new q, k, v, a new page permutation into the same page table and new lengths
    (seqused_k up to the captured max_seqlen_k; varlen: the query counts reshuffled) into the same
    tensors, replays, and judges the result: by the rule against the reference, and bit for bit
    against an eager call on the same inputs."""
    import torch

    case = graph_case(family)
    device = context_device(context)
    inputs = allocate(case, device)
    rng = random.Random(f"paged-graph-{seed}")
    load(case, inputs, rng)
    kwargs = call_kwargs(case, inputs)   # the captured maxima stay: later lengths fit under them
    row = dict(case_row(case, replays), form="paged-cuda-graph")
    failures = []
    try:
        context.attention(inputs.q, inputs.k, inputs.v, out=inputs.out, lse=inputs.lse, **kwargs)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            context.attention(inputs.q, inputs.k, inputs.v, out=inputs.out, lse=inputs.lse, **kwargs)
        row["kernel"] = context.plan(inputs.q, inputs.k, inputs.v, lse=inputs.lse, **kwargs)[0]
        for replay in range(replays):
            replayed = replayed_case(case, rng)
            rows = load(replayed, inputs, rng)
            failures += check_varlen.replay_checked(
                context, graph, inputs, kwargs, replay, row,
                lambda outs, lse: judge(replayed, outs, lse, reference(replayed, inputs, rows)))
    except check.flashcore.FlashCoreError as error:
        failures.append(str(error))
    row.update(passed=not failures, failures=failures)
    return case, row
