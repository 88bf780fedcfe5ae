#!/usr/bin/env bash
# Configures and builds rtcg (Release) into build/ (or $RTCG_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RTCG_BUILD_DIR:-$root/build}
export PATH=/usr/local/cuda/bin:$PATH
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-${CUDA_PATH:-/usr/local/cuda}}" "$@" >/dev/null
ninja -C "$build"
