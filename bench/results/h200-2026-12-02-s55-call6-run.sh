#!/usr/bin/env bash
# Session 55, call 6 (one H200): f64 DG differentiation N7 (K = 100000, Np = 120) with block tiles that divide D's 360 rows (N 120) and reductions of 120 (k 20, 24, 40, 60), against the winner (N 128, k 32); cublasDgemm in the same call.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s55; O=$OUT/c6; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $P/runs.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/runs/rtcgc; F=$S/dg64.rtcg
for i in 1 2; do
  python3 $S/cublas64t.py 120 >> $O/byhand.txt
  while read -r s; do
    echo "== $s" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c6 timeout 60 $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 $s persistent resident a fragments 2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
  done <<'L'
m16n8k4 warps 2x4 tile 2x4 k 32 stages 4
m16n8k4 warps 2x3 tile 2x5 k 40 stages 3
m16n8k4 warps 2x3 tile 2x5 k 24 stages 4
m16n8k4 warps 2x5 tile 2x3 k 24 stages 4
m16n8k8 warps 2x3 tile 2x5 k 40 stages 3
m16n8k8 warps 2x3 tile 2x5 k 24 stages 4
m16n8k4 warps 4x3 tile 1x5 k 24 stages 4
m16n8k4 warps 2x3 tile 2x5 k 20 stages 4
m16n8k4 warps 2x3 tile 2x5 k 60 stages 2
m16n8k4 warps 1x3 tile 4x5 k 24 stages 4
L
done
grep -E "==|time|cublas" $O/byhand.txt | cut -c1-160
tar -C $OUT -czf $OUT/c6.tgz c6 && rm -rf $O
