#!/usr/bin/env bash
# Session 50, call 8 (one H200): tf32x3's partial sums over two ring steps (a probe behind RTCG_PAIR_PARTIALS=1: the even
# step's wgmma start the partial sums and are not waited for, the odd step's accumulate into them, wait_group 1 frees the
# even step's stage, wait_group 0 then the add) against a partial sum per step, the same schedules twice interleaved.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/pair.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d8; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in step pair; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    if [ $v = pair ]; then E="RTCG_PAIR_PARTIALS=1"; else E=""; fi
    env $E RTCG_CACHE_DIR=/tmp/d8$v timeout 90 $P/m/pair/rtcgc run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand dgdiff "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dgdiff "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand stacked "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
done
grep -E "==|time|rel" $O/byhand.txt | cut -c1-150
