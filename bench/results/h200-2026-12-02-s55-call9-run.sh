#!/usr/bin/env bash
# Session 55, call 9 (one H200): the fitted grids and the kept group's wait (this tree, 'fit2'): by hand against the old winners,
# gpu-check.sh's new lines, compute-sanitizer, and the f64 DG rows' searches (N7 twice).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s55; O=$OUT/c9; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/fit2.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/fit2/rtcgc; F=$S/dg64s.rtcg
OLD7="stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 4 persistent resident a fragments 2"
NEW7="stores: streaming; mma: f64 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 persistent resident a fragments 2"
for i in 1 2; do
  python3 $S/cublas64t.py 120 >> $O/byhand.txt
  for s in "$OLD7" "$NEW7"; do echo "== N7 $s" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c9 timeout 60 $R run $F -D K=100000 -D Np=120 -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; done
done
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c9 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 5 2>&1 | grep -E "rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done <<'L'
100003 120 stores: streaming; mma: f64 m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 persistent resident a fragments 2
100003 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent resident a fragments 2
77777 50 mma: f64 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a fragments 2
L
for tk in "memcheck 5003 120 $NEW7" "racecheck 5003 120 $NEW7" "synccheck 5003 120 $NEW7" "memcheck 5003 50 mma: f64 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a fragments 2" "racecheck 5003 50 mma: f64 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a fragments 2"; do
  set -- $tk; tool=$1; kk=$2; np=$3; shift 3
  echo "== $tool K=$kk Np=$np $*" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c9s timeout 90 compute-sanitizer --tool $tool $R run $F -D K=$kk -D Np=$np -s "$*" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
for r in dg_diff_f64_N7 dg_diff_f64_N7 dg_diff_f64_N5 dg_diff_f64_N3; do
  n=$(ls $O | grep -c "bench-$r") ; t=$r-$n
  RTCG_CACHE_DIR=/tmp/c9b$t timeout 150 $P/m/fit2/bench_suite --only $r --out /tmp/b9$t --max-candidates 48 --time-limit 12 --worker $P/m/fit2/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$t.log; cp /tmp/b9$t/bench.json $O/bench-$t.json
done
grep -E "==|time|cublas|rel" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-150; grep -E "==|SUMMARY" $O/sanitizer.txt | cut -c1-150
grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-230
tar -C $OUT -czf $OUT/c9.tgz c9 && rm -rf $O
