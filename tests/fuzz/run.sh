#!/usr/bin/env bash
# Builds the frontend fuzzer in its own clang build directory and runs it for SECONDS seconds
# (default 60) on a seed corpus of the examples and the frontend test programs.
# Exits non-zero if the fuzzer finds a crash, hang, leak or sanitizer error; the reproducer is
# left in the build directory (crash-*, timeout-*, leak-*).
#   usage: tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail

seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${RTCG_FUZZ_BUILD_DIR:-$root/build-fuzz}

cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DRTCG_BUILD_FUZZERS=ON -DRTCG_BUILD_TESTS=ON >/dev/null
ninja -C "$build" frontend_fuzz

# The corpus directory collects what the fuzzer finds interesting; seeds are copied in each run.
corpus=$build/fuzz-corpus
mkdir -p "$corpus"
cp "$root"/examples/*.rtcg "$root"/tests/frontend/good/*.rtcg "$root"/tests/frontend/bad/*.rtcg "$corpus"/

cd "$build"
# -max_len: programs longer than a few KB add nothing the fuzzer cannot reach with shorter ones.
# -timeout: a single input taking more than 5 s is a hang.
exec ./tests/fuzz/frontend_fuzz "$corpus" -max_total_time="$seconds" -max_len=8192 -timeout=5 \
  -dict="$root/tests/fuzz/rtcg.dict" -print_final_stats=1 "$@"
