#!/usr/bin/env bash
# Session 47, lead's call 5 (one H200): dg_diff N8's 1x1 and 2x1 pingpong forms by hand, alternating; the N8 rows at 200 candidates.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; R=$P/m/main/rtcgc; O=$OUT/c5; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c5
T="swizzle 128 tma producer persistent"
for i in 1 2; do
for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"; do
  echo "== $i $s" >> $O/byhand.txt
  timeout 60 $R run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
done; done
RTCG_CACHE_DIR=/tmp/c5b timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b5 --max-candidates 200 --time-limit 40 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b5/bench.json $O/bench.json
tar -C $OUT -czf $OUT/c5.tgz c5; rm -rf $O
