#!/usr/bin/env bash
# Session 59, call 13 (one H200), tree s59d: f64 DG N5's row-group forms by hand in longer steps (rtcgc run,
# verified, median of 30, L2 flushed), cublasDgemm by CuPy in the same call, twice.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c13; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59d/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
for i in 1 2; do
  python3 $S/cublas64t.py 56 >> $O/byhand.txt
  for g in "m16n8k4 warps 4x1 tile 1x7 k 8 stages 4" "m16n8k4 warps 4x1 tile 1x7 k 8 stages 3" "m16n8k4 warps 4x1 tile 1x7 k 28 stages 2" "m16n8k8 warps 4x1 tile 1x7 k 8 stages 4" "m16n8k4 warps 4x1 tile 1x7 k 16 stages 3"; do
    for st in "" "stores: streaming; "; do
      echo "== N5 $st$g" >> $O/byhand.txt
      RTCG_CACHE_DIR=/tmp/c13 timeout 60 $R run $F -D K=100000 -D Np=56 -s "${st}mma: f64 $g $TP" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
    done
  done
done
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-120
tar -C $OUT -czf $OUT/c13.tgz c13 && rm -rf $O
