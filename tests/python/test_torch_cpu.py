"""The PyTorch op without a GPU: its schema, its fake kernel's shapes and dtypes, torch.compile and
torch.export tracing through it with one graph and no break, and the errors of bad inputs.

Meta tensors and FakeTensorMode's CUDA tensors need no GPU; what the op computes is the GPU
suite's (test_gpu.py). Skips, with the reason, where torch is missing.
"""
import contextlib
import re

import pytest

import flashcore
from flashcore import ArgumentError, FlashCoreError

CASES = [   # (q shape, k/v shape, causal, return_lse): GQA, Sq != Sk both ways, decode
    ((2, 128, 8, 64), (2, 128, 8, 64), False, False),
    ((2, 100, 8, 128), (2, 300, 2, 128), True, True),
    ((1, 300, 6, 96), (1, 17, 3, 96), True, False),
    ((64, 1, 32, 128), (64, 8192, 8, 128), False, True),
]


def meta(torch, shape, dtype=None, **options):
    return torch.empty(shape, dtype=dtype or torch.float16, device="meta", **options)


def fake_cuda(torch):
    """A FakeTensorMode whose tensors say they are on CUDA (no GPU needed)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


def test_the_op_is_registered_with_its_schema(torch):
    op = torch.ops.flashcore.attention.default
    assert str(op._schema) == ("flashcore::attention(Tensor q, Tensor k, Tensor v, bool causal, "
                               "float? softmax_scale, bool return_lse, SymInt window_left=-1, "
                               "SymInt window_right=-1, Tensor? sinks=None, float? softcap=None, "
                               "Tensor? cu_seqlens_q=None, Tensor? cu_seqlens_k=None, "
                               "SymInt max_seqlen_q=0, SymInt max_seqlen_k=0, "
                               "Tensor? seqused_k=None, Tensor? page_table=None, "
                               "Tensor? k_descale=None, Tensor? v_descale=None, "
                               "Tensor? q_descale=None, ScalarType? out_dtype=None) -> (Tensor, Tensor)")


@pytest.mark.parametrize("q_shape, kv_shape, causal, return_lse", CASES)
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_fake_kernel_shapes_and_dtypes(torch, q_shape, kv_shape, causal, return_lse, dtype_name):
    dtype = getattr(torch, dtype_name)
    for make in ("meta", "fake cuda"):
        if make == "meta":
            q, k, v = (meta(torch, shape, dtype) for shape in (q_shape, kv_shape, kv_shape))
            result = flashcore.attention(q, k, v, causal=causal, return_lse=return_lse)
        else:
            with fake_cuda(torch):
                q, k, v = (torch.empty(shape, dtype=dtype, device="cuda")
                           for shape in (q_shape, kv_shape, kv_shape))
                result = flashcore.attention(q, k, v, causal=causal, return_lse=return_lse)
        out, lse = result if return_lse else (result, None)
        assert out.shape == q_shape and out.dtype == dtype and out.device == q.device
        assert out.is_contiguous()
        if return_lse:
            batch, seqlen_q, heads_q, _ = q_shape
            assert lse.shape == (batch, heads_q, seqlen_q) and lse.dtype == torch.float32
            assert lse.device == q.device


def test_fake_kernel_takes_window_sinks_and_softcap(torch):
    q = meta(torch, (2, 100, 8, 128), torch.bfloat16)
    kv = meta(torch, (2, 300, 2, 128), torch.bfloat16)
    sinks = meta(torch, (8,), torch.float32)
    out, lse = flashcore.attention(q, kv, kv, causal=True, window=(64, 0), sinks=sinks, softcap=30.0,
                                   return_lse=True)
    assert out.shape == q.shape and lse.shape == (2, 8, 100)
    with fake_cuda(torch):   # the op called with 0.2.0's six arguments still means the same
        q = torch.empty(2, 128, 8, 64, dtype=torch.float16, device="cuda")
        out, lse = torch.ops.flashcore.attention(q, q, q, True, None, False)
        assert out.shape == q.shape and lse.shape == (0,)


def test_fake_kernel_takes_strided_inputs(torch):
    qkv = meta(torch, (2, 128, 3, 8, 64))
    q, k, v = qkv.unbind(2)
    out = flashcore.attention(q, k, v)
    assert out.shape == (2, 128, 8, 64) and out.is_contiguous()
    bhsd = meta(torch, (2, 8, 128, 64)).transpose(1, 2)
    assert flashcore.attention(bhsd, bhsd, bhsd).shape == (2, 128, 8, 64)


def attention_block(torch):
    """A small block around the op: what a model would compile."""
    def block(x, q_proj, kv_proj):
        batch, seqlen, hidden = x.shape
        q = (x @ q_proj).view(batch, seqlen, 8, 64)
        k, v = (x @ kv_proj).view(batch, seqlen, 2, 2, 64).unbind(2)
        sinks = x.new_zeros(8, dtype=torch.float32)   # a model's learned logits, one per head
        out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True, window=(32, 0), sinks=sinks,
                                       softcap=20.0)
        return out.reshape(batch, seqlen, hidden) * 2, lse.amax()

    return block


def block_inputs(torch, device_factory):
    x = device_factory((2, 128, 512))
    return x, device_factory((512, 512)), device_factory((512, 256))


def test_compile_fullgraph_traces_through_the_op_with_one_graph(torch):
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    block = attention_block(torch)
    inputs = block_inputs(torch, lambda shape: meta(torch, shape))
    out, lse_max = torch.compile(block, fullgraph=True, backend=backend)(*inputs)
    assert out.shape == (2, 128, 512) and out.dtype == torch.float16 and lse_max.shape == ()
    assert len(graphs) == 1
    targets = [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert torch.ops.flashcore.attention.default in targets

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(block)(*inputs)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_through_aot_autograd_and_inductor(torch, backend):
    torch._dynamo.reset()
    block = attention_block(torch)
    out, _ = torch.compile(block, fullgraph=True, backend=backend)(
        *block_inputs(torch, lambda shape: meta(torch, shape)))
    assert out.shape == (2, 128, 512)


def test_compile_with_dynamic_shapes(torch):
    torch._dynamo.reset()

    def call(q, k, v):
        return flashcore.attention(q, k, v, causal=True, return_lse=True)

    compiled = torch.compile(call, fullgraph=True, backend="aot_eager", dynamic=True)
    for seqlen in (128, 200, 333):
        q = meta(torch, (2, seqlen, 8, 64))
        kv = meta(torch, (2, seqlen * 2, 4, 64))
        out, lse = compiled(q, kv, kv)
        assert out.shape == q.shape and lse.shape == (2, 8, seqlen)


def test_export_with_fake_cuda_inputs(torch):
    class Block(torch.nn.Module):
        def forward(self, q, k, v):
            out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True)
            return out * 2, lse

    with fake_cuda(torch):
        q = torch.empty(2, 128, 8, 64, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 256, 2, 64, dtype=torch.bfloat16, device="cuda")
    exported = torch.export.export(Block(), (q, k, k.clone()))
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert torch.ops.flashcore.attention.default in targets


def test_plan_reads_meta_tensors(torch):
    q = meta(torch, (2, 2048, 16, 128), torch.bfloat16)
    plan = flashcore.plan(q, q, q, causal=True)
    assert plan.device is None and plan.kernel.startswith("sm90_bf16_d128_causal_")
    transposed = meta(torch, (2, 16, 2048, 128)).transpose(1, 2)
    assert "_f16_d128_" in flashcore.plan(transposed, q.half(), q.half()).kernel
    with pytest.raises(ArgumentError, match="dtype float16 but q is torch.bfloat16"):
        flashcore.plan(q, q, q, dtype="float16")


def bad_inputs(torch, make):
    """(name, q, k, v, message) for each kind of bad input, tensors from make(shape, dtype)."""
    f16 = torch.float16
    good = make((2, 128, 8, 64), f16)
    last_not_contiguous = make((2, 128, 64, 8), f16).transpose(2, 3)
    return [
        ("float32", make((2, 128, 8, 64), torch.float32), good, good,
         "float16 and bfloat16 are supported"),
        ("mixed dtypes", good, make((2, 128, 8, 64), torch.bfloat16), good,
         "k is torch.bfloat16 but q is torch.float16"),
        ("3-D", make((2, 128, 64), f16), good, good, "q must be 4-D"),
        ("last dim strided", good, last_not_contiguous, good,
         "k: the last dimension must be contiguous (stride 1), not stride 8"),
        ("k and v differ", good, good, make((2, 64, 8, 64), f16), "must both be [2, seqlen_k"),
        ("head_dim differs", good, make((2, 128, 8, 32), f16), make((2, 128, 8, 32), f16),
         "must both be [2, seqlen_k, heads_kv, 64]"),
        ("batch differs", good, make((3, 128, 8, 64), f16), make((3, 128, 8, 64), f16),
         "must both be [2, seqlen_k"),
    ]


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_bad_inputs_raise_argument_errors_before_the_library(torch, device):
    def make(shape, dtype):
        return torch.zeros(shape, dtype=dtype, device=device)

    for name, q, k, v, message in bad_inputs(torch, make):
        with pytest.raises(ArgumentError) as caught:
            flashcore.attention(q, k, v)
        assert message in str(caught.value), (name, str(caught.value))


@pytest.mark.parametrize("sinks, message", [
    (lambda torch: torch.zeros(8, dtype=torch.float16, device="meta"), "contiguous float32 [8]"),
    (lambda torch: torch.zeros(4, dtype=torch.float32, device="meta"), "contiguous float32 [8]"),
    (lambda torch: torch.zeros(8, 2, dtype=torch.float32, device="meta")[:, 0], "contiguous float32 [8]"),
    (lambda torch: torch.zeros(8, dtype=torch.float32), "sinks is on cpu but q is on meta"),
    (lambda torch: [0.0] * 8, "sinks must be a torch.Tensor"),
])
def test_bad_sinks_and_windows_are_argument_errors(torch, sinks, message):
    q = meta(torch, (2, 128, 8, 64))
    with pytest.raises(ArgumentError, match=re.escape(message)):
        flashcore.attention(q, q, q, sinks=sinks(torch))
    with pytest.raises(ArgumentError, match="window must be a pair"):
        flashcore.attention(q, q, q, window=5)


def test_cpu_tensors_are_refused_with_a_clear_message(torch):
    q = torch.zeros(2, 128, 8, 64, dtype=torch.float16)
    with pytest.raises(ArgumentError, match="the tensors are on cpu: flashcore.attention runs on "
                                            "CUDA tensors"):
        flashcore.attention(q, q, q)
    with pytest.raises(ArgumentError, match="q must be a torch.Tensor, not list"):
        flashcore.attention([1.0], q, q)


def test_bad_inputs_fail_at_trace_time_under_compile(torch):
    torch._dynamo.reset()
    q = meta(torch, (2, 128, 8, 64))
    kv = meta(torch, (2, 128, 8, 32))

    def call(q, k, v):
        return flashcore.attention(q, k, v)

    with pytest.raises(Exception) as caught:
        torch.compile(call, fullgraph=True, backend="eager")(q, kv, kv)
    assert "must both be [2, seqlen_k, heads_kv, 64]" in str(caught.value)


def test_launch_keeps_one_struct_per_problem_and_the_library_checks_every_call(torch):
    """The op's path (Context.launch): parameters built once per problem, pointers per call."""
    context = flashcore.Context(flashcore.FC_DEVICE_NONE, no_disk_cache=True)
    q = torch.zeros(1, 128, 8, 64, dtype=torch.float16)
    k = torch.zeros(1, 128, 2, 64, dtype=torch.float16)
    for _ in range(3):
        with pytest.raises(flashcore.FlashCoreError) as caught:
            context.launch(q, k, k, torch.empty_like(q), None, True, None, 0)
        assert caught.value.status == "FC_ERR_NO_DEVICE"   # validated, then refused: no GPU
    assert len(context._templates) == 1
    for _ in range(2):   # a window and a softcap: another problem; sinks: a pointer of each call
        with pytest.raises(flashcore.FlashCoreError) as caught:
            context.launch(q, k, k, torch.empty_like(q), None, True, None, 0, (16, 0),
                           torch.zeros(8), 30.0)
        assert caught.value.status == "FC_ERR_NO_DEVICE"
    assert len(context._templates) == 2
    with pytest.raises(flashcore.FlashCoreError, match="causal = 1 cannot take window_right 3"):
        context.launch(q, k, k, torch.empty_like(q), None, True, None, 0, (16, 3))
    context._templates.clear()
    bad = torch.zeros(1, 128, 7, 64, dtype=torch.float16)
    for _ in range(2):
        with pytest.raises(flashcore.FlashCoreError, match=r"heads_q \(7\) must be a multiple"):
            context.launch(bad, k, k, torch.empty_like(bad), None, True, None, 0)
    assert len(context._templates) == 1
    context.close()


