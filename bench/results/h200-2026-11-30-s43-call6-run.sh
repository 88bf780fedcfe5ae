#!/usr/bin/env bash
# Session 43 call 6 (one H200): issue 41's dgemm_fp64x_4096 in a longer search (150 candidates),
# then its winner by hand with and without `group 8` on the products, cublasDgemm in the bench run.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o6; rm -rf $o; mkdir -p $o
RTCG_CACHE_DIR=$(mktemp -d) timeout 260 $B --only dgemm_fp64x_4096 --out /tmp/b6 --max-candidates 150 --time-limit 120 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b6/bench.json $o/ 2>/dev/null
best=$(python3 -c "import json;print(json.load(open('/tmp/b6/bench.json'))['workloads'][0]['schedule'])")
grouped=$(python3 - "$best" <<'PY'
import sys
nests = sys.argv[1].split(" | ")
for i, n in enumerate(nests):
    clauses = n.split("; ")
    for j, c in enumerate(clauses):
        if c.startswith("mma: s8") and " group " not in c:
            clauses[j] = c.replace(" epilogue shared", " group 8 epilogue shared") if " epilogue shared" in c else c + " group 8"
    nests[i] = "; ".join(clauses)
print(" | ".join(nests))
PY
)
echo "best:    $best" > $o/hand.txt; echo "grouped: $grouped" >> $o/hand.txt
for rep in 1 2; do for s in "$best" "$grouped"; do
  echo "== $rep ${s:0:60}..." >> $o/hand.txt
  RTCG_CACHE_DIR=/tmp/rc6 timeout 60 $R run examples/dgemm.rtcg -D n=4096 --precision fp64x --schedule "$s" --repeats 30 --reference-max-flops 3e8 2>&1 | grep -E "rel |per launch|time |rror" >> $o/hand.txt
done; done
grep -A3 "^workload" $o/bench.log; grep "search done\|launches, each" $o/bench.log | cut -c1-300; cat $o/hand.txt
tar -czf $OUT/call6.tgz -C /tmp o6
