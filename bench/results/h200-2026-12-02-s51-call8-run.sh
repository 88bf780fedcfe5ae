#!/usr/bin/env bash
# Session 51, call 8 (one H200, a probe): dg_diff N8 with its chunks' last lanes pairing across into the next chunk
# (exp: the next chunk's first columns rotated in the chunk inside one statement) against c41d652 (cur: no pair across
# dg_diff's chunks), twice interleaved. Needs .probe-me/{main,cur,exp}.tar.xz.
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; for v in main cur exp; do tar -C $P/m -xJf $P/$v.tar.xz; done; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d8; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes schedule
  for v in cur exp; do
    echo "== $v $1 $2 | $3" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/d8$v timeout 90 $P/m/$v/rtcgc run $E/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
for i in 1 2; do
  hand dg_diff "-D K=101556 -D Np=165" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff "-D K=101556 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff "-D K=101556 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
done
grep -E "==|time|MISMATCH|rror" $O/byhand.txt | cut -c1-150
