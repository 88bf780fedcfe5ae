#!/usr/bin/env bash
# Session 49, call 9 (one H200): the producer's loads two ring steps ahead (aLoadsAhead 2) against one (3ee9cae), the same
# N8 schedules (K = 101556, Np = 165, tf32x3), twice interleaved; then both N8 rows' searches on the two-ahead build.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; tar -C $P/m -xJf $P/two.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c9; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file schedule
  for v in new two; do
    echo "== $v $1 | $2" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c9$v timeout 90 $P/m/$v/rtcgc run $P/$1.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
for i in 1 2; do
  hand dgdiff "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  hand stacked "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  hand dgdiff "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a"
done
B=$P/m/two/bench_suite; W=$P/m/two/rtcg-worker
RTCG_CACHE_DIR=/tmp/c9b timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b9 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b9/bench.json $O/bench.json
grep time $O/byhand.txt | wc -l; tail -5 $O/bench.log | cut -c1-150
