#!/usr/bin/env bash
# Session 41, call 7 (main at ec9f15f): the lift rows in 200-candidate searches; N8 rows at 48.
set -uo pipefail
mkdir -p new; (cd new && tar -xJf ../.probe/new.tar.xz)
ln -sfn new/.gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 build-gpu/bench/suite/bench_suite --only dg_lift_tf32x3_N5,dg_lift_tf32x3_N7 \
  --out /tmp/bench200 --max-candidates 200 --time-limit 40 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench200.log 2>&1
stamp "bench200 rc $?"
cp /tmp/bench200/bench.json $OUT/bench-lift-200.json; grep -A4 "^workload" /tmp/bench200.log > $OUT/table-lift-200.txt; grep -E "search done" /tmp/bench200.log > $OUT/searches.txt
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 build-gpu/bench/suite/bench_suite --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench-n8.json; grep -A4 "^workload" /tmp/bench.log > $OUT/table-n8.txt; grep -E "search done" /tmp/bench.log >> $OUT/searches.txt
rm -rf new build-gpu
