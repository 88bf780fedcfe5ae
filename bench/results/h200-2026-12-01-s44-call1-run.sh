#!/usr/bin/env bash
# Session 44 call 1 (one H200): main (fe101ef + the N3 row): fp64x DG rows kept as written (bench_suite, 200
# candidates each, cublasDgemm in the same job); rtcgc run of dgemm under fp64x at n = 301 (kept) and 1283 (rewritten).
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o1; rm -rf $o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $o/gpu.txt
for n in 301; do
  echo "== dgemm n=$n fp64x" >> $o/run.txt
  timeout 100 $R run examples/dgemm.rtcg -D n=$n --precision fp64x >> $o/run.txt 2>&1; echo "rc=$?" >> $o/run.txt
done
RTCG_CACHE_DIR=$(mktemp -d) timeout 330 $B --only dg_diff_fp64x_N3,dg_diff_fp64x_N5,dg_diff_fp64x_N7 --out /tmp/b1 --max-candidates 200 --time-limit 45 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b1/bench.json $o/ 2>/dev/null
tar -czf $OUT/call1.tgz -C $o .
