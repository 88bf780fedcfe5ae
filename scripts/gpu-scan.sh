#!/usr/bin/env bash
# Issue 37's scans on the GPU in one call, from the repository root with .gpu/ beside it
# (scripts/gpu-pack.sh), as scripts/gpu-check.sh runs:
#   1. the scan examples (cumsum, exclusive_scan, row_cumsum, segmented_sum) against the CPU
#      reference at sizes no tile or block divides, under the look-back (4-byte values: packed
#      status words) and lines of a warp and of a thread; and a refusal (a tile past 48 KiB of
#      shared memory: exit 1 with the reason);
#   2. the bench rows (2^26-value f32 inclusive sum, i32 exclusive sum, rows of 8192 x 4096, a
#      segmented sum of 2^26 values in about 2^20 segments) tuned and timed against torch.cumsum and
#      CuPy's cumsum in the same run (scripts/bench.sh --only ...: bench.json, torch-peers.json), then
#      each row's GB/s (the values read and written once, the heads read once) and its share of the
#      measured copy bandwidth (an H200: about 4.2 TB/s), rtcg's and the peer's;
#   3. compute-sanitizer (memcheck, racecheck, synccheck) on a sample of the examples' schedules.
# Writes everything under $OUT/scan (default ./gpu-out/scan) and prints a summary last.
# About 8 minutes in all (the device tool's limit is 10 a call): examples ~1.5, bench at most 5
# (20 s searches of 32 candidates), sanitizer at most 2; --skip-bench / --skip-sanitize leave parts
# for another call.
#   usage: scripts/gpu-scan.sh [--skip-bench] [--skip-sanitize]
set -uo pipefail
root=$(pwd)
skip_bench=0 skip_sanitize=0
for a in "$@"; do
  case $a in
    --skip-bench) skip_bench=1 ;;
    --skip-sanitize) skip_sanitize=1 ;;
    *) echo "gpu-scan.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
base=${OUT:-$root/gpu-out}
out=$base/scan
mkdir -p "$out"
source "$root/scripts/gpu-env.sh"
# CuPy's cumsum through CUB's device scan (its own kernel otherwise).
export CUPY_ACCELERATORS=${CUPY_ACCELERATORS:-cub}
gpu_env "$root" "$out"

# 1. Examples on the GPU against the reference (rtcgc run: a full reference run).
log=$out/examples.log
: >"$log"
run() {
  local file=$1; shift
  echo "== $file $*" >>"$log"
  timeout 90 rtcgc run "examples/$file" "$@" --repeats 5 >>"$log" 2>&1
  echo "rc=$?" >>"$log"
}
run cumsum.rtcg -D n=1000003
for s in "scan: lookback threads 256 items 7" "scan: lookback threads 128 items 16" "scan: lookback threads 512 items 3" \
         "scan: lines lanes 32 items 4 threads 32"; do
  run cumsum.rtcg -D n=1000003 --schedule "$s"
done
run cumsum.rtcg -D n=12345679 --schedule "scan: lookback threads 256 items 12"
run exclusive_scan.rtcg -D n=1000003
run exclusive_scan.rtcg -D n=1000003 --schedule "scan: lookback threads 512 items 5"
run row_cumsum.rtcg -D m=1001 -D n=3001
for s in "scan: lookback threads 128 items 3" "scan: lines lanes 8 items 4 threads 128" "scan: lines lanes 1 items 4 threads 96"; do
  run row_cumsum.rtcg -D m=1001 -D n=3001 --schedule "$s"
done
run segmented_sum.rtcg -D n=1000003
for s in "scan: lookback threads 256 items 9" "scan: lookback threads 64 items 1" "scan: lines lanes 32 items 2 threads 64"; do
  run segmented_sum.rtcg -D n=1000003 --schedule "$s"
done
mismatches=$(grep -c MISMATCH "$log" || true)
failures=$(grep -c '^rc=[1-9]' "$log" || true)
# The refusal: 1024 x 16 f32 values are 64 KiB of tile; rtcgc says why, exit 1.
refusal=$(rtcgc explain examples/cumsum.rtcg -D n=100000 --schedule "scan: lookback threads 1024 items 16" 2>&1 >/dev/null | grep -m1 'error'; echo "rc=${PIPESTATUS[0]}")
echo "$refusal" >"$out/refusal.log"

# 2. The bench rows against torch.cumsum / cupy.cumsum, in this job; GB/s from the bytes a scan
# must move (bench.json's own bytes count the triangular form's reads).
bench_line="bench: skipped"
if [[ $skip_bench -eq 0 ]]; then
  BENCH_STATE=${BENCH_STATE:-/tmp/rtcg-bench} OUT=$out timeout 300 scripts/bench.sh \
    --only cumsum,exclusive_scan,row_cumsum,segmented_sum --max-candidates 32 --time-limit 20 >"$out/bench.log" 2>&1
  bench_line="bench: rc=$? ($out/bench/bench.json)"
  python3 - "$out/bench/bench.json" >"$out/bandwidth.txt" 2>&1 <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
copy = j.get("copyBandwidthGBs") or 0
# The bytes a one-pass scan moves: every value read and written once (4-byte values), heads once.
moved = {"cumsum": lambda s: 8 * s["n"], "exclusive_scan": lambda s: 8 * s["n"],
         "row_cumsum": lambda s: 8 * s["m"] * s["n"], "segmented_sum": lambda s: 12 * s["n"]}
print(f"copy bandwidth {copy:.0f} GB/s")
print(f"{'row':26} {'rtcg ms':>9} {'GB/s':>7} {'% copy':>7} {'peer':>26} {'peer ms':>9} {'GB/s':>7} {'% copy':>7} {'speed':>6}")
for w in j.get("workloads", []):
    if w.get("group") not in moved or "error" in w:
        print(f"{w['name']:26} {w.get('error', '')}")
        continue
    sizes = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", w["sizes"])}
    b = moved[w["group"]](sizes)
    def rate(ms):
        return (b / (ms * 1e-3) / 1e9, 100 * b / (ms * 1e-3) / 1e9 / copy if copy else 0) if ms else (0, 0)
    r, p = w.get("rtcgMs") or 0, w.get("peerMs") or 0
    (rg, rc), (pg, pc) = rate(r), rate(p)
    speed = p / r if r and p else 0
    print(f"{w['name']:26} {r:9.4f} {rg:7.0f} {rc:6.1f}% {str(w.get('peer', '')):>26} {p:9.4f} {pg:7.0f} {pc:6.1f}% {speed:5.2f}x")
PY
fi

# 3. compute-sanitizer on a sample of the scan examples' schedules.
sanitize_line="sanitizer: skipped"
if [[ $skip_sanitize -eq 0 ]]; then
  OUT=$out timeout 150 scripts/gpu-sanitize.sh --only '^(cumsum|exclusive_scan|row_cumsum|segmented_sum)\.rtcg$' \
    --per-example 5 --budget 100 >"$out/sanitize.log" 2>&1
  sanitize_line="sanitizer: rc=$? $(tail -3 "$out/sanitize/summary.txt" 2>/dev/null | tr '\n' ' ')"
fi

echo
echo "== summary"
echo "examples: $(grep -c '^== ' "$log") runs, $mismatches mismatches, $failures failed runs ($log)"
echo "refusal of a 64 KiB tile: $(echo "$refusal" | tr '\n' ' ')"
echo "$bench_line"
[[ -f "$out/bandwidth.txt" ]] && cat "$out/bandwidth.txt"
echo "$sanitize_line"
[[ $mismatches -eq 0 && $failures -eq 0 ]]
