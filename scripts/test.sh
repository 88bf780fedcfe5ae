#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, fuzzes the frontend for a bounded time, and
# runs the CTest suite (unit tests, diagnostics corpus, NVRTC compiles of every example, CLI tests,
# the installed-package consumer build; GPU tests skip themselves without a device).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
if [[ -x "$root/tests/fuzz/run.sh" ]]; then
  fuzz_log=$root/build/fuzz.log
  echo "fuzzing the frontend for ${RTCG_FUZZ_SECONDS:-60} s (log: $fuzz_log)"
  if ! "$root/tests/fuzz/run.sh" "${RTCG_FUZZ_SECONDS:-60}" >"$fuzz_log" 2>&1; then
    tail -60 "$fuzz_log"
    echo "the frontend fuzzer found a failure (reproducer in build-fuzz/)" >&2
    exit 1
  fi
  grep -E '^Done [0-9]+ runs' "$fuzz_log" || true
fi
cd "$root/build"
ctest --output-on-failure -j2 --timeout 600
