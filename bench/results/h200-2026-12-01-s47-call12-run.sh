#!/usr/bin/env bash
# Session 47, lead's call 12 (one H200): N8 forms by hand on main 9d06f77 (no setmaxnreg: 16 rows): narrower N tiles with k 64 (half the steps, so half the waits for the partial sums), more stages.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; O=$OUT/c12; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c12
T="swizzle 128 tma producer persistent"
for f in dgdiff stacked; do
  for s in "m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "m64n104k8 warpgroups 2x1 k 64 stages 2 $T pingpong resident a" "m64n96k8 warpgroups 2x1 k 64 stages 2 $T pingpong resident a" "m64n104k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "m64n104k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"; do
    for st in "" "stores: streaming; "; do
      echo "== $f | ${st}mma: tf32x3 wgmma $s" >> $O/byhand.txt
      timeout 60 $R run $P/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "${st}mma: tf32x3 wgmma $s" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
    done
  done
done
tar -C $OUT -czf $OUT/c12.tgz c12; rm -rf $O
