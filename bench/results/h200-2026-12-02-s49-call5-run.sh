#!/usr/bin/env bash
# Session 49, call 5 (one H200): old (main 73efcab) against new (loads ahead, the last step's fragment-ks, kept rows in up to
# three N tiles) by hand where call 4's searches moved (lifting N5, dg_diff N5), each three times interleaved; stacked N7's
# kept forms; then those rows' searches on the new build.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c5; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # versions file sizes schedule
  for v in $1; do
    echo "== $v $2 $3 | $4" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c5$v timeout 90 $P/m/$v/rtcgc run $P/$2.rtcg $3 --precision tf32x3 -s "$4" --repeats 30 2>&1 | grep -E "time|rror" >> $O/byhand.txt
  done
}
L5="-D K=340630 -D Np=56 -D Nfp=21"; D5="-D K=299551 -D Np=56"; S7="-D K=139720 -D Np=120"
for i in 1 2 3; do
  hand "main new" lift "$L5" "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand "main new" lift "$L5" "mma: tf32x3 wgmma m64n56k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand "main new" dgdiff "$D5" "mma: tf32x3 wgmma m64n168k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
  hand "main new" dgdiff "$D5" "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
done
for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a" \
         "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 $T resident a"; do
  hand new stacked "$S7" "$s"
done
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
RTCG_CACHE_DIR=/tmp/c5b timeout 300 $B --only dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N5,dg_lift_tf32x3_N5,dg_diff_tf32x3_N5,dg_diff_tf32x3_N6 --out /tmp/b5 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b5/bench.json $O/bench.json
tail -9 $O/bench.log | cut -c1-160
