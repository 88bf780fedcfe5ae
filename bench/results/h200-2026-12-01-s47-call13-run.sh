#!/usr/bin/env bash
# Session 47, lead's call 13 (one H200): setmaxnreg (producer 40, consumers 232) forced on TMA-fed producer forms whose consumers' estimate fits the launch (probe RTCG_PROBE_FORCEMAXNREG), against main's none.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-probe.xz > $P/m/main/rtcgc-probe; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc-probe; O=$OUT/c13; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c13
T="swizzle 128 tma producer persistent"
one() { # file defs schedule
  for env in X=1 RTCG_PROBE_FORCEMAXNREG=1; do
    echo "== $env | $1 $2 | $3" >> $O/byhand.txt
    env $env timeout 60 $R run $P/$1 $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
  done
}
for i in 1 2; do
  one stacked.rtcg "-D K=139720 -D Np=120" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T"
  one stacked.rtcg "-D K=199665 -D Np=84" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 1x2 k 32 stages 2 $T resident a"
  one dgdiff.rtcg "-D K=139720 -D Np=120" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a"
  one dgdiff.rtcg "-D K=199665 -D Np=84" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  one lift.rtcg "-D K=174263 -D Np=120 -D Nfp=36" "stores: streaming; mma: tf32x3 wgmma m64n120k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
done
tar -C $OUT -czf $OUT/c13.tgz c13; rm -rf $O
