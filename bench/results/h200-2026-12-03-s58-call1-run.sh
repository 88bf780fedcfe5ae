#!/usr/bin/env bash
# Session 58, call 1 (one H200), tree 's58a' (u by TMA through a view of 4 rows, D's kept last step 8 values wide):
# dg_diff and dg_diff_stacked at N = 8 (Np 165, K = 101556) by hand, cublasSgemm by CuPy before and after; then
# compute-sanitizer on the view's pingpong form at K = 5004 (no tile divides it). 's58a' was built from branch
# wip/s58-tma-row-view; $S/cublas32.py is bench/results/h200-2026-12-03-s57-cublas32.py.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s58; O=$OUT/c1; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s58a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s58a/rtcgc; T="swizzle 128 tma producer persistent"; V="swizzle 128 tma rows 4 producer persistent"
M="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32"
python3 $S/cublas32.py 165 >> $O/byhand.txt
run() { echo "== $1 $2" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1 timeout 90 $R run examples/$1.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
for i in 1 2; do
run dg_diff "stores: streaming; $M stages 2 $T pingpong resident a"
run dg_diff "stores: streaming; $M stages 3 $T pingpong resident a"
run dg_diff "stores: streaming; $M stages 2 $V pingpong resident a"
run dg_diff "stores: streaming; $M stages 3 $V pingpong resident a"
run dg_diff "$M stages 3 $V pingpong resident a"
run dg_diff "stores: streaming; $M stages 3 $V resident a"
run dg_diff_stacked "$M stages 3 $T resident a"
run dg_diff_stacked "$M stages 3 $V resident a"
run dg_diff_stacked "stores: streaming; $M stages 3 $V pingpong resident a"
done
python3 $S/cublas32.py 165 >> $O/byhand.txt
for tool in memcheck racecheck synccheck; do
  echo "== $tool dg_diff K=5004 Np=165 view stages 3 pingpong" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c1s timeout 150 compute-sanitizer --tool $tool $R run examples/dg_diff.rtcg -D K=5004 -D Np=165 --precision tf32x3 -s "stores: streaming; $M stages 3 $V pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel [0-9]|rror" | head -5 >> $O/sanitizer.txt
done
cat $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-170; cat $O/sanitizer.txt
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
