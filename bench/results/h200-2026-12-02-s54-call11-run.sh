#!/usr/bin/env bash
# Session 54, call 11 (one H200): the working tree's runs cut at the statements' ends (one pointer a run) against
# e80b481 ("new"): the emitted N8 modules in harness.py (three rounds), `rtcgc run` of both twice, the dg_diff N8
# search twice, gpu-check.sh's per-origin lines, compute-sanitizer at K = 5003 (Np 165) and 9001 (Np 99).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s54; E=$PWD/examples; O=$OUT/c11; mkdir -p $O
mkdir -p $P/m; for t in cur new runs; do tar -C $P/m -xJf $P/$t.tar.xz; done; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
(cd $S && ROUNDS=3 timeout 120 python3 harness.py stacked.cubin:stacked dg_diff-new.cubin:dgdiff dg_diff-runs.cubin:dgdiff 2>&1 | tee $O/probe.txt)
W="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a"
for i in 1 2; do for v in new runs; do
  echo "== $v N8 streaming" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c11$v timeout 60 $P/m/$v/rtcgc run $E/dg_diff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "stores: streaming; $W" --repeats 30 2>&1 | grep -E "time|rror" >> $O/byhand.txt
done; done
for np in 165 99 45; do
  echo "== runs check K=77777 Np=$np" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c11k timeout 60 $P/m/runs/rtcgc run $E/dg_diff.rtcg -D K=77777 -D Np=$np --precision tf32x3 -s "stores: streaming; $W" --repeats 5 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done
for i in 1 2; do
  RTCG_CACHE_DIR=/tmp/c11b$i timeout 100 $P/m/runs/bench_suite --only dg_diff_tf32x3_N8 --out /tmp/b11$i --max-candidates 48 --time-limit 12 --worker $P/m/runs/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$i.log; cp /tmp/b11$i/bench.json $O/bench-$i.json
done
for tk in "memcheck 5003 165" "racecheck 5003 165" "synccheck 5003 165" "memcheck 9001 99" "racecheck 9001 99"; do set -- $tk
  echo "== $1 K=$2 Np=$3" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c11s timeout 80 compute-sanitizer --tool $1 $P/m/runs/rtcgc run $E/dg_diff.rtcg -D K=$2 -D Np=$3 --precision tf32x3 -s "stores: streaming; $W" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
grep -E "==|time|rel" $O/byhand.txt | cut -c1-150; grep -hE "^dg_diff|search done" $O/bench-*.log | cut -c1-200; grep -E "==|SUMMARY" $O/sanitizer.txt
tar -C $OUT -czf $OUT/c11.tgz c11 && rm -rf $O
