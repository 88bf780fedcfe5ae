#!/usr/bin/env bash
# Session 51, call 6 (one H200): odd rows' pairs as one store instruction a warp (the pair's start, pointer and values
# selected per lane; call 5's branch per start ran both); dg_diff's chunks inside one statement pair with its array picked
# once (warp-uniform), those crossing into the next statement store single values as before, and no pair spans two chunks
# there; against 6d6c1aa (main), twice interleaved; then the N8 rows' searches on the new build.
# Needs .probe-me/{main,cur}.tar.xz (main/rtcgc, cur/{rtcgc,bench_suite,rtcg-worker}, lib/).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d6; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in main cur; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d6$v timeout 90 $P/m/$v/rtcgc run $E/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  for f in dg_diff dg_diff_stacked; do
    hand $f "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
    hand $f "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
    hand $f "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
    hand $f "-D K=101556 -D Np=35" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  done
done
B=$P/m/cur/bench_suite; W=$P/m/cur/rtcg-worker
RTCG_CACHE_DIR=/tmp/d6b timeout 250 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b6 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b6/bench.json $O/bench.json
grep -E "==|time|MISMATCH|rror" $O/byhand.txt | cut -c1-150; tail -4 $O/bench.log | cut -c1-200
