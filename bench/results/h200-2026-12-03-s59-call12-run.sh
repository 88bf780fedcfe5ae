#!/usr/bin/env bash
# Tree s59d: 74e7501 with the fitted grids' pingpong forms also in the largest step up to 64 (the commit that adds these files).
# Session 59, call 12 (one H200), tree s59d (d47ed02's row groups with the fitted grids' pingpong forms also in the
# largest step up to 64): the f64 / fp64x N7 searches (bench_suite, 48 candidates, cublasDgemm in the same process),
# k 40 at a size no tile divides, and compute-sanitizer on it at K = 5003.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c12; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59d/rtcgc; F=$S/dgdiff64.rtcg; K40="mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a fragments 2"
echo "== check K=100003 Np=120 $K40" >> $O/checks.txt
RTCG_CACHE_DIR=/tmp/c12 timeout 60 $R run $F -D K=100003 -D Np=120 -s "$K40" --repeats 5 2>&1 | grep -E "rel [0-9]|rror|time" | grep -v "again after" >> $O/checks.txt
for tool in memcheck racecheck synccheck; do
  echo "== $tool K=5003 Np=120 $K40" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c12s timeout 120 compute-sanitizer --tool $tool $R run $F -D K=5003 -D Np=120 -s "$K40" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
for r in dg_diff_f64_N7 dg_diff_fp64x_N7; do
  RTCG_CACHE_DIR=/tmp/c12b$r timeout 150 $P/m/s59d/bench_suite --only $r --out /tmp/b12$r --max-candidates 48 --time-limit 12 --worker $P/m/s59d/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b12$r/bench.json $O/bench-$r.json
done
cat $O/checks.txt | cut -c1-160; grep -E "==|SUMMARY" $O/sanitizer.txt | cut -c1-150; grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-250
python3 -c "
import json
for r in ('dg_diff_f64_N7','dg_diff_fp64x_N7'):
  d=json.load(open('$O/bench-'+r+'.json'))
  for k in d:
    if isinstance(d[k],list):
      for x in d[k]: print(x['name'], round(x['rtcgMs'],4), round(x['peerMs'],4), x['schedule'])
"
tar -C $OUT -czf $OUT/c12.tgz c12 && rm -rf $O
