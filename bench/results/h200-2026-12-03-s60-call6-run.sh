#!/usr/bin/env bash
# Session 60, call 6 (one H200), tree s60d (main + the cp.async runs copied without bounds where the block tile's rows
# and the steps divide the domain): the f64 DG N7 winner by hand against cublasDgemm (CuPy, same call), sizes no tile
# divides and sizes every tile divides (the new copies) against the CPU reference, compute-sanitizer on the new copies,
# then the f64 / fp64x N7 and f64 N5 searches (bench_suite, 48 candidates, cublasDgemm in the same process).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c6; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60d/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"; W="stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP"
python3 $S/cublas64t.py 120 >> $O/checks.txt
while read -r kk np s; do
  echo "== check K=$kk Np=$np $s" >> $O/checks.txt
  RTCG_CACHE_DIR=/tmp/c6 timeout 60 $R run $F -D K=$kk -D Np=$np -s "$s" --repeats 30 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
done <<L
100000 120 $W
100003 120 mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP
100000 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP
77777 56 mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP
100000 64 mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2
L
python3 $S/cublas64t.py 120 >> $O/checks.txt
for tool in memcheck racecheck synccheck; do
  echo "== $tool K=5008 Np=120 $W" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c6s timeout 120 compute-sanitizer --tool $tool $R run $F -D K=5008 -D Np=120 -s "$W" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
echo "== memcheck K=5008 Np=56" >> $O/sanitizer.txt
RTCG_CACHE_DIR=/tmp/c6s timeout 120 compute-sanitizer --tool memcheck $R run $F -D K=5008 -D Np=56 -s "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
for r in dg_diff_f64_N7 dg_diff_fp64x_N7 dg_diff_f64_N5; do
  RTCG_CACHE_DIR=/tmp/c6b$r timeout 150 $P/m/s60d/bench_suite --only $r --out /tmp/b6$r --max-candidates 48 --time-limit 12 --worker $P/m/s60d/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b6$r/bench.json $O/bench-$r.json
done
grep -E "==|time|cublas|rel [0-9]|rror" $O/checks.txt | sed 's/ (median of 30, L2 flushed)//; s/persistent pingpong resident a fragments 2/PP/' | cut -c1-160; grep -E "==|SUMMARY" $O/sanitizer.txt | cut -c1-150; grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-250
python3 -c "
import json
for r in ('dg_diff_f64_N7','dg_diff_fp64x_N7','dg_diff_f64_N5'):
  d=json.load(open('$O/bench-'+r+'.json'))
  for x in d['workloads']: print(x['name'], round(x['rtcgMs'],4), round(x['peerMs'],4), x['schedule'])
"
tar -C $OUT -czf $OUT/c6.tgz c6 && rm -rf $O
