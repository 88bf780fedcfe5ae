#!/usr/bin/env bash
# Raw CUDA modules on the GPU (issue 37, item 3), all in one device call of a few minutes, from the
# repository root with .gpu/ (scripts/gpu-pack.sh) beside it:
#   1. the C++ GPU tests of raw modules (test_api: RawModuleGpu.*, with the host-side RawModuleTest.*
#      and RawArgumentCheck.*): launch on an application stream, wrong arguments refused before the
#      launch (the array unchanged), the cache, tuning against a reference and a check, the database
#      serving the next search;
#   2. the C++ example .gpu/embed/raw_module (examples/embed/raw_module.cpp) twice: compile, launch,
#      a wrong argument refused, tune over TILE x BLOCK, the winner rebuilt and checked; the second
#      run reads the module from the disk cache and the best variant from the tuning database;
#   3. rtcgc cuda on examples/cuda/axpy_tiled.cu (its functions, a cubin) and on a broken copy
#      (exit 1, NVRTC's error at the line and column);
#   4. Python (the extension built as scripts/gpu-python.sh builds it): python/tests/test_raw.py and
#      examples/python/raw_module.py on PyTorch tensors (CuPy where PyTorch is missing).
# Logs under $OUT/rawmodule (default ./gpu-out/rawmodule); prints a summary; exit 0 when all passed.
#
#   scripts/gpu-pack.sh                 # on the build machine (packs .gpu/)
#   OUT=$OUT scripts/gpu-rawmodule.sh   # on the GPU machine
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}/rawmodule
mkdir -p "$out"
[[ -d "$root/.gpu" ]] || { echo "gpu-rawmodule: no .gpu/: run scripts/gpu-pack.sh first" >&2; exit 1; }
# Test binaries have the source and build paths of the packing machine built in (as gpu-check.sh).
src=$(cat "$root/.gpu/source-dir" 2>/dev/null || echo /work/main)
if [[ ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_CACHE_DIR=$(mktemp -d)   # kernel cache and tuning database: fresh, so the first runs compile and search
export PATH=$root/build-gpu/tools/rtcgc:$root/build-gpu/tools/rtcg-worker:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$out/device.txt"
summary=()
note() { summary+=("$(printf '%-34s %s' "$1" "$2")"); }

# 1. C++ tests.
timeout 300 build-gpu/tests/api/test_api --gtest_filter='RawModule*:RawArgumentCheck*' >"$out/test_api.log" 2>&1
rc=$?
note "test_api (raw modules)" "rc=$rc $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/test_api.log" | tr '\n' ' ') $(grep -cE '^\[  SKIPPED \] RawModuleGpu' "$out/test_api.log") skipped"
timeout 120 build-gpu/tests/cli/test_cli --gtest_filter='CudaCommand*' >"$out/test_cli.log" 2>&1
note "test_cli (rtcgc cuda)" "rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/test_cli.log" | tr '\n' ' ')"

# 2. The C++ example, cold then warm.
for run in 1 2; do
  timeout 300 .gpu/embed/raw_module examples/cuda/axpy_tiled.cu >"$out/embed-raw_module-$run.log" 2>&1
  rc=$?
  note "embed/raw_module run $run" "rc=$rc; $(grep -E '^best:' "$out/embed-raw_module-$run.log" | head -1)"
done
grep -q "refused before the launch" "$out/embed-raw_module-1.log" || note "embed/raw_module" "FAILED: no refusal printed"

# 3. rtcgc cuda: two commands that must succeed, one that must fail with the error's position.
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d . | sed 's/^/sm_/')
sed 's/a \* x\[i\]/a * xx[i]/' examples/cuda/axpy_tiled.cu >"$out/broken.cu"
{
  rtcgc cuda examples/cuda/axpy_tiled.cu -D TILE=4 && echo "functions: ok"
  rtcgc cuda examples/cuda/axpy_tiled.cu -D TILE=4 --arch "$arch" --cubin -o "$out/axpy_tiled.cubin" && echo "cubin: ok"
  rtcgc cuda "$out/broken.cu"; echo "broken.cu: exit $?"
} >"$out/rtcgc-cuda.log" 2>&1
where=$(grep -oE 'broken.cu:[0-9]+:[0-9]+: error' "$out/rtcgc-cuda.log" | head -1)
if [[ $(grep -c ': ok$' "$out/rtcgc-cuda.log") == 2 && -n $where ]] && grep -q 'broken.cu: exit 1$' "$out/rtcgc-cuda.log"; then
  note "rtcgc cuda" "ok (functions, cubin for $arch; broken.cu exits 1 at ${where#*broken.cu:})"
else
  note "rtcgc cuda" "FAILED (see rtcgc-cuda.log)"
fi

# 4. Python.
OUT=$out timeout 560 scripts/gpu-python.sh raw >"$out/python.log" 2>&1
rc=$?
note "python (test_raw.py, raw_module.py)" "rc=$rc; $(grep -E '(passed|failed)' "$out/python-raw-tests.log" 2>/dev/null | tail -1); example: $(grep -E '^best' "$out/python-raw-example.log" 2>/dev/null | head -1)"

printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
grep -qE 'rc=[1-9]|FAILED' "$out/summary.txt" && exit 1
exit 0
