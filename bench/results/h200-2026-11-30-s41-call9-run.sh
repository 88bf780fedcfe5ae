#!/usr/bin/env bash
# Session 41, call 9 (review, c965f2c): stacked statements with epilogues of their own (the chunk column declared once), old (9dea9ea) against new; memcheck.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p old new; (cd old && tar -xJf ../.probe/old.tar.xz); (cd new && tar -xJf ../.probe/new.tar.xz)
S="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong resident a"
run() {  # build file np K
  echo "== $1 $2 Np=$3 K=$4" >> $OUT/byhand.txt
  LD_LIBRARY_PATH=$PWD/$1/.gpu/lib:$LD_LIBRARY_PATH RTCG_CACHE_DIR=/tmp/rc-$1 timeout 60 $1/.gpu/build-gpu/tools/rtcgc/rtcgc run $2 -D K=$4 -D Np=$3 --precision tf32x3 --repeats 30 -s "$S" 2>&1 | grep -E "time|rel" | grep -v again >> $OUT/byhand.txt
}
for b in old new old new; do run $b .probe/k/own.rtcg 84 199665; run $b .probe/k/own.rtcg 56 299551; done
run new examples/dg_diff.rtcg 84 199665
echo "== memcheck new own Np=84 K=20001" >> $OUT/byhand.txt
LD_LIBRARY_PATH=$PWD/new/.gpu/lib:$LD_LIBRARY_PATH RTCG_CACHE_DIR=/tmp/rc-new timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck new/.gpu/build-gpu/tools/rtcgc/rtcgc run .probe/k/own.rtcg -D K=20001 -D Np=84 --precision tf32x3 --repeats 1 -s "$S" 2>&1 | grep -E "SUMMARY|rel" | tail -4 >> $OUT/byhand.txt
rm -rf old new
