"""FP8 attention from Python without a GPU: q, k and v torch.float8_e4m3fn (FlashAttention-3's fp8
forward), out in out_dtype, q_descale beside k_descale and v_descale. The struct's new fields,
planning and explain, the op's fake kernel and its output type, torch.compile through it, every
refused combination, launch()'s struct, older libraries' refusals, and tools/check.py's quantization,
reference, P-rounding bound and run_case, end to end against an emulation of the kernel's rounding.

Planning needs a library with FP8 attention: those tests skip, saying so, when the loaded one
predates it (the C side lands apart from the Python one).
"""
import ctypes
import math
import sys
from pathlib import Path

import pytest

import flashcore
from flashcore import FC_DEVICE_NONE, ArgumentError, FlashCoreError
from flashcore import _arguments
from flashcore._binding import AttentionParams
from flashcore._structs import FC_BF16, FC_DTYPE_SAME, FC_E4M3, FC_F16

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

PREFILL = (2, 1024, 16, 128)
PREFILL_KV = (2, 1024, 4, 128)


def no_gpu_context():
    return flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True)


def takes_fp8_attention():
    """Whether the loaded library plans FP8 attention (dtype FC_E4M3)."""
    try:
        flashcore.plan((1, 128, 1, 64), (1, 128, 1, 64), (1, 128, 1, 64), dtype="e4m3")
        return True
    except (FlashCoreError, OSError):
        return False


needs_fp8_attention = pytest.mark.skipif(not takes_fp8_attention(), reason="the loaded library "
                                         "predates FP8 attention (src/flashcore.h's out_dtype and "
                                         "q_descale): planning it needs the C side's")


def test_the_struct_ends_with_the_fp8_attention_fields_as_the_header_has_them():
    """enum fc_dtype out_dtype; const float *q_descale; after v_descale (LP64: the pointer
    8-aligned after the enum, the struct a multiple of 8)."""
    names = [name for name, _ in AttentionParams._fields_]
    assert names[-3:] == ["v_descale", "out_dtype", "q_descale"]
    pointer = ctypes.sizeof(ctypes.c_void_p)
    assert AttentionParams.out_dtype.offset == AttentionParams.v_descale.offset + pointer
    assert AttentionParams.q_descale.offset % pointer == 0
    assert AttentionParams.q_descale.offset <= AttentionParams.out_dtype.offset + pointer
    assert ctypes.sizeof(AttentionParams) == AttentionParams.q_descale.offset + pointer


@needs_fp8_attention
def test_the_initializer_leaves_out_dtype_same_and_q_descale_null():
    params = AttentionParams()
    lib = flashcore._binding.load_library()
    lib.fc_attention_params_init_sized(ctypes.byref(params), ctypes.sizeof(params))
    assert params.out_dtype == FC_DTYPE_SAME and params.q_descale is None


def test_dtype_rules_without_torch():
    """kv_dtype_of, q_dtype_code and out_dtype_of on dtype names (torch's str() of its dtypes)."""
    e4m3, bf16, f16 = "torch.float8_e4m3fn", "torch.bfloat16", "torch.float16"
    assert _arguments.q_dtype_code(e4m3) == FC_E4M3 and _arguments.q_dtype_code("e4m3") == FC_E4M3
    assert _arguments.kv_dtype_of(e4m3, e4m3, e4m3) == FC_DTYPE_SAME   # FP8 attention: all dtype
    assert _arguments.kv_dtype_of("e4m3", "float8_e4m3fn", "fp8") == FC_DTYPE_SAME
    assert _arguments.kv_dtype_of(bf16, e4m3, e4m3) == FC_E4M3         # an FP8 cache, as before
    assert _arguments.kv_dtype_of(f16, f16, f16) == FC_DTYPE_SAME
    assert _arguments.kv_dtype_of("bfloat16", bf16, bf16) == FC_DTYPE_SAME   # a name and a dtype
    assert _arguments.out_dtype_of(FC_E4M3) == FC_BF16                  # FA3's default
    assert _arguments.out_dtype_of(FC_E4M3, f16) == FC_F16
    assert _arguments.out_dtype_of(FC_E4M3, "f16") == FC_F16
    assert _arguments.out_dtype_of(FC_BF16) == FC_BF16
    assert _arguments.out_dtype_of(FC_BF16, "bfloat16") == FC_BF16
    for call, message in (
            (lambda: _arguments.kv_dtype_of(e4m3, bf16, bf16),
             "q is torch.float8_e4m3fn (FP8 attention) but k is torch.bfloat16 and v is torch.bfloat16"),
            (lambda: _arguments.kv_dtype_of(e4m3, e4m3, f16), "FP8 attention takes q, k and v all"),
            (lambda: _arguments.kv_dtype_of("torch.float8_e5m2", e4m3, e4m3),
             "dtype torch.float8_e5m2 is not supported (float16 and bfloat16 are, and float8_e4m3fn"),
            (lambda: _arguments.kv_dtype_of(bf16, e4m3, bf16), "an FP8 KV cache has both"),
            (lambda: _arguments.out_dtype_of(FC_E4M3, "torch.float32"),
             "out_dtype torch.float32 is not supported: FP8 attention writes torch.bfloat16"),
            (lambda: _arguments.out_dtype_of(FC_E4M3, e4m3), "out_dtype torch.float8_e4m3fn is not"),
            (lambda: _arguments.out_dtype_of(FC_BF16, f16),
             "out_dtype torch.float16 with q torch.bfloat16: out is q's dtype")):
        with pytest.raises(ArgumentError) as caught:
            call()
        assert message in str(caught.value), str(caught.value)


