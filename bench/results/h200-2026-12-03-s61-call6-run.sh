#!/usr/bin/env bash
# Session 61, call 6 (one H200), tree s61a: dg_diff / stacked N6 and dg_diff N8 searched with the usual 48 candidates
# and with 240 (a time limit of 90 s): does the sample of 48 miss faster forms the space holds?
set -uo pipefail
P=$PWD/.probe-me; S=$P/s61; O=$OUT/c6; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s61a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
W=$P/m/s61a/rtcg-worker; B=$P/m/s61a/bench_suite
for r in dg_diff_tf32x3_N6 dg_diff_stacked_tf32x3_N6 dg_diff_tf32x3_N8; do
  for n in 48 240; do
    t=15; [ $n = 240 ] && t=90
    RTCG_CACHE_DIR=/tmp/c6$r$n timeout 170 $B --only $r --out /tmp/c6$r$n --max-candidates $n --time-limit $t --worker $W 2>&1 | grep -vE "^\s+pruned |pruned [0-9]+:|compile worker" > $O/bench-$r-$n.log
    cp /tmp/c6$r$n/bench.json $O/bench-$r-$n.json; cp /tmp/c6$r$n/*.sqlite $O/db-$r-$n.sqlite 2>/dev/null
    grep -hE "^dg_diff|search done" $O/bench-$r-$n.log | cut -c1-200
  done
done
ls /tmp/c6dg_diff_tf32x3_N648/
