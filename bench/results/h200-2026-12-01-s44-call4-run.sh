#!/usr/bin/env bash
# Session 44 call 4 (one H200): merged main (4410471): dgemm_1000 and dgemm_2048, 200-candidate
# searches, then the same winners measured again from the database (--use-db), cuBLAS in each run.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o4; rm -rf $o; mkdir -p $o; export RTCG_CACHE_DIR=$(mktemp -d)
timeout 200 $B --only dgemm_1000,dgemm_2048 --out /tmp/b5 --max-candidates 200 --time-limit 45 --worker $W > $o/bench-search.log 2>&1
echo "bench rc=$?" >> $o/bench-search.log; cp /tmp/b5/bench.json $o/bench-search.json 2>/dev/null
for r in 1 2; do
  timeout 60 $B --only dgemm_1000,dgemm_2048 --out /tmp/b5 --use-db --worker $W > $o/bench-again$r.log 2>&1
  echo "bench rc=$?" >> $o/bench-again$r.log; cp /tmp/b5/bench.json $o/bench-again$r.json 2>/dev/null
done
tar -czf $OUT/call4.tgz -C $o .
