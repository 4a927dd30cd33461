"""The flashcore package without a GPU and without torch: import, version, info, plan, errors."""
import ctypes
import importlib.metadata
import os
import pickle
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import flashcore
from flashcore import FC_DEVICE_NONE, ArgumentError, FlashCoreError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_PARENT = str(Path(flashcore.__file__).resolve().parent.parent)

PREFILL = (2, 2048, 16, 128)
DECODE_Q, DECODE_KV = (64, 1, 32, 128), (64, 8192, 8, 128)


def run_python(code, **env):
    """Runs code in a new interpreter that imports this same flashcore package."""
    environment = dict(os.environ, **env)
    environment["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PARENT] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else []))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_imports_without_torch_and_says_why_attention_needs_it():
    out = run_python(
        "import sys\n"
        "sys.modules['torch'] = None   # `import torch` now raises ImportError\n"
        "import flashcore\n"
        "print(flashcore.__version__)\n"
        "print(flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64), dtype='f16').kernel)\n"
        "try:\n"
        "    flashcore.attention(None, None, None)\n"
        "except ImportError as error:\n"
        "    print('ImportError:', error)\n")
    version, kernel, error = out.strip().splitlines()
    assert version == flashcore.version()
    assert "_f16_d64_" in kernel
    assert error.startswith("ImportError: flashcore.attention needs PyTorch")


def test_import_loads_no_library_and_a_missing_one_is_named():
    out = run_python(
        "import flashcore\n"
        "print('imported')\n"
        "try:\n"
        "    flashcore.info()\n"
        "except FileNotFoundError as error:\n"
        "    print(error)\n", FLASHCORE_LIB="/nonexistent/libflashcore.so")
    imported, error = out.strip().splitlines()
    assert imported == "imported"
    assert "/nonexistent/libflashcore.so" in error and "pip install ." in error


def test_version_is_the_library_and_project_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", flashcore.__version__)
    assert flashcore.__version__ == flashcore.version()
    meson_build = ROOT / "meson.build"
    if meson_build.is_file():
        project = re.search(r"version:\s*'([^']+)'", meson_build.read_text())
        assert project and project.group(1) == flashcore.__version__
    installed = "site-packages" in flashcore.__file__ or "dist-packages" in flashcore.__file__
    if installed:
        assert importlib.metadata.version("flashcore") == flashcore.__version__


def test_library_path_honours_flashcore_lib():
    path = flashcore.library_path()
    assert path.is_file() and path.name.startswith("libflashcore.so")
    if os.environ.get("FLASHCORE_LIB"):
        assert str(path) == os.environ["FLASHCORE_LIB"]


def test_info_without_a_gpu_still_plans():
    info = flashcore.info()
    for key in ("flashcore", "library", "package", "torch", "gpu", "planning", "cache"):
        assert key in info, info
    assert info["flashcore"] == flashcore.__version__
    assert Path(info["library"]).is_file()
    assert info["planning"] == "ok without a GPU (for sm_90a)"
    assert re.match(r"cuda:0 \(sm_\d+a?\)$|none: FC_ERR_\w+: .+", info["gpu"]), info["gpu"]
    text = str(info)
    assert text.splitlines()[0].startswith("flashcore") and "planning" in text


def test_plan_from_shapes_on_a_context_with_no_gpu():
    plan = flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="bfloat16", causal=True, device="none")
    assert plan.device is None and plan.arch == "sm_90a"
    assert plan.kernel.startswith("sm90_bf16_d128_causal_"), plan
    assert plan.reason and plan.splits >= 1
    decode = flashcore.plan(DECODE_Q, DECODE_KV, DECODE_KV, dtype="float16")   # 512 (batch, K/V head)s:
    assert decode.kernel.startswith("sm90_f16_d128_gqa_"), decode   # the Hopper kernel's packed rows
    few = [(2, 1, 32, 128), (2, 8192, 8, 128), (2, 8192, 8, 128)]   # 16: their keys split across CTAs
    split = flashcore.plan(*few, dtype="float16")
    assert split.kernel.startswith("sm90_f16_d128_gqa_") and split.splits > 1, split
    mha = [(2, 1, 8, 128), (2, 8192, 8, 128), (2, 8192, 8, 128)]   # nothing to pack: the decode kernel
    assert flashcore.plan(*mha, dtype="float16").kernel.startswith("decode_f16_d128_"), mha
    odd = flashcore.plan((1, 100, 4, 80), (1, 300, 2, 80), (1, 300, 2, 80), dtype="f16",
                         softmax_scale=0.5, return_lse=True)
    assert "_d80_" in odd.kernel and not odd.kernel.startswith("sm90")


