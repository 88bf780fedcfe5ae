#!/usr/bin/env bash
# Session 45 helper n8, call 4 (one H200): under tf32x3 warp 0 copies every stage of A and warps
# 1-3 split each as it lands (the copies up to `stages` steps ahead, apart from the split). By
# hand (median of 30) against the plain swizzled form measured in calls 2 and 3 (the anchor);
# racecheck, synccheck at K = 5003.
set -uo pipefail
tar -xJf .probe-n8/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc
o=/tmp/o4; rm -rf $o; mkdir -p $o
export RTCG_CACHE_DIR=$(mktemp -d)
P="swizzle 128 tma producer persistent"
N1="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
N2="mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a"
for fs in "dg_diff|$N1" "dg_diff|$N2" "dg_diff|mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128" "dg_diff_stacked|$N1"; do
  f=${fs%%|*}; s=${fs#*|}
  echo "== $f N8 $s" >> $o/byhand.txt
  timeout 40 $R run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
done
for t in racecheck synccheck; do
  echo "== $t dg_diff K=5003 Np=165 $N1" >> $o/sanitize.txt
  timeout 40 compute-sanitizer --tool $t --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$N1" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
tar -czf $OUT/call4.tgz -C $o .
