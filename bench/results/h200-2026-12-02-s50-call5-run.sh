#!/usr/bin/env bash
# Session 50, call 5 (one H200): the producer's plain loads three steps ahead (three register sets where a tile's steps group
# by three: N8's 6; setmaxnreg producer 88 / consumers 208 where it moves registers) against e88ec9f (cur: two sets), the same
# schedules twice interleaved; then the N8 rows' searches on the new build.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/three.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d5; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in cur three; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d5$v timeout 90 $P/m/$v/rtcgc run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  hand dgdiff "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
done
B=$P/m/three/bench_suite; W=$P/m/three/rtcg-worker
RTCG_CACHE_DIR=/tmp/d5b timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b5 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b5/bench.json $O/bench.json
grep -E "==|time|MISMATCH" $O/byhand.txt | cut -c1-150; tail -5 $O/bench.log | cut -c1-150
