#!/usr/bin/env bash
# Session 57, call 8 (one H200), 's57c': the stacked product at Np = 160 (K = 101556) by hand: its kept pingpong forms at
# 2, 3 and 4 stages (the space keeps D's 480 rows only in three N tiles, so does not offer them) against call 5's search
# winner (D streamed, 3 stages), cublasSgemm by CuPy before and after. $S/cublas32.py is bench/results/h200-2026-12-03-s57-cublas32.py.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c8; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57c/rtcgc; F=examples/dg_diff_stacked.rtcg; T="swizzle 128 tma producer persistent"
python3 $S/cublas32.py 160 >> $O/byhand.txt
for i in 1 2; do
for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"; do
  echo "== Np=160 $s" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c8 timeout 90 $R run $F -D K=101556 -D Np=160 --precision tf32x3 -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done; done
python3 $S/cublas32.py 160 >> $O/byhand.txt
cat $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-170
tar -C $OUT -czf $OUT/c8.tgz c8 && rm -rf $O