def test_forward_only_backward_says_so(torch):
    q = meta(torch, (1, 128, 8, 64)).requires_grad_()
    out = flashcore.attention(q, q, q)
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        out.sum().backward()


def test_merge_op_schema_fake_kernel_and_compile(torch):
    op = torch.ops.flashcore.merge.default
    assert str(op._schema) == ("flashcore::merge(Tensor out_a, Tensor lse_a, Tensor out_b, "
                               "Tensor lse_b) -> (Tensor, Tensor)")
    out_a = meta(torch, (2, 100, 8, 128), torch.bfloat16)
    lse_a = meta(torch, (2, 8, 100), torch.float32)
    out, lse = flashcore.merge(out_a, lse_a, out_a, lse_a)
    assert out.shape == out_a.shape and out.dtype == torch.bfloat16 and lse.shape == (2, 8, 100)

    def ring_step(q, k, v, out, lse):   # one step of ring attention: attend, then merge
        part, part_lse = flashcore.attention(q, k, v, return_lse=True)
        return flashcore.merge(out, lse, part, part_lse)

    torch._dynamo.reset()
    q = meta(torch, (2, 100, 8, 128), torch.bfloat16)
    explanation = torch._dynamo.explain(ring_step)(q, q, q, out_a, lse_a)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation


