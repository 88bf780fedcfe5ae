#!/usr/bin/env bash
# Session 47, lead's call 11 (one H200): the sumfact rows (PyTorch peers) and stacked N8 on main 9d06f77.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c11; mkdir -p $O
python3 bench/peers/torch_peers.py --bench-suite $B --out $O/torch-peers.json --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 > $O/torch.log 2>&1
RTCG_CACHE_DIR=/tmp/c11 timeout 200 $B --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9,dg_diff_stacked_tf32x3_N8 --peer-times $O/torch-peers.json --out /tmp/b11 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b11/bench.json $O/bench.json
tar -C $OUT -czf $OUT/c11.tgz c11; rm -rf $O
