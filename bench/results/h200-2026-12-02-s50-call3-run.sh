#!/usr/bin/env bash
# Session 50, call 3 (one H200): e88ec9f (cur) against the fence-only build (the consumers' fence after `ready` dropped where the
# producer's threads store the stage), N8 forms twice interleaved; then whether more stages pay at N8: m64n64 / m64n96 pingpong
# at 2 and 4 stages (cur).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/fence.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d3; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # builds file sizes schedule
  for v in $1; do
    echo "== $v $2 $3 | $4" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d3$v timeout 90 $P/m/$v/rtcgc run $P/$2.rtcg $3 --precision tf32x3 -s "$4" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand "cur fence" dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand "cur fence" dgdiff "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand "cur fence" stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
done
for st in 2 4; do
  for n in 64 96; do
    hand cur dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n${n}k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  done
done
hand cur dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n96k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
grep -E "==|time" $O/byhand.txt | cut -c1-150