@pytest.mark.parametrize("what, mutate, message", [
    ("3-D", lambda a, la, b, lb: (a[0], la, b, lb), "out_a must be 4-D"),
    ("shapes differ", lambda a, la, b, lb: (a, la, b[:, :50], lb), "out_b is (2, 50, 8, 128)"),
    ("float32", lambda a, la, b, lb: (a.float(), la, b.float(), lb), "float16 and bfloat16"),
    ("lse shape", lambda a, la, b, lb: (a, la[:, :, :5], b, lb), "lse_a must be a contiguous float32"),
    ("lse dtype", lambda a, la, b, lb: (a, la, b, lb.half()), "lse_b must be a contiguous float32"),
])
def test_merge_bad_inputs_are_argument_errors(torch, what, mutate, message):
    a = meta(torch, (2, 100, 8, 128), torch.bfloat16)
    la = meta(torch, (2, 8, 100), torch.float32)
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        flashcore.merge(*mutate(a, la, a, la))
    cpu = torch.zeros(2, 100, 8, 128, dtype=torch.bfloat16)
    with pytest.raises(ArgumentError, match="runs on CUDA tensors"):
        flashcore.merge(cpu, torch.zeros(2, 8, 100), cpu, torch.zeros(2, 8, 100))


def test_quantize_and_rotate_ops_are_registered_with_their_schemas(torch):
    assert str(torch.ops.flashcore.quantize_fp8.default._schema) == (
        'flashcore::quantize_fp8(Tensor x, Tensor? descale=None, SymInt descale_heads=0, '
        'str scaling="head", bool rotate=False, SymInt rotation_seed=0, Tensor? cu_seqlens=None, '
        'SymInt max_seqlen=0) -> (Tensor, Tensor)')
    assert str(torch.ops.flashcore.rotate.default._schema) == (
        "flashcore::rotate(Tensor x, SymInt rotation_seed=0) -> Tensor")


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_quantize_fp8_and_rotate_fake_kernels_shapes_and_dtypes(torch, dtype_name):
    dtype = getattr(torch, dtype_name)
    for make in ("meta", "fake cuda"):
        device = "meta" if make == "meta" else "cuda"
        with (contextlib.nullcontext() if make == "meta" else fake_cuda(torch)):
            x = torch.empty(2, 300, 8, 128, dtype=dtype, device=device)
            transposed = torch.empty(2, 8, 300, 128, dtype=dtype, device=device).transpose(1, 2)
            packed = torch.empty(1000, 8, 128, dtype=dtype, device=device)
            cu_seqlens = torch.zeros(4, dtype=torch.int32, device=device)
            for tensor, options, descale_shape in [
                (x, {}, (2, 8)),
                (x, dict(descale_heads=2, rotate=True, rotation_seed=2**64 - 1), (2, 2)),
                (transposed, dict(scaling="tensor", descale_heads=1), (2, 1)),
                (packed, dict(cu_seqlens=cu_seqlens, max_seqlen=400, descale_heads=4), (3, 4)),
            ]:
                x8, descale = flashcore.quantize_fp8(tensor, **options)
                assert x8.shape == tensor.shape and x8.dtype == torch.float8_e4m3fn and x8.is_contiguous()
                assert descale.shape == descale_shape and descale.dtype == torch.float32, options
                assert x8.device == tensor.device and descale.device == tensor.device
            given = torch.ones(2, 2, dtype=torch.float32, device=device)
            x8, descale = flashcore.quantize_fp8(x, descale_heads=2, scaling="given", descale=given)
            assert descale is given and x8.shape == x.shape   # returned as is
            for tensor in (x, transposed, packed):
                rotated = flashcore.rotate(tensor, rotation_seed=7)
                assert rotated.shape == tensor.shape and rotated.dtype == dtype and rotated.is_contiguous()


