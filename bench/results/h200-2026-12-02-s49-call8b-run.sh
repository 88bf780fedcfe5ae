#!/usr/bin/env bash
# Session 49, call 8b (one H200): call 8's rows c again (its first try stopped on an unset argument before any search).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c8; mkdir -p $O
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
RTCG_CACHE_DIR=/tmp/c8c timeout 250 $B --only sgemm_tf32x3_1000,sgemm_tf32x3_2048,sgemm_tf32x3_4096,sgemm_tf32_4096,gemm_bf16_2048,gemm_bf16_4096,dgemm_4096 --out /tmp/b8c --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-c.log; cp /tmp/b8c/bench.json $O/bench-c.json
tail -9 $O/bench-c.log | cut -c1-150
