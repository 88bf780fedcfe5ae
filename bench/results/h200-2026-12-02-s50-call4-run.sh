#!/usr/bin/env bash
# Session 50, call 4 (one H200): tf32x3 with each step's wgmma in flight (two partial-sum sets, wait_group 1, the tile's steps
# unrolled so that ptxas keeps wgmma asynchronous: RTCG_X3_OVERLAP=1 RTCG_X3_UNROLL=1, a probe build) against the same
# schedules waiting for each step (the env unset), twice interleaved, on the DG rows at N = 5, 6, 7.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/x3.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d4; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in wait overlap; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    if [ $v = overlap ]; then E="RTCG_X3_OVERLAP=1 RTCG_X3_UNROLL=1"; else E=""; fi
    env $E RTCG_CACHE_DIR=/tmp/d4$v timeout 90 $P/m/x3/rtcgc run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N5="-D K=299551 -D Np=56"; N6="-D K=199665 -D Np=84"; N7="-D K=139720 -D Np=120"
for i in 1 2; do
  hand dgdiff "$N5" "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand dgdiff "$N5" "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand dgdiff "$N6" "stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
  hand stacked "$N6" "stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand stacked "$N6" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  hand stacked "$N7" "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
  hand stacked "$N7" "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $T resident a"
done
grep -E "==|time|rel" $O/byhand.txt | cut -c1-150