def test_explain_says_which_kernel_and_why():
    text = flashcore.explain(PREFILL, PREFILL, PREFILL, dtype="f16", causal=True)
    lines = text.splitlines()
    assert lines[0] == "B=2 Sq=2048 Sk=2048 Hq=16 Hkv=16 D=128 f16 causal on no GPU (sm_90a)"
    assert lines[1].startswith("  kernel:   sm90_f16_d128_causal_")
    assert lines[2] == "  features: causal, no window, no softcap, no sinks"
    assert any(line.startswith("  why:      ") and len(line) > 20 for line in lines)
    assert "tuned winners are per GPU" in text


def test_window_and_softcap_choose_kernels_and_sinks_do_not():
    """window and softcap are the kernels' compile-time switches ("_win", "_cap"); sinks are a
    run-time input of every kernel, so the plan is the same; bad values are refused with the
    library's message or before it."""
    windowed = flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", causal=True, window=(256, 0),
                              softcap=50.0)
    assert "_causal_win_cap_" in windowed.kernel, windowed
    plain = flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", causal=True)
    assert flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", causal=True,
                          sinks=object()).kernel == plain.kernel
    assert "_win_" not in flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16",
                                         window=(4096, -1)).kernel   # wider than the keys: none
    text = flashcore.explain(PREFILL, PREFILL, PREFILL, dtype="f16", window=(128, 16), softcap=30)
    assert "window=(128, 16) softcap=30" in text.splitlines()[0], text
    assert "  features: no causal mask, sliding window, softcap, no sinks" in text, text
    with pytest.raises(flashcore.FlashCoreError, match="causal = 1 cannot take window_right 4"):
        flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", causal=True, window=(-1, 4))
    with pytest.raises(flashcore.FlashCoreError, match="window_left must be -1"):
        flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", window=(-7, -1))
    with pytest.raises(flashcore.FlashCoreError, match="softcap must be 0"):
        flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", softcap=-1.0)
    for window in (3, (1, 2, 3), (1.5, 0), (True, 0)):
        with pytest.raises(flashcore.ArgumentError, match="window"):
            flashcore.plan(PREFILL, PREFILL, PREFILL, dtype="f16", window=window)


@pytest.mark.parametrize("q, k, status, message", [
    ((1, 128, 7, 64), (1, 128, 2, 64), "FC_ERR_INVALID_ARG",
     "heads_q (7) must be a multiple of heads_kv (2)"),
    ((1, 128, 8, 20), (1, 128, 8, 20), "FC_ERR_UNSUPPORTED", "head_dim 20 is not supported"),
    ((1, 0, 8, 64), (1, 128, 8, 64), "FC_ERR_INVALID_ARG", "seqlen_q must be positive"),
])
def test_library_errors_carry_status_and_message(q, k, status, message):
    with pytest.raises(FlashCoreError) as caught:
        flashcore.plan(q, k, k, dtype="f16")
    error = caught.value
    assert error.status == status and message in error.message, error
    assert error.code == {"FC_ERR_INVALID_ARG": 1, "FC_ERR_UNSUPPORTED": 2}[status]
    assert str(error) == f"{status}: {error.message}"
    assert not isinstance(error, ArgumentError)


@pytest.mark.parametrize("call, message", [
    (lambda: flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64)),
     "dtype is needed"),
    (lambda: flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64), dtype="float32"),
     "dtype float32 is not supported"),
    (lambda: flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 64, 8, 64), dtype="f16"),
     "must both be [1, seqlen_k, heads_kv, 64]"),
    (lambda: flashcore.plan((1, 128, 8), (1, 128, 8, 64), (1, 128, 8, 64), dtype="f16"),
     "must be a [batch, seq, heads, head_dim] shape"),
    (lambda: flashcore.plan("q", (1, 128, 8, 64), (1, 128, 8, 64), dtype="f16"),
     "must be a tensor or a [batch, seq, heads, head_dim] shape"),
    (lambda: flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64), dtype="f16",
                            softmax_scale=float("nan")), "softmax_scale must be finite"),
    (lambda: flashcore.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64), dtype="f16",
                            device="cpu"), "device must be a CUDA ordinal"),
])
def test_python_side_errors_are_argument_errors(call, message):
    with pytest.raises(ArgumentError) as caught:
        call()
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, FlashCoreError)
    assert error.status == "FC_ERR_INVALID_ARG" and error.code == 1
    assert message in str(error), str(error)


