#!/usr/bin/env bash
# Session 47, lead's call 1 (one H200): refinement by mma distance (the tuner's local search takes a
# tensor-core form's siblings): the f64 DG rows, DGEMM and a few tf32x3 rows at 48 candidates.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c1; mkdir -p $O
run() { # name rows timeout
  RTCG_CACHE_DIR=/tmp/c1$1 timeout $3 $B --only $2 --out /tmp/b1$1 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$1.log; cp /tmp/b1$1/bench.json $O/bench-$1.json
}
run a dg_diff_f64_N5,dg_diff_f64_N3 170
run b dg_diff_f64_N7,dgemm_2048,dgemm_1000 190
run c sgemm_tf32x3_4096,dg_diff_tf32x3_N6,dg_lift_tf32x3_N7 190
tar -C $OUT -czf $OUT/c1.tgz c1; rm -rf $O
