#!/usr/bin/env bash
# Session 41, call 1: dg_diff N6 with the chunk's array; the table of issue 36's rows.
set -uo pipefail
tar -xJf .probe/pack.tar.xz
ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=build-gpu/tools/rtcgc/rtcgc
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
run() {  # kernel np K schedule
  local kern=$1 np=$2 K=$3; shift 3
  echo "== $kern Np=$np : $*" >> $OUT/byhand.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 60 $R run examples/$kern.rtcg -D K=$K -D Np=$np --precision tf32x3 --repeats 30 \
    -s "$* " 2>&1 | grep -E "time|error|rel" | grep -v "again" >> $OUT/byhand.txt
}
P="swizzle 128 tma producer persistent"
run dg_diff 84 199665 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a
run dg_diff 84 199665 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $P pingpong resident a
run dg_diff 84 199665 mma: tf32x3 wgmma m64n128k8 warpgroups 1x2 k 32 stages 2 $P resident a
run dg_diff_stacked 84 199665 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a
run dg_diff_stacked 84 199665 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 1x2 k 32 stages 2 $P resident a"
stamp byhand
RTCG_CACHE_DIR=$(mktemp -d) timeout 420 build-gpu/bench/suite/bench_suite --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_stacked_tf32x3_N6,dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7,sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7 \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A16 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned|torch_peers" /tmp/bench.log > $OUT/searches.txt
rm -rf .gpu build-gpu