@needs_fp8_attention
@pytest.mark.parametrize("head_dim, family", [(64, "sm90"), (128, "sm90"), (192, "sm90"), (256, "sm90"),
                                              (96, "reference"), (80, "reference")])
def test_fp8_attention_plans_from_shapes_without_a_gpu(head_dim, family):
    q, kv = (2, 1000, 8, head_dim), (2, 1000, 2, head_dim)
    for dtype in ("e4m3", "float8_e4m3fn", "fp8"):
        plan = flashcore.plan(q, kv, kv, dtype=dtype, causal=True)
        assert plan.kernel.startswith(f"{family}_bf16_d{head_dim}_causal_"), plan
        assert "_q8_" in plan.kernel and plan.device is None, plan
    f16 = flashcore.plan(q, kv, kv, dtype="e4m3", out_dtype="f16")
    assert f16.kernel.startswith(f"{family}_f16_d{head_dim}_") and "_q8_" in f16.kernel, f16
    # kv_dtype e4m3 beside dtype e4m3 is the same problem; q_descale is a run-time input
    assert flashcore.plan(q, kv, kv, dtype="e4m3", kv_dtype="e4m3", out_dtype="bfloat16").kernel == \
        flashcore.plan(q, kv, kv, dtype="e4m3", kv_dtype=None).kernel


@needs_fp8_attention
def test_fp8_attention_varlen_plans_the_hopper_kernel():
    plan = flashcore.plan((3000, 8, 128), (3000, 2, 128), (3000, 2, 128), dtype="e4m3", causal=True,
                          cu_seqlens_q=[0] * 4, cu_seqlens_k=[0] * 4, max_seqlen_q=1000,
                          max_seqlen_k=1000)
    assert plan.kernel.startswith("sm90_bf16_d128_causal_var_kv8_q8_"), plan
    assert "per-sequence lengths" in plan.reason, plan


@needs_fp8_attention
def test_explain_names_fp8_attention(torch):
    lines = flashcore.explain(PREFILL, PREFILL_KV, PREFILL_KV, dtype="e4m3", causal=True).splitlines()
    assert lines[0] == ("B=2 Sq=1024 Sk=1024 Hq=16 Hkv=4 D=128 e4m3 (q, K, V; out bf16) causal on no "
                        "GPU (sm_90a)")
    assert lines[1].startswith("  kernel:   sm90_bf16_d128_causal_kv8_q8_")
    assert lines[2] == ("  features: causal, no window, no softcap, no sinks, FP8 attention (q, K and V "
                        "e4m3 on WGMMA; P rounded to e4m3 for P V)")
    q = torch.empty(1, 300, 6, 96, dtype=torch.float8_e4m3fn, device="meta")
    k = torch.empty(1, 300, 2, 96, dtype=torch.float8_e4m3fn, device="meta")
    lines = flashcore.explain(q, k, k, out_dtype=torch.float16).splitlines()
    assert lines[0] == "B=1 Sq=300 Sk=300 Hq=6 Hkv=2 D=96 e4m3 (q, K, V; out f16) on no GPU (sm_90a)"
    assert lines[1].startswith("  kernel:   reference_f16_d96_kv8_q8_")
    assert lines[2].endswith("FP8 attention (q, K and V e4m3, converted exactly as they are read; P in "
                             "fp32)")
    cache = flashcore.explain(PREFILL, PREFILL_KV, PREFILL_KV, dtype="bf16", kv_dtype="e4m3")
    assert "bf16 (K/V e4m3)" in cache and "FP8 attention" not in cache


@pytest.mark.parametrize("kwargs, message", [   # refused in Python
    (dict(dtype="bf16", out_dtype="f16"), "out_dtype f16 with q torch.bfloat16: out is q's dtype"),
    (dict(dtype="e4m3", out_dtype="float32"), "out_dtype float32 is not supported"),
    (dict(dtype="e4m3", kv_dtype="bf16"), "FP8 attention takes q, k and v all torch.float8_e4m3fn"),
    (dict(dtype="e4m3", kv_dtype="float8_e5m2"), "FP8 attention takes q, k and v all"),
    (dict(dtype="float32"), "dtype float32 is not supported (float16 and bfloat16 are, and "
                            "float8_e4m3fn for FP8 attention"),
])
def test_fp8_planning_errors(kwargs, message):
    with pytest.raises(ArgumentError) as caught:
        flashcore.plan(PREFILL, PREFILL_KV, PREFILL_KV, **kwargs)
    assert message in caught.value.message, caught.value


@needs_fp8_attention
def test_fp8_planning_errors_of_the_library():
    odd = (1, 128, 4, 24)
    with pytest.raises(FlashCoreError, match="head_dim 24 with FP8 attention .* multiple of 16"):
        flashcore.plan(odd, odd, odd, dtype="e4m3")


def test_a_library_that_predates_fp8_attention_refuses_it_by_name():
    from test_paged_cpu import OlderLibrary

    class PredatesFp8(OlderLibrary):
        """OlderLibrary, whose struct ends before out_dtype: what it accepts goes on to this
        library with out_dtype's default, which the older one would never have read."""

        def fc_attention_plan(self, handle, params, info):
            if not self._known or any(bytes(params._obj)[self._known:]):
                return super().fc_attention_plan(handle, params, info)   # refused
            self._message = None
            params._obj.out_dtype = FC_DTYPE_SAME
            return self._lib.fc_attention_plan(handle, params, info)

    for version, known in (("0.2.0", 0), ("0.3.0", AttentionParams.out_dtype.offset)):
        with no_gpu_context() as context:
            context._lib = PredatesFp8(context._lib, version, known)
            with pytest.raises(FlashCoreError) as caught:
                context.plan(PREFILL, PREFILL_KV, PREFILL_KV, dtype="e4m3")
            assert caught.value.status == "FC_ERR_UNSUPPORTED", caught.value
            assert f"(FlashCore {version}) predates FP8 attention" in caught.value.message
            if version != "0.2.0":   # 16-bit calls, and an FP8 cache, still run on it
                assert context.plan(PREFILL, PREFILL_KV, PREFILL_KV, dtype="bf16")[0]
                assert context.plan(PREFILL, PREFILL_KV, PREFILL_KV, dtype="bf16", kv_dtype="e4m3")[0]