def test_errors_pickle():
    for error in (FlashCoreError("FC_ERR_CUDA", 5, "cuLaunchKernel failed"),
                  ArgumentError("q must be 4-D")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert (copy.status, copy.code, copy.message) == (error.status, error.code, error.message)


def test_context_creation_errors():
    with pytest.raises(FlashCoreError) as caught:
        flashcore.Context(-5)
    assert caught.value.status == "FC_ERR_INVALID_ARG"
    assert "device -5 is not a CUDA ordinal" in caught.value.message


def test_bad_forced_variant_is_a_config_error():
    out = run_python(
        "import flashcore\n"
        "try:\n"
        "    flashcore.Context(flashcore.FC_DEVICE_NONE, no_disk_cache=True)\n"
        "except flashcore.FlashCoreError as error:\n"
        "    print(error.status)\n"
        "    print(error.message)\n", FC_FORCE_VARIANT="no-such-family")
    status, message = out.strip().splitlines()
    assert status == "FC_ERR_CONFIG" and "FC_FORCE_VARIANT=no-such-family" in message


def test_closed_context_refuses_calls():
    context = flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True)
    context.close()
    context.close()
    with pytest.raises(ValueError, match="closed"):
        context.plan((1, 128, 8, 64), (1, 128, 8, 64), (1, 128, 8, 64), dtype="f16")


def test_quick_first_call_switch_and_wait_without_a_gpu():
    with flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True, quick_first_call=True) as context:
        context.wait_compiles()   # nothing queued: returns at once
        context.set_quick_first_call(False)
        context.set_quick_first_call(True)
    with flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True, quick_first_call=False) as context:
        context.wait_compiles()
    context = flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True)
    context.close()
    with pytest.raises(ValueError):
        context.wait_compiles()


def test_shared_context_is_created_once_across_threads():
    flashcore._api._contexts.pop(FC_DEVICE_NONE, None)
    seen, barrier = [], threading.Barrier(8)

    def take():
        barrier.wait()
        seen.append(flashcore.context(FC_DEVICE_NONE))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(context is seen[0] for context in seen)
    assert flashcore.context(FC_DEVICE_NONE) is seen[0]


def test_without_a_gpu_a_device_context_says_why():
    info = flashcore.info()
    if not info["gpu"].startswith("none"):
        pytest.skip("this machine has a GPU")
    with pytest.raises(FlashCoreError) as caught:
        flashcore.context(0)
    assert caught.value.status == "FC_ERR_NO_DEVICE" and caught.value.message


def test_a_second_build_loads_beside_the_first(tmp_path):
    """Benchmarks time two builds in one process (bench.py --baseline-lib): a copy of the library
    loads as its own, and a context on it plans like one on the default."""
    copy = tmp_path / "libflashcore.so"
    copy.write_bytes(flashcore.library_path().read_bytes())
    shape = ((1, 512, 8, 128),) * 3
    with flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True, library=copy) as other, \
            flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True) as default:
        assert other._lib is not default._lib
        assert other._lib.fc_path == copy.resolve()
        assert other.plan(*shape, dtype="f16") == default.plan(*shape, dtype="f16")


VARLEN_Q, VARLEN_KV = (1000, 8, 128), (1500, 2, 128)   # [total_tokens, heads, head_dim]
VARLEN = dict(cu_seqlens_q=[0, 100, 100, 600, 1000], cu_seqlens_k=[0, 300, 310, 900, 1500],
              max_seqlen_q=500, max_seqlen_k=600)   # planning reads only the lists' lengths


def test_plan_varlen_and_seqused_k_from_shapes_without_a_gpu():
    prefill = flashcore.plan(VARLEN_Q, VARLEN_KV, VARLEN_KV, dtype="bf16", causal=True, **VARLEN)
    assert prefill.kernel.startswith("sm90_bf16_d128_causal_var_"), prefill   # planned for sm_90a
    assert "per-sequence" in prefill.reason or "each sequence" in prefill.reason, prefill
    decode = flashcore.plan((4, 8, 128), VARLEN_KV, VARLEN_KV, dtype="f16",
                            **dict(VARLEN, max_seqlen_q=1), seqused_k=[0] * 4)
    assert decode.kernel.startswith("decode_f16_d128_var_"), decode
    cache = flashcore.plan(DECODE_Q, DECODE_KV, DECODE_KV, dtype="f16", seqused_k=[0] * 64)
    assert cache.kernel.startswith("decode_f16_d128_var_"), cache
    dense = flashcore.plan(DECODE_Q, DECODE_KV, DECODE_KV, dtype="f16")
    assert "_var_" not in dense.kernel


