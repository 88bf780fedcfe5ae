#!/usr/bin/env bash
# Issue 41, session 39, call 2: n = 8192 under s37's schedule and two variants of its side nests
# (B's column scale as fewPointsSchedule's default; that plus 4096's reconstruction form), before
# and after, then a search of the new rewrite at 8192; errors of rtcg and of cuBLAS against the reference.
set -uo pipefail
root=$(pwd)
tar -xJf .probe/ozaki/pack.tar.xz
G=$root/.gpu
cp .probe/ozaki/*.json $G/
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $log
t0=$(date +%s)
fixed() {  # $1 = before|after
  local B=$G/$1/build-gpu
  RTCG_CACHE_DIR=$(mktemp -d) $B/bench/suite/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192 \
    --schedules $G/h200-2026-11-29-s37-fp64x4096.json --schedules $G/h200-2026-11-29-s37-fp64x8192.json \
    --schedules $G/oz-8192-nest2default.json --schedules $G/oz-8192-nest2-recon.json --max-candidates 8 --time-limit 20 \
    --worker $B/tools/rtcg-worker/rtcg-worker --out $OUT/$1 > $OUT/$1.log 2>&1
  echo "$(( $(date +%s) - t0 )) s: $1 rc $?" >> $log
}
fixed after
fixed before
B=$G/after/build-gpu
RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $B/bench/suite/bench_suite --only dgemm_fp64x_8192 --max-candidates 40 --time-limit 70 \
  --worker $B/tools/rtcg-worker/rtcg-worker --out $OUT/tuned8192 > $OUT/tuned8192.log 2>&1
echo "$(( $(date +%s) - t0 )) s: tuned 8192 rc $?" >> $log
for d in after before tuned8192; do
  python3 -c "
import json,sys
d=json.load(open('$OUT/$d/bench.json'))
for w in d['workloads']:
  print('$d', w['name'], 'rtcg', w.get('rtcgMs'), 'peer', w.get('peerMs'), 'err rtcg/ref', w.get('relErrReference'), 'peer/ref', w.get('relErrPeerReference'), 'rtcg/peer', w.get('relErrPeer'), '|', w.get('schedule'))
" >> $log 2>&1 || grep -o '"name"[^}]*' $OUT/$d/bench.json >> $log
  cp $OUT/$d/bench.json $OUT/$d.json 2>/dev/null
  rm -rf $OUT/$d
done
rm -rf $G
