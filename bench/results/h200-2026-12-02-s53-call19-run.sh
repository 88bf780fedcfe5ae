#!/usr/bin/env bash
# Session 53, call 19 (one H200): the working tree's pause between the epilogue's chunks (rtcg_epilogue_yield, 32 ns:
# pingpong, the producer's threads loading A, one statement's odd rows) against fcd935f: stacked N8's forms twice
# interleaved (`rtcgc run`, median of 30, L2 flushed, verified); the stacked N8 search, twice; compute-sanitizer
# (memcheck, racecheck, synccheck) on the streaming form at K = 5003.
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/fin.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c19; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { for v in base fin; do
  echo "== $v $1 | $2" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c19$v timeout 90 $P/m/$v/rtcgc run $E/dg_diff_stacked.rtcg $1 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done; }
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  hand "$N8" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand "$N8" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
done
for i in 1 2; do
  RTCG_CACHE_DIR=/tmp/c19b$i timeout 200 $P/m/fin/bench_suite --only dg_diff_stacked_tf32x3_N8 --out /tmp/b19$i --max-candidates 48 --time-limit 12 --worker $P/m/fin/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$i.log; cp /tmp/b19$i/bench.json $O/bench-$i.json
done
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c19s timeout 100 compute-sanitizer --tool $tool $P/m/fin/rtcgc run $E/dg_diff_stacked.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
grep -E "==|time" $O/byhand.txt | cut -c1-150; for i in 1 2; do tail -4 $O/bench-$i.log | head -1 | cut -c1-200; done; cat $O/sanitizer.txt
