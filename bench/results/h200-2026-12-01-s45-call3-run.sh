#!/usr/bin/env bash
# Session 45, lead's call 3 (one H200): merged main, the issue-41 native rows and dg_diff_f64_N3
# searched with cuBLAS in the same process.
set -uo pipefail
P=$PWD/.probe-me; export LD_LIBRARY_PATH=$P/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:$LD_LIBRARY_PATH
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; R=$P/m/main/rtcgc
O=$OUT
RTCG_CACHE_DIR=/tmp/c3a timeout 130 $B --only dgemm_1000,dgemm_2048,dgemm_4096 --out /tmp/b3a --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-dgemm.log; cp /tmp/b3a/bench.json $O/bench-dgemm.json
RTCG_CACHE_DIR=/tmp/c3a timeout 60 $B --only dgemm_1000,dgemm_2048,dgemm_4096 --out /tmp/b3b --use-db --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-dgemm-again.log; cp /tmp/b3b/bench.json $O/bench-dgemm-again.json
RTCG_CACHE_DIR=/tmp/c3c timeout 90 $B --only dg_diff_f64_N3 --out /tmp/b3c --max-candidates 200 --time-limit 40 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-n3.log; cp /tmp/b3c/bench.json $O/bench-n3.json

RTCG_CACHE_DIR=/tmp/c3d timeout 140 $B --only dg_diff_tf32x3_N8,dg_diff_tf32x3_N7,sgemm_tf32x3_4096,gemm_bf16_4096 --out /tmp/b3d --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-tc.log; cp /tmp/b3d/bench.json $O/bench-tc.json
S="stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
for t in memcheck racecheck; do timeout 90 compute-sanitizer --tool $t $R run examples/dgemm.rtcg -D n=512 -s "$S" --repeats 1 >> $O/sanitize.txt 2>&1; done
