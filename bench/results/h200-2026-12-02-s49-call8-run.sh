#!/usr/bin/env bash
# Session 49, call 8 (one H200): HEAD 3ee9cae: the other tensor-core rows (48 candidates; sumfact against PyTorch's peers).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c8; mkdir -p $O
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
python3 bench/peers/torch_peers.py --bench-suite $B --out $O/torch-peers.json --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 > $O/torch.log 2>&1
run() { # name rows timeout [args]
  RTCG_CACHE_DIR=/tmp/c8$1 timeout $3 $B --only $2 ${4:-} --out /tmp/b8$1 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$1.log; cp /tmp/b8$1/bench.json $O/bench-$1.json
}
run c sgemm_tf32x3_1000,sgemm_tf32x3_2048,sgemm_tf32x3_4096,sgemm_tf32_4096,gemm_bf16_2048,gemm_bf16_4096,dgemm_4096 200
run d batched_tf32x3_16x16x65536,dgemm_fp64x_4096,sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 200 "--peer-times $O/torch-peers.json"
tail -9 $O/bench-c.log | cut -c1-150; tail -7 $O/bench-d.log | cut -c1-150
