#!/usr/bin/env bash
# Configures and builds rtcg (Release) into build/ (or $RTCG_BUILD_DIR).
#   scripts/build.sh [-DOPTION=VALUE ...] [TARGET ...]
# Arguments starting with '-' go to CMake, the others are the Ninja targets to build (default:
# all of them). scripts/run-examples.sh builds rtcgc and rtcg-worker only; scripts/test.sh all.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RTCG_BUILD_DIR:-$root/build}
export PATH=/usr/local/cuda/bin:$PATH
cmake_args=() targets=()
for a in "$@"; do
  if [[ $a == -* ]]; then cmake_args+=("$a"); else targets+=("$a"); fi
done
# The Python extension is built (python/, RTCG_PYTHON=AUTO) with the virtual environment
# scripts/setup.sh makes, which has nanobind.
if [[ -x "$root/build/pyenv/bin/python" ]]; then cmake_args+=(-DPython_EXECUTABLE="$root/build/pyenv/bin/python"); fi
# ccache where the machine has it (a rebuild, another checkout or CI's clone of the same sources on
# the same machine then compiles only what changed); paths are taken relative to the checkout.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$root
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-${CUDA_PATH:-/usr/local/cuda}}" "${cmake_args[@]}" >/dev/null
ninja -C "$build" "${targets[@]}"