def test_quantize_then_fp8_attention_traces_as_one_graph(torch):
    def step(q, k, v):   # q and k rotated alike, v not; FP8 attention on the three
        q8, dq = flashcore.quantize_fp8(q, descale_heads=k.shape[2], rotate=True, rotation_seed=5)
        k8, dk = flashcore.quantize_fp8(k, rotate=True, rotation_seed=5)
        v8, dv = flashcore.quantize_fp8(v)
        return flashcore.attention(q8, k8, v8, causal=True, q_descale=dq, k_descale=dk, v_descale=dv)

    torch._dynamo.reset()
    q = meta(torch, (2, 256, 8, 128), torch.bfloat16)
    k = meta(torch, (2, 256, 2, 128), torch.bfloat16)
    explanation = torch._dynamo.explain(step)(q, k, k)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        out = torch.compile(step, fullgraph=True, backend=backend)(q, k, k)
        assert out.shape == q.shape and out.dtype == torch.bfloat16
    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager", dynamic=True)
    for seqlen in (128, 200, 333):
        q = meta(torch, (2, seqlen, 8, 128), torch.bfloat16)
        k = meta(torch, (2, seqlen, 2, 128), torch.bfloat16)
        assert compiled(q, k, k).shape == q.shape

    def rotate_q(q, seed):   # a 16-bit q beside an FP8 cache
        return flashcore.rotate(q, rotation_seed=seed) * 2

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(rotate_q)(q, 3)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation


def quantize_bad_calls(torch, x, cu_seqlens):
    """(name, call, message) for each kind of bad argument of quantize_fp8 and rotate, x a
    [2, 100, 8, 128] bfloat16 tensor and cu_seqlens an int32 [3] one on the same device."""
    quantize, rotate = flashcore.quantize_fp8, flashcore.rotate
    packed = x.reshape(200, 8, 128)
    return [
        ("float32", lambda: quantize(x.float()), "x is torch.float32: float16 and bfloat16 are quantized"),
        ("3-D dense", lambda: quantize(x[0]), "x must be 4-D [batch, seq, heads, head_dim], not (100, 8, "
                                              "128) (3-D [total_tokens, heads, head_dim] is a varlen "
                                              "batch's: pass cu_seqlens and max_seqlen)"),
        ("4-D varlen", lambda: quantize(x, cu_seqlens=cu_seqlens, max_seqlen=100),
         "x must be 3-D [total_tokens, heads, head_dim]"),
        ("last dim strided", lambda: quantize(x.transpose(2, 3)),
         "x: the last dimension must be contiguous (stride 1), not stride 128"),
        ("descale_heads", lambda: quantize(x, descale_heads=3), "descale_heads (3) must divide heads (8)"),
        ("descale_heads 0", lambda: quantize(x, descale_heads=0), "descale_heads must be a positive int"),
        ("scaling", lambda: quantize(x, scaling="channel"), "scaling must be 'head'"),
        ("given without descale", lambda: quantize(x, scaling="given", descale_heads=2),
         "scaling='given' reads descale: pass a float32 [batch, descale_heads] = [2, 2] tensor"),
        ("given descale shape", lambda: quantize(x, scaling="given", descale_heads=2,
                                                 descale=x.new_ones(2, 8, dtype=torch.float32)),
         "descale must be a contiguous float32 [batch, descale_heads] = [2, 2], not (2, 8)"),
        ("given descale dtype", lambda: quantize(x, scaling="given", descale=x.new_ones(2, 8)),
         "descale must be a contiguous float32 [batch, descale_heads] = [2, 8], not (2, 8) torch.bfloat16"),
        ("descale without given", lambda: quantize(x, descale=x.new_ones(2, 8, dtype=torch.float32)),
         "descale is read with scaling='given' only"),
        ("descale a list", lambda: quantize(x, scaling="given", descale=[1.0]),
         "descale must be a torch.Tensor, not list"),
        ("cu_seqlens int64", lambda: quantize(packed, cu_seqlens=cu_seqlens.long(), max_seqlen=100),
         "cu_seqlens must be 1-D int32 [batch + 1]"),
        ("varlen without max_seqlen", lambda: quantize(packed, cu_seqlens=cu_seqlens),
         "a varlen x needs max_seqlen"),
        ("max_seqlen without cu_seqlens", lambda: quantize(x, max_seqlen=100),
         "max_seqlen belongs to a varlen x: pass it with cu_seqlens"),
        ("max_seqlen a tensor", lambda: quantize(packed, cu_seqlens=cu_seqlens, max_seqlen=cu_seqlens[1]),
         "max_seqlen must be a Python int, not a tensor"),
        ("negative seed", lambda: quantize(x, rotate=True, rotation_seed=-1),
         "rotation_seed must be an int in [0, 2**64) (a uint64), not -1"),
        ("seed past uint64", lambda: rotate(x, rotation_seed=2**64), "rotation_seed must be an int in [0, 2**64)"),
        ("seed a float", lambda: rotate(x, rotation_seed=1.5), "rotation_seed must be an int"),
        ("rotate float32", lambda: rotate(x.float()), "x is torch.float32: float16 and bfloat16 are rotated"),
        ("rotate 2-D", lambda: rotate(x[0, 0]), "x must be 4-D [batch, seq, heads, head_dim] or 3-D"),
        ("rotate strided", lambda: rotate(x.transpose(2, 3)), "x: the last dimension must be contiguous"),
        ("not a tensor", lambda: quantize([1.0]), "x must be a torch.Tensor, not list"),
    ]


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_quantize_bad_inputs_are_argument_errors(torch, device):
    x = torch.zeros(2, 100, 8, 128, dtype=torch.bfloat16, device=device)
    cu_seqlens = torch.tensor([0, 100, 200], dtype=torch.int32, device=device)
    for name, call, message in quantize_bad_calls(torch, x, cu_seqlens):
        with pytest.raises(ArgumentError) as caught:
            call()
        assert message in str(caught.value), (name, str(caught.value))


def test_quantize_on_cpu_tensors_is_refused_with_a_clear_message(torch):
    x = torch.zeros(2, 100, 8, 128, dtype=torch.bfloat16)
    with pytest.raises(ArgumentError, match="x is on cpu: flashcore.quantize_fp8 runs on CUDA tensors"):
        flashcore.quantize_fp8(x)
    with pytest.raises(ArgumentError, match="x is on cpu: flashcore.rotate runs on CUDA tensors"):
        flashcore.rotate(x)
    cu_seqlens = torch.tensor([0, 100, 200], dtype=torch.int32)
    with pytest.raises(ArgumentError, match="cu_seqlens is on cpu but x is on meta"):
        flashcore.quantize_fp8(meta(torch, (200, 8, 128), torch.bfloat16), cu_seqlens=cu_seqlens,
                               max_seqlen=100)


