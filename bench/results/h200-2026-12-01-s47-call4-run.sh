#!/usr/bin/env bash
# Session 47, lead's call 4 (one H200): main at 7cdb7e8 (refinement by the mma forms' distance): the other tensor-core rows, 48 candidates.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c4; mkdir -p $O
run() { # name rows timeout
  RTCG_CACHE_DIR=/tmp/c4$1 timeout $3 $B --only $2 --out /tmp/b4$1 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$1.log; cp /tmp/b4$1/bench.json $O/bench-$1.json
}
run a dg_diff_tf32x3_N5,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6 150
run b dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N8,dg_lift_tf32x3_N3,dg_lift_tf32x3_N5 130
run c sgemm_tf32x3_1000,sgemm_tf32x3_2048,sgemm_tf32_4096,gemm_bf16_2048,gemm_bf16_4096,dgemm_4096 140
run d batched_tf32x3_16x16x65536,dgemm_fp64x_4096,sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 140
tar -C $OUT -czf $OUT/c4.tgz c4; rm -rf $O
