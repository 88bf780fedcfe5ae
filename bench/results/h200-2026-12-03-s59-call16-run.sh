#!/usr/bin/env bash
# Session 59, call 16 (one H200), tree s59e (the review commit: plan helpers aBuffers/bBuffers, one rounds expression,
# MmaNames::copier; emitted modules byte-identical to s59d's): scripts/gpu-check.sh's five row-group lines by rtcgc
# run against the CPU reference, then the N7 winner's time against cublasDgemm (CuPy) in the same call.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c16; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59e.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59e/rtcgc; F=$S/dgdiff64.rtcg
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/checks.txt
  RTCG_CACHE_DIR=/tmp/c16 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 30 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
done <<'L'
100000 120 stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a fragments 2
100003 120 mma: f64 m16n8k8 warps 4x3 tile 1x5 k 24 stages 4 persistent pingpong resident a fragments 2
77777 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent pingpong resident a fragments 2
77777 35 mma: f64 m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong fragments 2
100003 27 mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent pingpong resident a fragments 2
L
python3 $S/cublas64t.py 120 >> $O/checks.txt
cat $O/checks.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-170
tar -C $OUT -czf $OUT/c16.tgz c16 && rm -rf $O
