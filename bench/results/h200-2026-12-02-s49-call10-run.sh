#!/usr/bin/env bash
# Session 49, call 10 (one H200): dg_diff N8's pingpong form (two-ahead build) with its single stores picking each chunk's
# array once (singleArrays, kept off under pingpong since session 47) as a probe build, twice interleaved.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/two.tar.xz; xz -dc $P/rtcgc-probe.xz > $P/m/two/rtcgc-probe; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c10; mkdir -p $O
T="swizzle 128 tma producer persistent"
for i in 1 2; do
  for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"; do
    for v in rtcgc rtcgc-probe; do
      echo "== $v | $s" >> $O/byhand.txt
      RTCG_CACHE_DIR=/tmp/c10$v timeout 90 $P/m/two/$v run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
    done
  done
done
grep -E "==|time" $O/byhand.txt | cut -c1-120
