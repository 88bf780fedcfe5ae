#!/usr/bin/env bash
# Session 57, call 3 (one H200), e2a2f66 ('s57b' pack): issue 36's no-regression GEMM rows in one bench_suite
# process (48 candidates, peers in the same run), then dgemm_2048 twice more in processes of its own.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s57; O=$OUT/c3; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s57b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/s57b/bench_suite
ROWS=sgemm_tf32x3_1000,sgemm_tf32x3_2048,sgemm_tf32x3_4096,sgemm_tf32_4096,gemm_bf16_2048,gemm_bf16_4096,dgemm_1000,dgemm_2048,dgemm_4096,batched_tf32x3_16x16x65536
RTCG_CACHE_DIR=/tmp/c3b timeout 400 $B --only $ROWS --out /tmp/b3g --max-candidates 48 --time-limit 12 --worker $P/m/s57b/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-gemm.log; cp /tmp/b3g/bench.json $O/bench-gemm.json
for i in 1 2; do
  RTCG_CACHE_DIR=/tmp/c3d$i timeout 90 $B --only dgemm_2048 --out /tmp/b3d$i --max-candidates 48 --time-limit 12 --worker $P/m/s57b/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-dgemm2048-$i.log; cp /tmp/b3d$i/bench.json $O/bench-dgemm2048-$i.json
done
grep -hE "^(sgemm|gemm|dgemm|batched)|search done" $O/bench-*.log | cut -c1-230
tar -C $OUT -czf $OUT/c3.tgz c3 && rm -rf $O
