#!/usr/bin/env bash
# Session 57, call 7 (one H200), the tree with dg_diff's kept forms in any number of N tiles ('s57c'): the dg_diff
# rows N5-N8 (bench_suite, 48 candidates, peers in the same process) and the search at Np = 160 (64 candidates)
# that found 0.3356 ms in call 6; compute-sanitizer on the new forms at Np 160 and 68 (K = 5003).
# $S/cublas32.py is bench/results/h200-2026-12-03-s57-cublas32.py.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c7; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57c/rtcgc; B=$P/m/s57c/bench_suite; F=examples/dg_diff.rtcg
RTCG_CACHE_DIR=/tmp/c7t timeout 240 $R tune $F -D K=101556 -D Np=160 --precision tf32x3 --max-candidates 64 --time-limit 40 --worker $P/m/s57c/rtcg-worker --db /tmp/c7.sqlite 2>&1 | grep -vE "pruned [0-9]+:|worker [0-9]+ started" > $O/tune160.txt
python3 $S/cublas32.py 160 >> $O/byhand.txt
RTCG_CACHE_DIR=/tmp/c7b timeout 300 $B --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8 --out /tmp/b7 --max-candidates 48 --time-limit 12 --worker $P/m/s57c/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-dg.log; cp /tmp/b7/bench.json $O/bench-dg.json
T="swizzle 128 tma producer persistent"
for tk in "memcheck 160 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "racecheck 160 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "synccheck 160 mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "memcheck 68 mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "racecheck 68 mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"; do
  set -- $tk; tool=$1; np=$2; shift 2
  echo "== $tool K=5003 Np=$np $*" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c7s timeout 120 compute-sanitizer --tool $tool $R run $F -D K=5003 -D Np=$np --precision tf32x3 -s "$*" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
cat $O/byhand.txt; grep -A6 "search done" $O/tune160.txt | cut -c1-200; grep -A4 "  rank " $O/tune160.txt | cut -c1-200
grep -hE "^dg_diff|search done" $O/bench-dg.log | cut -c1-230; grep -E "==|SUMMARY|rel" $O/sanitizer.txt | cut -c1-160
tar -C $OUT -czf $OUT/c7.tgz c7 && rm -rf $O
