#!/usr/bin/env bash
# Session 59, call 10 (one H200), tree s59c (this commit's sources): scripts/gpu-check.sh's four `pingpong` lines
# by rtcgc run (verified against the CPU reference), then the dg_diff_fp64x_N5 and dg_diff_f64_N3 searches
# (bench_suite, 48 candidates, cublasDgemm in the same process).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c10; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59c.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59c/rtcgc; F=$S/dgdiff64.rtcg
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/checks.txt
  RTCG_CACHE_DIR=/tmp/c10 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 5 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
done <<'L'
100003 120 mma: f64 m16n8k8 warps 4x3 tile 1x5 k 24 stages 4 persistent pingpong resident a fragments 2
77777 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 persistent pingpong resident a fragments 2
77777 35 mma: f64 m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong fragments 2
100003 27 mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent pingpong resident a fragments 2
L
for r in dg_diff_fp64x_N5 dg_diff_f64_N3; do
  RTCG_CACHE_DIR=/tmp/c10b$r timeout 150 $P/m/s59c/bench_suite --only $r --out /tmp/b10$r --max-candidates 48 --time-limit 12 --worker $P/m/s59c/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b10$r/bench.json $O/bench-$r.json
done
cat $O/checks.txt | cut -c1-160; grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-250
tar -C $OUT -czf $OUT/c10.tgz c10 && rm -rf $O
