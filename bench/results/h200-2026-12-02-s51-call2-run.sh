#!/usr/bin/env bash
# Session 51, call 2: N = 8 stacked differentiation, forms that run both consumer warpgroups' chains at once
# (cooperative 2x1 tiles, no pingpong), on the kernel as written and on the contraction over u and D given in
# 168-value rows (TMA for both operands, no 'resident'). Needs .probe-me/{main,cur}.tar.xz as in call 1.
set -uo pipefail
P=$PWD/.probe-me; B=$PWD/bench/results
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/coop; mkdir -p $O
T="swizzle 128 tma producer persistent"; N8="-D K=101556 -D Np=165"; R=$P/m/cur/rtcgc
run() { echo "== $1 | $2" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/rp timeout 60 $R run $1 $N8 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
S=$PWD/examples/dg_diff_stacked.rtcg; M=$B/h200-2026-12-02-s51-stackedmmaonly.rtcg
for i in 1 2; do
  run $S "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  for s in "m64n64k8 warpgroups 2x1 k 32 stages 3 $T resident a" "m64n64k8 warpgroups 2x1 k 32 stages 4 $T resident a" \
           "m64n96k8 warpgroups 2x1 k 32 stages 2 $T resident a"; do
    run $S "stores: streaming; mma: tf32x3 wgmma $s"
    run $M "stores: streaming; mma: tf32x3 wgmma $s"
  done
  for s in "m64n128k8 warpgroups 2x1 k 32 stages 3 $T" "m64n128k8 warpgroups 2x1 k 32 stages 2 $T" \
           "m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong" "m64n192k8 warpgroups 2x1 k 32 stages 2 $T" \
           "m64n128k8 warpgroups 1x1 k 32 stages 4 $T" "m64n192k8 warpgroups 2x1 k 32 stages 3 $T pingpong"; do
    run $M "stores: streaming; mma: tf32x3 wgmma $s"
  done
done
grep -E "==|time|rror" $O/byhand.txt | cut -c1-200
