#!/usr/bin/env bash
# Session 60, call 8 (one H200), tree s60e (d3d397a, the final head: emitted CUDA byte-identical to call 6-7's tree):
# the f64 DG rows' winners by rtcgc run against the CPU reference at sizes that divide and that do not, cublasDgemm
# by CuPy in the same call, the f64 N7 and N5 searches (bench_suite, 48 candidates), and the tf32x3 dg_lift /
# batched_matmul example searches whose samples hold the unbounded copies.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c8; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60e.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60e/rtcgc; W=$P/m/s60e/rtcg-worker; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
python3 $S/cublas64t.py 120 >> $O/checks.txt
while read -r kk np s; do
  echo "== K=$kk Np=$np $s" >> $O/checks.txt
  RTCG_CACHE_DIR=/tmp/c8 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 30 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
done <<L
100000 120 mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP
100003 120 mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP
100000 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP
77777 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP
L
python3 $S/cublas64t.py 56 >> $O/checks.txt
for r in dg_diff_f64_N7 dg_diff_f64_N5; do
  RTCG_CACHE_DIR=/tmp/c8b$r timeout 150 $P/m/s60e/bench_suite --only $r --out /tmp/b8$r --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b8$r/bench.json $O/bench-$r.json
done
for fp in "dg_lift.rtcg -D K=10000 -D Np=20 -D Nfp=10" "batched_matmul.rtcg -D nb=4096 -D n=16"; do
  echo "== $fp" >> $O/searches.txt
  RTCG_CACHE_DIR=/tmp/c8t timeout 60 $R tune examples/${fp%% *} ${fp#* } --precision tf32x3 --max-candidates 48 --time-limit 6 --worker $W --db /tmp/c8.sqlite 2>&1 | grep -E "search done|error" | cut -c1-200 >> $O/searches.txt
done
grep -E "==|time|cublas|rel [0-9]|rror" $O/checks.txt | sed 's/ (median of 30, L2 flushed)//; s/persistent pingpong resident a fragments 2/PP/' | cut -c1-150
grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-230; cat $O/searches.txt
tar -C $OUT -czf $OUT/c8.tgz c8 && rm -rf $O
