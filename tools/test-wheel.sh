#!/usr/bin/env bash
# `pip install .` as a user runs it: this checkout into a fresh venv (meson-python builds the
# library; no torch), `flashcore.info()`, then the CPU pytest suite against the installed package,
# run from outside the checkout with no FLASHCORE_LIB or PYTHONPATH (the torch tests skip: no torch).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$root" pytest
echo "test-wheel: pip install . took $((SECONDS - start)) s"
cd "$work"
unset FLASHCORE_LIB PYTHONPATH
"$work/venv/bin/python" -c 'import flashcore; print(flashcore.info())'
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$root/tests/python" \
    --ignore="$root/tests/python/test_gpu.py"
