#!/usr/bin/env bash
# Session 41, call 3 (merged main): sum factorisation's rows with the packed-lanes family, p = 9 by hand; dg_diff rows; sanitizers.
set -uo pipefail
tar -xJf .probe/pack.tar.xz
ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=build-gpu/tools/rtcgc/rtcgc
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
run() {  # p E schedule
  local p=$1 E=$2; shift 2
  echo "== sumfact p=$p : $*" >> $OUT/byhand.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 60 $R run examples/sumfact.rtcg -D E=$E -D p=$p --precision tf32x3 --repeats 30 \
    -s "$* " 2>&1 | grep -E "time|error|rel" | grep -v "again" >> $OUT/byhand.txt
}
B="b: thread.y; i: thread.x; j: serial, unroll 9; shared: A"
run 9 46028 "e: grid.x, thread.z 4; a: serial; $B"
run 9 46028 "stores: streaming; e: grid.x, thread.z 4; a: serial; $B"
run 9 46028 "e: grid.x, thread.z 2; a: serial; $B"
run 9 46028 "e: grid.x, thread.z 8; a: serial; $B"
run 9 46028 "e: grid.x, serial 4, thread.z 2; a: serial; $B"
run 9 46028 "e: grid.x, thread.z 4; a: serial, reg 3; $B"
run 9 46028 "e: grid.x, thread.z 4; a: reg; $B"
run 9 46028 "e: grid.x, thread.z 2; a: reg; $B"
run 9 46028 "e: grid.x, thread.z 4; a: serial; b: thread.y; i: thread.x; j: serial, unroll 9"
stamp byhand
python3 bench/peers/torch_peers.py --bench-suite build-gpu/bench/suite/bench_suite --out /tmp/torch-peers.json --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 > $OUT/torch.txt 2>&1
stamp torch
RTCG_CACHE_DIR=$(mktemp -d) timeout 300 build-gpu/bench/suite/bench_suite --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9,dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_stacked_tf32x3_N6 --peer-times /tmp/torch-peers.json \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A10 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned" /tmp/bench.log > $OUT/searches.txt
S=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  echo "== $tool sumfact p=5 E=20011 packed" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 120 $S --tool $tool --error-exitcode 9 $R run examples/sumfact.rtcg -D E=20011 -D p=5 --precision tf32x3 --repeats 1 \
    -s "e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll 5; shared: A, u; buffers: 2" 2>&1 | grep -E "ERROR SUMMARY|ok$|rel" | tail -2 >> $OUT/sanitize.txt
  echo "== $tool dg_diff Np=84 K=20001 chunk arrays" >> $OUT/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 150 $S --tool $tool --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=20001 -D Np=84 --precision tf32x3 --repeats 1 \
    -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong resident a" 2>&1 | grep -E "ERROR SUMMARY|ok$" | tail -4 >> $OUT/sanitize.txt
done
stamp sanitize
rm -rf .gpu build-gpu
