#!/usr/bin/env bash
# Session 60, call 4 (one H200), probe tree s60c (s60b with RTCG_PROBE_INSIDE=2 copies only, =3 epilogue only) with RTCG_PROBE_INSIDE=1: f64 DG N7 forms of 16 and 20 warps (more
# warps a scheduler to keep the FP64 pipe fed), by rtcgc run (verified, median of 30, L2 flushed), cublasDgemm by CuPy.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c4; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60c/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
run() { echo "== K=$1 Np=$2 $3" >> $O/byhand.txt; RTCG_PROBE_INSIDE=1 RTCG_CACHE_DIR=/tmp/c4 timeout 60 $R run $F -D K=$1 -D Np=$2 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
python3 $S/cublas64t.py 120 >> $O/byhand.txt
for g in "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3" "m16n8k8 warps 4x4 tile 1x4 k 40 stages 3" "m16n8k4 warps 4x4 tile 1x4 k 40 stages 3" "m16n8k8 warps 4x4 tile 1x4 k 24 stages 4" "m16n8k8 warps 4x4 tile 1x2 k 40 stages 3" "m16n8k8 warps 8x2 tile 1x4 k 40 stages 3" "m16n8k4 warps 4x5 tile 1x3 k 40 stages 3" "m16n8k8 warps 4x5 tile 1x3 k 40 stages 3" "m16n8k4 warps 4x5 tile 1x3 k 24 stages 4" "m16n8k4 warps 4x4 tile 1x4 k 24 stages 4"; do
  run 100000 120 "stores: streaming; mma: f64 $g $TP"
done
python3 $S/cublas64t.py 120 >> $O/byhand.txt
python3 $S/cublas64t.py 56 >> $O/byhand.txt
for v in 0 1 2 3 0 1 2 3; do echo "== INSIDE=$v" >> $O/byhand.txt; RTCG_PROBE_INSIDE=$v RTCG_CACHE_DIR=/tmp/c4i$v timeout 60 $R run $F -D K=100000 -D Np=56 -s "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP" --repeats 30 2>&1 | grep -E "time|rror" >> $O/byhand.txt; done
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//; s/persistent pingpong resident a fragments 2/PP/' | cut -c1-150
tar -C $OUT -czf $OUT/c4.tgz c4 && rm -rf $O
