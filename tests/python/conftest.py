"""pytest set-up for the flashcore package's tests.

The package under test is whichever `import flashcore` finds: the meson test (tests/meson.build)
and tools/gpu-host.sh put this checkout's python/ on PYTHONPATH with FLASHCORE_LIB naming the
library; after `pip install .` the installed one. If neither is importable, this checkout's
python/ is used (its library then comes from build/src, see flashcore/_binding.py).
"""
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("flashcore") is None:
    sys.path.insert(0, str(ROOT / "python"))

import flashcore  # noqa: E402


_private_cache = None


def pytest_configure(config):
    global _private_cache
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and PyTorch (skips without)")
    # Contexts with a disk cache write into a private file, unless the caller chose one (a GPU
    # host keeps its compiled kernels between runs that way).
    if not os.environ.get("FC_TUNING_DB"):
        _private_cache = tempfile.mkdtemp(prefix="flashcore-test-cache-")
        os.environ["FC_TUNING_DB"] = os.path.join(_private_cache, "tuning.db")


def pytest_unconfigure(config):
    if _private_cache is not None:
        shutil.rmtree(_private_cache, ignore_errors=True)


def pytest_report_header(config):
    try:
        library = flashcore.library_path()
    except OSError as error:
        library = f"(none: {error})"
    return [f"flashcore: {os.path.dirname(flashcore.__file__)}, library {library}",
            f"FC_TUNING_DB: {os.environ.get('FC_TUNING_DB')}"]


@pytest.fixture(scope="session")
def torch():
    """torch, when flashcore's op is available; else the test skips with the reason."""
    if flashcore._TORCH_MISSING is not None:
        pytest.skip(flashcore._TORCH_MISSING)
    import torch

    return torch


@pytest.fixture(scope="session")
def cuda(torch):
    """torch, when it sees a CUDA GPU; else the test skips."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    return torch
