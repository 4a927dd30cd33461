#!/usr/bin/env bash
# The Python test environment: a venv at $FLASHCORE_VENV (default ~/.cache/flashcore/venv) with
# tests/python/requirements.txt (pytest, numpy, matplotlib) and, where there is room for it,
# tests/python/requirements-torch.txt (PyPI's torch: a first install downloads ~3 GB and takes
# ~5 GB of disk). Kept between runs and brought up to date when those files change. A download or
# disk failure is a warning, not an error: the tests that need what is missing skip with the
# reason. Prints the venv's python last; tools/test.sh runs the pytest suites with it.
#   tools/python-deps.sh          create or update, then print the python
#   tools/python-deps.sh --where  only print where the python is (it may not exist yet)
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${FLASHCORE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/flashcore/venv}
if [ "${1:-}" = --where ]; then
    echo "$venv/bin/python"
    exit 0
fi
TORCH_FREE_GB=12   # torch's wheel unpacked, its download, and room for the build beside it

mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"
flock 9   # two runs at once on one machine wait for each other
if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >&2; then
    echo "python-deps: warning: cannot create a venv at $venv: the Python suites will skip" >&2
    echo "$venv/bin/python"
    exit 0
fi

# install NAME FILE: pip-installs FILE into the venv unless its stamp says it is there already.
install() {
    local name=$1 requirements=$2 stamp=$venv/flashcore-$1.txt start=$SECONDS
    cmp -s "$requirements" "$stamp" && return 0
    echo "python-deps: installing $requirements into $venv" >&2
    if "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir -r "$requirements" >&2; then
        cp "$requirements" "$stamp"
        echo "python-deps: $name done in $((SECONDS - start)) s" >&2
    else
        echo "python-deps: warning: installing $requirements failed: the tests that need it will skip" >&2
    fi
}

install base tests/python/requirements.txt
free_gb=$(df -Pk "$(dirname "$venv")" | awk 'NR == 2 {print int($4 / 1048576)}')
if [ "${free_gb:-0}" -ge "$TORCH_FREE_GB" ] || cmp -s tests/python/requirements-torch.txt "$venv/flashcore-torch.txt"; then
    install torch tests/python/requirements-torch.txt
else
    echo "python-deps: warning: ${free_gb} GB free beside $venv, torch needs ${TORCH_FREE_GB}: the torch tests will skip" >&2
fi
echo "$venv/bin/python"
