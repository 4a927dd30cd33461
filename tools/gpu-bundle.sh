#!/usr/bin/env bash
# Builds what the GPU host runs and gathers it into .carry/ (git-ignored; pass it as the device
# tool's `carry`): fcjit, the gpu test, libflashcore.so, and the shared libraries a bare GPU host
# may lack (libsqlite3, libcmocka). libyaml and libxxhash are linked in statically.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dstatic_deps=true --buildtype=release
ninja -C build-gpu
rm -rf .carry && mkdir -p .carry/bin .carry/lib
cp build-gpu/tools/fcjit build-gpu/tests/test_gpu build-gpu/tests/test_hopper .carry/bin/
for lib in build-gpu/src/libflashcore.so*; do   # the library and its soname links, not meson's object folders
    [ -d "$lib" ] || cp -P "$lib" .carry/lib/
done
for lib in libsqlite3.so.0 libcmocka.so.0; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" .carry/lib/
done
du -sh .carry
