#!/usr/bin/env bash
# The Python package on the GPU machine, run from the repository root with .gpu/ (scripts/gpu-pack.sh)
# beside it: builds the extension rtcg._rtcg there (its Python, e.g. 3.12 with PyTorch and CuPy,
# is not the packing machine's) against the library built by gpu-pack (.gpu/py/librtcg.a: no
# Bison, re2c or -dev packages needed, only CMake, a C++ compiler, Python's headers and nanobind),
# then runs the package's tests (the GPU ones included), the examples and the PyTorch timing.
# Writes logs under $OUT (default ./gpu-out): python-build.log, python-tests.log,
# python-examples.log, python-timing.txt.
#
#   scripts/gpu-python.sh [all|tests|timing|raw]   # all (default): tests, examples, timing; or one part
#                                                  # raw: the raw-module tests and example only (gpu-rawmodule.sh)
# Each part fits one device call of 10 minutes; the build (build-gpu-python/, kept on a warm machine)
# is incremental.
#
# Python packages the machine lacks (nanobind, pytest) travel as wheels in .whl/ (docs/python.md).
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
py=${PYTHON:-python3}
work=${RTCG_PY_BUILD:-$root/build-gpu-python}
mode=${1:-all}
case "$mode" in all|tests|timing|raw) ;; *) echo "usage: scripts/gpu-python.sh [all|tests|timing|raw]" >&2; exit 2 ;; esac
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# Only the wheels whose module is missing: the machine's own versions stay in front.
missing=()
for whl in "$root"/.whl/*.whl; do
  [[ -e "$whl" ]] || continue
  mod=$(basename "$whl" | cut -d- -f1)
  "$py" -c "import $mod" 2>/dev/null || missing+=("$whl")
done
if ((${#missing[@]})); then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${missing[@]}" &&
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
[[ -f "$root/.gpu/py/librtcg.a" ]] || { echo "gpu-python: no .gpu/py/librtcg.a: run scripts/gpu-pack.sh first" >&2; exit 1; }
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so 2>/dev/null || ls /usr/local/cuda/lib64/libnvrtc.so.* | head -1)
# The machine's libsqlite3 (rtcgc and rtcg-worker use it there too); gpu-pack's copy only without one.
sqlite=$(ldconfig -p | awk '/libsqlite3\.so\.0 /{print $NF; exit}')
if [[ -z "$sqlite" ]]; then
  sqlite=$root/.gpu/py/libsqlite3.so.0
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/.gpu/py
fi
(
  set -e
  cmake -G Ninja -S "$root/python" -B "$work" -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$py")" \
    -DRTCG_PREBUILT_LIBRARY="$root/.gpu/py/librtcg.a" \
    -DRTCG_PREBUILT_LINK="$root/.gpu/lib/libfmt.so.9;$sqlite;$nvrtc"
  cmake --build "$work"
) >"$out/python-build.log" 2>&1 || { tail -40 "$out/python-build.log"; echo "gpu-python: the extension did not build" >&2; exit 1; }
export PYTHONPATH=$work${PYTHONPATH:+:$PYTHONPATH}
export RTCG_WORKER=$root/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker
export RTCGC=$root/.gpu/build-gpu/tools/rtcgc/rtcgc  # for the tests that compare with the command line
export RTCG_CACHE_DIR=$(mktemp -d)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$out/python-device.txt"
"$py" -c "import rtcg, numpy; print('rtcg', rtcg.__version__, 'numpy', numpy.__version__)"
status=0
if [[ $mode == raw ]]; then
  timeout 300 "$py" -m pytest -v -p no:cacheprovider "$root/python/tests/test_raw.py" >"$out/python-raw-tests.log" 2>&1 ||
    status=1
  tail -5 "$out/python-raw-tests.log"
  timeout 300 "$py" "$root/examples/python/raw_module.py" >"$out/python-raw-example.log" 2>&1 || status=1
  tail -4 "$out/python-raw-example.log"
  exit $status
fi
if [[ $mode != timing ]]; then
  timeout 420 "$py" -m pytest -v -p no:cacheprovider "$root/python/tests" >"$out/python-tests.log" 2>&1 || status=1
  tail -5 "$out/python-tests.log"
  {
    for ex in "$root"/examples/python/*.py; do
      echo "== $ex"
      timeout 120 "$py" "$ex"
      echo "rc=$?"
    done
  } >"$out/python-examples.log" 2>&1
  grep -E '^(==|rc=)' "$out/python-examples.log" | paste - -
  grep -q '^rc=[^0]' "$out/python-examples.log" && status=1
fi
if [[ $mode != tests ]]; then
  timeout 420 "$py" "$root/python/bench/torch_timing.py" ${RTCG_TIMING_ARGS:-} 2>&1 | tee "$out/python-timing.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
exit $status