# The torch op: its fake kernel's output type, compile, the refused combinations.
def meta(torch, shape, dtype=None):
    return torch.empty(shape, dtype=dtype or torch.float8_e4m3fn, device="meta")


def fake_cuda(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


@pytest.mark.parametrize("out_dtype, expected", [(None, "bfloat16"), ("torch.float16", "float16"),
                                                 ("torch.bfloat16", "bfloat16"), ("f16", "float16"),
                                                 ("bfloat16", "bfloat16")])
def test_fake_kernel_gives_fp8_attention_out_dtype(torch, out_dtype, expected):
    if out_dtype and out_dtype.startswith("torch."):
        out_dtype = getattr(torch, out_dtype.split(".")[1])
    expected = getattr(torch, expected)
    for make in ("meta", "fake cuda"):
        if make == "meta":
            q, k = meta(torch, (2, 100, 8, 128)), meta(torch, (2, 300, 2, 128))
            scales = [meta(torch, (2, 2), torch.float32), meta(torch, (), torch.float32), 0.5]
            out, lse = flashcore.attention(q, k, k, causal=True, return_lse=True, out_dtype=out_dtype,
                                           q_descale=scales[0], k_descale=scales[1], v_descale=scales[2])
        else:
            with fake_cuda(torch):
                q = torch.empty(2, 100, 8, 128, dtype=torch.float8_e4m3fn, device="cuda")
                k = torch.empty(2, 300, 2, 128, dtype=torch.float8_e4m3fn, device="cuda")
                dq = torch.empty(2, 2, dtype=torch.float32, device="cuda")
                out, lse = flashcore.attention(q, k, k, causal=True, return_lse=True, out_dtype=out_dtype,
                                               q_descale=dq, k_descale=dq, v_descale=dq)
        assert out.shape == q.shape and out.dtype == expected and out.is_contiguous()
        assert out.device == q.device
        assert lse.shape == (2, 8, 100) and lse.dtype == torch.float32


def test_fake_kernel_fp8_attention_in_the_varlen_and_paged_forms(torch):
    q, k = meta(torch, (1000, 8, 128)), meta(torch, (1500, 2, 128))
    cu = torch.empty(5, dtype=torch.int32, device="meta")
    out, lse = flashcore.attention(q, k, k, causal=True, return_lse=True, cu_seqlens_q=cu, cu_seqlens_k=cu,
                                   max_seqlen_q=600, max_seqlen_k=900, q_descale=1.5,
                                   out_dtype=torch.float16)
    assert out.shape == (1000, 8, 128) and out.dtype == torch.float16 and lse.shape == (8, 1000)
    pages = meta(torch, (100, 16, 2, 128))
    table = torch.empty(4, 25, dtype=torch.int32, device="meta")
    out = flashcore.attention(meta(torch, (4, 1, 8, 128)), pages, pages, page_table=table,
                              q_descale=meta(torch, (4, 2), torch.float32))
    assert out.shape == (4, 1, 8, 128) and out.dtype == torch.bfloat16


def test_compile_fullgraph_traces_through_fp8_attention(torch):
    torch._dynamo.reset()
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    def block(x, q8, k8, v8, dq, dk, dv):
        out, lse = flashcore.attention(q8, k8, v8, causal=True, return_lse=True, q_descale=dq,
                                       k_descale=dk, v_descale=dv, out_dtype=torch.float16)
        return out.reshape(x.shape) * x, lse.amax()

    inputs = (meta(torch, (2, 128, 512), torch.float16), meta(torch, (2, 128, 8, 64)),
              meta(torch, (2, 128, 2, 64)), meta(torch, (2, 128, 2, 64)),
              *(meta(torch, (2, 2), torch.float32) for _ in range(3)))
    out, lse_max = torch.compile(block, fullgraph=True, backend=backend)(*inputs)
    assert out.shape == (2, 128, 512) and out.dtype == torch.float16 and lse_max.shape == ()
    assert len(graphs) == 1
    targets = [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert torch.ops.flashcore.attention.default in targets
    torch._dynamo.reset()
    out, _ = torch.compile(block, fullgraph=True, backend="aot_eager")(*inputs)
    assert out.dtype == torch.float16
    explanation = torch._dynamo.explain(block)(*inputs)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation


def bad_fp8_calls(torch, device):
    """(name, q, k, v, kwargs, message) for each refused combination; the first ones are refused
    before the tensors' device is looked at."""
    e4m3, bf16 = torch.float8_e4m3fn, torch.bfloat16

    def make(shape, dtype):
        return torch.zeros(shape, dtype=dtype, device=device)

    q8, k8 = make((2, 128, 8, 64), e4m3), make((2, 128, 2, 64), e4m3)
    q16, k16 = make((2, 128, 8, 64), bf16), make((2, 128, 2, 64), bf16)
    scale = make((2, 2), torch.float32)
    early = [
        ("k and v 16-bit", q8, k16, k16, {},
         "q is torch.float8_e4m3fn (FP8 attention) but k is torch.bfloat16 and v is torch.bfloat16"),
        ("v 16-bit", q8, k8, k16, {}, "FP8 attention takes q, k and v all torch.float8_e4m3fn"),
        ("k e5m2", q8, k8.to(torch.float8_e5m2), k8, {}, "FP8 attention takes q, k and v all"),
        ("q e5m2", q8.to(torch.float8_e5m2), k8, k8, {},
         "float16 and bfloat16 are supported (and float8_e4m3fn, with k and v e4m3 too"),
        ("out_dtype a name of nothing", q8, k8, k8, dict(out_dtype="float32"),
         "out_dtype 'float32' is not supported"),
    ]
    if device != "meta":
        return early
    return early + [
        ("q_descale with a 16-bit q", q16, k16, k16, dict(q_descale=scale),
         "q_descale scales FP8 attention's q: q is torch.bfloat16"),
        ("q_descale with an FP8 cache", q16, k8, k8, dict(q_descale=scale),
         "q_descale scales FP8 attention's q"),
        ("k_descale with 16-bit k", q16, k16, k16, dict(k_descale=scale),
         "k_descale and v_descale scale an FP8 KV cache (or FP8 attention's k and v)"),
        ("q_descale per query head", q8, k8, k8, dict(q_descale=make((2, 8), torch.float32)),
         "q_descale must be [batch, heads_kv] = [2, 2] (or broadcast to it), not (2, 8)"),
        ("q_descale float64", q8, k8, k8, dict(q_descale=make((2, 2), torch.float64)),
         "q_descale must be float32, not torch.float64"),
        ("q_descale elsewhere", q8, k8, k8, dict(q_descale=torch.zeros(2, 2)),
         "q_descale is on cpu but q is on meta"),
        ("q_descale a list", q8, k8, k8, dict(q_descale=[1.0, 2.0]), "a descale must be a float"),
        ("out_dtype float32", q8, k8, k8, dict(out_dtype=torch.float32),
         "out_dtype torch.float32 is not supported: FP8 attention writes torch.bfloat16"),
        ("out_dtype e4m3", q8, k8, k8, dict(out_dtype=e4m3), "out_dtype torch.float8_e4m3fn is not"),
        ("out_dtype with a 16-bit q", q16, k16, k16, dict(out_dtype=torch.float16),
         "out_dtype torch.float16 with q torch.bfloat16: out is q's dtype"),
    ]


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_bad_fp8_inputs_raise_argument_errors_before_the_library(torch, device):
    for name, q, k, v, kwargs, message in bad_fp8_calls(torch, device):
        with pytest.raises(ArgumentError) as caught:
            flashcore.attention(q, k, v, **kwargs)
        assert message in str(caught.value), (name, str(caught.value))
    q = torch.zeros(2, 128, 8, 64, dtype=torch.float8_e4m3fn)
    with pytest.raises(ArgumentError, match="the tensors are on cpu: flashcore.attention runs on CUDA"):
        flashcore.attention(q, q[:, :, :2], q[:, :, :2])


def test_bad_fp8_inputs_fail_at_trace_time_under_compile(torch):
    torch._dynamo.reset()
    q, k = meta(torch, (2, 128, 8, 64)), meta(torch, (2, 128, 2, 64))

    def call(q, k, v, dq):
        return flashcore.attention(q, k, v, q_descale=dq)

    with pytest.raises(Exception) as caught:
        torch.compile(call, fullgraph=True, backend="eager")(q, k, k, meta(torch, (3, 2), torch.float32))
    assert "q_descale must be [batch, heads_kv] = [2, 2]" in str(caught.value)


def test_context_checks_out_and_out_dtype_before_the_device(torch):
    """Context.attention (the ctypes path): out_dtype, out's dtype and the dtypes are refused before
    the tensors' device is; out's dtype decides FP8 attention's output when out_dtype is not given."""
    q = torch.zeros(2, 128, 8, 64, dtype=torch.float8_e4m3fn)
    k = torch.zeros(2, 128, 2, 64, dtype=torch.float8_e4m3fn)
    with no_gpu_context() as context:
        with pytest.raises(ArgumentError, match="out_dtype torch.float32 is not supported"):
            context.attention(q, k, k, out_dtype=torch.float32)
        with pytest.raises(ArgumentError, match="FP8 attention takes q, k and v all"):
            context.attention(q, k.bfloat16(), k.bfloat16())
        with pytest.raises(ArgumentError, match="the tensors are on cpu"):
            context.attention(q, k, k, out=torch.empty(2, 128, 8, 64, dtype=torch.float16))


@needs_fp8_attention
def test_launch_keeps_one_struct_per_fp8_problem_and_out_type(torch):
    """Context.launch (the op's path) with FP8 attention: dtype FC_E4M3 and out's type in the kept
    struct, the descales' pointers per call; the library validates each call before refusing it
    (no GPU)."""
    e4m3 = torch.float8_e4m3fn
    q, k = torch.zeros(1, 128, 8, 64, dtype=e4m3), torch.zeros(1, 128, 2, 64, dtype=e4m3)
    descales = flashcore._binding.Descales(torch.ones(1, 2), torch.ones(1, 2), torch.ones(1, 2))
    with no_gpu_context() as context:
        for out_dtype in (torch.bfloat16, torch.bfloat16, torch.float16):
            out = torch.empty(q.shape, dtype=out_dtype)
            with pytest.raises(FlashCoreError) as caught:
                context.launch(q, k, k, out, None, True, None, 0, descales=descales)
            assert caught.value.status == "FC_ERR_NO_DEVICE", caught.value   # validated, then refused
        assert len(context._templates) == 2
        bf16, f16 = context._templates.values()
        assert (bf16.dtype, bf16.kv_dtype, bf16.out_dtype) == (FC_E4M3, FC_DTYPE_SAME, FC_BF16)
        assert f16.out_dtype == FC_F16 and tuple(f16.q_stride) == (128 * 8 * 64, 8 * 64, 64)
        odd = torch.zeros(1, 128, 2, 24, dtype=e4m3)
        with pytest.raises(FlashCoreError, match="multiple of 16"):
            context.launch(odd, odd, odd, torch.empty(odd.shape, dtype=torch.bfloat16), None, False, None, 0)


def test_descale_tensors_expand_and_refuse(torch):
    Descales = flashcore._binding.Descales
    e4m3, bf16 = torch.float8_e4m3fn, torch.bfloat16
    device = torch.device("cpu")
    assert _arguments.descale_tensors(Descales(), e4m3, e4m3, 2, 3, device) == (None, None, None)
    got = _arguments.descale_tensors(Descales(0.5, torch.tensor(2.0), torch.ones(1, 3)), e4m3, e4m3, 2, 3,
                                     device)
    assert all(t.shape == (2, 3) and t.dtype == torch.float32 and t.is_contiguous() for t in got)
    assert got.q.eq(0.5).all() and got.k.eq(2.0).all() and got.v.eq(1.0).all()
    kept = torch.rand(2, 3)
    assert _arguments.descale_tensors(Descales(q=kept), e4m3, e4m3, 2, 3, device).q is kept
    cache = _arguments.descale_tensors(Descales(k=kept), bf16, e4m3, 2, 3, device)
    assert cache.k is kept and cache.q is None
    with pytest.raises(ArgumentError, match="q_descale scales FP8 attention's q"):
        _arguments.descale_tensors(Descales(q=kept), bf16, e4m3, 2, 3, device)


# tools/check.py's FP8 attention: quantization, the reference's P bound, run_case on the CPU.
def test_check_quantizes_per_kv_head_group_and_per_tensor(torch):
    import check

    torch.manual_seed(1)
    x = torch.randn(2, 50, 8, 16, dtype=torch.bfloat16)
    x[1, :, 4:6] *= 10   # one K/V head's group of query heads much larger
    for random_range in (False, True):
        x8, scale, exact = check.quantize_e4m3(x, heads_kv=4, random_range=random_range)
        assert x8.dtype == torch.float8_e4m3fn and x8.is_contiguous() and scale.shape == (2, 4)
        codes = x8.float().abs().reshape(2, 50, 4, 2, 16).amax(dim=(1, 3, 4))
        if random_range:
            assert bool((codes >= 224 * 0.99).all() and (codes <= 448).all())
        else:
            assert torch.equal(codes, torch.full_like(codes, 448.0))   # amax / 448: the top is 448
        assert torch.equal(exact, x8.float() * scale.repeat_interleave(2, 1)[:, None, :, None])
        assert bool(((exact - x.float()).abs() <= x.float().abs() * 2 ** -4 + scale.max() * 2 ** -10).all())
    _, flat, _ = check.quantize_e4m3(x, heads_kv=4, per_tensor=True, random_range=False)
    assert flat.shape == (2, 4) and bool((flat == x.float().abs().max() / 448).all())
    x8, scale, _ = check.quantize_e4m3(x)   # an FP8 cache's: per (batch, head)
    assert scale.shape == (2, 8)


def loop_p_bound(torch, q, k, v, causal, scale, window, sinks):
    """FP8 attention's bound of P's rounding by loops, from check.py's docstring's words."""
    batch, seqlen_q, heads_q, dim = q.shape
    seqlen_k, heads_kv = k.shape[1], k.shape[2]
    bound = torch.zeros(batch, seqlen_q, heads_q, dim, dtype=torch.float64)
    left, right = window
    right = 0 if causal else right
    for b in range(batch):
        for h in range(heads_q):
            kv = h // (heads_q // heads_kv)
            for i in range(seqlen_q):
                d = i + seqlen_k - seqlen_q
                keys = [j for j in range(seqlen_k)
                        if (left < 0 or j >= d - left) and (right < 0 or j <= d + right)]
                scores = [float(q[b, i, h].double() @ k[b, j, kv].double()) * scale for j in keys]
                sink = -math.inf if sinks is None else float(sinks[h])
                top = max(scores + [sink])
                if top == -math.inf:
                    continue
                total = sum(math.exp(s - top) for s in scores) + math.exp(sink - top)
                for j, s in zip(keys, scores):
                    magnitude = v[b, j, kv].double().abs()
                    bound[b, i, h] += 2 ** -4 * math.exp(s - top) / total * magnitude + 2 ** -18 * magnitude
    return bound


@pytest.mark.parametrize("causal, window, sinks", [(False, (-1, -1), None), (True, (3, -1), (0.0, 1.0)),
                                                   (False, (2, 1), (20.0, 1.0))])
def test_check_reference_p_bound_against_loops(torch, causal, window, sinks):
    import check

    torch.manual_seed(2)
    q = torch.randn(2, 9, 4, 16, dtype=torch.float64)
    k, v = (torch.randn(2, 6, 2, 16, dtype=torch.float64) for _ in range(2))
    case = check.Case("bf16", 16, causal, check.Shape(2, 9, 6, 4, 2), window, sinks)
    sink_logits = check.make_sinks(case, "cpu")
    scale = check.effective_scale(case)
    *_, has_key, bound, _, lse_bound = check.reference(q.bfloat16(), k.bfloat16(), v.bfloat16(), causal, scale,
                                            window=window, sinks=sink_logits, exact_kv=(k, v), exact_q=q,
                                            p_bound=True)
    expected = loop_p_bound(torch, q, k, v, causal, scale, window, sink_logits)
    assert torch.allclose(bound, expected, rtol=1e-9, atol=1e-15)
    assert bool((bound[:, ~has_key] == 0).all())
    # the accumulation bound on the LSE: ceil(16 / 32) 2^-14 scale max_j sum_d |q_d k_jd| per row
    group = q.shape[2] // k.shape[2]
    for b in range(q.shape[0]):
        for h in range(q.shape[2]):
            products = q[b, :, h].abs() @ k[b, :, h // group].abs().T              # (Sq, Sk)
            visible = check.visible_keys(q.shape[1], k.shape[1], causal, "cpu", window)
            expected_row = products.masked_fill(~visible, 0).amax(dim=-1) * 2.0 ** -14 * scale
            assert torch.allclose(lse_bound[b, h], expected_row, rtol=1e-9, atol=1e-18)


def emulated_fp8_attention(torch, q8, k8, v8, scales, causal, scale, window, sinks, softcap):
    """FP8 attention as the sm90 kernel computes it (FA3's form), in float64: exact scores from the
    dequantized e4m3 inputs, P = exp(s - row max) rounded to e4m3 under a 2^8 scale for P V, the row
    sum of the unrounded P. (out [B, Sq, Hq, D], lse [B, Hq, Sq]) in float64."""
    import check

    batch, seqlen_q, heads_q, dim = q8.shape
    seqlen_k, heads_kv = k8.shape[1], k8.shape[2]
    group = heads_q // heads_kv

    def dequantized(x8, descale, repeat):
        per_head = descale.double().repeat_interleave(group if repeat else 1, 1)
        x = x8.double() * per_head[:, None, :, None]
        return x.repeat_interleave(1 if repeat else group, 2).transpose(1, 2)   # [B, Hq, S, D]

    q = dequantized(q8, scales[0], True)
    k, v = dequantized(k8, scales[1], False), dequantized(v8, scales[2], False)
    scores = check.capped(torch.matmul(q, k.transpose(2, 3)) * scale, softcap)
    visible = check.visible_keys(seqlen_q, seqlen_k, causal, "cpu", window)
    scores = scores.masked_fill(~visible, -math.inf)
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, 0.0)
    probs = (scores - row_max).exp()
    row_sum = probs.sum(dim=-1, keepdim=True)
    if sinks is not None:
        row_sum = row_sum + (sinks.double()[None, :, None, None] - row_max).exp()
    rounded = (probs * 256).float().to(torch.float8_e4m3fn).double() / 256
    out = torch.matmul(rounded, v) / torch.where(row_sum > 0, row_sum, 1.0)
    lse = torch.where(row_sum > 0, row_max + row_sum.log(), -math.inf).squeeze(-1)
    return out.transpose(1, 2), lse


class EmulatedFp8Context:
    """Context.attention and plan as check.run_case calls them, computing FP8 attention on the CPU
    by emulated_fp8_attention from the tensors and keyword arguments it is given; off: added to every
    output (a wrong kernel)."""

    device = 0

    def __init__(self, torch, off=0.0):
        self.torch, self.off, self.calls = torch, off, []

    def plan(self, *args, **kwargs):
        return ("emulated_q8", "", 1)

    def attention(self, q, k, v, out=None, lse=None, causal=False, softmax_scale=None, window=(-1, -1),
                  sinks=None, softcap=None, q_descale=None, k_descale=None, v_descale=None, out_dtype=None):
        torch = self.torch
        self.calls.append(dict(q=q, k=k, v=v, out=out, q_descale=q_descale, out_dtype=out_dtype))
        assert q.dtype == k.dtype == v.dtype == torch.float8_e4m3fn and out.dtype == out_dtype
        scale = softmax_scale or 1.0 / math.sqrt(q.shape[-1])
        result, result_lse = emulated_fp8_attention(torch, q, k, v, (q_descale, k_descale, v_descale),
                                                    causal, scale, window, sinks, softcap)
        out.copy_(result + self.off)
        if lse is not None:
            lse.copy_(result_lse)
        return out


FP8_CPU_CASES = [
    dict(dtype="bf16", head_dim=64, causal=True, shape=(2, 40, 50, 4, 2)),
    dict(dtype="f16", head_dim=32, causal=False, shape=(1, 33, 20, 4, 1, "strided"), window=(5, 3),
         sinks=(0.0, 1.0), softcap=20.0),
    dict(dtype="bf16", head_dim=64, causal=False, shape=(1, 48, 48, 4, 4, "qkv")),
    dict(dtype="bf16", head_dim=32, causal=True, shape=(1, 60, 30, 4, 2, "packed", 1.0)),   # peaked
]


@pytest.mark.parametrize("fields", FP8_CPU_CASES)
@pytest.mark.parametrize("off", [0.0, 0.25])
def test_check_run_case_judges_fp8_attention_by_the_p_bound(torch, monkeypatch, fields, off):
    """run_case end to end on the CPU with --dtype e4m3's cases: an emulation of the kernel's P
    rounding passes by the rule (well inside the P bound), one that is off fails; the tensors it is
    given are e4m3 in the case's layout, with q_descale per (batch, K/V head) and out in out_dtype."""
    import check

    torch.manual_seed(3)
    shape = check.Shape(*fields["shape"])
    case = check.Case(fields["dtype"], fields["head_dim"], fields["causal"], shape,
                      fields.get("window", (-1, -1)), fields.get("sinks"), fields.get("softcap"),
                      q_dtype="e4m3")
    monkeypatch.setattr(check, "context_device", lambda context: torch.device("cpu"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    context = EmulatedFp8Context(torch, off)
    row = check.run_case(context, case, repeats=2)
    assert row["passed"] != bool(off), row
    assert len(context.calls) == 3 and row["q_dtype"] == "e4m3"
    call = context.calls[0]
    assert call["q_descale"].shape == (shape.batch, shape.heads_kv)
    assert call["out_dtype"] == check.torch_dtype(case.dtype) and call["out"].dtype == call["out_dtype"]
    if shape.layout != "packed":   # the layout's strides, in e4m3
        assert not call["q"].is_contiguous() or not call["k"].is_contiguous()
    if not off:
        assert 0 < row["ratio"] < 1 and row["p_bound_max"] > 0, row


def test_check_builds_fp8_attention_cases_and_families():
    import check

    cases = check.build_cases((64, 96, 128), True, "all", q_dtype="e4m3", out_dtypes=("bf16", "f16"))
    assert cases and all(case.q_dtype == "e4m3" and case.kv_dtype is None for case in cases)
    assert {case.dtype for case in cases} == {"bf16", "f16"}
    assert len(check.build_cases((64,), True, "base", q_dtype="e4m3")) == 8   # bf16 alone by default
    sm90 = [case for case in cases if check.family_takes("sm90", case)]
    assert sm90 and {case.head_dim for case in sm90} == {64, 128}
    assert not any(check.family_takes(family, cases[0]) for family in ("sm80", "decode"))
    assert all(check.family_takes("reference", case) for case in cases)
    args = check.parse_args(["--dtype", "e4m3", "--out-dtype", "bf16,f16"])
    assert args.dtype == "e4m3" and args.out_dtype == ["bf16", "f16"]
    with pytest.raises(SystemExit):
        check.parse_args(["--dtype", "e4m3", "--out-dtype", "f32"])


# tools/check.py --quantize library [--rotate]: its argument rules, its cases, and run_case on the CPU
# with flashcore.quantize_fp8 stood in for by a torch emulation (the GPU suite runs the library's).
@pytest.mark.parametrize("argv, message", [
    (["--quantize", "library"], "--quantize library: FP8 attention's inputs only; pass --dtype e4m3"),
    (["--kv-dtype", "e4m3", "--quantize", "library"], "pass --dtype e4m3"),
    (["--rotate"], "--rotate: the library's quantization rotates; pass --quantize library"),
    (["--dtype", "e4m3", "--rotate"], "pass --quantize library"),
    (["--dtype", "e4m3", "--quantize", "python", "--rotate"], "pass --quantize library"),
    (["--dtype", "e4m3", "--quantize", "torch"], "invalid choice: 'torch'"),
])
def test_check_refuses_quantize_and_rotate_where_they_do_not_apply(capsys, argv, message):
    import check

    with pytest.raises(SystemExit) as exit_info:
        check.parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_check_takes_quantize_and_rotate_with_fp8_attention():
    import check

    args = check.parse_args([])
    assert args.quantize == "python" and args.rotate is False   # the default: quantize_e4m3's codes
    args = check.parse_args(["--dtype", "e4m3", "--quantize", "python"])
    assert args.quantize == "python" and not args.rotate
    args = check.parse_args(["--dtype", "e4m3", "--quick", "--quantize", "library", "--rotate"])
    assert (args.dtype, args.quantize, args.rotate) == ("e4m3", "library", True)
    args = check.parse_args(["--dtype", "e4m3", "--quantize", "library"])
    assert args.quantize == "library" and not args.rotate


def test_check_cases_say_how_they_were_quantized():
    import check

    default = check.build_cases((64,), True, "base", q_dtype="e4m3")
    same = check.build_cases((64,), True, "base", q_dtype="e4m3", quantize="python", rotate=True)
    assert default == same and all(case.quantize is None and not case.rotate for case in default)
    assert default[0].describe() == ("bf16 d64  full   b3 sq129  sk129  hq8 hkv2 packed  q/k/v=e4m3")
    rotated = check.build_cases((64,), True, "base", q_dtype="e4m3", quantize="library", rotate=True)
    assert [case._replace(quantize=None, rotate=False) for case in rotated] == default
    assert rotated[0].describe() == default[0].describe() + " quantized by the library, rotated"
    plain = check.build_cases((64,), True, "base", q_dtype="e4m3", quantize="library")
    assert all(case.describe().endswith("q/k/v=e4m3 quantized by the library") for case in plain)


def emulated_rotation(torch, x, seed):
    """R x per row in float32: a +-1 sign per dimension from seed, then the Sylvester Hadamard matrix of
    order n (the largest power of two dividing head_dim) on each n-element block, over sqrt(n). Not
    the library's signs: a stand-in that is orthogonal and the same for the same seed."""
    dim = x.shape[-1]
    n = dim & -dim
    generator = torch.Generator().manual_seed(seed % 2**63)
    signs = torch.randint(0, 2, (dim,), generator=generator).float() * 2 - 1
    hadamard = torch.ones(1, 1)
    while hadamard.shape[0] < n:
        hadamard = torch.cat([torch.cat([hadamard, hadamard], 1), torch.cat([hadamard, -hadamard], 1)], 0)
    blocks = (x.float() * signs).reshape(*x.shape[:-1], dim // n, n)
    return (blocks @ hadamard / math.sqrt(n)).reshape(x.shape)


class EmulatedQuantizeFp8:
    """flashcore.quantize_fp8 on the CPU (per (batch, descale head) amax / 448, x8 = e4m3(x / descale),
    rotated first by emulated_rotation), recording its calls. fault: "seed apart" (k rotated with
    another seed), "unrotated" (rotate ignored), "v rotated", "refused" (a FlashCoreError)."""

    def __init__(self, torch, fault=None):
        self.torch, self.fault, self.calls = torch, fault, []

    def __call__(self, x, *, descale_heads=None, scaling="head", descale=None, rotate=False, rotation_seed=0,
                 cu_seqlens=None, max_seqlen=None):
        torch = self.torch
        self.calls.append(dict(x=x, descale_heads=descale_heads, scaling=scaling, rotate=rotate,
                               rotation_seed=rotation_seed))
        if self.fault == "refused":
            raise FlashCoreError("FC_ERR_UNSUPPORTED", 2, "quantize needs sm_89 or newer")
        name = "qkv"[len(self.calls) - 1]
        if self.fault == "seed apart" and name == "k":
            rotation_seed += 1
        rotate = (rotate and self.fault != "unrotated") or (self.fault == "v rotated" and name == "v")
        values = emulated_rotation(torch, x, rotation_seed) if rotate else x.float()
        batch, seqlen, heads, dim = x.shape
        groups = descale_heads or heads
        amax = values.abs().reshape(batch, seqlen, groups, heads // groups, dim).amax(dim=(1, 3, 4))
        scale = torch.where(amax > 0, amax / 448.0, 1.0)
        x8 = (values / scale.repeat_interleave(heads // groups, 1)[:, None, :, None]).to(torch.float8_e4m3fn)
        return x8.contiguous(), scale.contiguous()


@pytest.mark.parametrize("fields", FP8_CPU_CASES)
@pytest.mark.parametrize("rotate", [False, True])
def test_check_run_case_on_the_library_s_quantization(torch, monkeypatch, fields, rotate):
    """run_case with --quantize library [--rotate] end to end on the CPU: q, k and v drawn in bf16 and
    given to quantize_fp8 in the case's layout with descale_heads heads_kv, q and k with rotate and one
    seed, v unrotated; the attention call gets their codes in the layout and their descales; the
    emulated kernel passes by the rule on the dequantized (rotated) inputs; the row says so."""
    import check

    torch.manual_seed(4)
    shape = check.Shape(*fields["shape"])
    case = check.Case(fields["dtype"], fields["head_dim"], fields["causal"], shape,
                      fields.get("window", (-1, -1)), fields.get("sinks"), fields.get("softcap"),
                      q_dtype="e4m3", quantize="library", rotate=rotate)
    monkeypatch.setattr(check, "context_device", lambda context: torch.device("cpu"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    quantize = EmulatedQuantizeFp8(torch)
    monkeypatch.setattr(check.flashcore, "quantize_fp8", quantize)
    context = EmulatedFp8Context(torch)
    row = check.run_case(context, case, repeats=2)
    assert row["passed"], row
    assert 0 < row["ratio"] < 1 and row["quantized_scores_drift"] < 0.1, row
    assert (row["quantize"], row["rotate"]) == ("library", rotate)
    q_call, k_call, v_call = quantize.calls
    assert all(call["x"].dtype == torch.bfloat16 and call["descale_heads"] == shape.heads_kv
               and call["scaling"] == "head" for call in quantize.calls)
    assert (q_call["rotate"], k_call["rotate"], v_call["rotate"]) == (rotate, rotate, False)
    if rotate:
        assert q_call["rotation_seed"] == k_call["rotation_seed"] == row["rotation_seed"]
        assert 0 <= row["rotation_seed"] < 2**64 and row["q_rotation_moved"] > 1
    else:
        assert row["rotation_seed"] is None and row["q_quantization_ratio"] <= 1
    assert row["v_quantization_ratio"] <= 1
    call = context.calls[0]
    assert all(call[name].dtype == torch.float8_e4m3fn for name in "qkv")
    assert call["q_descale"].shape == (shape.batch, shape.heads_kv)
    assert call["out_dtype"] == check.torch_dtype(case.dtype) and call["out"].dtype == call["out_dtype"]
    if shape.layout != "packed":   # the layout's strides, in e4m3, as the drawn bf16 tensors had them
        assert not call["q"].is_contiguous() or not call["k"].is_contiguous()
        assert not q_call["x"].is_contiguous() or not k_call["x"].is_contiguous()
    assert check.format_row(case, row).startswith(case.describe())
    assert "quantized by the library" + (", rotated" if rotate else "") in case.describe()


@pytest.mark.parametrize("fault, rotate, message", [
    ("seed apart", True, "q . k of the quantized and rotated q and k is"),
    ("unrotated", True, "quantize_fp8(rotate=True) left q unrotated"),
    ("v rotated", False, "quantize_fp8: a dequantized v is"),
    ("v rotated", True, "quantize_fp8: a dequantized v is"),
    ("refused", True, "quantize_fp8: FC_ERR_UNSUPPORTED: quantize needs sm_89 or newer"),
])
def test_check_run_case_fails_a_wrong_library_quantization(torch, monkeypatch, fault, rotate, message):
    """What the attention rule cannot see (it is judged on whatever was quantized): q and k rotated
    apart, a rotation not applied, v rotated; and a quantize_fp8 that raises fails the case."""
    import check

    torch.manual_seed(5)
    case = check.Case("bf16", 64, True, check.Shape(2, 40, 50, 4, 2), q_dtype="e4m3", quantize="library",
                      rotate=rotate)
    monkeypatch.setattr(check, "context_device", lambda context: torch.device("cpu"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(check.flashcore, "quantize_fp8", EmulatedQuantizeFp8(torch, fault))
    context = EmulatedFp8Context(torch)
    row = check.run_case(context, case, repeats=2)
    assert not row["passed"] and any(message in failure for failure in row["failures"]), row
    assert (not context.calls) == (fault == "refused")