def test_quantize_bad_inputs_fail_at_trace_time_under_compile(torch):
    torch._dynamo.reset()

    def call(x):
        return flashcore.quantize_fp8(x, descale_heads=3)

    with pytest.raises(Exception) as caught:
        torch.compile(call, fullgraph=True, backend="eager")(meta(torch, (2, 100, 8, 128)))
    assert "descale_heads (3) must divide heads (8)" in str(caught.value)


class DeviceBuffer:
    """What Context.quantize reads of a tensor (shape, strides, dtype, pointer); the pointer is never
    dereferenced: the library's rules only look at it, and a FC_DEVICE_NONE context launches nothing."""

    def __init__(self, shape, dtype, pointer, strides=None):
        self.shape, self.dtype, self.device, self.pointer = tuple(shape), dtype, "cuda", pointer
        packed = [1] * len(self.shape)
        for dim in range(len(self.shape) - 2, -1, -1):
            packed[dim] = packed[dim + 1] * self.shape[dim + 1]
        self.strides = tuple(strides or packed)

    def stride(self, dim=None):
        return self.strides if dim is None else self.strides[dim]

    def data_ptr(self):
        return self.pointer


def test_context_quantize_fills_the_struct_the_library_reads():
    """Context.quantize's struct reaches fc_quantize's rules field by field (src/flashcore.h): each
    rule it breaks names the field it set, and a valid problem gets past them all (to the device a
    FC_DEVICE_NONE context lacks)."""
    import ctypes

    from flashcore import _binding

    params = _binding.QuantizeParams()   # as large as the C struct: its initializer fills sizeof of it
    _binding.load_library().fc_quantize_params_init(ctypes.byref(params))
    assert params.struct_size == ctypes.sizeof(params) == _binding.QuantizeParams.max_seqlen.offset + 8
    assert (params.out_dtype, params.scaling, params.rotate) == (_binding.FC_E4M3, _binding.FC_SCALE_PER_HEAD, 0)
    shape = (2, 100, 8, 128)
    x = DeviceBuffer(shape, "torch.bfloat16", 0x10000)
    x8 = DeviceBuffer(shape, "torch.float8_e4m3fn", 0x20000)
    descale = DeviceBuffer((2, 2), "torch.float32", 0x30000)
    with flashcore.Context(flashcore.FC_DEVICE_NONE) as context:
        def refusal(*args, **kwargs):
            with pytest.raises(FlashCoreError) as caught:
                context.quantize(*args, **kwargs)
            return caught.value.status, caught.value.message

        past_the_rules = ("FC_ERR_NO_DEVICE", "this context has no GPU (it was created with FC_DEVICE_NONE)")
        assert refusal(x, x8, descale, 2) == past_the_rules
        assert refusal(x, x8, descale, 2, "tensor", True, 2**64 - 1) == past_the_rules
        assert refusal(x, DeviceBuffer(shape, "torch.bfloat16", 0x20000), None, 0, "head", True) == past_the_rules
        status, message = refusal(x, x8, descale, 3)
        assert status == "FC_ERR_INVALID_ARG" and "descale_heads (3) must divide heads (8)" in message
        status, message = refusal(DeviceBuffer((2, 100, 8, 24), "torch.bfloat16", 0x10000),
                                  DeviceBuffer((2, 100, 8, 24), "torch.float8_e4m3fn", 0x20000), descale)
        assert status == "FC_ERR_UNSUPPORTED" and "head_dim 24 is not supported" in message
        status, message = refusal(x, DeviceBuffer(shape, "torch.bfloat16", 0x20000), None)
        assert "a 16-bit out_dtype only rotates" in message
        status, message = refusal(x, DeviceBuffer(shape, "torch.bfloat16", 0x20000), None, 0, "tensor", True)
        assert "scaling is FP8's" in message
        status, message = refusal(DeviceBuffer(shape, "torch.bfloat16", 0x10000, (102400, 1056, 132, 1)),
                                  x8, descale, 2)
        assert "in_stride[2] (head) is 132" in message
        status, message = refusal(x, DeviceBuffer(shape, "torch.float8_e4m3fn", 0x20008), descale, 2)
        assert "out (0x20008) must be 16-byte aligned" in message
        packed = DeviceBuffer((300, 8, 128), "torch.bfloat16", 0x10000)
        packed8 = DeviceBuffer((300, 8, 128), "torch.float8_e4m3fn", 0x20000)
        cu_seqlens = DeviceBuffer((3,), "torch.int32", 0x40000)
        assert refusal(packed, packed8, descale, 2, cu_seqlens=cu_seqlens, max_seqlen=200) == past_the_rules
        status, message = refusal(packed, packed8, descale, 2, cu_seqlens=cu_seqlens, max_seqlen=500)
        assert "max_seqlen (500) is more than seqlen (300), the total token count" in message
        with pytest.raises(ArgumentError, match="scaling must be one of 'head', 'tensor', 'given'"):
            context.quantize(x, x8, descale, 2, "channel")


def naive_attention(torch, q, k, v, causal, scale, window, sinks, softcap):
    """Per row and key in float64 loops, from the words of flashcore.attention's docstring."""
    import math

    batch, seqlen_q, heads_q, head_dim = q.shape
    seqlen_k, heads_kv = k.shape[1], k.shape[2]
    out = torch.zeros(batch, seqlen_q, heads_q, head_dim, dtype=torch.float64)
    lse = torch.full((batch, heads_q, seqlen_q), -math.inf, dtype=torch.float64)
    left, right = window
    right = 0 if causal else right
    for b in range(batch):
        for h in range(heads_q):
            kv = h // (heads_q // heads_kv)
            sink = -math.inf if sinks is None else float(sinks[h])
            for i in range(seqlen_q):
                d = i + seqlen_k - seqlen_q
                keys = [j for j in range(seqlen_k)
                        if (left < 0 or j >= d - left) and (right < 0 or j <= d + right)]
                scores = [float(q[b, i, h].double() @ k[b, j, kv].double()) * scale for j in keys]
                if softcap is not None:
                    scores = [softcap * math.tanh(s / softcap) for s in scores]
                top = max(scores + [sink])
                if top == -math.inf:
                    continue
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights) + math.exp(sink - top)
                lse[b, h, i] = top + math.log(total)
                for j, w in zip(keys, weights):
                    out[b, i, h] += w / total * v[b, j, kv].double()
    return out, lse


