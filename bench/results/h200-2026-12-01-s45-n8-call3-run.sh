#!/usr/bin/env bash
# Session 45 helper n8, call 3 (one H200): every splitting thread arrives on the stage's ready
# mbarrier (96), which the copying threads wait for. compute-sanitizer at K = 5003 on both N = 8
# kernels (racecheck again, memcheck and synccheck of the changed code); by hand (median of 30) the
# N = 8 forms against the old winners, to see the arrivals cost nothing.
set -uo pipefail
tar -xJf .probe-n8/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc
o=/tmp/o3; rm -rf $o; mkdir -p $o
export RTCG_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
P="swizzle 128 tma producer persistent"
N1="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
N2="mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $P pingpong resident a"
for ts in "racecheck|dg_diff|$N1" "racecheck|dg_diff_stacked|$N2" "memcheck|dg_diff|$N1" "synccheck|dg_diff|$N1"; do
  t=${ts%%|*}; r=${ts#*|}; f=${r%%|*}; s=${r#*|}
  echo "== $t $f K=5003 Np=165 $s" >> $o/sanitize.txt
  timeout 60 compute-sanitizer --tool $t --error-exitcode 9 $R run examples/$f.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$s" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
for fs in "dg_diff|$N1" "dg_diff|mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128" "dg_diff_stacked|$N1"; do
  f=${fs%%|*}; s=${fs#*|}
  echo "== $f N8 $s" >> $o/byhand.txt
  timeout 60 $R run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
done
tar -czf $OUT/call3.tgz -C $o .
