#!/usr/bin/env bash
# Session 47, lead's call 8 (one H200): compute-sanitizer on dg_diff's single-store epilogue (singleArrays) at sizes no tile divides.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; O=$OUT/c8; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c8
T="swizzle 128 tma producer persistent"
chk() { # np precision schedule tools
  for t in $4; do
    echo "== $t Np=$1 $2 $3" >> $O/sanitize.txt
    timeout 120 compute-sanitizer --tool $t $R run $P/dgdiff.rtcg -D K=5003 -D Np=$1 --precision $2 -s "$3" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel |error" >> $O/sanitize.txt
  done
}
chk 165 tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" "memcheck racecheck synccheck"
chk 165 tf32 "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" "memcheck racecheck"
chk 21 tf32x3 "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 $T resident a" "memcheck"
chk 45 tf32x3 "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 64 stages 2 $T resident a" "memcheck"
$R emit $P/dgdiff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" > $O/n8-1x1.cu 2>&1
tar -C $OUT -czf $OUT/c8.tgz c8; rm -rf $O
