#!/usr/bin/env bash
# Session 47, lead's call 10 (one H200): no setmaxnreg for stacked statements where the estimate fits the launch (dg_diff's m64n128 tf32x3 / m64n256 tf32 by two consumers): old (bd9c327, the probe build without its switches) against new by hand, then the dg_diff rows' searches.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-probe.xz > $P/m/main/rtcgc-old; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c10; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # np schedule
  local K=$(( (67108864 - 3*$1*$1) / (4*$1) ))
  for v in rtcgc-old rtcgc; do
    echo "== $v Np=$1 $2" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c10$v timeout 60 $P/m/main/$v run $P/dgdiff.rtcg -D K=$K -D Np=$1 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
  done
}
for i in 1 2; do
  hand 165 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand 84 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand 120 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a"
done
RTCG_CACHE_DIR=/tmp/c10b timeout 200 $B --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8 --out /tmp/b10 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b10/bench.json $O/bench.json
tar -C $OUT -czf $OUT/c10.tgz c10; rm -rf $O
