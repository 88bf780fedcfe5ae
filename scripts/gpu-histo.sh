#!/usr/bin/env bash
# Issue 37 item 1's histogram targets on the GPU in one call (about 4 minutes on one H200), from the
# repository root with .gpu/ beside it (scripts/gpu-pack.sh), as scripts/gpu-scatter.sh runs:
#   1. correctness: the histogram examples against the CPU reference (rtcgc run: a full reference
#      run) under fixed schedules of `accumulate: shared copies R` (256 and 1000 bins) and
#      `accumulate: shared slices S` (65536 and 65537 bins: the copy in dynamic shared memory, the
#      last slice shorter), with and without `aggregate: warp`, an i32 `max=` kernel in slices and
#      copies, and a refusal (4 copies of half of 65536 bins do not fit: exit 1 with the reason);
#   2. the same kinds of schedules timed at the bench rows' size (2^26 samples into 256 and into 65536
#      bins), each still checked against the reference: the session-29 winner and global atomics
#      beside them;
#   3. the bench rows histogram_2^26_256, histogram_2^26_65536 and histogram_weighted_2^26_1024
#      with a short search (the space now offers the copies and the slices) and torch.bincount
#      timed in the same run (scripts/bench.sh --only histogram,histogram_weighted).
# Writes everything under $OUT/histo (default ./gpu-out/histo) and prints a summary last.
#   usage: scripts/gpu-histo.sh [--skip-bench]
set -uo pipefail
root=$(pwd)
skip_bench=0
for a in "$@"; do
  case $a in
    --skip-bench) skip_bench=1 ;;
    *) echo "gpu-histo.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
base=${OUT:-$root/gpu-out}
out=$base/histo
mkdir -p "$out"
source "$root/scripts/gpu-env.sh"
gpu_env "$root" "$out"

# rtcgc run FILE ARGS... into LOG, with the exit status after it.
run() {
  local log=$1 file=$2; shift 2
  echo "== $file $*" >>"$log"
  timeout 60 rtcgc run "$file" "$@" >>"$log" 2>&1
  echo "rc=$?" >>"$log"
}

# 1. Correctness at sizes no block divides.
log=$out/examples.log
: >"$log"
h=(-D n=1000003 -D bins=256)
for s in "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 2" \
         "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 4" \
         "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 16" \
         "i: serial, grid.x 264, thread.x 256; accumulate: shared copies 8; aggregate: warp" \
         "i: serial, grid.x 300, thread.x 96; accumulate: shared copies 3" \
         "i: grid.x, thread.x 128, reg 4; accumulate: shared copies 4"; do
  run "$log" examples/histogram.rtcg "${h[@]}" --repeats 3 --schedule "$s"
done
for bins in 65536 65537; do
  for s in "i: serial, grid.x 132, thread.x 1024; accumulate: shared slices 2" \
           "i: serial, grid.x 66, thread.x 512; accumulate: shared slices 2; aggregate: warp" \
           "i: serial, grid.x 99, thread.x 512; accumulate: shared slices 3" \
           "i: serial, grid.x 66, thread.x 1024; accumulate: shared slices 4 copies 2"; do
    run "$log" examples/histogram.rtcg -D n=1000003 -D bins=$bins --repeats 3 --schedule "$s"
  done
done
run "$log" examples/histogram_weighted.rtcg -D n=1000003 -D bins=1000 --repeats 3 \
  --schedule "i: serial, grid.x 264, thread.x 512; accumulate: shared copies 4"
run "$log" examples/histogram_weighted.rtcg -D n=1000003 -D bins=65536 --repeats 3 \
  --schedule "i: serial, grid.x 132, thread.x 1024; accumulate: shared slices 2"
cat >"$out/maxhist.rtcg" <<'EOF'
// The largest value per bin (an i32 max= accumulation).
kernel maxhist(n: int, bins: int, bin: i32[n], v: i32[n], inout hi: i32[bins]) {
  for i in 0..n { hi[bin[i]] max= v[i]; }
}
EOF
run "$log" "$out/maxhist.rtcg" -D n=1000003 -D bins=50001 --repeats 3 \
  --schedule "i: serial, grid.x 132, thread.x 512; accumulate: shared slices 3 copies 2"
