#!/usr/bin/env bash
# The main job: install build dependencies, build, report what this machine has, and fill the
# kernel cache for sm_90a and sm_80 (needs NVRTC, not a GPU). With a GPU it also runs one
# checked problem. Extra arguments go to `fcjit precompile` (e.g. --arch sm_90a).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build
build/tools/fcjit info
build/tools/fcjit precompile "$@"
if build/tools/fcjit info --json | grep -q '"gpu_count": [1-9]'; then
    build/tools/fcjit run --batch 2 --heads 8 --seqlen 1000 --head-dim 128 --causal
fi
