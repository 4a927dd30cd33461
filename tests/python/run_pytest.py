#!/usr/bin/env python3
"""Runs the Python package's pytest suites for `meson test` (tests/meson.build).

Usage: run_pytest.py cpu|gpu [PYTEST ARGS...]. The interpreter is $FLASHCORE_TEST_PYTHON if set
(tools/python-deps.sh makes one with pytest, torch and matplotlib; tools/test.sh sets it when that
one exists), else the one running this script. The tests import this checkout's python/ and the
library named by $FLASHCORE_LIB (both set by tests/meson.build).

Exit 77 (meson's "skipped") with the reason when that interpreter has no pytest, or, for gpu, when
torch sees no GPU; pytest's own exit code otherwise, except that "no tests collected" is 77 too.
Inside the suites, tests that need torch or a GPU skip with the reason where those are missing.
"""
import os
import subprocess
import sys
from pathlib import Path

SKIP = 77
PYTEST_NO_TESTS = 5
HERE = Path(__file__).resolve().parent


def probe(python, code):
    """True when `python -c code` exits 0."""
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    return done.returncode == 0


def main(argv):
    if not argv or argv[0] not in ("cpu", "gpu"):
        print(__doc__, file=sys.stderr)
        return 2
    suite, extra = argv[0], argv[1:]
    python = os.environ.get("FLASHCORE_TEST_PYTHON") or sys.executable
    print(f"interpreter: {python}", flush=True)
    if not probe(python, "import pytest"):
        print(f"SKIP: {python} has no pytest (tools/python-deps.sh makes an interpreter with it, "
              "then tools/test.sh uses that one)")
        return SKIP
    if suite == "gpu" and not probe(python, "import torch, sys; sys.exit(not torch.cuda.is_available())"):
        print(f"SKIP: no GPU visible to torch in {python} (or no torch)")
        return SKIP
    # NOTE: the CPU suite is every test but test_gpu.py; the GPU suite is test_gpu.py alone.
    # $FLASHCORE_PYTEST_FILES (file names here, space-separated) narrows it: an ASan build runs only
    # the files that load no other native extension (torch and matplotlib die behind the ASan
    # runtime, which such a build must preload).
    selection = ([str(HERE / "test_gpu.py")] if suite == "gpu"
                 else [str(HERE), f"--ignore={HERE / 'test_gpu.py'}"])
    if os.environ.get("FLASHCORE_PYTEST_FILES"):
        selection = [str(HERE / name) for name in os.environ["FLASHCORE_PYTEST_FILES"].split()]
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *selection, *extra]
    print(" ".join(command), flush=True)
    status = subprocess.run(command).returncode
    return SKIP if status == PYTEST_NO_TESTS else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