@pytest.mark.parametrize("causal, window, sinks, softcap", [
    (False, (-1, -1), None, None),
    (True, (3, -1), None, None),
    (False, (2, 1), (0.0, 1.0), None),
    (False, (0, 0), None, 2.0),
    (True, (4, 0), (20.0, 1.0), 1.5),
    (True, (-1, -1), (-float("inf"), 3.0), None),
])
def test_check_reference_takes_windows_sinks_and_softcap(torch, causal, window, sinks, softcap):
    """tools/check.py's fp64 reference (what the GPU checks judge by), on the CPU against loops:
    Sq > Sk, so that causal and right-bounded rows see no key (out 0, lse -inf or the sink)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import check

    torch.manual_seed(3)
    q = torch.randn(2, 9, 4, 16, dtype=torch.float16)
    k, v = (torch.randn(2, 6, 2, 16, dtype=torch.float16) for _ in range(2))
    case = check.Case("f16", 16, causal, check.Shape(2, 9, 6, 4, 2), window, sinks, softcap)
    sink_logits = check.make_sinks(case, "cpu")
    scale = check.effective_scale(case)
    out, lse, err_pt, has_key = check.reference(q, k, v, causal, scale, window=window,
                                                sinks=sink_logits, softcap=softcap)
    expected_out, expected_lse = naive_attention(torch, q, k, v, causal, scale, window, sink_logits,
                                                 softcap)
    assert torch.allclose(out, expected_out, atol=1e-9)
    assert torch.equal(torch.isneginf(lse), torch.isneginf(expected_lse))
    finite = torch.isfinite(expected_lse)
    assert torch.allclose(lse[finite], expected_lse[finite], atol=1e-9)
    assert 0.0 <= err_pt < 0.05   # PyTorch's own fp16 error, over the rows that see a key
    if causal or window[1] >= 0:
        assert not bool(has_key.all())   # the rows before the diagonal reaches key 0


# Varlen batches and seqused_k (issue 13): FlashAttention's varlen_func and with_kvcache forms.
def varlen_meta(torch, total_q=1000, total_k=1500, heads_q=8, heads_kv=2, head_dim=128, batch=4,
                dtype=None, device="meta"):
    """(q, k, v, cu_seqlens_q, cu_seqlens_k) of a varlen batch, as empty tensors on device."""
    dtype = dtype or torch.bfloat16
    q = torch.empty(total_q, heads_q, head_dim, dtype=dtype, device=device)
    k, v = (torch.empty(total_k, heads_kv, head_dim, dtype=dtype, device=device) for _ in range(2))
    cu_q, cu_k = (torch.zeros(batch + 1, dtype=torch.int32, device=device) for _ in range(2))
    return q, k, v, cu_q, cu_k


@pytest.mark.parametrize("return_lse", [False, True])
@pytest.mark.parametrize("used", [False, True])
def test_fake_kernel_varlen_shapes(torch, return_lse, used):
    for make in ("meta", "fake cuda"):
        with (fake_cuda(torch) if make == "fake cuda" else contextlib.nullcontext()):
            device = "cuda" if make == "fake cuda" else "meta"
            q, k, v, cu_q, cu_k = varlen_meta(torch, device=device)
            seqused_k = torch.zeros(4, dtype=torch.int32, device=device) if used else None
            result = flashcore.attention(q, k, v, causal=True, return_lse=return_lse,
                                         cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=600,
                                         max_seqlen_k=900, seqused_k=seqused_k)
            out, lse = result if return_lse else (result, None)
            assert out.shape == (1000, 8, 128) and out.dtype == torch.bfloat16 and out.is_contiguous()
            assert out.device == q.device
            if return_lse:   # FlashAttention's varlen layout: [heads_q, total_q]
                assert lse.shape == (8, 1000) and lse.dtype == torch.float32


def test_fake_kernel_dense_with_seqused_k(torch):
    q = meta(torch, (3, 1, 32, 128))
    cache = meta(torch, (3, 4096, 8, 128))
    used = torch.empty(3, dtype=torch.int32, device="meta")
    out, lse = flashcore.attention(q, cache, cache, return_lse=True, seqused_k=used)
    assert out.shape == q.shape and lse.shape == (3, 32, 1)


def varlen_block(torch):
    """A packed-sequence block around the varlen op, as a serving engine's model would compile it."""
    def block(x, w_q, w_kv, cu_seqlens, seqused_k, max_seqlen):
        tokens, hidden = x.shape
        q = (x @ w_q).view(tokens, 8, 64)
        k, v = (x @ w_kv).view(tokens, 2, 2, 64).unbind(1)
        out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True, window=(32, 0),
                                       cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens,
                                       max_seqlen_q=max_seqlen, max_seqlen_k=max_seqlen,
                                       seqused_k=seqused_k)
        return out.reshape(tokens, hidden) * 2, lse.amax()

    return block


def varlen_block_inputs(torch, tokens=300, batch=5):
    return (meta(torch, (tokens, 512)), meta(torch, (512, 512)), meta(torch, (512, 256)),
            torch.empty(batch + 1, dtype=torch.int32, device="meta"),
            torch.empty(batch, dtype=torch.int32, device="meta"))


