#!/usr/bin/env bash
# Session 54, call 7 (one H200): the working tree's segments (dg_diff's stacked statements under a literal N origin
# stored as one statement's rows are, with the pause; EmitMmaOddRows.cpp) against 7210565 ("cur"): the emitted
# N8 modules in harness.py (three rounds), `rtcgc run` of both builds twice interleaved, the dg_diff N8 search
# twice, gpu-check.sh's per-origin lines (Np 165 / 99 / 45 at K = 77777, verified against the CPU reference),
# and compute-sanitizer memcheck / racecheck / synccheck on the streaming form at K = 5003 (Np 165) and 9001 (Np 99).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s54; E=$PWD/examples; O=$OUT/c7; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
(cd $S && ROUNDS=3 timeout 200 python3 harness.py stacked.cubin:stacked dg_diff.cubin:dgdiff dg_diff-new.cubin:dgdiff dg_diff-new-nosmr.cubin:dgdiff dg_diff-new-nocross.cubin:dgdiff dg_diff-seg3nap.cubin:dgdiff dg_diff-seg3nap-nosmr.cubin:dgdiff 2>&1 | tee $O/probe.txt)
T="swizzle 128 tma producer persistent"
W="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
hand() { for v in cur new; do
  echo "== $v $1 | $2" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c7$v timeout 90 $P/m/$v/rtcgc run $E/dg_diff.rtcg $1 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done; }
for i in 1 2; do
  hand "-D K=101556 -D Np=165" "stores: streaming; $W"
  hand "-D K=101556 -D Np=165" "$W"
done
for np in 165 99 45; do
  echo "== new check K=77777 Np=$np" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c7k timeout 90 $P/m/new/rtcgc run $E/dg_diff.rtcg -D K=77777 -D Np=$np --precision tf32x3 -s "stores: streaming; $W" --repeats 5 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
done
for i in 1 2; do
  RTCG_CACHE_DIR=/tmp/c7b$i timeout 150 $P/m/new/bench_suite --only dg_diff_tf32x3_N8 --out /tmp/b7$i --max-candidates 48 --time-limit 12 --worker $P/m/new/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$i.log; cp /tmp/b7$i/bench.json $O/bench-$i.json
done
for tool in memcheck racecheck synccheck; do
  for kn in "5003 165" "9001 99"; do set -- $kn
    echo "== $tool K=$1 Np=$2" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/c7s timeout 100 compute-sanitizer --tool $tool $P/m/new/rtcgc run $E/dg_diff.rtcg -D K=$1 -D Np=$2 --precision tf32x3 -s "stores: streaming; $W" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
done
grep -E "==|time|rel" $O/byhand.txt | cut -c1-160; for i in 1 2; do tail -4 $O/bench-$i.log | head -1 | cut -c1-220; done; cat $O/sanitizer.txt
tar -C $OUT -czf $OUT/c7.tgz c7 && rm -rf $O
