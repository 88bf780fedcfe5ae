#!/usr/bin/env bash
# Runs every test: installs what is missing, builds (the library once, in build/, for the tests,
# the tools and the Python package), fuzzes every CPU stage for a bounded time (tests/fuzz/run.sh:
# the frontend, schedules, manifests, db import, literals, differential; its own instrumented
# build of what the fuzzers link), and runs the CTest suite (unit tests, diagnostics corpus, NVRTC
# compiles of every example, CLI tests, the installed-package consumer build, the Python package's
# tests against the build tree; GPU tests skip themselves without a device). Then packs the build's
# Python package as the manylinux wheel users install (scripts/wheel.sh --from-build) and checks
# it installed in a fresh virtual environment without compilers or the CUDA toolkit, with NVRTC
# from NVIDIA's wheel, running the package's tests against it (scripts/wheel-check.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
# Everything (a tree scripts/run-examples.sh configured without the tests gets them back).
"$root/scripts/build.sh" -DRTCG_BUILD_TESTS=ON -DRTCG_BUILD_BENCH=ON -DRTCG_BUILD_SCAN=ON
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
# The Python package as users install it: the wheel packed from this build (no second build of the
# library), then installed and tested outside the build tree.
pyenv=$root/build/pyenv
if [[ -x "$pyenv/bin/python" ]] && "$pyenv/bin/python" -c "import nanobind, scikit_build_core, auditwheel, pytest, numpy" 2>/dev/null; then
  echo "the wheel (scripts/wheel.sh --from-build build)"
  "$root/scripts/wheel.sh" --from-build "$root/build" | tee "$root/build/wheel.log"  # its path last
  wheel=$(tail -1 "$root/build/wheel.log")
  "$root/scripts/wheel-check.sh" "$wheel" "$(readlink -f "$pyenv/bin/python")"
else
  echo "warning: no build/pyenv with nanobind, scikit-build-core and auditwheel (scripts/setup.sh needs PyPI): the Python package was not tested" >&2
fi
