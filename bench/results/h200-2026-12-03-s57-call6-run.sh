#!/usr/bin/env bash
# Session 57, call 6 (one H200), e2a2f66's build ('s57b'): N8's lead for dg_diff (three statements): at Np = 160 the
# search, 64 candidates, against the per-origin pingpong form at 160 and 165 by hand; cublasSgemm (D stacked) by CuPy.
# $S/cublas32.py is bench/results/h200-2026-12-03-s57-cublas32.py.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c6; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57b/rtcgc; F=examples/dg_diff.rtcg
W="stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a"
python3 $S/cublas32.py 160 >> $O/byhand.txt
for np in 160 165; do echo "== Np=$np $W" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c6 timeout 90 $R run $F -D K=101556 -D Np=$np --precision tf32x3 -s "$W" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; done
RTCG_CACHE_DIR=/tmp/c6t timeout 240 $R tune $F -D K=101556 -D Np=160 --precision tf32x3 --max-candidates 64 --time-limit 40 --worker $P/m/s57b/rtcg-worker --db /tmp/c6.sqlite 2>&1 | grep -vE "pruned [0-9]+:|worker [0-9]+ started" > $O/tune160.txt
python3 $S/cublas32.py 160 >> $O/byhand.txt
cat $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-160; grep -A14 "search done" $O/tune160.txt | cut -c1-200
tar -C $OUT -czf $OUT/c6.tgz c6 && rm -rf $O
