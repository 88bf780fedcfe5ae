#!/usr/bin/env bash
# Session 55, call 8 (one H200): (1) do warp grids of 5 and 6 columns on `persistent resident a` compute right on the GPU (the host emulation says no)?
# (2) the f64 DG rows' searches with the fitted grids in the space (this tree's build, 'fit').
set -uo pipefail
P=$PWD/.probe-me; S=$P/s55; O=$OUT/c8; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/fit.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/fit/rtcgc; F=$S/dg64s.rtcg
while read -r kk np s; do
  echo "== K=$kk Np=$np $s" >> $O/check.txt
  RTCG_CACHE_DIR=/tmp/c8 timeout 60 $R run $F -D K=$kk -D Np=$np -s "mma: f64 $s persistent resident a fragments 2" --repeats 3 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/check.txt
done <<'L'
131 50 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3
100000 50 m16n8k8 warps 4x5 tile 1x3 k 16 stages 3
64 50 m16n8k8 warps 1x5 tile 1x1 k 16 stages 3
100000 50 m16n8k8 warps 1x5 tile 1x1 k 16 stages 3
131 50 m16n8k8 warps 4x6 tile 1x2 k 16 stages 3
131 50 m16n8k8 warps 4x3 tile 1x5 k 16 stages 3
100000 120 m16n8k4 warps 4x5 tile 1x3 k 24 stages 4
100000 120 m16n8k4 warps 4x3 tile 1x5 k 24 stages 4
L
cat $O/check.txt | cut -c1-160
for r in dg_diff_f64_N7 dg_diff_f64_N5; do
  RTCG_CACHE_DIR=/tmp/c8b timeout 150 $P/m/fit/bench_suite --only $r --out /tmp/b8$r --max-candidates 48 --time-limit 12 --worker $P/m/fit/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b8$r/bench.json $O/bench-$r.json
  grep -E "^dg_diff|search done|wrong|failed" $O/bench-$r.log | cut -c1-220
done
tar -C $OUT -czf $OUT/c8.tgz c8 && rm -rf $O
