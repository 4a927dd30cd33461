"""Lets the tools import the flashcore package from this checkout or from an installation.

This checkout's python/ goes first on sys.path when its library is to be used: $FLASHCORE_LIB is
set (a GPU host's .carry/lib/libflashcore.so) or build/src/libflashcore.so is built, or when no
flashcore package is installed. Otherwise the installed package (`pip install .`) is imported.
"""
import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def use_repository_package_if_built():
    built = ROOT / "build" / "src" / "libflashcore.so"
    if os.environ.get("FLASHCORE_LIB") or built.is_file() or importlib.util.find_spec("flashcore") is None:
        sys.path.insert(0, str(ROOT / "python"))
