#!/usr/bin/env bash
# Session 60, call 2 (one H200), probe tree s60a: f64 DG N7 forms of 4x3 warps of 2x5 m16n8k4 fragments (a third less
# shared-memory traffic a product than 1x5), by rtcgc run (verified, median of 30, L2 flushed), cublasDgemm by CuPy.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c2; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60a/rtcgc; F=$S/dgdiff64.rtcg
run() { echo "== K=$1 Np=$2 $3" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c2 timeout 60 $R run $F -D K=$1 -D Np=$2 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
python3 $S/cublas64t.py 120 >> $O/byhand.txt
for st in "stores: streaming; " ""; do
for g in "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong" "m16n8k4 warps 4x3 tile 2x5 k 24 stages 3 persistent pingpong" "m16n8k4 warps 4x3 tile 2x5 k 40 stages 2 persistent pingpong" "m16n8k4 warps 4x3 tile 2x5 k 16 stages 4 persistent pingpong" "m16n8k4 warps 4x3 tile 2x5 k 24 stages 3 persistent" "m16n8k4 warps 4x3 tile 2x5 k 24 stages 4 persistent" "m16n8k4 warps 2x3 tile 4x5 k 24 stages 2 persistent pingpong" "m16n8k4 warps 4x3 tile 2x5 k 12 stages 4 persistent pingpong"; do
  run 100000 120 "${st}mma: f64 $g resident a fragments 2"
done; done
python3 $S/cublas64t.py 120 >> $O/byhand.txt
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//; s/resident a fragments 2//' | cut -c1-150
tar -C $OUT -czf $OUT/c2.tgz c2 && rm -rf $O
