#!/usr/bin/env bash
# Session 42 helper f64dg, call 1: main's build (old) against f64dg's (new), f64 DG rows; new form by hand; sanitizers.
set -uo pipefail
P=.probe/f64dg
mkdir -p old new
tar -xJf $P/old.tar.xz -C old; tar -xJf $P/new.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/timeline.txt
ROWS=dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7
bench() {  # which candidates seconds tag
  local w=$1 c=$2 t=$3 tag=$4
  RTCG_CACHE_DIR=$(mktemp -d) timeout 200 $w/.gpu/build-gpu/bench/suite/bench_suite --only $ROWS \
    --out /tmp/b-$tag --max-candidates $c --time-limit $t --worker $w/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/b-$tag.log 2>&1
  stamp "bench $tag rc $?"
  cp /tmp/b-$tag/bench.json $OUT/bench-$tag.json 2>/dev/null
  { grep -A4 "^workload" /tmp/b-$tag.log; grep -E "search done" /tmp/b-$tag.log; } > $OUT/table-$tag.txt
}
R=new/.gpu/build-gpu/tools/rtcgc/rtcgc
run() {  # Np schedule
  local np=$1; shift
  echo "== Np=$np : $*" >> $OUT/byhand.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 40 $R run $P/dg64.rtcg -D K=100000 -D Np=$np --repeats 30 --reference-max-flops 3e8 -s "$*" 2>&1 | grep -E "time|error|rel|refused|illegal" | head -4 >> $OUT/byhand.txt
}
K="persistent resident a fragments 2"
for np in 20 56 120; do
  for s in "m16n8k4 warps 2x4 tile 2x2 k 4 stages 4" "m16n8k4 warps 2x4 tile 2x2 k 8 stages 3" "m16n8k4 warps 4x2 tile 2x2 k 8 stages 3" \
           "m16n8k4 warps 2x4 tile 2x4 k 8 stages 3" "m16n8k8 warps 2x4 tile 2x2 k 8 stages 3" \
           "m16n8k16 warps 2x4 tile 2x2 k 16 stages 2" "m16n8k4 warps 2x2 tile 2x2 k 4 stages 4"; do
    run $np "mma: f64 $s $K"
    run $np "blocks_per_sm: 3; mma: f64 $s $K"
  done
  run $np "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 $K"
done
stamp byhand
bench new 48 12 new48
bench old 48 12 old48
S=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  echo "== $tool Np=56 K=20011" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 120 $S --tool $tool --error-exitcode 9 $R run $P/dg64.rtcg -D K=20011 -D Np=56 --repeats 1 \
    -s "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 $K" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel|ok" | tail -3 >> $OUT/sanitize.txt
  echo "rc ${PIPESTATUS[0]}" >> $OUT/sanitize.txt
done
stamp sanitize
rm -rf old new
