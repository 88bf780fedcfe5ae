#!/usr/bin/env bash
# $S/cublas64t.py is bench/results/h200-2026-12-02-s55-cublas64t.py; $S/dg64s.rtcg is bench/suite/Workloads.cpp kDgDiffStacked64.
# Session 57, call 1 (one H200): session 56's one-step reductions, probe fix and FP64 families ('s57a' pack):
# by hand at N3 against cublasDgemm and the old winner, sizes no tile divides, compute-sanitizer, and the
# f64 / fp64x DG rows' and DGEMM 1000/2048 searches (48 candidates).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c1; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57a/rtcgc; F=$S/dg64s.rtcg
OLD3="mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"
NEW3="mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20"
for i in 1 2; do
  python3 $S/cublas64t.py 20 >> $O/byhand.txt
  for s in "$OLD3" "$NEW3" "mma: f64 m8n8k4 warps 4x2 tile 2x4 k 20" "mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24" "mma: f64 m16n8k4 warps 4x1 tile 1x8 k 4 stages 4 persistent resident a fragments 2" "mma: f64 m16n8k4 warps 4x2 tile 1x4 k 4 stages 4 persistent resident a fragments 2" "stores: streaming; mma: f64 m16n8k4 warps 4x1 tile 1x8 k 4 stages 3 persistent resident a fragments 2"; do echo "== N3 $s" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1 timeout 60 $R run $F -D K=100000 -D Np=20 -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; done
done
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c1 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 5 2>&1 | grep -E "rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done <<'L'
100003 20 mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20
100003 19 mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20
77777 23 mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24
77777 17 mma: f64 m8n8k4 warps 4x2 tile 2x4 k 20
L
for tk in "memcheck 5003 20 $NEW3" "racecheck 5003 20 $NEW3" "synccheck 5003 20 $NEW3" "memcheck 5003 23 mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24" "racecheck 5003 23 mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24"; do
  set -- $tk; tool=$1; kk=$2; np=$3; shift 3
  echo "== $tool K=$kk Np=$np $*" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c1s timeout 90 compute-sanitizer --tool $tool $R run $F -D K=$kk -D Np=$np -s "$*" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
for r in dg_diff_f64_N3 dg_diff_f64_N3 dg_diff_f64_N5 dg_diff_f64_N7 dg_diff_fp64x_N3 dg_diff_fp64x_N5 dg_diff_fp64x_N7 dgemm_1000 dgemm_2048; do
  n=$(ls $O | grep -c "bench-$r-") ; t=$r-$n
  RTCG_CACHE_DIR=/tmp/c1b$t timeout 150 $P/m/s57a/bench_suite --only $r --out /tmp/b1$t --max-candidates 48 --time-limit 12 --worker $P/m/s57a/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$t.log; cp /tmp/b1$t/bench.json $O/bench-$t.json
done
grep -E "==|time|cublas|rel" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-150; grep -E "==|SUMMARY" $O/sanitizer.txt | cut -c1-150
grep -hE "^dg_diff|^dgemm|search done" $O/bench-*.log | cut -c1-230
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
