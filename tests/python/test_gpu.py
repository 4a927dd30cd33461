"""The PyTorch op on a GPU: correct by BENCH.md's rule, bit for bit the ctypes path, deterministic,
traced by torch.compile(fullgraph=True) and captured in CUDA graphs, on the current stream, and its
errors. Skips without torch or a GPU.

The fp64 reference and the input layouts are tools/check.py's (one reference for both).
"""
import ctypes
import json
import math
import random
import sys
import zlib
from pathlib import Path

import pytest

import flashcore
from flashcore import ArgumentError, FlashCoreError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check  # noqa: E402  (tools/check.py: reference(), make_inputs(), Shape, Case)

pytestmark = pytest.mark.gpu

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, layout): tile multiples and not, Sq != Sk both
# ways (causal: rows that see no key), GQA 1/4/8, one query row, split-KV decode, strided layouts.
SHAPES = [
    check.Shape(1, 1, 1, 8, 8),
    check.Shape(3, 128, 128, 8, 2),
    check.Shape(1, 129, 129, 8, 8, "qkv"),
    check.Shape(3, 17, 129, 8, 8),
    check.Shape(1, 1000, 17, 8, 2),
    check.Shape(3, 127, 128, 8, 2, "strided"),
    check.Shape(2, 1, 4097, 32, 8),
    check.Shape(1, 2, 3000, 8, 1),
]
HEAD_DIMS = (64, 128)
EXTRA_CASES = [   # other head dims, a softmax scale, large-magnitude inputs
    (check.Case("bf16", 96, True, check.Shape(2, 300, 300, 6, 2)), 1.0),
    (check.Case("f16", 256, False, check.Shape(1, 200, 333, 4, 4, "packed", 0.3)), 1.0),
    (check.Case("f16", 128, True, check.Shape(2, 257, 257, 8, 2)), 3.0),
    (check.Case("bf16", 64, False, check.Shape(2, 1, 2048, 16, 4)), 3.0),
]
# Sliding windows (both sides, causal, wider than the sequence, leaving rows without a key), sinks
# (N(0, 1), +20, missing on some heads) and softcaps (20-50 where they bite: scale 1), alone and
# together, in prefill and in split-KV decode.
FEATURE_CASES = [
    (check.Case("f16", 128, True, check.Shape(2, 300, 300, 8, 2), (64, 0)), 1.0),
    (check.Case("bf16", 64, False, check.Shape(1, 257, 513, 8, 8), (40, 17)), 1.0),
    (check.Case("f16", 64, False, check.Shape(1, 513, 200, 4, 2), (3, 2)), 1.0),   # rows without keys
    (check.Case("bf16", 128, False, check.Shape(1, 300, 300, 8, 2), (5000, 5000)), 1.0),
    (check.Case("f16", 128, True, check.Shape(2, 300, 300, 8, 2), (-1, -1), (0.0, 1.0)), 1.0),
    (check.Case("bf16", 128, False, check.Shape(1, 300, 200, 8, 2), (10, 0), (20.0, 1.0)), 1.0),
    (check.Case("f16", 256, True, check.Shape(1, 300, 300, 4, 4), (-1, -1), (-math.inf, 5.0)), 1.0),
    (check.Case("bf16", 128, True, check.Shape(1, 300, 300, 8, 2, "packed", 1.0), (-1, -1), None, 30.0),
     1.0),
    (check.Case("f16", 64, True, check.Shape(2, 257, 257, 8, 2, "packed", 1.0), (32, 0), (0.0, 5.0), 20.0),
     1.0),
    (check.Case("bf16", 128, True, check.Shape(2, 1, 20000, 32, 8), (4096, -1), (20.0, 1.0), 50.0), 1.0),
    (check.Case("f16", 128, False, check.Shape(1, 4, 777, 8, 2, "strided"), (300, 2), (0.0, 5.0), 30.0),
     1.0),
]
CASES = [(check.Case(dtype, head_dim, causal, shape), 1.0)
         for head_dim in HEAD_DIMS for dtype in ("f16", "bf16") for causal in (False, True)
         for shape in SHAPES] + EXTRA_CASES + FEATURE_CASES


def case_id(case_and_magnitude):
    case, magnitude = case_and_magnitude
    s = case.shape
    scale = "" if s.softmax_scale is None else f"-scale{s.softmax_scale:g}"
    extra = "".join((f"-win{case.window[0]}.{case.window[1]}" if tuple(case.window) != (-1, -1) else "",
                     f"-sinks{case.sinks[0]:g}.{case.sinks[1]:g}" if case.sinks is not None else "",
                     f"-cap{case.softcap:g}" if case.softcap is not None else ""))
    return (f"{case.dtype}-d{case.head_dim}-{'causal' if case.causal else 'full'}-b{s.batch}"
            f"-sq{s.seqlen_q}-sk{s.seqlen_k}-h{s.heads_q}.{s.heads_kv}-{s.layout}{scale}{extra}"
            + (f"-x{magnitude:g}" if magnitude != 1.0 else ""))


def bit_equal(a, b):
    return a.shape == b.shape and check.bit_equal(a.contiguous(), b.contiguous())


def poisoned_allocation_op(torch, q, k, v, **kwargs):
    """The op with NaN in the blocks the caching allocator is about to hand it: frees NaN-filled
    tensors of out's and lse's sizes just before the call, so that unwritten elements show."""
    batch, seqlen_q, heads_q, _ = q.shape
    out_dtype = kwargs.get("out_dtype") or (torch.bfloat16 if q.dtype == torch.float8_e4m3fn else q.dtype)
    bait = [torch.full(q.shape, math.nan, dtype=out_dtype, device=q.device),
            torch.full((batch, heads_q, seqlen_q), math.nan, dtype=torch.float32, device=q.device)]
    del bait
    return flashcore.attention(q, k, v, **kwargs)


@pytest.mark.parametrize("case_and_magnitude", CASES, ids=[case_id(c) for c in CASES])
def test_matches_the_fp64_reference_and_the_ctypes_path(cuda, case_and_magnitude):
    torch = cuda
    case, magnitude = case_and_magnitude
    torch.manual_seed(zlib.crc32(case_id(case_and_magnitude).encode()))
    device = torch.device("cuda", torch.cuda.current_device())
    inputs = check.make_inputs(case, device)
    q, k, v = (x.mul_(magnitude) if magnitude != 1.0 else x for x in (inputs.q, inputs.k, inputs.v))
    s = case.shape
    sinks = check.make_sinks(case, device)
    kwargs = {"causal": case.causal, "softmax_scale": s.softmax_scale, "window": tuple(case.window),
              "sinks": sinks, "softcap": case.softcap}

    # The ctypes path, into NaN-poisoned buffers (every element must be written): once into
    # contiguous ones like the op's, once into the case's layout (out inside a padded buffer for
    # "strided", whose padding must stay NaN).
    context = flashcore.context(device.index)
    out_c = torch.full(q.shape, math.nan, dtype=q.dtype, device=device)
    lse_c = torch.full((s.batch, s.heads_q, s.seqlen_q), math.nan, dtype=torch.float32,
                       device=device)
    context.attention(q, k, v, out=out_c, lse=lse_c, **kwargs)
    inputs.storage.fill_(math.nan)
    context.attention(q, k, v, out=inputs.out, **kwargs)

    out, lse = poisoned_allocation_op(torch, q, k, v, return_lse=True, **kwargs)
    out_no_lse = poisoned_allocation_op(torch, q, k, v, **kwargs)
    torch.cuda.synchronize()

    assert bit_equal(out, out_c) and bit_equal(lse, lse_c), "the op differs from the ctypes path"
    assert inputs.guard is None or bool(torch.isnan(inputs.guard).all()), "wrote outside out"

    ref_out, ref_lse, err_pt, has_key = check.reference(q, k, v, case.causal,
                                                        check.effective_scale(case),
                                                        window=tuple(case.window), sinks=sinks,
                                                        softcap=case.softcap)
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    for name, result in (("out", out), ("out without lse", out_no_lse),
                         (f"out in the {s.layout} layout", inputs.out)):
        assert bool(torch.isfinite(result).all()), f"NaN/Inf in {name} (or an element unwritten)"
        err = check.max_abs_diff(result, ref_out)
        assert err <= bound, f"{name}: max |out - ref| {err:.3g} > 2 * err_pt + 1e-5 = {bound:.3g}"
    lse_err = check.max_abs_diff(lse[:, :, has_key], ref_lse[:, :, has_key])
    assert lse_err <= check.LSE_TOLERANCE, f"lse err {lse_err:.3g}"
    assert all(bool((result[:, ~has_key] == 0).all()) for result in (out, out_no_lse)), \
        "a row that sees no key is not 0"
    keyless = lse[:, :, ~has_key]   # -inf, or the head's sink
    expected = (torch.full_like(keyless, -math.inf) if sinks is None
                else sinks[None, :, None].expand_as(keyless))
    assert torch.equal(torch.isneginf(keyless), torch.isneginf(expected)), "lse of a row with no key"
    finite = torch.isfinite(expected)
    assert check.max_abs_diff(keyless[finite], expected[finite]) <= check.LSE_TOLERANCE, \
        "lse of a row with no key is not its sink"


def random_qkv(torch, batch=2, seqlen_q=512, seqlen_k=512, heads_q=8, heads_kv=2, head_dim=128,
               dtype=None):
    dtype = dtype or torch.float16
    q = torch.randn(batch, seqlen_q, heads_q, head_dim, dtype=dtype, device="cuda")
    k = torch.randn(batch, seqlen_k, heads_kv, head_dim, dtype=dtype, device="cuda")
    return q, k, torch.randn_like(k)


@pytest.mark.parametrize("shape", [{}, dict(batch=4, seqlen_q=1, seqlen_k=20000, heads_q=32, heads_kv=8)],
                         ids=["prefill", "split-kv-decode"])
def test_is_deterministic(cuda, shape):
    torch = cuda
    q, k, v = random_qkv(torch, **shape)
    sinks = torch.randn(q.shape[2], dtype=torch.float32, device="cuda") * 5
    for options in ({}, dict(window=(100, 0), sinks=sinks, softcap=30.0)):
        first, first_lse = flashcore.attention(q, k, v, causal=True, return_lse=True, **options)
        for _ in range(20):
            out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True, **options)
            assert bit_equal(out, first) and bit_equal(lse, first_lse)


