#!/usr/bin/env bash
# The 9th GPU call of session 59 (its script wrote to $OUT/c5): tree s59c, built from this commit's sources (mma.sync pingpong).
# Session 59, call 5 (one H200), tree 's59c' (main + mma.sync `pingpong`: a ring a warp row, MmaPlan::rowGroups):
# the f64 DG rows by hand (rtcgc run, verified against the CPU reference, median of 30, L2 flushed; cublasDgemm
# by CuPy in the same call: $S/cublas64t.py is bench/results/h200-2026-12-02-s55-cublas64t.py, $S/dgdiff64.rtcg
# bench_suite's kDgDiffStacked64), sizes no tile divides, compute-sanitizer, then the f64 / fp64x N7 and f64 N5 rows'
# searches (bench_suite, 48 candidates, peers in the same process).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c5; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59c/rtcgc; F=$S/dgdiff64.rtcg
T="persistent resident a fragments 2"; TP="persistent pingpong resident a fragments 2"
run() { echo "== N$1 $2" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c5 timeout 60 $R run $F -D K=100000 -D Np=$3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
for i in 1 2; do
  python3 $S/cublas64t.py 120 >> $O/byhand.txt
  for g in "m16n8k8 warps 4x5 tile 1x3 k 24 stages 4" "m16n8k8 warps 4x3 tile 1x5 k 24 stages 4"; do
    run 7 "mma: f64 $g $T" 120; run 7 "mma: f64 $g $TP" 120; run 7 "stores: streaming; mma: f64 $g $TP" 120
  done
  python3 $S/cublas64t.py 56 >> $O/byhand.txt
  for g in "m16n8k4 warps 4x1 tile 1x7 k 8 stages 4"; do run 5 "mma: f64 $g $T" 56; run 5 "mma: f64 $g $TP" 56; done
done
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c5 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 5 2>&1 | grep -E "rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done <<'L'
100003 120 mma: f64 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 persistent pingpong resident a fragments 2
77777 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent pingpong resident a fragments 2
77777 35 mma: f64 m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong fragments 2
100003 27 mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent pingpong resident a fragments 2
L
for tk in "memcheck 5003 120 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 $TP" "racecheck 5003 120 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 $TP" "synccheck 5003 120 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 $TP" "racecheck 5003 35 m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong fragments 2"; do
  set -- $tk; tool=$1; kk=$2; np=$3; shift 3
  echo "== $tool K=$kk Np=$np $*" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c5s timeout 120 compute-sanitizer --tool $tool $R run $F -D K=$kk -D Np=$np -s "mma: f64 $*" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
for r in dg_diff_f64_N7 dg_diff_fp64x_N7 dg_diff_f64_N5; do
  RTCG_CACHE_DIR=/tmp/c5b$r timeout 150 $P/m/s59c/bench_suite --only $r --out /tmp/b5$r --max-candidates 48 --time-limit 12 --worker $P/m/s59c/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b5$r/bench.json $O/bench-$r.json
done
grep -E "==|time|cublas|rel" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | sed 's/persistent pingpong resident a fragments 2/PP/; s/persistent resident a fragments 2/P/' | cut -c1-150; grep -E "==|SUMMARY" $O/sanitizer.txt | cut -c1-150
grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-250
tar -C $OUT -czf $OUT/c5.tgz c5 && rm -rf $O
