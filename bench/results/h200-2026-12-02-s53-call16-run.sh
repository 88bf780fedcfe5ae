#!/usr/bin/env bash
# Session 53, call 16 (one H200): the committed build (bc73ec3): dg_diff N8's streaming pingpong form by hand against
# fcd935f's (`rtcgc run`, twice interleaved), and the N8 rows' searches (bench_suite, 48 candidates).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/fin.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c16; mkdir -p $O
T="swizzle 128 tma producer persistent"
for i in 1 2; do for v in base fin; do
  echo "== $v dg_diff N8 streaming pingpong" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c16$v timeout 90 $P/m/$v/rtcgc run $E/dg_diff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
done; done
RTCG_CACHE_DIR=/tmp/c16b timeout 250 $P/m/fin/bench_suite --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b16 --max-candidates 48 --time-limit 12 --worker $P/m/fin/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b16/bench.json $O/bench.json
grep -E "==|time" $O/byhand.txt; tail -4 $O/bench.log | cut -c1-200