@pytest.mark.parametrize("backend", ["graphs", "aot_eager", "inductor"])
def test_compile_fullgraph_traces_through_the_varlen_op(torch, backend):
    torch._dynamo.reset()
    graphs = []

    def collect(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    block = varlen_block(torch)
    compiled = torch.compile(block, fullgraph=True,
                             backend=collect if backend == "graphs" else backend)
    out, lse_max = compiled(*varlen_block_inputs(torch), 128)
    assert out.shape == (300, 512) and lse_max.shape == ()
    if backend == "graphs":
        assert len(graphs) == 1
        targets = [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]
        assert torch.ops.flashcore.attention.default in targets
        torch._dynamo.reset()
        explanation = torch._dynamo.explain(block)(*varlen_block_inputs(torch), 128)
        assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation


def test_compile_varlen_with_dynamic_shapes_and_lengths(torch):
    """Token counts and max_seqlen vary from call to call: dynamic=True traces them as SymInts."""
    torch._dynamo.reset()

    def call(q, k, v, cu_q, cu_k, max_q, max_k):
        return flashcore.attention(q, k, v, causal=True, return_lse=True, cu_seqlens_q=cu_q,
                                   cu_seqlens_k=cu_k, max_seqlen_q=max_q, max_seqlen_k=max_k)

    compiled = torch.compile(call, fullgraph=True, backend="aot_eager", dynamic=True)
    for total_q, total_k, batch, max_q, max_k in ((300, 500, 3, 200, 300), (1000, 1200, 7, 500, 900),
                                                  (17, 4000, 2, 16, 3000)):
        q, k, v, cu_q, cu_k = varlen_meta(torch, total_q, total_k, batch=batch, dtype=torch.float16)
        out, lse = compiled(q, k, v, cu_q, cu_k, max_q, max_k)
        assert out.shape == (total_q, 8, 128) and lse.shape == (8, total_q)


def test_export_varlen_with_fake_cuda_inputs(torch):
    class Block(torch.nn.Module):
        def forward(self, q, k, v, cu_seqlens_q, cu_seqlens_k):
            out, lse = flashcore.attention(q, k, v, causal=True, return_lse=True,
                                           cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                                           max_seqlen_q=512, max_seqlen_k=1024)
            return out * 2, lse

    with fake_cuda(torch):
        inputs = varlen_meta(torch, device="cuda")
    exported = torch.export.export(Block(), inputs)
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert torch.ops.flashcore.attention.default in targets


def bad_varlen_calls(torch, device):
    """(name, kwargs of flashcore.attention, message) for each kind of bad varlen argument."""
    q, k, v, cu_q, cu_k = varlen_meta(torch, device=device)
    dense_q = torch.empty(2, 100, 8, 128, dtype=torch.bfloat16, device=device)
    dense_kv = torch.empty(2, 300, 2, 128, dtype=torch.bfloat16, device=device)
    good = dict(q=q, k=k, v=v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=500,
                max_seqlen_k=800)
    int32 = dict(dtype=torch.int32, device=device)
    other = "cpu" if device == "meta" else "meta"
    return [
        ("cu_seqlens int64", dict(good, cu_seqlens_q=cu_q.long()),
         "cu_seqlens_q must be int32 (FlashAttention's cu_seqlens and seqused_k), not torch.int64"),
        ("cu_seqlens 2-D", dict(good, cu_seqlens_k=cu_k[None]), "cu_seqlens_k must be [5], not [1, 5]"),
        ("cu_seqlens_q 2-D", dict(good, cu_seqlens_q=cu_q[None]),
         "cu_seqlens_q must be 1-D int32 [batch + 1], not [1, 5]"),
        ("lengths differ", dict(good, cu_seqlens_k=torch.zeros(4, **int32)),
         "cu_seqlens_k must be [5], not [4]"),
        ("no sequence", dict(good, cu_seqlens_q=torch.zeros(1, **int32),
                             cu_seqlens_k=torch.zeros(1, **int32)),
         "cu_seqlens_q must be int32 [batch + 1] with batch >= 1, not [1]"),
        ("strided", dict(good, cu_seqlens_q=torch.zeros(10, **int32)[::2]),
         "cu_seqlens_q must be contiguous"),
        ("other device", dict(good, cu_seqlens_k=torch.zeros(5, dtype=torch.int32, device=other)),
         f"cu_seqlens_k is on {other} but q is on {device}"),
        ("a list", dict(good, cu_seqlens_q=[0, 1, 2, 3, 4]), "cu_seqlens_q must be a torch.Tensor"),
        ("q alone", dict(good, cu_seqlens_k=None), "a varlen batch takes both cu_seqlens_q and cu_seqlens_k"),
        ("no max", dict(good, max_seqlen_k=None), "a varlen batch needs max_seqlen_q and max_seqlen_k"),
        ("max as a tensor", dict(good, max_seqlen_q=torch.tensor(500)),
         "max_seqlen_q must be a Python int, not a tensor: FlashCore never reads a length back"),
        ("max as a float", dict(good, max_seqlen_k=800.0), "max_seqlen_k must be a Python int"),
        ("max as a bool", dict(good, max_seqlen_k=True), "max_seqlen_k must be a Python int"),
        ("max without cu", dict(q=dense_q, k=dense_kv, v=dense_kv, max_seqlen_q=100, max_seqlen_k=300),
         "max_seqlen_q and max_seqlen_k belong to a varlen batch"),
        ("4-D q varlen", dict(good, q=dense_q), "q must be 3-D [total_tokens, heads, head_dim], not "
                                                "(2, 100, 8, 128) (varlen: the sequences one after another"),
        ("3-D q dense", dict(q=q, k=k, v=v), "q must be 4-D [batch, seq, heads, head_dim], not "
                                             "(1000, 8, 128) (3-D [total_tokens, heads, head_dim] is a "
                                             "varlen batch's"),
        ("k of another head_dim", dict(good, k=k[..., :64], v=v[..., :64]),
         "must both be [total_k, heads_kv, 128] for q (1000, 8, 128) (varlen)"),
        ("seqused_k length", dict(good, seqused_k=torch.zeros(5, **int32)), "seqused_k must be [4], not [5]"),
        ("seqused_k dense length", dict(q=dense_q, k=dense_kv, v=dense_kv,
                                        seqused_k=torch.zeros(3, **int32)),
         "seqused_k must be [2], not [3]"),
        ("seqused_k float", dict(good, seqused_k=torch.zeros(4, dtype=torch.float32, device=device)),
         "seqused_k must be int32"),
    ] + ([("sinks per query head", dict(good, sinks=torch.zeros(2, dtype=torch.float32, device=device)),
           "sinks must be a contiguous float32 [8]")] if device == "meta" else [])


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_bad_varlen_arguments_raise_argument_errors_before_the_library(torch, device):
    for name, kwargs, message in bad_varlen_calls(torch, device):
        kwargs = dict(kwargs)
        q, k, v = kwargs.pop("q"), kwargs.pop("k"), kwargs.pop("v")
        with pytest.raises(ArgumentError) as caught:
            flashcore.attention(q, k, v, **kwargs)
        assert message in str(caught.value), (name, str(caught.value))


def test_varlen_on_cpu_tensors_is_refused_with_a_clear_message(torch):
    q, k, v, cu_q, cu_k = varlen_meta(torch, device="cpu")
    with pytest.raises(ArgumentError, match="the tensors are on cpu: flashcore.attention runs on CUDA"):
        flashcore.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=500,
                            max_seqlen_k=800)


