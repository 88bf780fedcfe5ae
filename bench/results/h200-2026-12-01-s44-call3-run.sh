#!/usr/bin/env bash
# Session 44 call 3 (one H200): merged main (4410471). dgemm_fp64x 4096/8192 under side41's final
# schedule files (call 2 passed them wrongly); dg_diff_f64_N5 and dg_diff_fp64x_N5, 200-candidate searches.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o3; rm -rf $o; mkdir -p $o
S4=bench/results/h200-2026-12-01-s44-side41-schedule-4096-final.json; S8=bench/results/h200-2026-12-01-s44-side41-schedule-8192-final.json
RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $B --only dgemm_fp64x_4096,dgemm_fp64x_8192 --schedules $S4 --schedules $S8 --out /tmp/b3 --worker $W > $o/bench-fp64x.log 2>&1
echo "bench rc=$?" >> $o/bench-fp64x.log; cp /tmp/b3/bench.json $o/bench-fp64x.json 2>/dev/null
RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $B --only dg_diff_f64_N5,dg_diff_fp64x_N5 --out /tmp/b4 --max-candidates 200 --time-limit 45 --worker $W > $o/bench-n5.log 2>&1
echo "bench rc=$?" >> $o/bench-n5.log; cp /tmp/b4/bench.json $o/bench-n5.json 2>/dev/null
tar -czf $OUT/call3.tgz -C $o .
