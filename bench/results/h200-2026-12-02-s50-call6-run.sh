#!/usr/bin/env bash
# Session 50, call 6 (one H200): compute-sanitizer (memcheck, racecheck, synccheck) on the producer's three-step loads
# (dg_diff N8's pingpong setmaxnreg form 88 / 208, the stacked pingpong form, the one-consumer form) at K = 5003, Np = 165.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/three.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d6; mkdir -p $O
R=$P/m/three/rtcgc; T="swizzle 128 tma producer persistent"
san() { # file sizes schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $1 $2 | $3" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/d6s timeout 150 compute-sanitizer --tool $tool $R run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
}
san dgdiff "-D K=5003 -D Np=165" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san stacked "-D K=5003 -D Np=165" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san dgdiff "-D K=5003 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" $O/sanitizer.txt; grep -c "ok$" $O/sanitizer.txt; grep -E "MISMATCH|[1-9][0-9]* errors" $O/sanitizer.txt | head
