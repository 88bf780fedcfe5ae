#!/usr/bin/env bash
# Session 59, call 14 (one H200), tree s59d: f64 DG N7's row-group forms in longer steps by hand (rtcgc run,
# verified, median of 30, L2 flushed, streaming stores), cublasDgemm by CuPy in the same call, twice.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c14; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59d/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
for i in 1 2; do
  python3 $S/cublas64t.py 120 >> $O/byhand.txt
  for g in "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3" "m16n8k4 warps 4x3 tile 1x5 k 40 stages 3" "m16n8k4 warps 4x3 tile 1x5 k 60 stages 2" "m16n8k8 warps 4x5 tile 1x3 k 40 stages 3" "m16n8k4 warps 4x5 tile 1x3 k 60 stages 2"; do
    echo "== N7 $g" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c14 timeout 60 $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 $g $TP" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
done
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-120
tar -C $OUT -czf $OUT/c14.tgz c14 && rm -rf $O
