#!/usr/bin/env bash
# Session 51, call 7 (one H200): the odd-row pairs as committed (c41d652): gpu-check.sh's new lines (rtcgc run, verified
# against the CPU reference) and compute-sanitizer memcheck / racecheck / synccheck on a sample of the forms at K = 5003.
# Needs .probe-me/{main,cur}.tar.xz (cur/rtcgc of c41d652, lib/).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d7; mkdir -p $O; R=$P/m/cur/rtcgc
T="swizzle 128 tma producer persistent"
check() { # file precision schedule sizes...
  local f=$1 pr=$2 s=$3; shift 3
  echo "== $f $* | $s" >> $O/check.txt
  RTCG_CACHE_DIR=/tmp/d7c timeout 120 $R run $E/$f "$@" --precision $pr --schedule "mma: $s" --repeats 20 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt
}
check dg_diff_stacked.rtcg tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" -D K=77777 -D Np=165
check dg_diff.rtcg tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" -D K=77777 -D Np=165
check dg_diff.rtcg tf32x3 "tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" -D K=77777 -D Np=35
check gemm_bf16.rtcg ieee "bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3" -D n=1003
san() { # file precision sizes schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $1 $3 | $4" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/d7s timeout 100 compute-sanitizer --tool $tool $R run $E/$1.rtcg $3 --precision $2 -s "$4" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
}
san dg_diff tf32x3 "-D K=5003 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san dg_diff_stacked tf32x3 "-D K=5003 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san dg_diff tf32x3 "-D K=5003 -D Np=35" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
san gemm_bf16 ieee "-D n=1003" "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3"
grep -E "==|time|rc=|MISMATCH" $O/check.txt | cut -c1-160
grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" $O/sanitizer.txt; grep -c " ok$" $O/sanitizer.txt; grep -E "MISMATCH|[1-9][0-9]* errors|[1-9][0-9]* hazards" $O/sanitizer.txt | head
