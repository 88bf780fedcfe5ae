#!/usr/bin/env bash
# Session 45, lead's call 5 (one H200): merged main, the stacked tf32x3 DG rows and lifting N7
# (the model's new epilogue terms change their spaces' scores), cuBLAS in the same process.
set -uo pipefail
P=$PWD/.probe-me; mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*
export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker
RTCG_CACHE_DIR=/tmp/c5 timeout 200 $B --only dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_lift_tf32x3_N7,dg_diff_f64_N5 --out /tmp/b5 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $OUT/bench-dg.log; cp /tmp/b5/bench.json $OUT/bench-dg.json
