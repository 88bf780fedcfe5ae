#!/usr/bin/env bash
# Session 53, call 13 (one H200): the committed build (5ea5ca2) on gpu-check.sh's odd-row lines and the two new
# ones (dg_diff Np = 99 and 45: 3 and 2 N origins), each verified against the CPU reference by `rtcgc run`;
# compute-sanitizer memcheck and racecheck on the 3-origin form at K = 5003.
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/fin.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c13; mkdir -p $O; R=$P/m/fin/rtcgc
ring="swizzle 128 tma producer persistent"
ex() { echo "== $*" >> $O/check.txt; RTCG_CACHE_DIR=/tmp/c13 timeout 120 $R run "$@" --repeats 20 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt; }
ex $E/dg_diff_stacked.rtcg -D K=77777 -D Np=165 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
ex $E/dg_diff.rtcg -D K=77777 -D Np=165 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
ex $E/dg_diff.rtcg -D K=77777 -D Np=35 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $ring resident a"
ex $E/dg_diff.rtcg -D K=77777 -D Np=99 --precision tf32x3 --schedule "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
ex $E/dg_diff.rtcg -D K=77777 -D Np=45 --precision tf32x3 --schedule "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
ex $E/dg_diff.rtcg -D K=101556 -D Np=165 --precision tf32x3 --schedule "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a"
for tool in memcheck racecheck; do
  echo "== $tool Np=99" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c13s timeout 100 compute-sanitizer --tool $tool $R run $E/dg_diff.rtcg -D K=5003 -D Np=99 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $ring pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" >> $O/sanitizer.txt
done
grep -E "==|time|rel [0-9]|rc=|rror|MISMATCH" $O/check.txt | cut -c1-160; cat $O/sanitizer.txt
