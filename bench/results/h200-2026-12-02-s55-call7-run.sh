#!/usr/bin/env bash
# Session 55, call 7 (one H200): f64 DG N7 / N5 (K = 100000) warp grids of one fragment row per warp and N tiles that divide D's 3 Np rows, against the search's winners; cublasDgemm in the same call.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s55; O=$OUT/c7; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $P/runs.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/runs/rtcgc; F=$S/dg64.rtcg
for i in 1 2; do
  python3 $S/cublas64t.py 120 >> $O/byhand.txt
  while read -r s; do
    echo "== N7 $s" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c7 timeout 60 $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 $s persistent resident a fragments 2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
  done <<'L'
m16n8k4 warps 2x4 tile 2x4 k 32 stages 4
m16n8k4 warps 4x3 tile 1x5 k 24 stages 4
m16n8k4 warps 4x3 tile 1x5 k 32 stages 4
m16n8k4 warps 4x3 tile 1x5 k 40 stages 3
m16n8k4 warps 4x3 tile 1x5 k 24 stages 3
m16n8k4 warps 4x3 tile 1x5 k 12 stages 4
m16n8k4 warps 4x3 tile 1x5 k 8 stages 4
m16n8k4 warps 4x4 tile 1x4 k 32 stages 4
m16n8k4 warps 4x4 tile 1x4 k 24 stages 4
m16n8k4 warps 4x5 tile 1x3 k 24 stages 4
m16n8k8 warps 4x3 tile 1x5 k 24 stages 4
m16n8k4 warps 4x2 tile 1x8 k 24 stages 4
L
  python3 $S/cublas64t.py 56 >> $O/byhand.txt
  while read -r s; do
    echo "== N5 $s" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c7 timeout 60 $R run $F -D K=100000 -D Np=56 -s "mma: f64 $s persistent resident a fragments 2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
  done <<'L'
m16n8k4 warps 2x2 tile 2x4 k 8 stages 4
m16n8k4 warps 4x1 tile 1x7 k 8 stages 4
m16n8k4 warps 4x3 tile 1x7 k 8 stages 4
m16n8k4 warps 4x7 tile 1x3 k 8 stages 4
m16n8k4 warps 4x1 tile 1x7 k 28 stages 2
m16n8k4 warps 4x3 tile 1x7 k 28 stages 2
m16n8k4 warps 4x7 tile 1x1 k 8 stages 4
m16n8k4 warps 2x1 tile 2x7 k 8 stages 4
L
done
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-120
tar -C $OUT -czf $OUT/c7.tgz c7 && rm -rf $O