def test_explain_names_the_varlen_form():
    lines = flashcore.explain(VARLEN_Q, VARLEN_KV, VARLEN_KV, dtype="f16", causal=True,
                              **VARLEN).splitlines()
    assert lines[0] == ("varlen B=4 tokens q=1000 k=1500 max Sq=500 Sk=600 Hq=8 Hkv=2 D=128 f16 "
                        "causal on no GPU (sm_90a)")
    assert lines[2].endswith(", per-sequence lengths (varlen, seqused_k)")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(VARLEN, max_seqlen_q=1001), FlashCoreError,
     "max_seqlen_q (1001) and max_seqlen_k (600) cannot exceed seqlen_q (1000)"),
    (dict(VARLEN, max_seqlen_k=0), FlashCoreError, "varlen needs both max_seqlen_q and max_seqlen_k positive"),
    (dict(VARLEN, max_seqlen_k=None), ArgumentError, "a varlen batch needs max_seqlen_q and max_seqlen_k"),
    (dict(VARLEN, cu_seqlens_k=[0, 1]), ArgumentError, "cu_seqlens_k must have 5 entries, not 2"),
    (dict(VARLEN, cu_seqlens_q=[0]), ArgumentError, "with batch >= 1, not [1]"),
    (dict(VARLEN, cu_seqlens_q=7), ArgumentError, "cu_seqlens_q must be an int32 tensor (or, to plan, a sequence)"),
    (dict(VARLEN, seqused_k=[0] * 5), ArgumentError, "seqused_k must have 4 entries, not 5"),
    (dict(max_seqlen_q=5, max_seqlen_k=5), ArgumentError, "belong to a varlen batch"),
])
def test_varlen_planning_errors(kwargs, error, message):
    with pytest.raises(error) as caught:
        flashcore.plan(VARLEN_Q, VARLEN_KV, VARLEN_KV, dtype="f16", **kwargs)
    assert message in caught.value.message, caught.value
    with pytest.raises(ArgumentError, match=re.escape("q must be a [total_tokens, heads, head_dim] "
                                                      "shape, not (2, 500, 8, 128) (varlen")):
        flashcore.plan((2, 500, 8, 128), VARLEN_KV, VARLEN_KV, dtype="f16", **VARLEN)
    with pytest.raises(ArgumentError, match=re.escape("is a varlen batch's: pass cu_seqlens_q")):
        flashcore.plan(VARLEN_Q, VARLEN_KV, VARLEN_KV, dtype="f16")


class OlderLibrary:
    """The library as an older build looks to the binding. "0.2.0": no sized initializer (its
    struct ends at causal). "0.3.0": its struct ends at softcap, and it refuses nonzero bytes past
    that, in fc_read_struct's words (src/problem.c)."""

    SIZE_0_3 = flashcore._binding.AttentionParams.cu_seqlens_q.offset

    def __init__(self, lib, version):
        self._lib, self._version, self._message = lib, version, None

    def __getattr__(self, name):
        if name == "fc_attention_params_init_sized":
            if self._version == "0.2.0":
                raise AttributeError(name)
            return self._init_sized
        return getattr(self._lib, name)

    def _init_sized(self, params, size):
        """0.3.0's initializer: its own fields' defaults, 0 in the bytes of fields it does not know."""
        self._lib.fc_attention_params_init_sized(params, size)
        ctypes.memset(ctypes.addressof(params._obj) + self.SIZE_0_3, 0, size - self.SIZE_0_3)

    def fc_version(self):
        return self._version.encode()

    def fc_attention_plan(self, handle, params, info):
        raw = bytes(params._obj)
        unknown = [i for i in range(self.SIZE_0_3, len(raw)) if raw[i]]
        if self._version == "0.3.0" and unknown:
            self._message = (f"params sets fields this library (FlashCore 0.3.0) does not know: "
                             f"byte {unknown[0]} of {len(raw)}").encode()
            return 2
        self._message = None
        return self._lib.fc_attention_plan(handle, params, info)

    def fc_context_errmsg(self, handle):
        return self._message or self._lib.fc_context_errmsg(handle)


@pytest.mark.parametrize("version", ["0.2.0", "0.3.0"])
def test_a_library_that_predates_varlen_refuses_it_clearly(version):
    with flashcore.Context(FC_DEVICE_NONE, no_disk_cache=True) as context:
        context._lib = OlderLibrary(context._lib, version)
        for kwargs in (VARLEN, dict(seqused_k=[0] * 64)):
            shapes = (VARLEN_Q, VARLEN_KV, VARLEN_KV) if kwargs is VARLEN else (DECODE_Q, DECODE_KV, DECODE_KV)
            with pytest.raises(FlashCoreError) as caught:
                context.plan(*shapes, dtype="f16", **kwargs)
            assert caught.value.status == "FC_ERR_UNSUPPORTED", caught.value
            assert f"(FlashCore {version}) predates varlen batches and seqused_k" in caught.value.message
            assert "cu_seqlens_q/cu_seqlens_k, max_seqlen_q/max_seqlen_k and seqused_k" in caught.value.message
        if version == "0.3.0":   # dense calls still run on it
            assert "_f16_d128_" in context.plan(DECODE_Q, DECODE_KV, DECODE_KV, dtype="f16")[0]
