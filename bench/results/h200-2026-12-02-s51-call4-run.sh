#!/usr/bin/env bash
# Session 51, call 4 (one H200): odd rows' float2 pairs (EmitMma.cpp oddPairStores: each row pairs its columns from its own
# alignment, the second of an odd row's pair shuffled from the next lane) against 6d6c1aa (main: single stores), the same
# schedules twice interleaved; then the stacked N8 row's search on the new build. Needs .probe-me/{main,cur}.tar.xz
# (main/rtcgc, cur/{rtcgc,bench_suite,rtcg-worker}, lib/).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d4; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in main cur; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d4$v timeout 90 $P/m/$v/rtcgc run $PWD/examples/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand dg_diff_stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff_stacked "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff_stacked "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  hand dg_diff_stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n96k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff_stacked "-D K=101556 -D Np=35" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
done
B=$P/m/cur/bench_suite; W=$P/m/cur/rtcg-worker
RTCG_CACHE_DIR=/tmp/d4b timeout 200 $B --only dg_diff_stacked_tf32x3_N8 --out /tmp/b4 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b4/bench.json $O/bench.json
grep -E "==|time|MISMATCH|rror" $O/byhand.txt | cut -c1-150; tail -5 $O/bench.log | cut -c1-150
