#!/usr/bin/env bash
# Session 46, lead's call 8 (one H200): merged main 58eb48a, the rows issue 36 met before and its GEMM rows, for regressions.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c8; mkdir -p $O
RTCG_CACHE_DIR=/tmp/c8a timeout 400 $B --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,sgemm_tf32x3_4096,sgemm_tf32_4096,gemm_bf16_4096,dgemm_2048 --out /tmp/b8a --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b8a/bench.json $O/bench.json
tar -C $OUT -czf $OUT/c8.tgz c8; rm -rf $O