@pytest.mark.parametrize("causal", [False, True])
def test_quick_first_call_then_the_planned_kernel(cuda, causal):
    """With the quick first call on and a kernel in no cache, the first call runs the quick kernel, a
    correct one; after wait_compiles the calls run the planned kernel, correct and bit-identical."""
    torch = cuda
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the quick first call serves the Hopper kernel's warp-specialized schedule")
    torch.manual_seed(7)
    q, k, v = random_qkv(torch, batch=1, seqlen_q=1000, seqlen_k=1000, heads_q=4, heads_kv=4, head_dim=128)
    ref_out, ref_lse, err_pt, has_key = check.reference(q, k, v, causal, 128 ** -0.5)[:4]
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    with flashcore.Context(0, no_disk_cache=True, quick_first_call=True) as context:
        outs = [context.attention(q, k, v, causal=causal, return_lse=True)]
        context.wait_compiles()
        outs += [context.attention(q, k, v, causal=causal, return_lse=True) for _ in range(2)]
    for out, lse in outs:
        assert check.max_abs_diff(out, ref_out) <= bound
        assert check.max_abs_diff(lse[:, :, has_key], ref_lse[:, :, has_key]) <= check.LSE_TOLERANCE
    assert bit_equal(outs[1][0], outs[2][0]) and bit_equal(outs[1][1], outs[2][1])


def test_quick_first_call_off_and_wait_without_compiles(cuda):
    torch = cuda
    q, k, v = random_qkv(torch)
    with flashcore.Context(0, no_disk_cache=True, quick_first_call=False) as context:
        context.wait_compiles()   # nothing queued: returns at once
        first = context.attention(q, k, v, causal=True)
        context.set_quick_first_call(True)
        assert bit_equal(context.attention(q, k, v, causal=True), first)   # loaded already: no quick kernel


def test_compile_fullgraph_runs_and_matches_eager(cuda):
    torch = cuda
    torch._dynamo.reset()

    def epilogue(q, k, v):   # elementwise after the op: the same bits compiled or not
        out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True)
        return out * 2 + 1, lse - 1

    q, k, v = random_qkv(torch)
    compiled = torch.compile(epilogue, fullgraph=True)
    eager_out, eager_lse = epilogue(q, k, v)
    out, lse = compiled(q, k, v)
    assert bit_equal(out, eager_out) and bit_equal(lse, eager_lse)
    explanation = torch._dynamo.explain(epilogue)(q, k, v)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0

    class Block(torch.nn.Module):   # projections, attention, output projection
        def __init__(self, hidden=1024, heads=8, heads_kv=2):
            super().__init__()
            self.heads, self.heads_kv, self.head_dim = heads, heads_kv, hidden // heads
            self.q = torch.nn.Linear(hidden, hidden, bias=False)
            self.kv = torch.nn.Linear(hidden, 2 * heads_kv * self.head_dim, bias=False)
            self.o = torch.nn.Linear(hidden, hidden, bias=False)

        def forward(self, x):
            batch, seqlen, hidden = x.shape
            q = self.q(x).view(batch, seqlen, self.heads, self.head_dim)
            k, v = self.kv(x).view(batch, seqlen, 2, self.heads_kv, self.head_dim).unbind(2)
            return self.o(flashcore.attention(q, k, v, causal=True).reshape(batch, seqlen, hidden))

    torch._dynamo.reset()
    block = Block().cuda().half()
    x = torch.randn(2, 300, 1024, dtype=torch.float16, device="cuda")
    with torch.no_grad():
        expected = block(x)
        got = torch.compile(block, fullgraph=True)(x)
        explanation = torch._dynamo.explain(block)(x)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got, expected, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("shape", [dict(seqlen_q=512, seqlen_k=512),
                                   dict(batch=8, seqlen_q=1, seqlen_k=8192, heads_q=32,
                                        heads_kv=8)],
                         ids=["prefill", "split-kv-decode"])
@pytest.mark.parametrize("features", [{}, dict(window=(256, 0), softcap=30.0, sinks=True)],
                         ids=["plain", "window-softcap-sinks"])
def test_cuda_graph_capture_and_replay(cuda, shape, features):
    torch = cuda
    q, k, v = random_qkv(torch, **shape)
    options = dict(features, causal=True, return_lse=True)
    if options.get("sinks"):   # the graph reads the sinks tensor at replay: updated in place
        options["sinks"] = torch.randn(q.shape[2], dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up outside capture: compiles and loads the kernel
        flashcore.attention(q, k, v, **options)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = flashcore.attention(q, k, v, **options)
    for _ in range(3):
        for tensor in (q, k, v) + ((options["sinks"],) if "sinks" in options else ()):
            tensor.copy_(torch.randn_like(tensor))
        graph.replay()
        expected, expected_lse = flashcore.attention(q, k, v, **options)
        torch.cuda.synchronize()
        assert bit_equal(out, expected) and bit_equal(lse, expected_lse)


def test_compile_reduce_overhead_matches_eager(cuda):
    torch = cuda
    torch._dynamo.reset()

    def call(q, k, v):
        return flashcore.attention(q, k, v, causal=True) * 2

    q, k, v = random_qkv(torch)
    compiled = torch.compile(call, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):   # the first calls record, later ones replay
        for tensor in (q, k, v):
            tensor.copy_(torch.randn_like(tensor))
        got = compiled(q, k, v).clone()
        assert bit_equal(got, call(q, k, v))


def test_runs_on_the_current_stream(cuda):
    torch = cuda
    q, k, v = random_qkv(torch)
    fresh = torch.randn_like(q)
    expected = flashcore.attention(fresh, k, v)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)    # keeps the side stream busy, so a wrong stream would race
        q.copy_(fresh)
        out = flashcore.attention(q, k, v)
    side.synchronize()
    assert bit_equal(out, expected)


def test_library_errors_become_exceptions_and_the_context_stays_usable(cuda):
    torch = cuda
    q, k, v = random_qkv(torch, heads_q=7, heads_kv=2)
    with pytest.raises(FlashCoreError) as caught:
        flashcore.attention(q, k, v)
    assert caught.value.status == "FC_ERR_INVALID_ARG"
    assert "heads_q (7) must be a multiple of heads_kv (2)" in caught.value.message

    q, k, v = random_qkv(torch, head_dim=20)
    with pytest.raises(FlashCoreError) as caught:
        flashcore.attention(q, k, v)
    assert caught.value.status == "FC_ERR_UNSUPPORTED"
    assert "head_dim 20 is not supported" in caught.value.message

    q, k, v = random_qkv(torch)
    misaligned = torch.empty(q.numel() + 1, dtype=q.dtype, device="cuda")[1:].view(q.shape)
    with pytest.raises(FlashCoreError) as caught:
        flashcore.attention(misaligned, k, v)
    assert "must be 16-byte aligned" in caught.value.message

    padded = torch.randn(2, 512, 8, 132, dtype=torch.float16, device="cuda")[..., :128]
    with pytest.raises(FlashCoreError) as caught:
        flashcore.attention(padded, k, v)
    assert "multiple of 8 elements" in caught.value.message

    with pytest.raises(ArgumentError, match="the last dimension must be contiguous"):
        flashcore.attention(q.transpose(2, 3).contiguous().transpose(2, 3), k, v)
    with pytest.raises(ArgumentError, match="float16 and bfloat16 are supported"):
        flashcore.attention(q.float(), k.float(), v.float())

    out = flashcore.attention(q, k, v)    # the context still works
    torch.cuda.synchronize()
    assert bool(torch.isfinite(out).all())


def test_tensors_on_two_devices_are_refused(cuda):
    torch = cuda
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    q, k, v = random_qkv(torch)
    with pytest.raises(ArgumentError, match="is on cuda:1 but q is on cuda:0"):
        flashcore.attention(q, k.to("cuda:1"), v)


def test_each_device_runs_on_its_own_context(cuda):
    torch = cuda
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    results = []
    for index in range(2):
        with torch.cuda.device(index):
            torch.manual_seed(0)
            q, k, v = random_qkv(torch)
            results.append(flashcore.attention(q, k, v).cpu())
    assert bit_equal(results[0], results[1])
    assert flashcore.context(0) is not flashcore.context(1)


def test_opcheck(cuda):
    torch = cuda
    q, k, v = random_qkv(torch, seqlen_q=200, seqlen_k=300)
    for return_lse in (False, True):
        torch.library.opcheck(torch.ops.flashcore.attention.default,
                              (q, k, v, True, None, return_lse))
    sinks = torch.randn(q.shape[2], dtype=torch.float32, device="cuda")
    torch.library.opcheck(torch.ops.flashcore.attention.default,
                          (q, k, v, True, None, True, 64, 0, sinks, 30.0))


def test_plan_for_the_gpu_names_its_arch(cuda):
    torch = cuda
    q, k, v = random_qkv(torch)
    plan = flashcore.plan(q, k, v, causal=True)
    major, minor = torch.cuda.get_device_capability()
    assert plan.device == torch.cuda.current_device()
    assert plan.arch.startswith(f"sm_{major}{minor}"), plan
    assert flashcore.info()["gpu"].startswith("cuda:0 (sm_")
    text = flashcore.explain(q, k, v, causal=True)
    assert f"on cuda:{plan.device} ({plan.arch})" in text and plan.kernel in text


