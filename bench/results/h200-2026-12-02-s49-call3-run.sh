#!/usr/bin/env bash
# Session 49, call 3 (one H200): N8 (K = 101556, Np = 165, tf32x3), the new build: two consumers sharing a 128-row tile
# (orderedIssue, not pingpong), which fits beside D's kept tiles at n104 / n96 (5 / 6 N tiles).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-new.xz > $P/m/main/rtcgc-new; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c3; mkdir -p $O
T="swizzle 128 tma producer persistent"
for f in stacked dgdiff; do
  for s in "m64n104k8 warpgroups 2x1 k 32 stages 2 $T resident a" "m64n96k8 warpgroups 2x1 k 32 stages 2 $T resident a" "m64n104k8 warpgroups 2x1 k 64 stages 2 $T pingpong resident a"; do
    for st in "" "stores: streaming; "; do
      echo "== $f | ${st}$s" >> $O/byhand.txt
      RTCG_CACHE_DIR=/tmp/c3 timeout 90 $P/m/main/rtcgc-new run $P/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "${st}mma: tf32x3 wgmma $s" --repeats 30 2>&1 | grep -E "time|rror" >> $O/byhand.txt
    done
  done
done