def test_bad_varlen_arguments_fail_at_trace_time_under_compile(torch):
    torch._dynamo.reset()
    q, k, v, cu_q, cu_k = varlen_meta(torch)

    def call(q, k, v, cu_q, cu_k):
        return flashcore.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=500,
                                   max_seqlen_k=800)

    with pytest.raises(Exception) as caught:
        torch.compile(call, fullgraph=True, backend="eager")(q, k, v, cu_q.long(), cu_k)
    assert "cu_seqlens_q must be int32" in str(caught.value)


def test_launch_keeps_one_struct_per_varlen_problem(torch):
    """Context.launch (the op's path) with varlen: its maxima in the kept struct, the index tensors'
    pointers per call; the library validates each call before refusing it (no GPU)."""
    context = flashcore.Context(flashcore.FC_DEVICE_NONE, no_disk_cache=True)
    q, k, v, cu_q, cu_k = varlen_meta(torch, device="cpu", dtype=torch.float16)
    used = torch.zeros(4, dtype=torch.int32)
    out = torch.empty_like(q)
    for max_q in (500, 500, 600):
        sequences = flashcore._binding.sequence_arguments(cu_q, cu_k, max_q, 800, used)
        with pytest.raises(flashcore.FlashCoreError) as caught:
            context.launch(q, k, v, out, None, True, None, 0, sequences=sequences)
        assert caught.value.status == "FC_ERR_NO_DEVICE", caught.value
    assert len(context._templates) == 2
    params = next(iter(context._templates.values()))
    assert (params.batch, params.seqlen_q, params.seqlen_k) == (4, 1000, 1500)
    # the same token counts split into another number of sequences: another struct
    cu_q3, cu_k3 = cu_q[:4].clone(), cu_k[:4].clone()
    sequences = flashcore._binding.sequence_arguments(cu_q3, cu_k3, 500, 800, used[:3].clone())
    with pytest.raises(flashcore.FlashCoreError, match="FC_ERR_NO_DEVICE"):
        context.launch(q, k, v, out, None, True, None, 0, sequences=sequences)
    assert len(context._templates) == 3
    assert list(context._templates.values())[-1].batch == 3
    assert (params.max_seqlen_q, params.max_seqlen_k) == (500, 800)
    assert tuple(params.q_stride) == (0, 8 * 128, 128) and tuple(params.k_stride) == (0, 2 * 128, 128)
    too_long = flashcore._binding.sequence_arguments(cu_q, cu_k, 1001, 800)
    with pytest.raises(flashcore.FlashCoreError, match=r"max_seqlen_q \(1001\) and max_seqlen_k \(800\) "
                                                       "cannot exceed"):
        context.launch(q, k, v, out, None, True, None, 0, sequences=too_long)
    context.close()


def test_check_varlen_reference_and_judge_on_the_cpu(torch):
    """tools/check_varlen.py's per-sequence reference against the loops, on a ragged batch with an
    empty sequence, a sequence without keys, seqused_k, a window and slack tokens; and its judge
    failing a write into the slack and a NaN in a sequence."""
    import math
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import check_varlen

    torch.manual_seed(7)
    case = check_varlen.VarlenCase("f16", 16, True, 4, 2, (5, 0, 3, 9), (7, 2, 0, 6), (4, 2, 0, 6),
                                   (3, 0), 2, 3)
    inputs = check_varlen.allocate(case, "cpu")
    check_varlen.load(case, inputs)
    assert bool(torch.isnan(inputs.q[17:]).all()) and bool(torch.isnan(inputs.k[15:]).all())
    assert bool(torch.isnan(inputs.k[4:7]).all())   # sequence 0's keys past seqused_k
    assert inputs.cu_seqlens_q.tolist() == [0, 5, 5, 8, 17] and inputs.seqused_k.tolist() == [4, 2, 0, 6]
    out, lse, err_pt, has_key = check_varlen.reference(case, inputs)
    scale = 16 ** -0.5
    cu_q, cu_k = check_varlen.starts(case.lens_q), check_varlen.starts(case.lens_k)
    for b, len_q in enumerate(case.lens_q):
        rows, keys = slice(cu_q[b], cu_q[b] + len_q), slice(cu_k[b], cu_k[b] + case.keys_used(b))
        expected, expected_lse = naive_attention(torch, inputs.q[rows][None], inputs.k[keys][None],
                                                 inputs.v[keys][None], True, scale, (3, 0), None, None)
        assert torch.allclose(out[rows], expected[0], atol=1e-6)
        assert torch.equal(torch.isneginf(lse[:, rows]), torch.isneginf(expected_lse[0]))
    assert not bool(has_key[8:11].any()) and bool(has_key[11:17].all())   # 9 queries, 6 keys
    assert not bool(has_key[5:8].any())                         # sequence 2 has no key at all
    assert bool(torch.isnan(out[17:]).all()) and 0 < err_pt < 0.05

    ours = torch.full_like(inputs.out, math.nan)
    ours_lse = torch.full_like(inputs.lse, math.nan)
    ours[:17], ours_lse[:, :17] = out[:17].half(), lse[:, :17].float()
    stats, failures = check_varlen.judge(case, (("out", ours),), ours_lse, (out, lse, err_pt, has_key))
    assert not failures, failures
    ours[17] = 0
    ours[3, 1, 0] = math.nan
    _, failures = check_varlen.judge(case, (("out", ours),), ours_lse, (out, lse, err_pt, has_key))
    assert any("tokens of no sequence" in f for f in failures) and any("NaN/Inf" in f for f in failures)
    _, failures = check_varlen.judge(case, (("out", ours),), ours_lse, (out, lse, err_pt, has_key),
                                     poisoned=False)
    assert not any("tokens of no sequence" in f for f in failures)
