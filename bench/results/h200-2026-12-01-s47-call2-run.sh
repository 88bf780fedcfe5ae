#!/usr/bin/env bash
# Session 47, lead's call 2 (one H200): probe: the producer's thread 0 prefetches the next tile's rows of u (its whole reduction) into L2 (RTCG_PROBE_APF = tiles ahead), N8 forms by hand.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; O=$OUT/c2; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c2
T="swizzle 128 tma producer persistent"
one() { # file label schedule
  for apf in "" 1 2; do
    echo "== APF=$apf $2 $3" >> $O/byhand.txt
    RTCG_PROBE_APF=$apf timeout 60 $R run $P/$1 -D K=101556 -D Np=165 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|error|rel" >> $O/byhand.txt
  done
}
one dgdiff.rtcg dg_diff "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
one stacked.rtcg stacked "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
one dgdiff.rtcg dg_diff "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
RTCG_PROBE_APF=1 $R emit $P/stacked.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" > $O/stacked-apf1.cu 2>&1
tar -C $OUT -czf $OUT/c2.tgz c2; rm -rf $O
