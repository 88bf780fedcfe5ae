#!/usr/bin/env bash
# Session 54, call 8 (one H200): issue 41's rows on the working tree's build, peers in the same process:
# fp64x DGEMM 4096 / 8192 under session 44's final schedule files, fp32x and tf32x3 SGEMM 8192 (searches of
# 40 candidates), native DGEMM 1000 / 2048 and dg_diff_fp64x_N5 (48 candidates).
set -uo pipefail
P=$PWD/.probe-me; O=$OUT/c8; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $P/cur.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
S4=bench/results/h200-2026-12-01-s44-side41-schedule-4096-final.json; S8=bench/results/h200-2026-12-01-s44-side41-schedule-8192-final.json
run() { local name=$1; shift; RTCG_CACHE_DIR=/tmp/c8$name timeout 280 $B "$@" --out /tmp/b8$name --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$name.log; cp /tmp/b8$name/bench.json $O/bench-$name.json; grep -E "^(dgemm|sgemm|dg_diff)" $O/bench-$name.log | cut -c1-200; }
run fp64x --only dgemm_fp64x_4096,dgemm_fp64x_8192 --schedules $S4 --schedules $S8
run s8192 --only sgemm_fp32x_8192,sgemm_tf32x3_8192 --max-candidates 40 --time-limit 60
run native --only dgemm_1000,dgemm_2048,dg_diff_fp64x_N5 --max-candidates 48 --time-limit 12
tar -C $OUT -czf $OUT/c8.tgz c8 && rm -rf $O
