#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, fuzzes every CPU stage for a bounded time
# (tests/fuzz/run.sh: the frontend, schedules, manifests, db import, literals, differential), and
# runs the CTest suite (unit tests, diagnostics corpus, NVRTC compiles of every example, CLI tests,
# the installed-package consumer build; GPU tests skip themselves without a device).
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