def merged_against_reference(torch, q, k, v, visible, out, lse, scale):
    """Judges a merged result against attention over all of k, v with `visible`, by BENCH.md's rule."""
    ref_out, ref_lse, err_pt, has_key = check.reference(q, k, v, None, scale, visible=visible)
    assert bool(torch.isfinite(out).all()), "NaN/Inf in the merged output"
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    err = check.max_abs_diff(out, ref_out)
    assert err <= bound, f"max |out - ref| {err:.3g} > 2 * err_pt + 1e-5 = {bound:.3g}"
    lse_err = check.max_abs_diff(lse[:, :, has_key], ref_lse[:, :, has_key])
    assert lse_err <= check.LSE_TOLERANCE, f"lse err {lse_err:.3g}"
    assert bool((out[:, ~has_key] == 0).all()) and bool(torch.isneginf(lse[:, :, ~has_key]).all())
    return err, err_pt


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_merge_of_two_key_ranges_is_attention_over_both(cuda, dtype_name, head_dim):
    """Three splits: keys cut anywhere (non-causal); a ring step's causal query chunk (its keys
    before the chunk fully visible, the chunk's own causal); and a part in which most rows see no
    key (LSE -inf: they take the other part's). Then in place, bit for bit."""
    torch = cuda
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(head_dim * 10 + (dtype == torch.bfloat16))
    scale = 1.0 / math.sqrt(head_dim)
    rows = lambda sq, sk: torch.arange(sq, device="cuda")[:, None]  # noqa: E731
    cols = lambda sq, sk: torch.arange(sk, device="cuda")[None, :]  # noqa: E731

    q, k, v = random_qkv(torch, 2, 300, 1000, 8, 2, head_dim, dtype)
    a, b = 333, 1000   # non-causal, cut at 333
    out_a, lse_a = flashcore.attention(q, k[:, :a], v[:, :a], return_lse=True)
    out_b, lse_b = flashcore.attention(q, k[:, a:b], v[:, a:b], return_lse=True)
    out, lse = flashcore.merge(out_a, lse_a, out_b, lse_b)
    merged_against_reference(torch, q, k, v, torch.ones(300, 1000, dtype=torch.bool, device="cuda"),
                             out, lse, scale)

    q, k, v = random_qkv(torch, 2, 256, 1024, 8, 2, head_dim, dtype)   # the last 256 query rows
    out_a, lse_a = flashcore.attention(q, k[:, :768], v[:, :768], return_lse=True)
    out_b, lse_b = flashcore.attention(q, k[:, 768:], v[:, 768:], causal=True, return_lse=True)
    out, lse = flashcore.merge(out_a, lse_a, out_b, lse_b)
    merged_against_reference(torch, q, k, v, cols(256, 1024) <= rows(256, 1024) + 768, out, lse, scale)

    q, k, v = random_qkv(torch, 1, 300, 114, 4, 4, head_dim, dtype)
    out_a, lse_a = flashcore.attention(q, k[:, :50], v[:, :50], causal=True, return_lse=True)
    assert bool(torch.isneginf(lse_a[:, :, :250]).all())   # 300 rows against 50 keys, bottom-right
    out_b, lse_b = flashcore.attention(q, k[:, 50:], v[:, 50:], return_lse=True)
    out, lse = flashcore.merge(out_a, lse_a, out_b, lse_b)
    visible = torch.cat([cols(300, 50) <= rows(300, 50) - 250,
                         torch.ones(300, 64, dtype=torch.bool, device="cuda")], dim=1)
    merged_against_reference(torch, q, k, v, visible, out, lse, scale)
    out_none, lse_none = flashcore.merge(out_a, lse_a, out_a, lse_a)   # no key on either side
    assert bool((out_none[:, :250] == 0).all()) and bool(torch.isneginf(lse_none[:, :, :250]).all())

    flashcore.context(q.device.index).merge(out_a, lse_a, out_b, lse_b, out_a, lse_a,   # in place
                                            torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert bit_equal(out_a, out) and bit_equal(lse_a, lse)


def test_merge_runs_under_compile_and_cuda_graphs(cuda):
    torch = cuda
    q, k, v = random_qkv(torch, 2, 256, 512, 8, 2, 128)

    def ring_step(q, k, v, out, lse):
        part, part_lse = flashcore.attention(q, k, v, return_lse=True)
        return flashcore.merge(out, lse, part, part_lse)

    out0, lse0 = flashcore.attention(q, k[:, :256], v[:, :256], return_lse=True)
    eager = ring_step(q, k[:, 256:], v[:, 256:], out0, lse0)
    compiled = torch.compile(ring_step, fullgraph=True)(q, k[:, 256:], v[:, 256:], out0, lse0)
    assert bit_equal(eager[0], compiled[0]) and bit_equal(eager[1], compiled[1])
    k2, v2 = k[:, 256:].contiguous(), v[:, 256:].contiguous()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ring_step(q, k2, v2, out0, lse0)
    graph.replay()
    torch.cuda.synchronize()
    assert bit_equal(eager[0], captured[0]) and bit_equal(eager[1], captured[1])


# Varlen batches and seqused_k (issue 13), through the op; tools/check.py --matrix varlen is the
# wide random matrix, these the op's own paths. The ragged batches come from tools/check_varlen.py.
import check_varlen  # noqa: E402

VARLEN_CASES = [
    check_varlen.VarlenCase("f16", 128, True, 8, 2, (129, 0, 1, 700, 64, 300), (200, 5, 0, 1000, 63, 300),
                            None, (-1, -1), 17, 9),
    check_varlen.VarlenCase("bf16", 64, False, 8, 1, (17, 300, 0, 1), (17, 3000, 4, 1),
                            (10, 2999, 0, 1), (-1, -1), 0, 40),
    check_varlen.VarlenCase("bf16", 128, True, 4, 4, (257, 31, 0, 128), (257, 31, 0, 128),
                            (200, 31, 0, 1), (64, 0), 5, 5, "qkv"),
    check_varlen.VarlenCase("f16", 256, False, 8, 2, (1, 2, 1, 0, 1), (4097, 128, 1, 7, 0),
                            (4000, 128, 0, 7, 0), (-1, -1), 3, 0),
    check_varlen.VarlenCase("f16", 64, True, 8, 8, (1,) * 33, tuple(range(0, 3300, 100)),
                            None, (-1, -1), 0, 0),
]


def varlen_id(case):
    return (f"{case.dtype}-d{case.head_dim}-{'causal' if case.causal else 'full'}-h{case.heads_q}."
            f"{case.heads_kv}-B{len(case.lens_q)}-q{sum(case.lens_q)}-k{sum(case.lens_k)}"
            f"{'-seqused' if case.used_k else ''}{'-win' if case.window != (-1, -1) else ''}-{case.layout}")


def varlen_op_kwargs(case, inputs):
    return dict(check_varlen.call_kwargs(case, inputs), return_lse=True)


@pytest.mark.parametrize("case", VARLEN_CASES, ids=[varlen_id(c) for c in VARLEN_CASES])
def test_varlen_op_matches_the_reference_and_per_sequence_dense_calls(cuda, case):
    """The varlen op by BENCH.md's rule against the per-sequence reference, bit for bit the ctypes
    path into poisoned buffers (whose slack tokens keep their NaN), and each sequence also run alone
    as a dense call of the same op (its keys cut at seqused_k) within the rule."""
    torch = cuda
    torch.manual_seed(zlib.crc32(varlen_id(case).encode()))
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    kwargs = varlen_op_kwargs(case, inputs)
    out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    inputs.out.fill_(math.nan)
    inputs.lse.fill_(math.nan)
    flashcore.context(inputs.q.device.index).attention(
        inputs.q, inputs.k, inputs.v, out=inputs.out, lse=inputs.lse, **check_varlen.call_kwargs(case, inputs))
    torch.cuda.synchronize()
    tokens = sum(case.lens_q)
    assert bit_equal(out[:tokens], inputs.out[:tokens]) and bit_equal(lse[:, :tokens], inputs.lse[:, :tokens])

    ref = check_varlen.reference(case, inputs)
    stats, failures = check_varlen.judge(case, (("ctypes out", inputs.out),), inputs.lse, ref)
    assert not failures, (failures, stats)

    cu_q, cu_k = check_varlen.starts(case.lens_q), check_varlen.starts(case.lens_k)
    bound = stats["bound"]
    for b, len_q in enumerate(case.lens_q):
        used = case.keys_used(b)
        if len_q == 0 or used == 0:   # the dense op takes no empty sequence
            continue
        rows, keys = slice(cu_q[b], cu_q[b] + len_q), slice(cu_k[b], cu_k[b] + used)
        dense, dense_lse = flashcore.attention(inputs.q[rows][None], inputs.k[keys][None],
                                               inputs.v[keys][None], causal=case.causal,
                                               window=case.window, return_lse=True)
        has_key = ref[3][rows]
        err = check.max_abs_diff(dense[0], ref[0][rows])
        assert err <= bound, f"sequence {b} alone: err {err:.3g} > {bound:.3g}"
        assert check.max_abs_diff(out[rows], dense[0]) <= 2 * bound, f"sequence {b}: varlen vs dense"
        lse_diff = check.max_abs_diff(lse[:, rows][:, has_key], dense_lse[0][:, has_key])
        assert lse_diff <= 2 * check.LSE_TOLERANCE, f"sequence {b}: lse varlen vs dense"


def test_varlen_op_is_deterministic(cuda):
    torch = cuda
    case = VARLEN_CASES[0]
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    tokens = sum(case.lens_q)
    first, first_lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **varlen_op_kwargs(case, inputs))
    for _ in range(20):
        out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **varlen_op_kwargs(case, inputs))
        assert bit_equal(out[:tokens], first[:tokens]) and bit_equal(lse[:, :tokens], first_lse[:, :tokens])