run "$log" "$out/maxhist.rtcg" -D n=1000003 -D bins=256 --repeats 3 \
  --schedule "i: serial, grid.x 264, thread.x 512; accumulate: shared copies 8; aggregate: warp"
mismatches=$(grep -c MISMATCH "$log" || true)
failures=$(grep -c '^rc=[1-9]' "$log" || true)
# The refusal: 4 copies of half of 65536 i32 bins (512 KiB) fit no block; rtcgc says why, exit 1.
refusal=$(rtcgc explain examples/histogram.rtcg -D n=1000 -D bins=65536 --max-shared 232448 \
  --schedule "i: serial, grid.x 132, thread.x 512; accumulate: shared slices 2 copies 4" 2>&1 >/dev/null |
  grep -m1 'error'; echo "rc=${PIPESTATUS[0]}")
echo "$refusal" >"$out/refusal.log"

# 2. Fixed schedules at the bench rows' size, timed (median of 20, L2 flushed) and checked.
timed=$out/timed.log
: >"$timed"
big=(-D n=67108864)
for s in "i: serial, grid.x 528, thread.x 512; accumulate: shared" \
         "i: serial, grid.x 264, thread.x 512; accumulate: shared copies 8" \
         "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 2" \
         "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 4" \
         "i: serial, grid.x 528, thread.x 512; accumulate: shared copies 16" \
         "i: serial, grid.x 528, thread.x 256; accumulate: shared copies 4" \
         "i: serial, grid.x 256, thread.x 512, reg 4; accumulate: shared copies 8"; do
  run "$timed" examples/histogram.rtcg "${big[@]}" -D bins=256 --repeats 20 --schedule "$s"
done
for s in "i: grid.x, thread.x 256" \
         "i: serial, grid.x 264, thread.x 512; aggregate: warp" \
         "i: serial, grid.x 66, thread.x 1024; accumulate: shared slices 2" \
         "i: serial, grid.x 132, thread.x 1024; accumulate: shared slices 2" \
         "i: serial, grid.x 264, thread.x 512; accumulate: shared slices 2" \
         "i: serial, grid.x 33, thread.x 1024; accumulate: shared slices 4" \
         "i: serial, grid.x 66, thread.x 1024; accumulate: shared slices 4"; do
  run "$timed" examples/histogram.rtcg "${big[@]}" -D bins=65536 --repeats 20 --schedule "$s"
done
timed_mismatches=$(grep -c MISMATCH "$timed" || true)
timed_failures=$(grep -c '^rc=[1-9]' "$timed" || true)

# 3. The bench rows with a short search, the PyTorch peers in the same job.
bench_line="bench: skipped"
if [[ $skip_bench -eq 0 ]]; then
  BENCH_STATE=${BENCH_STATE:-/tmp/rtcg-bench} OUT=$out timeout 170 scripts/bench.sh \
    --only histogram,histogram_weighted --max-candidates 24 --time-limit 20 >"$out/bench.log" 2>&1
  bench_line="bench: rc=$? ($out/bench/bench.json)"
fi

echo
echo "== summary"
echo "correctness: $(grep -c '^== ' "$log") runs, $mismatches mismatches, $failures failed runs ($log)"
echo "refusal of 4 copies of half of 65536 bins: $(echo "$refusal" | tr '\n' ' ')"
echo "timed at 2^26 samples: $timed_mismatches mismatches, $timed_failures failed runs ($timed)"
awk '/^== /{s=$0; sub(/.*--schedule /, "", s); b=$0; sub(/.*bins=/, "", b); sub(/ .*/, "", b)}
     /^  time /{printf "  bins %-6s %9s ms  %s\n", b, $2, s}' "$timed"
echo "$bench_line"
[[ -f "$out/bench.log" ]] && grep -E '^(workload|histogram)' "$out/bench.log" | head -8
[[ $mismatches -eq 0 && $failures -eq 0 && $timed_mismatches -eq 0 && $timed_failures -eq 0 ]]
