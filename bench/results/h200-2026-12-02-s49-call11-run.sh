#!/usr/bin/env bash
# Session 49, call 11 (one H200): dg_diff N8 (K = 101556, Np = 165, tf32x3) pingpong: 002980b (two steps' loads, the
# branchy single stores) against the build that counts the single stores' registers (setmaxnreg: producer 72, consumers
# 216) and picks each chunk's array once under pingpong; twice interleaved; then the N8 rows' searches on it.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/two.tar.xz; tar -C $P/m -xJf $P/five.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c11; mkdir -p $O
T="swizzle 128 tma producer persistent"
for i in 1 2; do
  for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"; do
    for v in two five; do
      echo "== $v | $s" >> $O/byhand.txt
      RTCG_CACHE_DIR=/tmp/c11$v timeout 90 $P/m/$v/rtcgc run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
    done
  done
done
B=$P/m/five/bench_suite; W=$P/m/five/rtcg-worker
RTCG_CACHE_DIR=/tmp/c11b timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b11 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b11/bench.json $O/bench.json
grep -E "==|time" $O/byhand.txt | cut -c1-110; tail -5 $O/bench.log | cut -c1-150
