#!/usr/bin/env bash
# Session 41, call 2: sum factorisation by hand (SIMT mappings of (a, b, i) onto the block's threads) and its rows.
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
for pe in "5 268435" "7 97826" "9 46028"; do
  set -- $pe; p=$1; E=$2
  run $p $E "e: grid.x; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll $p"
  run $p $E "e: grid.x; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll $p; shared: A"
  run $p $E "e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll $p; shared: A"
  run $p $E "e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll $p; shared: A, u; buffers: 2"
  run $p $E "stores: streaming; e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll $p; shared: A"
  run $p $E "e: grid.x, thread.z 4; a: serial; b: thread.y; i: thread.x; j: serial, unroll $p; shared: A"
  run $p $E "e: grid.x, thread.y 8; a: serial; b: serial; i: thread.x; j: serial, unroll $p; shared: A"
done
stamp byhand
python3 bench/peers/torch_peers.py --bench-suite build-gpu/bench/suite/bench_suite --out /tmp/torch-peers.json --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 > $OUT/torch.txt 2>&1
stamp torch
RTCG_CACHE_DIR=$(mktemp -d) timeout 300 build-gpu/bench/suite/bench_suite --only sumfact_tf32x3_p5,sumfact_tf32x3_p7,sumfact_tf32x3_p9 --peer-times /tmp/torch-peers.json \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A8 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned" /tmp/bench.log > $OUT/searches.txt
rm -rf .gpu build-gpu
