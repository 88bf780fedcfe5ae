#!/usr/bin/env bash
# Session 46, lead's call 9 (one H200): dg_diff_tf32x3_N6 on merged main 58eb48a, a 200-candidate search and its forms by hand.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; R=$P/m/main/rtcgc; O=$OUT/c9; mkdir -p $O
RTCG_CACHE_DIR=/tmp/c9a timeout 120 $B --only dg_diff_tf32x3_N6 --out /tmp/b9a --max-candidates 200 --time-limit 40 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b9a/bench.json $O/bench.json
export RTCG_CACHE_DIR=/tmp/c9b
T="swizzle 128 tma producer persistent"
for s in "m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a" "m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "m64n128k8 warpgroups 1x2 k 32 stages 2 $T resident a" "m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"; do
  for st in "" "stores: streaming; "; do echo "== $st$s" >> $O/byhand.txt; timeout 60 $R run $P/dgdiff.rtcg -D K=199665 -D Np=84 --precision tf32x3 -s "${st}mma: tf32x3 wgmma $s" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt; done
done
tar -C $OUT -czf $OUT/c9.tgz c9; rm -rf $O
