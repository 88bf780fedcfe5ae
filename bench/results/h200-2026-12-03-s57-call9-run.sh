#!/usr/bin/env bash
# Session 57, call 9 (one H200), the tree that keeps operands in any number of N tiles ('s57d'): issue 36's tf32x3 DG
# rows (stacked and dg_diff N5-N8, lifting N3/5/7) in one bench_suite process (48 candidates, peers in the same
# process), and the stacked product's search at Np = 160 (64 candidates; call 8 ran its kept forms by hand).
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c9; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s57d/rtcgc; B=$P/m/s57d/bench_suite
RTCG_CACHE_DIR=/tmp/c9t timeout 100 $R tune examples/dg_diff_stacked.rtcg -D K=101556 -D Np=160 --precision tf32x3 --max-candidates 64 --time-limit 30 --worker $P/m/s57d/rtcg-worker --db /tmp/c9.sqlite 2>&1 | grep -vE "pruned [0-9]+:|worker [0-9]+ started" > $O/tune160.txt
ROWS=dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N8,dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_lift_tf32x3_N3,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7
RTCG_CACHE_DIR=/tmp/c9b timeout 280 $B --only $ROWS --out /tmp/b9 --max-candidates 48 --time-limit 12 --worker $P/m/s57d/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-dg.log; cp /tmp/b9/bench.json $O/bench-dg.json
grep -A5 "  rank " $O/tune160.txt | cut -c1-200; grep "search done" $O/tune160.txt | cut -c1-150
grep -hE "^dg_|search done" $O/bench-dg.log | cut -c1-200
tar -C $OUT -czf $OUT/c9.tgz c9 && rm -rf $O
