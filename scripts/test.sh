#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, fuzzes every CPU stage for a bounded time
# (tests/fuzz/run.sh: the frontend, schedules, manifests, db import, literals, differential), and
# runs the CTest suite (unit tests, diagnostics corpus, NVRTC compiles of every example, CLI tests,
# the installed-package consumer build, the Python package's tests against the build tree; GPU tests
# skip themselves without a device), then installs the Python package with pip and runs its tests
# against the installed package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
if [[ -x "$root/tests/fuzz/run.sh" ]]; then
  fuzz_log=$root/build/fuzz.log
  echo "fuzzing every CPU stage for ${RTCG_FUZZ_SECONDS:-60} s in all (log: $fuzz_log)"
  if ! "$root/tests/fuzz/run.sh" "${RTCG_FUZZ_SECONDS:-60}" >"$fuzz_log" 2>&1; then
    tail -60 "$fuzz_log"
    echo "a fuzzer found a failure (reproducer in build-fuzz/findings/)" >&2
    exit 1
  fi
  grep -E '^(== |Done [0-9]+ (runs|cases))' "$fuzz_log" || true
fi
cd "$root/build"
ctest --output-on-failure -j2 --timeout 600
# The Python package as users install it: `pip install .` into build/pyenv (scripts/setup.sh made
# it; its build tree build/pip is kept, so a later run rebuilds only what changed), then its tests
# against the installed package (ctest's python_pytest ran them against the build tree's copy) and
# the import without a GPU that the README promises.
pyenv=$root/build/pyenv
if [[ -x "$pyenv/bin/python" ]] && "$pyenv/bin/python" -c "import nanobind, scikit_build_core, pytest, numpy" 2>/dev/null; then
  echo "pip install . into $pyenv (log: build/pip-install.log)"
  if ! "$pyenv/bin/python" -m pip install --no-build-isolation --no-deps -C build-dir="$root/build/pip" "$root" \
      >"$root/build/pip-install.log" 2>&1; then
    tail -40 "$root/build/pip-install.log"
    echo "pip install . failed" >&2
    exit 1
  fi
  cd "$root/build"
  env -u PYTHONPATH "$pyenv/bin/python" -c "import rtcg, os; assert os.path.dirname(rtcg.__file__).startswith('$pyenv'), rtcg.__file__; print('installed rtcg', rtcg.__version__, 'at', os.path.dirname(rtcg.__file__))"
  env -u PYTHONPATH "$pyenv/bin/rtcgc" --version
  env -u PYTHONPATH "$pyenv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
fi
if [[ ! -x "$pyenv/bin/python" ]] || ! "$pyenv/bin/python" -c "import nanobind" 2>/dev/null; then
  echo "warning: no build/pyenv with nanobind (scripts/setup.sh needs PyPI): the Python package was not tested" >&2
fi
