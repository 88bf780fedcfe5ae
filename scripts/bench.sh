#!/usr/bin/env bash
# The benchmark suite (docs/bench.md): tunes rtcg's kernels and times them against cuBLAS and
# device-to-device copies on the GPU, printing a table and writing bench.json and bench.html.
#
#   scripts/bench.sh [bench_suite options...]        e.g. --only sgemm,dot   --use-db   --list
#
# Run from anywhere on the GPU machine. Uses build-gpu/ (or BUILD=dir), building bench_suite and
# rtcg-worker there first if cmake is available and they are missing; with the packed tree of
# scripts/gpu-pack.sh (.gpu/) it links build-gpu to it as scripts/gpu-check.sh does.
# Results go to $OUT/bench when OUT is set (the device tool's folder), else to BUILD/bench-out.
# The tuning database stays in BENCH_STATE (default BUILD/bench-out)/tuning.sqlite, so later runs
# (--use-db) reuse it; a copy lands next to the results. On the device tool, carrying .gpu again
# replaces BUILD: set BENCH_STATE=/tmp/rtcg-bench there so the database survives between calls.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${BUILD:-}" && ! -e "$root/build-gpu" && -d "$root/.gpu/build-gpu" ]]; then
  ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
fi
build=${BUILD:-$root/build-gpu}
bin=$build/bench/suite/bench_suite
if [[ ! -x "$bin" || ! -x "$build/tools/rtcg-worker/rtcg-worker" ]]; then
  if ! command -v cmake >/dev/null; then
    echo "bench.sh: $bin or the rtcg-worker is missing and cmake is not available to build them" >&2
    exit 1
  fi
  export PATH=/usr/local/cuda/bin:$PATH
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$build" bench_suite rtcg-worker
fi
# libfmt packed by gpu-pack.sh, cuBLAS and the CUDA runtime from the toolkit.
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
state=${BENCH_STATE:-$build/bench-out}
mkdir -p "$state"
export RTCG_CACHE_DIR=${RTCG_CACHE_DIR:-$state/cache}
out=${OUT:+$OUT/bench}
out=${out:-$state}
mkdir -p "$out"
# The PyTorch peers (rows whose peer is "PyTorch") are timed first, in this same job, by their
# script; bench_suite reads their times. Without PyTorch those rows say so and do not run.
only=""
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case "${args[i]}" in
    --only) only=${args[i + 1]:-} ;;
    --only=*) only=${args[i]#--only=} ;;
  esac
done
peers=()
if "$bin" --list ${only:+--only "$only"} | grep -q ' PyTorch$'; then
  if python3 -c 'import torch' 2>/dev/null; then
    python3 "$root/bench/peers/torch_peers.py" --bench-suite "$bin" --out "$out/torch-peers.json" ${only:+--only "$only"} \
      && peers=(--peer-times "$out/torch-peers.json")
  else
    echo "bench.sh: python3 cannot import torch: the rows whose peer is PyTorch will not run" >&2
  fi
fi
rc=0
"$bin" --out "$out" --db "$state/tuning.sqlite" "${peers[@]}" "$@" || rc=$?
if [[ "$out" != "$state" && -f "$state/tuning.sqlite" ]]; then
  # One consistent file (the database runs in WAL mode): SQLite's backup when the CLI exists.
  if command -v sqlite3 >/dev/null; then
    sqlite3 "$state/tuning.sqlite" ".backup '$out/tuning.sqlite'" || true
  else
    cp "$state/tuning.sqlite" "$out/tuning.sqlite"
  fi
fi
exit $rc
