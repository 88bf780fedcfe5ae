#!/usr/bin/env bash
# Session 53, call 14 (one H200): compute-sanitizer memcheck, racecheck and synccheck on the committed build's dg_diff
# forms with 3 and 2 N origins (Np = 99, 45) at K = 9001 (enough tiles for pingpong on 132 blocks).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/fin.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c14; mkdir -p $O; R=$P/m/fin/rtcgc
ring="swizzle 128 tma producer persistent"
for np in 99 45; do for tool in memcheck racecheck synccheck; do
  echo "== $tool Np=$np" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c14s timeout 120 compute-sanitizer --tool $tool $R run $E/dg_diff.rtcg -D K=9001 -D Np=$np --precision tf32x3 -s "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done; done
cat $O/sanitizer.txt
