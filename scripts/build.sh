#!/usr/bin/env bash
# Configures and builds rtcg (Release) into build/ (or $RTCG_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RTCG_BUILD_DIR:-$root/build}
export PATH=/usr/local/cuda/bin:$PATH
# The Python extension is built (python/, RTCG_PYTHON=AUTO) with the virtual environment
# scripts/setup.sh makes, which has nanobind.
python_args=()
if [[ -x "$root/build/pyenv/bin/python" ]]; then python_args=(-DPython_EXECUTABLE="$root/build/pyenv/bin/python"); fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-${CUDA_PATH:-/usr/local/cuda}}" "${python_args[@]}" "$@" >/dev/null
ninja -C "$build"
