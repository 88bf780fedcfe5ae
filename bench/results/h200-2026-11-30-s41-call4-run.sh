#!/usr/bin/env bash
# Session 41, call 4 (main at 9dea9ea): sum factorisation's rows (packed lanes with register middles), racecheck; f64 DG rows in 200-candidate searches.
set -uo pipefail
tar -xJf .probe/pack.tar.xz
ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=build-gpu/tools/rtcgc/rtcgc
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
python3 bench/peers/torch_peers.py --bench-suite build-gpu/bench/suite/bench_suite --out /tmp/torch-peers.json --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 > $OUT/torch.txt 2>&1
stamp torch
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 build-gpu/bench/suite/bench_suite --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 --peer-times /tmp/torch-peers.json \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A6 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned" /tmp/bench.log > $OUT/searches.txt
RTCG_CACHE_DIR=$(mktemp -d) timeout 240 build-gpu/bench/suite/bench_suite --only dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 \
  --out /tmp/bench200 --max-candidates 200 --time-limit 40 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench200.log 2>&1
stamp "bench200 rc $?"
cp /tmp/bench200/bench.json $OUT/bench-f64-200.json; grep -A6 "^workload" /tmp/bench200.log > $OUT/table-f64-200.txt; grep -E "search done|tuned" /tmp/bench200.log > $OUT/searches-f64-200.txt
S=/usr/local/cuda/bin/compute-sanitizer
for s in "e: grid.x, thread.z 4; a: reg; b: thread.y; i: thread.x; j: serial, unroll 9; shared: A" "e: grid.x, serial 4, thread.z 2; a: reg; b: thread.y; i: thread.x; j: serial, unroll 9; shared: A, u; buffers: 2"; do
  for tool in memcheck racecheck synccheck; do
    echo "== $tool sumfact p=9 E=2003 : $s" >> $OUT/sanitize.txt
    RTCG_CACHE_DIR=/tmp/rc timeout 100 $S --tool $tool --error-exitcode 9 $R run examples/sumfact.rtcg -D E=2003 -D p=9 --precision tf32x3 --repeats 1 -s "$s" > /tmp/s.log 2>&1
    echo "rc $?" >> $OUT/sanitize.txt; grep -E "SUMMARY|v: rel" /tmp/s.log | tail -2 >> $OUT/sanitize.txt
  done
done
for tool in racecheck; do
  echo "== $tool dg_diff Np=84 K=20001 chunk arrays" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 150 $S --tool $tool --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=20001 -D Np=84 --precision tf32x3 --repeats 1 \
    -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong resident a" > /tmp/s.log 2>&1
  echo "rc $?" >> $OUT/sanitize.txt; grep -E "SUMMARY" /tmp/s.log | tail -2 >> $OUT/sanitize.txt
  echo "== $tool sumfact p=5 E=20011 packed" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 120 $S --tool $tool --error-exitcode 9 $R run examples/sumfact.rtcg -D E=20011 -D p=5 --precision tf32x3 --repeats 1 \
    -s "e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll 5; shared: A, u; buffers: 2" > /tmp/s.log 2>&1
  echo "rc $?" >> $OUT/sanitize.txt; grep -E "SUMMARY" /tmp/s.log | tail -2 >> $OUT/sanitize.txt
done
stamp sanitize
rm -rf .gpu build-gpu
