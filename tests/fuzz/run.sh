#!/usr/bin/env bash
# Builds the fuzzers in their own clang build directory (every source instrumented for libFuzzer,
# ASan and UBSan) and runs each for its share of SECONDS seconds (default 60):
#   frontend  any bytes as a DSL program (parse, names, types), bound at sizes near 2^31 and emitted
#   schedule  any schedule text, printed back, validated, planned and emitted for example kernels
#   manifest  any rtcg-scan manifest, read and planned by `rtcgc tune --manifest`
#   dbimport  any JSON imported by `rtcgc db import`, exported and imported again
#   literal   any C++ string-literal spelling decoded by rtcg-scan
#   differential  valid kernels at random sizes and schedules, emulated against the reference
#                 (a seeded driver program of the normal build: tests/fuzz/differential.cpp)
# RTCG_FUZZ_TARGETS picks some ("schedule dbimport"); a long run of one:
#   RTCG_FUZZ_TARGETS=schedule tests/fuzz/run.sh 600
# Exits non-zero if a fuzzer finds a crash, hang, leak, sanitizer error or (differential) a
# mismatch; the reproducer is kept in build-fuzz/findings/ (TARGET-crash-*, ...; differential:
# finding-*.rtcg). The corpora grow in build-fuzz/corpus/TARGET across runs.
#   usage: tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail

seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${RTCG_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=(${RTCG_FUZZ_TARGETS:-frontend schedule manifest dbimport literal differential})
share=$((seconds / ${#targets[@]}))
((share >= 1)) || share=1

# -fsanitize=fuzzer-no-link instruments the library for coverage; the targets add the fuzzer's main.
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
libfuzzer=()
for t in "${targets[@]}"; do [[ $t != differential ]] && libfuzzer+=("${t}_fuzz"); done
if ((${#libfuzzer[@]})); then
  # OSS-Fuzz's optimization and debug level (-O1 -gline-tables-only): stack traces keep file and
  # line, and the instrumented build of the whole library (the fuzzers together link every object
  # of it) compiles faster than with RelWithDebInfo's -O2 -g (clang, Space.cpp 71 -> 66 s,
  # TuningDb.cpp 75 -> 53 s, EmitNest.cpp 28 -> 22 s on the shared 2-core machine). Only the
  # fuzz targets are built (the library, the tools' sources they compile in), no tests or tools.
  opt="-O1 -gline-tables-only -DNDEBUG"
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" \
    -DRTCG_BUILD_FUZZERS=ON -DRTCG_BUILD_TESTS=ON -DRTCG_BUILD_BENCH=OFF -DRTCG_BUILD_SCAN=OFF -DRTCG_PYTHON=OFF >/dev/null
  ninja -C "$build" "${libfuzzer[@]}"
fi
mkdir -p "$build/findings"

# Seeds, copied into each corpus every run.
seed() {
  local corpus=$build/corpus/$1
  mkdir -p "$corpus"
  case $1 in
    frontend) cp "$root"/examples/*.rtcg "$root"/tests/frontend/good/*.rtcg "$root"/tests/frontend/bad/*.rtcg \
      "$root"/tests/fuzz/seeds/frontend/*.rtcg "$corpus"/ ;;
    schedule)
      # The schedules the tests spell out, each for every example kernel (the first byte picks it).
      grep -ohE '"[a-z]+: (grid|serial|thread|unroll|reg)[^"]*"' "$root"/tests/codegen/*.cpp "$root"/tests/space/*.cpp |
        tr -d '"' | sort -u | head -300 | nl -ba | while read -r i s; do
        for k in 0 1 2 3 4 5 6 7 8 9; do printf "\\x$k%s" "$s" >"$corpus/seed-$k-$i"; done
      done
      cp "$root"/tests/fuzz/seeds/schedule/* "$corpus"/ ;;
    *) cp "$root/tests/fuzz/seeds/$1"/* "$corpus"/ ;;
  esac
}

run_libfuzzer() {
  local t=$1; shift
  local dict=()
  [[ $t == frontend ]] && dict=(-dict="$root/tests/fuzz/rtcg.dict")
  [[ $t == schedule ]] && dict=(-dict="$root/tests/fuzz/schedule.dict")
  seed "$t"
  echo "== $t: $share s"
  # -max_len: inputs longer than a few KB add nothing shorter ones cannot reach. -timeout: a single
  # input taking more than 5 s is a hang.
  (cd "$build" && "./tests/fuzz/${t}_fuzz" "$build/corpus/$t" -max_total_time="$share" -max_len=8192 -timeout=5 \
    -artifact_prefix="$build/findings/$t-" "${dict[@]}" -print_final_stats=1 "$@")
}

run_differential() {
  # The normal build's driver (scripts/test.sh built it); a seed per run from the clock, printed,
  # so a finding reproduces with --seed.
  local bin=${RTCG_BUILD_DIR:-$root/build}/tests/fuzz/differential_fuzz
  [[ -x $bin ]] || ninja -C "${RTCG_BUILD_DIR:-$root/build}" differential_fuzz
  local s=${RTCG_FUZZ_SEED:-$(date +%s)}
  echo "== differential: $share s, seed $s"
  "$bin" --seed "$s" --seconds "$share" --out "$build/findings"
}

status=0
for t in "${targets[@]}"; do
  if [[ $t == differential ]]; then run_differential || status=1
  else run_libfuzzer "$t" "$@" || status=1
  fi
done
exit $status
