#!/usr/bin/env bash
# Session 42 helper f64dg, call 3: main's build (old) against f64dg's (new, double2 pairs, model), f64 DG rows; sanitizers; by hand; new at 200 candidates.
set -uo pipefail
P=.probe/f64dg
mkdir -p old new
tar -xJf $P/old.tar.xz -C old; tar -xJf $P/new.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
ROWS=dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7
bench() {  # which candidates seconds tag limit
  local w=$1 c=$2 t=$3 tag=$4
  RTCG_CACHE_DIR=$(mktemp -d) timeout $5 $w/.gpu/build-gpu/bench/suite/bench_suite --only $ROWS \
    --out /tmp/b-$tag --max-candidates $c --time-limit $t --worker $w/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/b-$tag.log 2>&1
  stamp "bench $tag rc $?"
  cp /tmp/b-$tag/bench.json $OUT/bench-$tag.json 2>/dev/null
  { grep -A4 "^workload" /tmp/b-$tag.log; grep -E "search done" /tmp/b-$tag.log; } > $OUT/table-$tag.txt
}
R=new/.gpu/build-gpu/tools/rtcgc/rtcgc
bench new 48 12 new48 60
bench old 48 12 old48 60
S=/usr/local/cuda/bin/compute-sanitizer
K="mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2"
for tool in memcheck racecheck; do
  echo "== $tool Np=56 K=20011 $K" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 40 $S --tool $tool --error-exitcode 9 $R run $P/dg64.rtcg -D K=20011 -D Np=56 --repeats 1 -s "$K" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel" | tail -3 >> $OUT/sanitize.txt
  echo "rc ${PIPESTATUS[0]}" >> $OUT/sanitize.txt
done
stamp sanitize
run() {  # Np schedule
  local np=$1; shift
  echo "== Np=$np : $*" >> $OUT/byhand.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 20 $R run $P/dg64.rtcg -D K=100000 -D Np=$np --repeats 30 --reference-max-flops 3e8 -s "$*" 2>&1 | grep -E "time|error|mismatch" | head -2 >> $OUT/byhand.txt
}
run 56 "mma: f64 m16n8k4 warps 2x2 tile 4x2 k 8 stages 3 persistent resident a fragments 2"
run 56 "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2"
run 120 "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 3 persistent resident a fragments 2"
run 120 "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 16 stages 3 persistent resident a fragments 2"
stamp byhand
bench new 200 40 new200 70
rm -rf old new
