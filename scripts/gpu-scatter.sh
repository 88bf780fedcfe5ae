#!/usr/bin/env bash
# Issue 37's accumulations on the GPU in one call, from the repository root with .gpu/ beside it
# (scripts/gpu-pack.sh), as scripts/gpu-check.sh runs:
#   1. the accumulation examples (histogram, weighted histogram, assembly) against the CPU reference
#      at sizes no block divides, under each way their updates meet: global atomics, the block's
#      copy in shared memory (`accumulate: shared`), warp aggregation (`aggregate: warp`), both;
#      grid-stride loops, a partial last warp, several register points, and a refusal (65536 bins
#      do not fit in shared memory: exit 1 with the reason);
#   2. the bench rows (histogram of 2^26 samples into 256 and 65536 bins, the weighted one, the
#      assembly) tuned and timed against torch.bincount / Tensor.index_add_ in the same run
#      (scripts/bench.sh --only ...: bench.json, bench.html, torch-peers.json);
#   3. compute-sanitizer (memcheck, racecheck, synccheck) on a sample of the examples' schedules
#      (scripts/gpu-sanitize.sh --only the three examples).
# Writes everything under $OUT/scatter (default ./gpu-out/scatter) and prints a summary last.
# About 8 minutes in all (the device tool's limit is 10 a call): examples ~2, bench at most 5
# (20 s searches), sanitizer at most 3; --skip-bench / --skip-sanitize leave parts for another call.
#   usage: scripts/gpu-scatter.sh [--skip-bench] [--skip-sanitize]
set -uo pipefail
root=$(pwd)
skip_bench=0 skip_sanitize=0
for a in "$@"; do
  case $a in
    --skip-bench) skip_bench=1 ;;
    --skip-sanitize) skip_sanitize=1 ;;
    *) echo "gpu-scatter.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
base=${OUT:-$root/gpu-out}
out=$base/scatter
mkdir -p "$out"
source "$root/scripts/gpu-env.sh"
gpu_env "$root" "$out"

# 1. Examples on the GPU against the reference (rtcgc run: a full reference run, the inout arrays
# restored after the timed repeats).
log=$out/examples.log
: >"$log"
run() {
  local file=$1; shift
  echo "== $file $*" >>"$log"
  timeout 90 rtcgc run "examples/$file" "$@" --repeats 5 >>"$log" 2>&1
  echo "rc=$?" >>"$log"
}
h="-D n=1000003 -D bins=256"
for s in "" "i: grid.x, thread.x 96" "i: serial, grid.x 264, thread.x 256; accumulate: shared" \
         "i: serial, grid.x 528, thread.x 80; aggregate: warp" \
         "i: serial, grid.x 264, thread.x 256; accumulate: shared; aggregate: warp" \
         "i: grid.x, thread.x 32, reg 3; accumulate: shared; aggregate: warp"; do
  # shellcheck disable=SC2086
  if [[ -z "$s" ]]; then run histogram.rtcg $h; else run histogram.rtcg $h --schedule "$s"; fi
done
run histogram.rtcg -D n=1000003 -D bins=65537 --schedule "i: serial, grid.x 528, thread.x 256; aggregate: warp"
run histogram.rtcg -D n=1000003 -D bins=3 --schedule "i: serial, grid.x 264, thread.x 256; aggregate: warp"
run histogram_weighted.rtcg -D n=1000003 -D bins=1000 --schedule "i: serial, grid.x 264, thread.x 256; accumulate: shared"
run histogram_weighted.rtcg -D n=1000003 -D bins=1000 --schedule "i: serial, grid.x 264, thread.x 160; accumulate: shared; aggregate: warp"
run histogram_weighted.rtcg -D n=1000003 -D bins=1000
run assemble.rtcg -D K=100003 -D Np=20 -D N=400009
run assemble.rtcg -D K=100003 -D Np=20 -D N=400009 --schedule "k: grid.x, thread.y 5; j: thread.x; aggregate: warp"
run assemble.rtcg -D K=100003 -D Np=20 -D N=9001 --schedule "k: serial, grid.x 528, thread.y 5; j: thread.x; accumulate: shared"
mismatches=$(grep -c MISMATCH "$log" || true)
failures=$(grep -c '^rc=[1-9]' "$log" || true)
# The refusal: 65536 i32 bins (256 KiB) have no copy in shared memory; rtcgc says why, exit 1.
refusal=$(rtcgc explain examples/histogram.rtcg -D n=1000 -D bins=65536 --schedule "i: grid.x, thread.x 256; accumulate: shared" 2>&1 >/dev/null | grep -m1 'error'; echo "rc=${PIPESTATUS[0]}")
echo "$refusal" >"$out/refusal.log"

# 2. The bench rows against the PyTorch peers, in this job.
bench_line="bench: skipped"
if [[ $skip_bench -eq 0 ]]; then
  BENCH_STATE=${BENCH_STATE:-/tmp/rtcg-bench} OUT=$out timeout 300 scripts/bench.sh \
    --only histogram,histogram_weighted,assemble --max-candidates 32 --time-limit 20 >"$out/bench.log" 2>&1
  bench_line="bench: rc=$? ($out/bench/bench.json)"
fi

# 3. compute-sanitizer on a sample of the three examples' schedules.
sanitize_line="sanitizer: skipped"
if [[ $skip_sanitize -eq 0 ]]; then
  OUT=$out timeout 170 scripts/gpu-sanitize.sh --only '^(histogram|histogram_weighted|assemble)\.rtcg$' \
    --per-example 6 --budget 120 >"$out/sanitize.log" 2>&1
  sanitize_line="sanitizer: rc=$? $(tail -3 "$out/sanitize/summary.txt" 2>/dev/null | tr '\n' ' ')"
fi

echo
echo "== summary"
echo "examples: $(grep -c '^== ' "$log") runs, $mismatches mismatches, $failures failed runs ($log)"
echo "refusal of 65536 bins in shared memory: $(echo "$refusal" | tr '\n' ' ')"
echo "$bench_line"
[[ -f "$out/bench.log" ]] && grep -E '^(workload|histogram|assemble)' "$out/bench.log" | head -12
echo "$sanitize_line"
[[ $mismatches -eq 0 && $failures -eq 0 ]]
