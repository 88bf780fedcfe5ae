#!/usr/bin/env bash
# The wheel as a user gets it (scripts/test.sh runs this on the wheel scripts/wheel.sh made):
#  1. its ELF files need nothing outside the manylinux set but what it holds (auditwheel show, and
#     ldd of each: no libfmt, libsqlite3, libnvrtc or CUDA library from the system);
#  2. installed with pip into a fresh virtual environment, run with PATH holding only that
#     environment's bin/ (no compiler, CMake, Bison or re2c), no LD_LIBRARY_PATH, and the CUDA
#     toolkit hidden (a private mount namespace with an empty folder over it; needs root, which CI
#     is): `import rtcg; rtcg.emit(...)` works, a cubin fails with the error naming the CUDA
#     toolkit and the NVRTC wheel; with nvidia-cuda-nvrtc from PyPI installed (the extra `nvrtc`)
#     the cubin compiles, rtcgc runs, and the package's tests pass against the installed package.
#   usage: scripts/wheel-check.sh WHEEL [PYTHON]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wheel=$(realpath "$1")
py=${2:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtcg-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "wheel-check: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"
mkdir -p "$work/unpacked"
(cd "$work/unpacked" && "$py" -m zipfile -e "$wheel" .)
status=0
while read -r f; do
  if ldd "$f" | grep -v "=> $work/unpacked/" | grep -E 'not found|libfmt|libsqlite3|libnvrtc|libcuda|/usr/local/cuda'; then
    echo "wheel-check: ${f#$work/unpacked/} needs a library from the system" >&2
    status=1
  fi
done < <(find "$work/unpacked" -type f \( -name '*.so*' -o -path '*/bin/*' \))
((status == 0)) || exit 1
echo "wheel-check: holds $(cd "$work/unpacked" && find . -type f \( -name '*.so*' -o -path '*/bin/*' \) | sort | tr '\n' ' ')"

"$py" -m venv "$work/venv"
venv=$work/venv
"$venv/bin/python" -m pip install -q "$wheel" pytest >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }

# Inside a private mount namespace the CUDA toolkit's folder is an empty one.
toolkit=$(realpath /usr/local/cuda 2>/dev/null || true)
hide=""
if [[ -n $toolkit && -d $toolkit ]]; then
  if unshare -m true 2>/dev/null; then
    hide=$toolkit
  else
    echo "wheel-check: warning: cannot hide $toolkit (unshare -m needs root): the NVRTC wheel's route is not checked" >&2
  fi
fi
# A clean environment: the venv's bin/ only on PATH, no LD_LIBRARY_PATH, no CUDA variables; the
# toolkit's folder covered by an empty one where it can be.
clean() {
  local vars=(HOME="$work" PATH="$venv/bin" TMPDIR="${TMPDIR:-/tmp}" RTCG_CACHE_DIR="$work/cache")
  if [[ -n $hide ]]; then
    unshare -m /bin/sh -c 'mount -t tmpfs none "$0" && exec /usr/bin/env -i "$@"' "$hide" "${vars[@]}" "$@"
  else
    env -i "${vars[@]}" "$@"
  fi
}
cd "$work"
clean python - "$root/examples/axpby.rtcg" <<'EOF'
import os, shutil, sys
import rtcg
assert shutil.which("g++") is None and shutil.which("cmake") is None and shutil.which("bison") is None
src = open(sys.argv[1]).read()
cuda = rtcg.emit(src, {"n": 1000})
assert "__global__" in cuda, cuda
print("wheel-check: rtcg.emit without NVRTC:", len(cuda.splitlines()), "lines of CUDA C")
if not os.path.exists("/usr/local/cuda/lib64/libnvrtc.so.13"):
    try:
        rtcg.cubin(src, {"n": 1000})
        raise SystemExit("wheel-check: rtcg.cubin worked without any NVRTC")
    except rtcg.Error as e:
        msg = str(e)
        assert "CUDA toolkit" in msg and "nvidia-cuda-nvrtc" in msg, msg
        print("wheel-check: without NVRTC rtcg.cubin says:", msg.splitlines()[0])
EOF
"$venv/bin/python" -m pip install -q "$wheel[nvrtc]" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
clean python - "$root/examples/axpby.rtcg" <<'EOF'
import sys
import rtcg
src = open(sys.argv[1]).read()
print("wheel-check: rtcg", rtcg.__version__, "from", rtcg.__file__)
print("wheel-check: rtcg.emit with the NVRTC wheel:", len(rtcg.emit(src, {"n": 1000}).splitlines()), "lines of CUDA C")
cubin = rtcg.cubin(src, {"n": 1000})
assert cubin[:4] == b"\x7fELF", cubin[:4]
print("wheel-check: rtcg.cubin:", len(cubin), "bytes")
EOF
clean rtcgc emit "$root/examples/axpby.rtcg" -D n=1000 --cubin -o "$work/axpby.cubin"
echo "wheel-check: rtcgc emit --cubin: $(stat -c %s "$work/axpby.cubin") bytes"
clean python -m pytest -q -p no:cacheprovider "$root/python/tests"
