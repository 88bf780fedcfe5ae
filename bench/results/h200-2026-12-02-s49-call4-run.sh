#!/usr/bin/env bash
# Session 49, call 4 (one H200): old (main 73efcab) against new (the producer's loads a step ahead; a persistent ring's
# last step issuing only the fragment-ks the reduction reaches), the same schedules by hand, each twice, interleaved;
# then the tf32x3 DG rows' searches on the new build (bench_suite, 48 candidates, cuBLAS in the same process).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c4; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file np schedule
  local K=$(( (67108864 - 3*$2*$2) / (4*$2) ))
  for v in main new; do
    echo "== $v $1 Np=$2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c4$v timeout 90 $P/m/$v/rtcgc run $P/$1.rtcg -D K=$K -D Np=$2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
for i in 1 2; do
  hand dgdiff 165 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked 165 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff 165 "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  hand dgdiff 120 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a"
  hand stacked 120 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a"
  hand dgdiff 84 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand dgdiff 56 "mma: tf32x3 wgmma m64n168k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
done
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
RTCG_CACHE_DIR=/tmp/c4b timeout 400 $B --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N8,dg_lift_tf32x3_N3,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7 --out /tmp/b4 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b4/bench.json $O/bench.json
tail -30 $O/bench.log
