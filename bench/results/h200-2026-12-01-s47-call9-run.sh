#!/usr/bin/env bash
# Session 47, lead's call 9 (one H200): dg_diff N8 pingpong without setmaxnreg (probe RTCG_PROBE_NOSTACK: the stacked statements' 8 registers not added, so the launch's 168 hold the consumers and the producer keeps 16 rows in flight), with and without the single-store epilogue (RTCG_PROBE_PPSINGLE).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-probe.xz > $P/m/main/rtcgc-probe; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc-probe; O=$OUT/c9; mkdir -p $O
T="swizzle 128 tma producer persistent"
PP="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
for i in 1 2; do
  for env in "X=1" "RTCG_PROBE_NOSTACK=1" "RTCG_PROBE_NOSTACK=1 RTCG_PROBE_PPSINGLE=1" "RTCG_PROBE_PPSINGLE=1"; do
    for st in "" "stores: streaming; "; do
      echo "== $i $env | $st$PP" >> $O/byhand.txt
      env $env RTCG_CACHE_DIR=/tmp/c9 timeout 60 $R run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$st$PP" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
    done
  done
  echo "== $i main | mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c9 timeout 60 $R run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
  echo "== $i stacked | stores: streaming; $PP" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c9 timeout 60 $R run $P/stacked.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "stores: streaming; $PP" --repeats 30 2>&1 | grep -E "time|error" >> $O/byhand.txt
done
tar -C $OUT -czf $OUT/c9.tgz c9; rm -rf $O
