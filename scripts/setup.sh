#!/usr/bin/env bash
# Installs what rtcg needs on Debian 12 (the CUDA 13 toolkit with NVRTC is assumed present in
# /usr/local/cuda). Idempotent: does nothing when every package is already installed.
set -euo pipefail
packages=(cmake ninja-build g++ clang libclang-rt-14-dev re2c bison libfmt-dev nlohmann-json3-dev
          libcli11-dev libsqlite3-dev libgtest-dev libgmock-dev libclang-14-dev libclang-cpp14-dev
          llvm-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [[ ! -x /usr/local/cuda/bin/nvcc && ! -e /usr/local/cuda/lib64/libnvrtc.so ]]; then
  echo "setup: the CUDA 13 toolkit (NVRTC) is expected in /usr/local/cuda" >&2
  exit 1
fi
