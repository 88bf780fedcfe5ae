#!/usr/bin/env bash
# Session 41, call 6: the lift searches' winners under old (9dea9ea) and new (values before stores).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p old new; (cd old && tar -xJf ../.probe/old.tar.xz); (cd new && tar -xJf ../.probe/new.tar.xz)
run() {  # build K Np Nfp schedule
  local b=$1 K=$2 np=$3 nfp=$4; shift 4
  echo "== $b lift Np=$np : $*" >> $OUT/byhand.txt
  LD_LIBRARY_PATH=$PWD/$b/.gpu/lib:$LD_LIBRARY_PATH RTCG_CACHE_DIR=/tmp/rc-$b timeout 60 $b/.gpu/build-gpu/tools/rtcgc/rtcgc run examples/dg_lift.rtcg -D K=$K -D Np=$np -D Nfp=$nfp --precision tf32x3 --repeats 30 \
    -s "$* " 2>&1 | grep -E "time|rel" | grep -v "again" >> $OUT/byhand.txt
}
P="swizzle 128 tma producer persistent"
for b in old new old new; do
  run $b 174263 120 36 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a"
  run $b 174263 120 36 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a"
  run $b 340630 56 21 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 $P resident a"
done
rm -rf old new
