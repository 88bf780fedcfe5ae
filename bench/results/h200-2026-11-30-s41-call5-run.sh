#!/usr/bin/env bash
# Session 41, call 5: the mma epilogue's values before its stores (DG lifting reads rhs): old (main at 9dea9ea) against new, by hand; the lift rows.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p old new; (cd old && tar -xJf ../.probe/old.tar.xz); (cd new && tar -xJf ../.probe/new.tar.xz)
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
run() {  # build K Np Nfp schedule
  local b=$1 K=$2 np=$3 nfp=$4; shift 4
  echo "== $b lift Np=$np : $*" >> $OUT/byhand.txt
  LD_LIBRARY_PATH=$PWD/$b/.gpu/lib:$LD_LIBRARY_PATH RTCG_CACHE_DIR=/tmp/rc-$b timeout 60 $b/.gpu/build-gpu/tools/rtcgc/rtcgc run examples/dg_lift.rtcg -D K=$K -D Np=$np -D Nfp=$nfp --precision tf32x3 --repeats 30 \
    -s "$* " 2>&1 | grep -E "time|rel" | grep -v "again" >> $OUT/byhand.txt
}
P="swizzle 128 tma producer persistent"
for b in old new old new; do
  run $b 174263 120 36 mma: tf32x3 wgmma m64n64k8 warpgroups 2x2 k 32 stages 2 $P resident a
  run $b 174263 120 36 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a
  run $b 340630 56 21 mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $P pingpong resident a
done
stamp byhand
ln -sfn new/.gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:$LD_LIBRARY_PATH
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 build-gpu/bench/suite/bench_suite --only dg_lift_tf32x3_N5,dg_lift_tf32x3_N7 \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A4 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned" /tmp/bench.log > $OUT/searches.txt
S=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  echo "== $tool lift N7 K=20011 2x2" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc-new timeout 120 $S --tool $tool --error-exitcode 9 build-gpu/tools/rtcgc/rtcgc run examples/dg_lift.rtcg -D K=20011 -D Np=120 -D Nfp=36 --precision tf32x3 --repeats 1 \
    -s "mma: tf32x3 wgmma m64n64k8 warpgroups 2x2 k 32 stages 2 $P resident a" > /tmp/s.log 2>&1
  echo "rc $?" >> $OUT/sanitize.txt; grep -E "SUMMARY|rhs: rel" /tmp/s.log | tail -2 >> $OUT/sanitize.txt
done
stamp sanitize
rm -rf old new build-gpu