def test_seqused_k_on_a_dense_cache_ignores_the_keys_past_it(cuda):
    """flash_attn_with_kvcache's form (no paging): a dense [B, Sk, Hkv, D] cache filled to
    seqused_k, NaN past it; each sequence by the rule against its filled keys alone."""
    torch = cuda
    torch.manual_seed(5)
    batch, seqlen_k = 4, 3000
    used = [2999, 1, 0, 1500]
    q = torch.randn(batch, 2, 32, 128, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(batch, seqlen_k, 8, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    for b, n in enumerate(used):
        k[b, n:], v[b, n:] = math.nan, math.nan
    seqused_k = torch.tensor(used, dtype=torch.int32, device="cuda")
    out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True, seqused_k=seqused_k)
    torch.cuda.synchronize()
    for b, n in enumerate(used):
        if n == 0:   # no key: out 0, lse -inf
            assert bool((out[b] == 0).all()) and bool(torch.isneginf(lse[b]).all())
            continue
        ref_out, ref_lse, err_pt, has_key = check.reference(q[b:b + 1], k[b:b + 1, :n], v[b:b + 1, :n],
                                                            True, ctypes.c_float(128 ** -0.5).value)
        bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
        assert bool(torch.isfinite(out[b]).all()), f"sequence {b}: NaN from the keys past seqused_k"
        assert check.max_abs_diff(out[b:b + 1], ref_out) <= bound
        assert check.max_abs_diff(lse[b:b + 1][:, :, has_key], ref_lse[:, :, has_key]) <= check.LSE_TOLERANCE


def test_varlen_compile_fullgraph_matches_eager(cuda):
    torch = cuda
    torch._dynamo.reset()
    case = VARLEN_CASES[1]
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    tokens = sum(case.lens_q)

    def epilogue(q, k, v, cu_q, cu_k, seqused_k):
        out, lse = flashcore.attention(q, k, v, causal=case.causal, return_lse=True, cu_seqlens_q=cu_q,
                                       cu_seqlens_k=cu_k, max_seqlen_q=case.max_seqlen_q,
                                       max_seqlen_k=case.max_seqlen_k, seqused_k=seqused_k)
        return out * 2 + 1, lse - 1

    args = (inputs.q, inputs.k, inputs.v, inputs.cu_seqlens_q, inputs.cu_seqlens_k, inputs.seqused_k)
    eager_out, eager_lse = epilogue(*args)
    out, lse = torch.compile(epilogue, fullgraph=True)(*args)
    assert bit_equal(out[:tokens], eager_out[:tokens]) and bit_equal(lse[:, :tokens], eager_lse[:, :tokens])
    explanation = torch._dynamo.explain(epilogue)(*args)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0


def test_varlen_cuda_graph_replays_new_values_and_lengths(cuda):
    """Captured once; each replay reads the q/k/v and the cu_seqlens/seqused_k written into the same
    tensors (nothing was read back at capture), and equals an eager call bit for bit."""
    torch = cuda
    case = VARLEN_CASES[0]
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    kwargs = varlen_op_kwargs(case, inputs)
    seqused_k = torch.tensor([max(0, n - 3) for n in case.lens_k], dtype=torch.int32, device="cuda")
    kwargs["seqused_k"] = seqused_k
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up outside capture: compiles and loads the kernel
        flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    for order in ([5, 4, 3, 2, 1, 0], [2, 0, 1, 3, 5, 4], [0, 1, 2, 3, 4, 5]):
        replayed = case._replace(lens_q=tuple(case.lens_q[i] for i in order),
                                 lens_k=tuple(case.lens_k[i] for i in order))
        check_varlen.load(replayed, inputs)
        seqused_k.copy_(torch.tensor([n // 2 for n in replayed.lens_k], dtype=torch.int32))
        graph.replay()
        expected, expected_lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
        torch.cuda.synchronize()
        tokens = sum(replayed.lens_q)
        assert bit_equal(out[:tokens], expected[:tokens])
        assert bit_equal(lse[:, :tokens], expected_lse[:, :tokens])
        used = replayed._replace(used_k=tuple(n // 2 for n in replayed.lens_k))
        stats, failures = check_varlen.judge(used, (("replayed", out),), lse,
                                             check_varlen.reference(used, inputs), poisoned=False)
        assert not failures, (failures, stats)


def test_varlen_opcheck(cuda):
    """torch.library.opcheck on a varlen batch whose sequences cover every token (so that every
    element of out is written, and eager and compiled results compare)."""
    torch = cuda
    case = check_varlen.VarlenCase("f16", 64, True, 8, 2, (100, 0, 33), (150, 3, 40), (150, 0, 20))
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    for return_lse in (False, True):
        torch.library.opcheck(torch.ops.flashcore.attention.default,
                              (inputs.q, inputs.k, inputs.v, True, None, return_lse, -1, -1, None, None,
                               inputs.cu_seqlens_q, inputs.cu_seqlens_k, case.max_seqlen_q,
                               case.max_seqlen_k, inputs.seqused_k))


def test_varlen_library_errors_become_exceptions(cuda):
    torch = cuda
    case = VARLEN_CASES[0]
    inputs = check_varlen.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    check_varlen.load(case, inputs)
    kwargs = dict(check_varlen.call_kwargs(case, inputs), max_seqlen_q=inputs.q.shape[0] + 1)
    with pytest.raises(FlashCoreError, match="cannot exceed seqlen_q"):
        flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    with pytest.raises(ArgumentError, match="cu_seqlens_q is on cpu but q is on cuda:"):
        flashcore.attention(inputs.q, inputs.k, inputs.v,
                            **dict(kwargs, cu_seqlens_q=inputs.cu_seqlens_q.cpu()))
    out = flashcore.attention(inputs.q, inputs.k, inputs.v, **check_varlen.call_kwargs(case, inputs))
    torch.cuda.synchronize()   # the context still works
    assert bool(torch.isfinite(out[:sum(case.lens_q)]).all())


# The paged KV cache (issue 13), through the op; tools/check.py --matrix paged is the wide random
# matrix, these the op's own paths. The caches come from tools/check_paged.py (pages from a random
# permutation, NaN in every page, slot and table entry no sequence reads).
import check_paged  # noqa: E402

PAGED_CASES = [
    # FA3's kvcache decode: one query per sequence, seqused_k, pages of 16, GQA 4
    check_paged.PagedCase("bf16", 128, True, 32, 8, 16, False, (1,) * 9,
                          (4999, 1, 0, 16, 17, 300, 2048, 15, 777), True, 4999, 313, 3, 5),
    # few query rows, pages of one token, the table's width as seqlen_k, no seqused_k
    check_paged.PagedCase("f16", 64, True, 8, 2, 1, False, (4, 4, 4), (1000, 1000, 1000), False, None, 1000),
    # chunked prefill: dense queries against a prefix, pages of 7 (no tile holds whole pages),
    # FlashInfer's layout
    check_paged.PagedCase("f16", 128, True, 8, 8, 7, False, (300, 300), (1200, 301), True, 1200, 172, 0, 9,
                          0, "kv"),
    # varlen queries on the cache (FA3's varlen with page_table), seqused_k, pages of 64, slack tokens
    check_paged.PagedCase("bf16", 128, True, 8, 2, 64, True, (129, 0, 1, 700, 64, 300),
                          (200, 5, 0, 1000, 63, 4097), True, 4097, 65, 2, 7, 17),
    # varlen without seqused_k: every sequence has max_seqlen_k keys; head_dim 256, pages of 256
    check_paged.PagedCase("f16", 256, False, 4, 4, 256, True, (1, 513, 37), (600, 600, 600), False, 600, 3,
                          0, 2, 5),
]


def paged_id(case):
    return (f"{case.dtype}-d{case.head_dim}-{'causal' if case.causal else 'full'}"
            f"-h{case.heads_q}.{case.heads_kv}"
            f"-page{case.page_size}-{'varlen' if case.varlen else 'dense'}-B{case.batch}-q{sum(case.lens_q)}"
            f"-Sk{case.seqlen_k}{'-seqused' if case.used_k else ''}-{case.layout}")


@pytest.fixture
def paged(cuda):
    """torch, when the library takes paged caches; else the test skips, saying why."""
    context = flashcore.context(cuda.cuda.current_device())
    if not flashcore._binding.library_takes_paging(context):
        pytest.skip(flashcore._binding.predates_paging_message(context._lib))
    return cuda


def paged_inputs(torch, case, seed=0):
    inputs = check_paged.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    rows = check_paged.load(case, inputs, random.Random(f"{seed}-{paged_id(case)}"))
    return inputs, rows


def contiguous_cache(torch, case, inputs, rows):
    """The same keys without pages: dense [B, seqlen_k, Hkv, D] (NaN past each sequence's keys)
    or varlen packed [total_k, Hkv, D] with its cu_seqlens_k; and the call's keyword arguments."""
    gathered = [check_paged.gather_keys(case, inputs, rows, b) for b in range(case.batch)]
    if case.varlen:
        k = torch.cat([keys for keys, _ in gathered])
        v = torch.cat([values for _, values in gathered])
        cu_k = torch.tensor(check_varlen.starts([case.keys_used(b) for b in range(case.batch)]),
                            dtype=torch.int32, device=k.device)
        return k, v, dict(causal=case.causal, cu_seqlens_q=inputs.cu_seqlens_q, cu_seqlens_k=cu_k,
                          max_seqlen_q=case.max_seqlen_q, max_seqlen_k=case.seqlen_k)
    k = torch.full((case.batch, case.seqlen_k, case.heads_kv, case.head_dim), math.nan,
                   dtype=inputs.k.dtype, device=inputs.k.device)
    v = torch.full_like(k, math.nan)
    for b, (keys, values) in enumerate(gathered):
        k[b, :keys.shape[0]], v[b, :values.shape[0]] = keys, values
    used = inputs.seqused_k if inputs.seqused_k is not None else None
    return k, v, dict(causal=case.causal, seqused_k=used)


@pytest.mark.parametrize("case", PAGED_CASES, ids=[paged_id(c) for c in PAGED_CASES])
def test_paged_op_matches_the_reference_and_the_same_keys_unpaged(paged, case):
    """The paged op by BENCH.md's rule against the reference on each sequence's gathered keys, bit
    for bit the ctypes path into poisoned buffers (varlen's slack keeps its NaN), and the same keys
    passed contiguous (dense with seqused_k, or varlen with cu_seqlens_k) bit-equal or within the rule."""
    torch = paged
    torch.manual_seed(zlib.crc32(paged_id(case).encode()))
    inputs, rows = paged_inputs(torch, case)
    kwargs = check_paged.call_kwargs(case, inputs)
    out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, return_lse=True, **kwargs)
    inputs.out.fill_(math.nan)
    inputs.lse.fill_(math.nan)
    flashcore.context(inputs.q.device.index).attention(inputs.q, inputs.k, inputs.v, out=inputs.out,
                                                       lse=inputs.lse, **kwargs)
    torch.cuda.synchronize()
    ref = check_paged.reference(case, inputs, rows)
    stats, failures = check_paged.judge(case, (("ctypes out", inputs.out),), inputs.lse, ref)
    assert not failures, (failures, stats)
    tokens = sum(case.lens_q)
    flat_out, flat_lse = check_paged.flat(case, out, lse)
    ctypes_out, ctypes_lse = check_paged.flat(case, inputs.out, inputs.lse)
    assert bit_equal(flat_out[:tokens], ctypes_out[:tokens])
    assert bit_equal(flat_lse[:, :tokens], ctypes_lse[:, :tokens])

    k, v, contiguous_kwargs = contiguous_cache(torch, case, inputs, rows)
    unpaged, unpaged_lse = flashcore.attention(inputs.q, k, v, return_lse=True, **contiguous_kwargs)
    torch.cuda.synchronize()
    flat_unpaged, flat_unpaged_lse = check_paged.flat(case, unpaged, unpaged_lse)
    if not (bit_equal(flat_out[:tokens], flat_unpaged[:tokens])
            and bit_equal(flat_lse[:, :tokens], flat_unpaged_lse[:, :tokens])):
        stats, failures = check_paged.judge(case, (("unpaged", unpaged),), unpaged_lse, ref, poisoned=False)
        assert not failures, ("the same keys unpaged", failures, stats)


def test_paged_decode_with_seqused_k_is_deterministic(paged):
    torch = paged
    case = PAGED_CASES[0]
    inputs, _ = paged_inputs(torch, case)
    kwargs = check_paged.call_kwargs(case, inputs)
    first, first_lse = flashcore.attention(inputs.q, inputs.k, inputs.v, return_lse=True, **kwargs)
    for _ in range(20):
        out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, return_lse=True, **kwargs)
        assert bit_equal(out, first) and bit_equal(lse, first_lse)


@pytest.mark.parametrize("case", [PAGED_CASES[0], PAGED_CASES[3]], ids=["dense", "varlen"])
def test_paged_compile_fullgraph_matches_eager(paged, case):
    torch = paged
    torch._dynamo.reset()
    inputs, _ = paged_inputs(torch, case)
    tokens = sum(case.lens_q)
    kwargs = {key: value for key, value in check_paged.call_kwargs(case, inputs).items()
              if not isinstance(value, torch.Tensor)}

    def epilogue(q, k, v, page_table, seqused_k, cu_seqlens_q):
        out, lse = flashcore.attention(q, k, v, return_lse=True, page_table=page_table,
                                       seqused_k=seqused_k, cu_seqlens_q=cu_seqlens_q, **kwargs)
        return out * 2 + 1, lse - 1

    args = (inputs.q, inputs.k, inputs.v, inputs.page_table, inputs.seqused_k, inputs.cu_seqlens_q)
    eager_out, eager_lse = (check_paged.flat(case, *epilogue(*args)))
    out, lse = check_paged.flat(case, *torch.compile(epilogue, fullgraph=True)(*args))
    assert bit_equal(out[:tokens], eager_out[:tokens]) and bit_equal(lse[:, :tokens], eager_lse[:, :tokens])
    explanation = torch._dynamo.explain(epilogue)(*args)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0


@pytest.mark.parametrize("family_case", ["decode", None], ids=["dense-decode", "varlen"])
def test_paged_cuda_graph_replays_a_new_page_table_and_lengths(paged, family_case):
    """Captured once; each replay reads the q/k/v, the page table's new contents (a new permutation
    of the pages) and the new seqused_k written into the same tensors, and equals an eager call bit
    for bit, within the rule against the reference."""
    torch = paged
    case = check_paged.graph_case(family_case)
    inputs = check_paged.allocate(case, torch.device("cuda", torch.cuda.current_device()))
    rng = random.Random(11)
    check_paged.load(case, inputs, rng)
    kwargs = dict(check_paged.call_kwargs(case, inputs), return_lse=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up outside capture: compiles and loads the kernel
        flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    for _ in range(3):
        replayed = check_paged.replayed_case(case, rng)
        rows = check_paged.load(replayed, inputs, rng)
        graph.replay()
        expected, expected_lse = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
        torch.cuda.synchronize()
        tokens = sum(replayed.lens_q)
        flat_out, flat_lse = check_paged.flat(case, out, lse)
        flat_expected, flat_expected_lse = check_paged.flat(case, expected, expected_lse)
        assert bit_equal(flat_out[:tokens], flat_expected[:tokens])
        assert bit_equal(flat_lse[:, :tokens], flat_expected_lse[:, :tokens])
        stats, failures = check_paged.judge(replayed, (("replayed", out),), lse,
                                            check_paged.reference(replayed, inputs, rows), poisoned=False)
        assert not failures, (failures, stats)


def test_paged_opcheck(paged):
    """torch.library.opcheck on a dense paged decode (every element of out is written)."""
    torch = paged
    case = check_paged.PagedCase("f16", 64, True, 8, 2, 16, False, (2, 2, 2), (100, 0, 33), True, 100, 7,
                                 1, 2)
    inputs, _ = paged_inputs(torch, case)
    for return_lse in (False, True):
        torch.library.opcheck(torch.ops.flashcore.attention.default,
                              (inputs.q, inputs.k, inputs.v, True, None, return_lse, -1, -1, None, None,
                               None, None, 0, 100, inputs.seqused_k, inputs.page_table))


def test_paged_errors_become_exceptions(paged):
    torch = paged
    case = PAGED_CASES[0]
    inputs, _ = paged_inputs(torch, case)
    kwargs = check_paged.call_kwargs(case, inputs)
    with pytest.raises(ArgumentError, match="page_table is on cpu but q is on cuda:"):
        flashcore.attention(inputs.q, inputs.k, inputs.v, **dict(kwargs, page_table=inputs.page_table.cpu()))
    with pytest.raises(ArgumentError, match="is more keys than page_table's rows hold"):
        flashcore.attention(inputs.q, inputs.k, inputs.v,
                            **dict(kwargs, max_seqlen_k=case.width * case.page_size + 1))
    out = flashcore.attention(inputs.q, inputs.k, inputs.v, **kwargs)
    torch.cuda.synchronize()   # the context still works
    assert bool(torch.isfinite(out).all())


def test_check_paged_tool_judges_torch_paged_attention(cuda):
    """tools/check_paged.py on the GPU whatever the library takes: its run_case and its CUDA-graph
    case (new page tables and lengths per replay) pass paged attention written in torch from the
    header's words (tests/python/torch_paged.py), and fail it when it is off by 0.01."""
    torch = cuda
    from torch_paged import TorchPagedContext

    torch.manual_seed(1)
    device = torch.cuda.current_device()
    cases = [case for case in check_paged.build_cases((64,), False, 0)
             if sum(case.lens_q) * case.width * case.page_size <= 20_000_000]
    assert len(cases) >= 2
    for case in cases:
        row = check_paged.run_case(TorchPagedContext(device), case, repeats=2)
        assert row["passed"], (case.describe(), row["failures"])
    for family in (None, "decode"):
        case, row = check_paged.run_graph_case(TorchPagedContext(device), family)
        assert row["passed"], (family, row["failures"])
    row = check_paged.run_case(TorchPagedContext(device, off=0.01), cases[0], repeats=1)
    assert not row["passed"] and any("err" in failure for failure in row["failures"]), row


# An FP8 KV cache (issue 15): k and v float8_e4m3fn with per-(batch, K/V head) scales, through the
# op, the ctypes path, paged, compiled and captured.
FP8_CASES = [
    (check.Case("bf16", 128, True, check.Shape(4, 1, 5000, 32, 8)), {}),
    (check.Case("f16", 64, False, check.Shape(2, 2, 3000, 8, 1)), {}),
    (check.Case("bf16", 256, True, check.Shape(2, 1, 777, 16, 4)), dict(window=(300, 0), softcap=30.0)),
    (check.Case("f16", 128, True, check.Shape(1, 200, 300, 8, 2)), {}),   # prefill: the sm80 kernel
]


def fp8_inputs(torch, case):
    s = case.shape
    dtype = check.torch_dtype(case.dtype)
    q = torch.randn(s.batch, s.seqlen_q, s.heads_q, case.head_dim, dtype=dtype, device="cuda")
    k, v = (torch.randn(s.batch, s.seqlen_k, s.heads_kv, case.head_dim, dtype=dtype, device="cuda")
            for _ in range(2))
    (k8, k_scale, k_exact), (v8, v_scale, v_exact) = check.quantize_e4m3(k), check.quantize_e4m3(v)
    return q, k8, v8, k_scale, v_scale, k_exact, v_exact


@pytest.mark.parametrize("case,options", FP8_CASES, ids=[check.Case.describe(c) for c, _ in FP8_CASES])
def test_fp8_kv_matches_the_reference_on_the_dequantized_cache(cuda, case, options):
    torch = cuda
    q, k8, v8, k_scale, v_scale, k_exact, v_exact = fp8_inputs(torch, case)
    out, lse = flashcore.attention(q, k8, v8, causal=case.causal, return_lse=True, k_descale=k_scale,
                                   v_descale=v_scale, **options)
    torch.cuda.synchronize()
    ref_out, ref_lse, err_pt, has_key = check.reference(
        q, k_exact.to(q.dtype), v_exact.to(q.dtype), case.causal, check.effective_scale(case),
        window=options.get("window", (-1, -1)), softcap=options.get("softcap"), exact_kv=(k_exact, v_exact))
    err = check.max_abs_diff(out, ref_out)
    assert err <= check.ERROR_FACTOR * err_pt + check.ERROR_SLACK, (err, err_pt)
    assert check.max_abs_diff(lse[:, :, has_key], ref_lse[:, :, has_key]) <= check.LSE_TOLERANCE
    with flashcore.Context(0) as context:   # the ctypes path: the same bits
        direct = context.attention(q, k8, v8, causal=case.causal, k_descale=k_scale, v_descale=v_scale,
                                   **options)
    assert bit_equal(direct, out)
    # a per-tensor scale (a float) is the [batch, heads_kv] case with every entry equal
    flat_out = flashcore.attention(q, k8, v8, causal=case.causal, k_descale=0.5, v_descale=2.0, **options)
    full = torch.full_like(k_scale, 0.5), torch.full_like(v_scale, 2.0)
    assert bit_equal(flat_out, flashcore.attention(q, k8, v8, causal=case.causal, k_descale=full[0],
                                                   v_descale=full[1], **options))


def test_fp8_kv_paged_matches_the_reference(cuda):
    """A paged FP8 cache holding the dense one's codes in shuffled pages (paged decode runs other
    tiles than dense decode, so the two are each judged by the rule, not compared bit for bit)."""
    torch = cuda
    case = check.Case("bf16", 128, True, check.Shape(8, 1, 3000, 32, 8))
    q, k8, v8, k_scale, v_scale, k_exact, v_exact = fp8_inputs(torch, case)
    page = 16
    pages_per = -(-3000 // page)
    order = torch.randperm(8 * pages_per, device="cuda")
    table = order.view(8, pages_per).to(torch.int32)
    caches = []
    for t in (k8, v8):
        padded = torch.zeros(8, pages_per * page, 8, 128, dtype=torch.float8_e4m3fn, device="cuda")
        padded[:, :3000] = t
        cache = torch.empty(8 * pages_per, page, 8, 128, dtype=torch.float8_e4m3fn, device="cuda")
        cache[order] = padded.view(-1, page, 8, 128)
        caches.append(cache)
    used = torch.full((8,), 3000, dtype=torch.int32, device="cuda")
    paged = flashcore.attention(q, caches[0], caches[1], causal=True, page_table=table, seqused_k=used,
                                k_descale=k_scale, v_descale=v_scale)
    dense = flashcore.attention(q, k8, v8, causal=True, k_descale=k_scale, v_descale=v_scale)
    ref_out, _, err_pt, _ = check.reference(q, k_exact.to(q.dtype), v_exact.to(q.dtype), True,
                                            check.effective_scale(case), exact_kv=(k_exact, v_exact))
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    assert check.max_abs_diff(paged, ref_out) <= bound and check.max_abs_diff(dense, ref_out) <= bound


def test_fp8_kv_compiles_and_captures(cuda):
    torch = cuda
    torch._dynamo.reset()
    case = check.Case("bf16", 128, True, check.Shape(8, 1, 8192, 32, 8))
    q, k8, v8, k_scale, v_scale, _, _ = fp8_inputs(torch, case)

    def step(q, k8, v8, k_scale, v_scale):
        out, lse = flashcore.attention(q, k8, v8, causal=True, return_lse=True, k_descale=k_scale,
                                       v_descale=v_scale)
        return out * 2 + 1, lse - 1

    eager = step(q, k8, v8, k_scale, v_scale)
    compiled = torch.compile(step, fullgraph=True)(q, k8, v8, k_scale, v_scale)
    assert bit_equal(eager[0], compiled[0]) and bit_equal(eager[1], compiled[1])
    explanation = torch._dynamo.explain(step)(q, k8, v8, k_scale, v_scale)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        flashcore.attention(q, k8, v8, causal=True, k_descale=k_scale, v_descale=v_scale)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):   # the graph reads the cache and its scales at replay
        out = flashcore.attention(q, k8, v8, causal=True, k_descale=k_scale, v_descale=v_scale)
    for _ in range(3):
        q.copy_(torch.randn_like(q))
        k_scale.mul_(1.5)
        graph.replay()
        expected = flashcore.attention(q, k8, v8, causal=True, k_descale=k_scale, v_descale=v_scale)
        torch.cuda.synchronize()
        assert bit_equal(out, expected)
    # NOTE: no torch.library.opcheck here: its schema check multiplies the inputs, which torch 2.11
    # does not implement for float8_e4m3fn ("mul_cuda" not implemented); test_opcheck covers the op.


def test_fp8_kv_errors_name_the_argument(cuda):
    torch = cuda
    case = check.Case("bf16", 128, False, check.Shape(2, 1, 300, 8, 2))
    q, k8, v8, k_scale, v_scale, _, _ = fp8_inputs(torch, case)
    with pytest.raises(ArgumentError, match="an FP8 KV cache has both"):
        flashcore.attention(q, k8, v8.to(torch.bfloat16))
    with pytest.raises(ArgumentError, match="scale an FP8 KV cache"):
        flashcore.attention(q, k8.to(torch.bfloat16), v8.to(torch.bfloat16), k_descale=k_scale)
    with pytest.raises(ArgumentError, match=r"k_descale must be \[batch, heads_kv\]"):
        flashcore.attention(q, k8, v8, k_descale=torch.ones(3, 2, device="cuda"))
    with pytest.raises(ArgumentError, match="k_descale must be float32"):
        flashcore.attention(q, k8, v8, k_descale=k_scale.double())
    odd = torch.randn(2, 1, 8, 24, dtype=torch.bfloat16, device="cuda")
    odd_kv = torch.zeros(2, 300, 2, 24, dtype=torch.float8_e4m3fn, device="cuda")
    with pytest.raises(FlashCoreError, match="multiple of 16"):
        flashcore.attention(odd, odd_kv, odd_kv)


# FP8 attention (FlashAttention-3's fp8 forward): q, k and v float8_e4m3fn quantized from random
# 16-bit values with per-(batch, K/V head) scales, through the op and the ctypes path, judged per element on
# the dequantized inputs by tools/check.py's rule: 2 err_pt (PyTorch in bf16 on them) + 1e-5 + the
# bound of the kernel's rounding of P to e4m3 (check.reference's p_bound). Head dims the sm90
# kernel takes (64, 128, 256) and one it does not (96: the reference kernel); GQA 1/4/5/8, Sq != Sk
# both ways (causal: rows without a key), a strided layout, large-magnitude inputs, out f16 and bf16.
FP8_ATTENTION_CASES = [
    (check.Case("bf16", 64, False, check.Shape(2, 1000, 1000, 8, 2), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 64, True, check.Shape(2, 1000, 1000, 8, 2), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 128, True, check.Shape(1, 4097, 4097, 8, 8), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 128, False, check.Shape(3, 129, 300, 8, 2), q_dtype="e4m3"), 1.0),
    (check.Case("f16", 128, True, check.Shape(2, 300, 129, 8, 1), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 128, True, check.Shape(1, 257, 1000, 10, 2), q_dtype="e4m3"), 3.0),
    (check.Case("bf16", 256, False, check.Shape(2, 513, 513, 4, 4), q_dtype="e4m3"), 1.0),
    (check.Case("f16", 256, True, check.Shape(1, 1000, 1000, 8, 2), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 64, True, check.Shape(1, 300, 300, 8, 2, "strided"), q_dtype="e4m3"), 1.0),
    (check.Case("bf16", 96, True, check.Shape(1, 300, 300, 6, 2), q_dtype="e4m3"), 1.0),
]


def fp8_attention_inputs(torch, case, magnitude=1.0):
    """(q8, k8, v8 in the case's layout, {q,k,v}_descale kwargs, the dequantized (q, k, v) in
    float32, the case's Inputs with out in the output type): randn in the case's dtype, quantized
    per (batch, K/V head)."""
    inputs = check.make_inputs(case, torch.device("cuda", torch.cuda.current_device()))
    s = case.shape
    quantized = [check.quantize_e4m3(x.mul_(magnitude) if magnitude != 1.0 else x,
                                     s.heads_kv if name == "q" else None)
                 for name, x in (("q", inputs.q), ("k", inputs.k), ("v", inputs.v))]
    placed = [check.e4m3_in_layout(x8, like) for (x8, _, _), like in zip(quantized, inputs[:3])]
    scales = {f"{name}_descale": scale for name, (_, scale, _) in zip("qkv", quantized)}
    exact = tuple(x for _, _, x in quantized)
    return (*placed, scales, exact, inputs)


def fp8_attention_reference(torch, case, exact, options=None):
    """check.reference on the dequantized inputs: (out, lse, allowed per element, has_key, the
    LSE's allowance past its accumulation bound: check.lse_limit, the bound [B, Hq, Sq])."""
    options = options or {}
    q, k, v = (x.to(torch.bfloat16) for x in exact)
    ref_out, ref_lse, err_pt, has_key, p_bound, lse_err_pt, lse_bound = check.reference(
        q, k, v, case.causal, check.effective_scale(case), exact_kv=exact[1:], exact_q=exact[0],
        p_bound=True, **options)
    return (ref_out, ref_lse, check.ERROR_FACTOR * err_pt + check.ERROR_SLACK + p_bound, has_key,
            check.lse_limit(lse_err_pt), lse_bound)


@pytest.mark.parametrize("case_and_magnitude", FP8_ATTENTION_CASES,
                         ids=[case_id(c) + "-e4m3" for c in FP8_ATTENTION_CASES])
def test_fp8_attention_matches_the_reference_on_the_dequantized_inputs(cuda, case_and_magnitude):
    torch = cuda
    case, magnitude = case_and_magnitude
    torch.manual_seed(zlib.crc32(case_id(case_and_magnitude).encode()))
    s = case.shape
    q8, k8, v8, scales, exact, inputs = fp8_attention_inputs(torch, case, magnitude)
    out_dtype = check.torch_dtype(case.dtype)
    kwargs = dict(causal=case.causal, out_dtype=out_dtype, **scales)

    # the ctypes path into NaN-poisoned buffers in the case's layout (padding must stay NaN), and
    # the op into poisoned allocations, with the LSE and without
    context = flashcore.context(torch.cuda.current_device())
    lse_c = torch.full((s.batch, s.heads_q, s.seqlen_q), math.nan, dtype=torch.float32, device="cuda")
    inputs.storage.fill_(math.nan)
    context.attention(q8, k8, v8, out=inputs.out, lse=lse_c, **kwargs)
    out, lse = poisoned_allocation_op(torch, q8, k8, v8, return_lse=True, **kwargs)
    out_no_lse = poisoned_allocation_op(torch, q8, k8, v8, **kwargs)
    torch.cuda.synchronize()
    assert out.dtype == out_dtype and out.shape == q8.shape
    assert bit_equal(out, inputs.out) and bit_equal(lse, lse_c), "the op differs from the ctypes path"
    assert inputs.guard is None or bool(torch.isnan(inputs.guard).all()), "wrote outside out"

    ref_out, ref_lse, allowed, has_key, lse_allowed, lse_bound = fp8_attention_reference(torch, case, exact)
    for name, result in (("out", out), ("out without lse", out_no_lse)):
        assert bool(torch.isfinite(result).all()), f"NaN/Inf in {name} (or an element unwritten)"
        ratio = check.worst_ratio(result, ref_out, allowed)
        assert ratio <= 1.0, (f"{name}: |out - ref| is {ratio:.3g} times 2 err_pt + 1e-5 + P's rounding "
                              f"bound somewhere (max |out - ref| {check.max_abs_diff(result, ref_out):.3g})")
        assert bool((result[:, ~has_key] == 0).all()), f"{name}: a row that sees no key is not 0"
    lse_err = check.lse_excess(lse, ref_lse, lse_bound, has_key)
    assert lse_err <= lse_allowed, f"lse err past the accumulation bound {lse_err:.3g} > {lse_allowed:.3g}"
    assert bool(torch.isneginf(lse[:, :, ~has_key]).all()), "lse of a row with no key is not -inf"


def test_fp8_attention_is_deterministic_and_takes_scales_as_floats(cuda):
    torch = cuda
    torch.manual_seed(5)
    case = check.Case("bf16", 128, True, check.Shape(2, 2048, 2048, 16, 4), q_dtype="e4m3")
    q8, k8, v8, scales, _, _ = fp8_attention_inputs(torch, case)
    sinks = torch.randn(16, dtype=torch.float32, device="cuda")
    for options in ({}, dict(window=(300, 0), sinks=sinks, softcap=30.0)):
        first, first_lse = flashcore.attention(q8, k8, v8, causal=True, return_lse=True, **scales, **options)
        for _ in range(20):
            out, lse = flashcore.attention(q8, k8, v8, causal=True, return_lse=True, **scales, **options)
            assert bit_equal(out, first) and bit_equal(lse, first_lse)
    # a per-tensor scale (a float) is the [batch, heads_kv] case with every entry equal; no scale is 1
    flat = flashcore.attention(q8, k8, v8, causal=True, q_descale=0.5, k_descale=0.25, v_descale=2.0)
    full = {name: torch.full_like(scales[name], value)
            for name, value in (("q_descale", 0.5), ("k_descale", 0.25), ("v_descale", 2.0))}
    assert bit_equal(flat, flashcore.attention(q8, k8, v8, causal=True, **full))
    ones = {name: torch.ones_like(scale) for name, scale in scales.items()}
    assert bit_equal(flashcore.attention(q8, k8, v8), flashcore.attention(q8, k8, v8, **ones))
    bf16 = flashcore.attention(q8, k8, v8, causal=True, **scales)
    f16 = flashcore.attention(q8, k8, v8, causal=True, out_dtype=torch.float16, **scales)
    assert bf16.dtype == torch.bfloat16 and f16.dtype == torch.float16
    assert check.max_abs_diff(f16, bf16) < 0.02   # the same attention, rounded to another type


def test_fp8_attention_varlen_matches_the_reference_per_sequence(cuda):
    """Varlen FP8 attention (the reference kernel for now), each sequence judged by the rule."""
    torch = cuda
    torch.manual_seed(6)
    lens_q, lens_k, heads_q, heads_kv, dim = (100, 1, 333), (150, 40, 333), 8, 2, 128
    case = check.Case("bf16", dim, True, check.Shape(1, sum(lens_q), sum(lens_k), heads_q, heads_kv),
                      q_dtype="e4m3")
    # one [1, heads_kv] scale per tensor, shared by the sequences (it broadcasts to [batch, heads_kv])
    q8, k8, v8, scales, exact, _ = fp8_attention_inputs(torch, case)
    cu_q, cu_k = ([0] + [sum(lens[:i + 1]) for i in range(len(lens))] for lens in (lens_q, lens_k))
    out, lse = flashcore.attention(q8[0], k8[0], v8[0], causal=True, return_lse=True,
                                   cu_seqlens_q=torch.tensor(cu_q, dtype=torch.int32, device="cuda"),
                                   cu_seqlens_k=torch.tensor(cu_k, dtype=torch.int32, device="cuda"),
                                   max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k), **scales)
    torch.cuda.synchronize()
    for b in range(len(lens_q)):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        seq_case = case._replace(shape=check.Shape(1, lens_q[b], lens_k[b], heads_q, heads_kv))
        ref_out, ref_lse, allowed, has_key, lse_allowed, lse_bound = fp8_attention_reference(
            torch, seq_case, (exact[0][:, rows], exact[1][:, keys], exact[2][:, keys]))
        assert check.worst_ratio(out[rows][None], ref_out, allowed) <= 1.0, b
        lse_err = check.lse_excess(lse[:, rows][None], ref_lse, lse_bound, has_key)
        assert lse_err <= lse_allowed, b


@pytest.mark.parametrize("family", [None, "sm90", "reference"])
def test_check_tool_passes_fp8_attention(cuda, family):
    """tools/check.py --dtype e4m3 on a few of its quick cases, each family forced in turn."""
    torch = cuda
    torch.manual_seed(7)
    cases = [case for case in check.build_cases((64, 128), True, "base", q_dtype="e4m3",
                                                out_dtypes=("bf16", "f16"))
             if check.family_takes(family, case) and case.shape.seqlen_k < 20000][::4]
    assert cases
    with check.forced_context(torch.cuda.current_device(), family) as context:
        for case in cases:
            row = check.run_case(context, case, repeats=3)
            assert row["passed"], (case.describe(), row["failures"], row.get("kernel"))
            assert "_q8_" in row["kernel"] and (family is None or row["kernel"].startswith(family))


@pytest.mark.parametrize("rotate", [True, False])
def test_check_tool_passes_fp8_attention_quantized_by_the_library(cuda, tmp_path, capsys, rotate):
    """tools/check.py --dtype e4m3 --quick --quantize library [--rotate] through its main, on its quick
    base cases at head_dim 64 (bf16 and f16 outs with --rotate): q, k and v drawn in bf16 and quantized
    by flashcore.quantize_fp8 (q and k rotated alike, a seed per case), every case passing by the rule
    on the dequantized inputs, with the library's quantization within e4m3's rounding and q . k kept."""
    torch = cuda
    rows_path = tmp_path / "rows.json"
    argv = ["--dtype", "e4m3", "--quick", "--quantize", "library", "--matrix", "base", "--head-dims", "64",
            "--out-dtype", "bf16,f16" if rotate else "bf16", "--repeats", "3", "--seed", "3",
            "--device", str(torch.cuda.current_device()), "--json", str(rows_path)]
    status = check.main(argv + (["--rotate"] if rotate else []))
    printed = capsys.readouterr().out
    rows = json.loads(rows_path.read_text())
    assert status == 0, printed
    assert rows and all(row["passed"] for row in rows), printed
    assert f"{len(rows)} passed, 0 failed" in printed and len(rows) == (16 if rotate else 8)
    described = "quantized by the library" + (", rotated" if rotate else "")
    assert sum(described in line for line in printed.splitlines()) == len(rows), printed
    for row in rows:
        assert (row["quantize"], row["rotate"], row["q_dtype"]) == ("library", rotate, "e4m3")
        assert "_q8_" in row["kernel"], row["kernel"]
        assert row["quantized_scores_drift"] <= check.QUANTIZED_SCORES_DRIFT
        assert row["v_quantization_ratio"] <= 1
        if rotate:
            assert min(row["q_rotation_moved"], row["k_rotation_moved"]) >= check.ROTATION_MOVES
        else:
            assert max(row["q_quantization_ratio"], row["k_quantization_ratio"]) <= 1
    seeds = [row["rotation_seed"] for row in rows]
    assert (len(set(seeds)) == len(rows)) if rotate else (seeds == [None] * len(rows))


def test_fp8_attention_compiles_and_captures(cuda):
    torch = cuda
    torch._dynamo.reset()
    case = check.Case("bf16", 128, True, check.Shape(2, 1024, 1024, 16, 4), q_dtype="e4m3")
    q8, k8, v8, scales, _, _ = fp8_attention_inputs(torch, case)
    dq, dk, dv = scales["q_descale"], scales["k_descale"], scales["v_descale"]

    def step(q8, k8, v8, dq, dk, dv):
        out, lse = flashcore.attention(q8, k8, v8, causal=True, return_lse=True, q_descale=dq,
                                       k_descale=dk, v_descale=dv, out_dtype=torch.float16)
        return out * 2 + 1, lse - 1

    eager = step(q8, k8, v8, dq, dk, dv)
    compiled = torch.compile(step, fullgraph=True)(q8, k8, v8, dq, dk, dv)
    assert compiled[0].dtype == torch.float16
    assert bit_equal(eager[0], compiled[0]) and bit_equal(eager[1], compiled[1])
    explanation = torch._dynamo.explain(step)(q8, k8, v8, dq, dk, dv)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    side = torch.cuda.Stream()   # the bf16-out kernel compiled before capture, on a side stream
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        flashcore.attention(q8, k8, v8, causal=True, q_descale=dq, k_descale=dk, v_descale=dv)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):   # the graph reads the tensors and their scales at replay
        out = flashcore.attention(q8, k8, v8, causal=True, q_descale=dq, k_descale=dk, v_descale=dv)
    for _ in range(3):
        dq.mul_(1.5)
        graph.replay()
        expected = flashcore.attention(q8, k8, v8, causal=True, q_descale=dq, k_descale=dk, v_descale=dv)
        torch.cuda.synchronize()
        assert bit_equal(out, expected)


def test_fp8_attention_errors_name_the_argument(cuda):
    torch = cuda
    case = check.Case("bf16", 128, False, check.Shape(2, 300, 300, 8, 2), q_dtype="e4m3")
    q8, k8, v8, scales, _, _ = fp8_attention_inputs(torch, case)
    q16 = q8.to(torch.bfloat16)
    with pytest.raises(ArgumentError, match="FP8 attention takes q, k and v all torch.float8_e4m3fn"):
        flashcore.attention(q8, k8.to(torch.bfloat16), v8.to(torch.bfloat16))
    with pytest.raises(ArgumentError, match="FP8 attention takes q, k and v all"):
        flashcore.attention(q8, k8, v8.to(torch.bfloat16))
    with pytest.raises(ArgumentError, match="q_descale scales FP8 attention's q"):
        flashcore.attention(q16, k8, v8, q_descale=scales["q_descale"])
    with pytest.raises(ArgumentError, match=r"q_descale must be \[batch, heads_kv\]"):
        flashcore.attention(q8, k8, v8, q_descale=torch.ones(2, 8, device="cuda"))
    with pytest.raises(ArgumentError, match="out_dtype torch.float32 is not supported"):
        flashcore.attention(q8, k8, v8, out_dtype=torch.float32)
    with pytest.raises(ArgumentError, match="out is q's dtype"):
        flashcore.attention(q16, q16[:, :, :2], q16[:, :, :2], out_dtype=torch.float16)
    with flashcore.Context(torch.cuda.current_device()) as context:
        with pytest.raises(ArgumentError, match=r"out must be \(2, 300, 8, 128\) torch.float16"):
            context.attention(q8, k8, v8, out=torch.empty_like(q16), out_dtype=torch.float16)
        assert context.attention(q8, k8, v8, out=torch.empty_like(q16, dtype=torch.float16)).dtype \
            == torch.float16   # out's dtype decides when out_dtype is not given
    odd = torch.zeros(2, 300, 2, 24, dtype=torch.float8_e4m3fn, device="cuda")
    with pytest.raises(FlashCoreError, match="multiple of 16"):
        flashcore.attention(odd, odd, odd)


# fc_quantize through flashcore.quantize_fp8 and flashcore.rotate: codes and descales against torch,
# the rotation against its definition (src/flashcore.h: R = H diag(s) / sqrt(n)) and its orthogonality,
# and what the rotation is for: FP8 attention on q and k with outlier dimensions.
E4M3_MAX = check.E4M3_MAX
U64 = 2**64 - 1


def e4m3_ordinal(torch, x8):
    """e4m3 codes as integers in the order of their values (sign and magnitude; -0 and 0 are both 0):
    neighbouring values differ by 1."""
    bits = x8.view(torch.uint8).to(torch.int16)
    magnitude = bits & 0x7F
    return torch.where(bits >= 0x80, -magnitude, magnitude)


def half_e4m3_step(torch, y):
    """Half the spacing of e4m3 values around y (3 mantissa bits; subnormal, step 2^-9, below 2^-6)."""
    exponent = torch.frexp(y.abs().clamp(min=2.0 ** -6)).exponent   # |y| = m 2^exponent, m in [0.5, 1)
    return torch.ldexp(torch.ones_like(y), exponent - 5)


def assert_codes_match(torch, x8, expected, what, one_step_fraction=1e-3):
    """x8's codes are expected's, but for one-step differences (the fp32 scale's last bit at exact
    ties) on at most one_step_fraction of them."""
    distance = (e4m3_ordinal(torch, x8) - e4m3_ordinal(torch, expected)).abs()
    worst = int(distance.max())
    assert worst <= 1, f"{what}: a code {worst} steps from the reference's"
    off = float((distance == 1).double().mean())
    assert off <= one_step_fraction, f"{what}: {off:.4%} of the codes are one step from the reference's"


def groups_amax(torch, x, groups):
    """|x|max per (batch, group of heads / groups consecutive heads) of [B, S, H, D]: float32 [B, groups]."""
    batch, seqlen, heads, dim = x.shape
    return x.float().abs().reshape(batch, seqlen, groups, heads // groups, dim).amax(dim=(1, 3, 4))


def per_head(descale, heads):
    """[B, groups] descales as a [B, 1, H, 1] factor of x."""
    return descale.repeat_interleave(heads // descale.shape[1], dim=1)[:, None, :, None]


def rotation_sign(seed, d):
    """The rotation's sign of dimension d: src/check_quantize.c's fc_rotation_sign (splitmix64)."""
    z = (seed + (d + 1) * 0x9E3779B97F4A7C15) & U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    z ^= z >> 31
    return -1.0 if z >> 63 else 1.0


def rotation_reference(torch, x, seed):
    """R x per row in float64, from its definition: each dimension times its sign, then the Sylvester
    Hadamard matrix of order n (the largest power of two dividing head_dim) on each n-element block,
    over sqrt(n) (src/check_quantize.c's fc_rotate_reference)."""
    dim = x.shape[-1]
    n = dim & -dim
    signs = torch.tensor([rotation_sign(seed, d) for d in range(dim)], dtype=torch.float64, device=x.device)
    hadamard = torch.ones(1, 1, dtype=torch.float64, device=x.device)
    while hadamard.shape[0] < n:
        hadamard = torch.cat([torch.cat([hadamard, hadamard], 1), torch.cat([hadamard, -hadamard], 1)], 0)
    blocks = (x.double() * signs).reshape(*x.shape[:-1], dim // n, n)
    return (blocks @ hadamard / math.sqrt(n)).reshape(x.shape)


def rotation_slack(torch, exact):
    """fp32's share of a rotated element's error beside its rounding (src/check_quantize.c's
    FP32_SLACK): a few ulps of the row's norm per butterfly stage."""
    dim = exact.shape[-1]
    stages = math.log2(dim & -dim)
    return 2.0 ** -21 * (exact.abs() + stages * exact.norm(dim=-1, keepdim=True))


def scores(torch, q, k):
    """q . k per (batch, head, query, key) in float32, q and k [B, S, H, D] of one head count."""
    return torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float())


def relative_rmse(out, ref):
    return float((out.double() - ref.double()).norm() / ref.double().norm())


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_quantize_fp8_matches_a_torch_reference(cuda, dtype_name):
    """Per (batch, group of 4 heads): descale = amax / 448 and x8 = e4m3(x / descale), saturated; per
    tensor; given (calibrated) descales, returned as they are; a strided x as its packed copy."""
    torch = cuda
    torch.manual_seed(11)
    x = torch.randn(2, 300, 8, 128, dtype=getattr(torch, dtype_name), device="cuda")
    x8, descale = flashcore.quantize_fp8(x, descale_heads=2)
    torch.cuda.synchronize()
    assert x8.dtype == torch.float8_e4m3fn and x8.shape == x.shape and x8.is_contiguous()
    assert descale.dtype == torch.float32 and descale.shape == (2, 2)
    amax = groups_amax(torch, x, 2)
    torch.testing.assert_close(descale, amax / E4M3_MAX, rtol=1e-6, atol=0)
    y = x.float() / per_head(descale, 8)
    assert_codes_match(torch, x8, y.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), "per head")
    error = (x8.float() * per_head(descale, 8) - x.float()).abs()
    assert bool((error <= half_e4m3_step(torch, y) * per_head(descale, 8) * (1 + 1e-4)).all()), \
        "a dequantized value is more than half an e4m3 step from x"

    x8_tensor, descale_tensor = flashcore.quantize_fp8(x, descale_heads=2, scaling="tensor")
    assert bool((descale_tensor == descale_tensor[0, 0]).all()), "per tensor: one descale in every entry"
    torch.testing.assert_close(descale_tensor[0, 0], amax.max() / E4M3_MAX, rtol=1e-6, atol=0)
    y = x.float() / descale_tensor[0, 0]
    assert_codes_match(torch, x8_tensor, y.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), "per tensor")

    given = (amax * 0.75 / E4M3_MAX).contiguous()   # 3/4 of the amax's: the largest values saturate
    x8_given, descale_given = flashcore.quantize_fp8(x, descale_heads=2, scaling="given", descale=given)
    assert descale_given is given
    y = x.float() / per_head(given, 8)
    assert_codes_match(torch, x8_given, y.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), "given")
    assert bool((x8_given.float().abs() == E4M3_MAX).any()) and bool(torch.isfinite(x8_given.float()).all())

    transposed = x.transpose(1, 2).contiguous().transpose(1, 2)   # [B, S, H, D] over [B, H, S, D] memory
    x8_strided, descale_strided = flashcore.quantize_fp8(transposed, descale_heads=2)
    assert x8_strided.is_contiguous() and torch.equal(x8_strided.view(torch.uint8), x8.view(torch.uint8))
    assert torch.equal(descale_strided, descale)


def test_quantize_fp8_varlen_is_each_sequence_quantized_alone(cuda):
    """Packed sequences (one empty) with pad tokens after them: each sequence's descales and codes are
    its own dense quantization's, bit for bit; an empty sequence's descales are 1."""
    torch = cuda
    torch.manual_seed(12)
    cu = [0, 100, 100, 350, 357]
    x = torch.randn(cu[-1] + 9, 8, 128, dtype=torch.bfloat16, device="cuda")
    cu_seqlens = torch.tensor(cu, dtype=torch.int32, device="cuda")
    for rotate in (False, True):
        x8, descale = flashcore.quantize_fp8(x, descale_heads=2, rotate=rotate, rotation_seed=9,
                                             cu_seqlens=cu_seqlens, max_seqlen=250)
        torch.cuda.synchronize()
        assert x8.shape == x.shape and descale.shape == (4, 2)
        for b, (first, last) in enumerate(zip(cu, cu[1:])):
            if first == last:
                assert bool((descale[b] == 1).all()), "an empty sequence's descales are not 1"
                continue
            dense8, dense_descale = flashcore.quantize_fp8(x[None, first:last], descale_heads=2,
                                                           rotate=rotate, rotation_seed=9)
            assert torch.equal(descale[b], dense_descale[0]), (rotate, b)
            assert torch.equal(x8[first:last].view(torch.uint8), dense8[0].view(torch.uint8)), (rotate, b)


@pytest.mark.parametrize("dtype_name, head_dim", [("bfloat16", 128), ("float16", 96), ("bfloat16", 80),
                                                   ("float16", 256), ("bfloat16", 64)])
def test_rotate_is_the_seeded_hadamard_rotation(cuda, dtype_name, head_dim):
    """flashcore.rotate against R x in float64 (within the rounding to x's dtype), for Hadamard orders
    of 128, 32, 16, 256 and 64, three seeds (the largest uint64 too), dense and packed rows."""
    torch = cuda
    torch.manual_seed(13)
    dtype = getattr(torch, dtype_name)
    x = torch.randn(2, 100, 4, head_dim, dtype=dtype, device="cuda")
    mantissa, min_normal = (7, 2.0 ** -126) if dtype == torch.bfloat16 else (10, 2.0 ** -14)
    for seed in (0, 12345, U64):
        rotated = flashcore.rotate(x, rotation_seed=seed)
        torch.cuda.synchronize()
        assert rotated.dtype == dtype and rotated.shape == x.shape and rotated.is_contiguous()
        exact = rotation_reference(torch, x, seed)
        half_ulp = torch.ldexp(torch.ones_like(exact),
                               torch.frexp(exact.abs().clamp(min=min_normal)).exponent - mantissa - 2)
        error = (rotated.double() - exact).abs()
        assert bool((error <= half_ulp + rotation_slack(torch, exact)).all()), \
            f"seed {seed}: max |rotate(x) - R x| {float(error.max()):.3g}"
        packed = flashcore.rotate(x.reshape(200, 4, head_dim), rotation_seed=seed)
        assert torch.equal(packed.view(torch.int16), rotated.reshape(200, 4, head_dim).view(torch.int16))
    assert not torch.equal(flashcore.rotate(x, rotation_seed=1), flashcore.rotate(x, rotation_seed=2))


def test_rotation_is_orthogonal_and_keeps_the_scores(cuda):
    """Rotated alike, q and k keep their row norms and every q . k (within bf16's rounding); quantized
    after the rotation, within e4m3's; with another seed for k they do not. quantize_fp8(rotate=True)
    is R x's amax / 448 and e4m3(R x / descale)."""
    torch = cuda
    torch.manual_seed(14)
    q, k = (torch.randn(2, 300, 8, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    seed = 0x0123456789ABCDEF
    rq, rk = flashcore.rotate(q, rotation_seed=seed), flashcore.rotate(k, rotation_seed=seed)
    torch.testing.assert_close(rq.float().norm(dim=-1), q.float().norm(dim=-1), rtol=1e-2, atol=0)
    exact = scores(torch, q, k)
    assert relative_rmse(scores(torch, rq, rk), exact) < 1e-2   # |q . k| ~ sqrt(128); bf16 costs ~3e-3
    assert float((scores(torch, rq, rk) - exact).abs().max()) < 0.3
    assert relative_rmse(scores(torch, rq, flashcore.rotate(k, rotation_seed=seed + 1)), exact) > 0.5

    dequantized = []
    for x in (q, k):
        x8, descale = flashcore.quantize_fp8(x, rotate=True, rotation_seed=seed)
        torch.cuda.synchronize()
        rotated = rotation_reference(torch, x, seed)
        torch.testing.assert_close(descale.double(), groups_amax(torch, rotated, 8).double() / E4M3_MAX,
                                   rtol=3e-5, atol=0)   # fp32's rotation: a few ulps of the row norm
        y = rotated / per_head(descale, 8).double()
        target = y.clamp(-E4M3_MAX, E4M3_MAX)
        allowed = half_e4m3_step(torch, target) + rotation_slack(torch, y)
        error = (x8.float().double() - target).abs()
        assert bool((error <= allowed).all()), f"max |x8 - R x / descale| {float(error.max()):.3g}"
        dequantized.append(x8.float() * per_head(descale, 8))
    assert relative_rmse(scores(torch, *dequantized), exact) < 0.07


def fp32_attention(torch, q, k, v):
    """softmax(q k^T / sqrt(D)) v in float32 (no TF32) of [B, S, H, D] tensors (GQA: k and v's heads
    shared by consecutive query heads)."""
    group = q.shape[2] // k.shape[2]
    k, v = (t.float().repeat_interleave(group, dim=2) for t in (k, v))
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        logits = torch.einsum("bqhd,bkhd->bhqk", q.float(), k) / math.sqrt(q.shape[-1])
        return torch.einsum("bhqk,bkhd->bqhd", torch.softmax(logits, dim=-1), v)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def test_rotation_lowers_fp8_attention_error_on_outlier_dimensions(cuda):
    """q and k with outlier dimensions (every 16th from 3, 30 times the others): FP8 attention on q and
    k rotated alike, then quantized (v quantized as it is), is nearer fp32 attention on the 16-bit
    originals than without the rotation."""
    torch = cuda
    torch.manual_seed(15)
    batch, seqlen, heads_q, heads_kv, dim = 2, 512, 8, 2, 128
    q = torch.randn(batch, seqlen, heads_q, dim, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(batch, seqlen, heads_kv, dim, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    for x in (q, k):
        x[..., 3::16] *= 30
    ref = fp32_attention(torch, q, k, v)

    def fp8_attention(rotate):
        q8, dq = flashcore.quantize_fp8(q, descale_heads=heads_kv, rotate=rotate, rotation_seed=77)
        k8, dk = flashcore.quantize_fp8(k, rotate=rotate, rotation_seed=77)
        v8, dv = flashcore.quantize_fp8(v)
        assert dq.shape == dk.shape == dv.shape == (batch, heads_kv)
        return flashcore.attention(q8, k8, v8, q_descale=dq, k_descale=dk, v_descale=dv)

    plain, rotated = (relative_rmse(fp8_attention(rotate), ref) for rotate in (False, True))
    assert rotated < plain, f"relative RMSE {rotated:.4f} with the rotation, {plain:.4f} without"


def test_quantize_fp8_and_rotate_compile_capture_and_opcheck(cuda):
    torch = cuda
    torch._dynamo.reset()
    torch.manual_seed(16)
    q = torch.randn(2, 256, 8, 128, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(2, 256, 2, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))

    def step(q, k, v):
        q8, dq = flashcore.quantize_fp8(q, descale_heads=2, rotate=True, rotation_seed=5)
        k8, dk = flashcore.quantize_fp8(k, rotate=True, rotation_seed=5)
        v8, dv = flashcore.quantize_fp8(v)
        return flashcore.attention(q8, k8, v8, causal=True, q_descale=dq, k_descale=dk, v_descale=dv)

    eager = step(q, k, v)
    compiled = torch.compile(step, fullgraph=True)(q, k, v)
    assert bit_equal(eager, compiled)
    explanation = torch._dynamo.explain(step)(q, k, v)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    side = torch.cuda.Stream()   # the kernels compiled above; one more call on a side stream first
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(q, k, v)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):   # compiled above; the amax scratch comes from the stream's pool
        captured = step(q, k, v)
    for _ in range(2):
        q.copy_(torch.randn_like(q))
        graph.replay()
        torch.cuda.synchronize()
        assert bit_equal(captured, step(q, k, v))
    torch.library.opcheck(torch.ops.flashcore.rotate.default, (q, 5))
    # NOTE: no opcheck of quantize_fp8: its checks compare float8_e4m3fn outputs, which torch does not
    # implement everywhere (see test_fp8_kv_compiles_and_captures)
