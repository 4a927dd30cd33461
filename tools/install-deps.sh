#!/usr/bin/env bash
# Installs what building and testing FlashCore needs from Debian/Ubuntu packages, if missing.
# The CUDA toolkit itself (cuda.h, nvrtc.h, libnvrtc) is expected at $CUDA_HOME or /usr/local/cuda.
set -euo pipefail
packages=(meson ninja-build pkg-config gcc g++ python3 python3-venv libyaml-dev libsqlite3-dev libxxhash-dev libcmocka-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
