#!/usr/bin/env bash
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; export RTCG_CACHE_DIR=/tmp/cc6; O=$OUT/c6; mkdir -p $O
run() { echo "== $1 | $2" >> $O/byhand.txt; timeout 120 $R run $P/$1 -D K=101556 -D Np=165 --precision tf32x3 -s "mma: tf32x3 wgmma $2" --repeats 30 2>&1 | grep -E "time|error|rel" | grep -v again >> $O/byhand.txt; }
T="swizzle 128 tma producer persistent"
for f in dgdiff.rtcg dgstk.rtcg; do
  for s in "m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "m64n64k8 warpgroups 2x1 k 32 stages 3 $T resident a" "m64n64k8 warpgroups 2x1 k 32 stages 4 $T resident a" \
    "m64n96k8 warpgroups 2x1 k 32 stages 2 $T resident a" "m64n96k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "m64n64k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"; do run $f "$s"; done
done
tar -C $OUT -czf $OUT/c6.tgz c6; rm -rf $O
