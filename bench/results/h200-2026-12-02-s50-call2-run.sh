#!/usr/bin/env bash
# Session 50, call 2 (one H200): e88ec9f (cur) against the working tree (new: the consumers' fence after `ready` dropped
# where the producer's threads store the stage; pingpong's tile turn passed at the stage wait of step steps - stages),
# the same schedules, twice interleaved; then the N8 and lifting rows' searches on new.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d2; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in cur new; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d2$v timeout 90 $P/m/$v/rtcgc run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
for i in 1 2; do
  hand dgdiff "-D K=101556 -D Np=165" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "-D K=101556 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "-D K=101556 -D Np=165" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "-D K=299551 -D Np=56" "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand dgdiff "-D K=199665 -D Np=84" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
  hand stacked "-D K=199665 -D Np=84" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
done
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
RTCG_CACHE_DIR=/tmp/d2b timeout 260 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_lift_tf32x3_N3,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7 --out /tmp/b2 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b2/bench.json $O/bench.json
grep -E "==|time" $O/byhand.txt | cut -c1-150; tail -7 $O/bench.log | cut -c1-150
