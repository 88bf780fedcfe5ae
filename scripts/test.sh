#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, fuzzes the frontend for a bounded time, and
# runs the CTest suite (unit tests, diagnostics corpus, NVRTC compiles of every example, CLI tests,
# the installed-package consumer build; GPU tests skip themselves without a device).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
if [[ -x "$root/tests/fuzz/run.sh" ]]; then
  "$root/tests/fuzz/run.sh" "${RTCG_FUZZ_SECONDS:-60}"
fi
cd "$root/build"
ctest --output-on-failure -j2 --timeout 600
