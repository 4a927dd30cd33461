#!/usr/bin/env bash
# The Python test environment: a venv at $FLASHCORE_VENV (default ~/.cache/flashcore/venv) with
# tests/python/requirements.txt (pytest, torch, numpy, matplotlib), kept between runs and brought up
# to date when that file changes (a first install downloads ~3 GB: about 1.5 min here). Prints the
# venv's python last; tools/test.sh runs the pytest suites with it.
#   tools/python-deps.sh          create or update, then print the python
#   tools/python-deps.sh --where  only print where the python is (it may not exist yet)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${FLASHCORE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flashcore/venv}
if [ "${1:-}" = --where ]; then
    echo "$venv/bin/python"
    exit 0
fi
requirements=tests/python/requirements.txt
stamp=$venv/flashcore-requirements.txt
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"
flock 9   # two runs at once on one machine wait for each other
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! cmp -s "$requirements" "$stamp"; then
    echo "python-deps: installing $requirements into $venv" >&2
    start=$SECONDS
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir -r "$requirements" >&2
    cp "$requirements" "$stamp"
    echo "python-deps: done in $((SECONDS - start)) s" >&2
fi
echo "$venv/bin/python"
