#!/usr/bin/env bash
# Run on tree s59b = main 9a5f331. f64rate.py is h200-2026-12-03-s59-f64rate.py, dgdiff64.rtcg h200-2026-12-03-s59-dgdiff64.rtcg.
# Session 59, call 3 (one H200), main 9a5f331 ('s59b'): f64rate.py (mma.sync's FP64 rate on register operands, cuBLAS
# DGEMM for the f64 DG product, K = 10^5, Np 120, D stacked), then that row's tile forms by hand (rtcgc run,
# verified, median of 30, L2 flushed; dgdiff64.rtcg is bench_suite's kDgDiffStacked64), twice.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c3; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59b/rtcgc
python3 $S/f64rate.py > $O/f64rate.txt 2>&1
run() { echo "== $1" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c3 timeout 120 $R run $S/dgdiff64.rtcg -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 $1 persistent resident a fragments 2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
for i in 1 2; do
  run "m16n8k8 warps 4x5 tile 1x3 k 24 stages 4"
  run "m16n8k8 warps 2x5 tile 2x3 k 24 stages 4"
  run "m16n8k8 warps 2x5 tile 2x3 k 24 stages 3"
  run "m16n8k8 warps 2x5 tile 2x3 k 40 stages 3"
  run "m16n8k8 warps 4x3 tile 1x5 k 24 stages 4"
  run "m16n8k4 warps 2x5 tile 2x3 k 24 stages 4"
  run "m16n8k8 warps 4x5 tile 1x3 k 40 stages 3"
done
python3 $S/f64rate.py | tail -1 >> $O/f64rate.txt 2>&1
cat $O/f64rate.txt; sed 's/ (median of 30, L2 flushed)//' $O/byhand.txt | grep -E "^==|time|rror" | cut -c1-200
tar -C $OUT -czf $OUT/c3.tgz c3 && rm -rf $O
