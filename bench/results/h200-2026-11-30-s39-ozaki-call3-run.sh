#!/usr/bin/env bash
# Issue 41, session 39, call 3: before (main), mid (14 moduli, Garner's reconstruction) and after
# (14 moduli, the CRT reconstruction) under the same schedules, 4096 and 8192, per launch too.
set -uo pipefail
root=$(pwd)
tar -xJf .probe/ozaki/pack.tar.xz
G=$root/.gpu
cp .probe/ozaki/*.json $G/
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $log
t0=$(date +%s)
fixed() {
  local B=$G/$1/build-gpu
  RTCG_CACHE_DIR=$(mktemp -d) $B/bench/suite/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192,dg_diff_fp64x_N5 \
    --schedules $G/h200-2026-11-29-s37-fp64x4096.json --schedules $G/h200-2026-11-29-s37-fp64x8192.json \
    --schedules $G/oz-8192-nest2default.json --schedules $G/oz-8192-nest2-recon.json \
    --schedules $G/h200-2026-11-29-s36-call1-dgfp64x.json --max-candidates 8 --time-limit 20 \
    --worker $B/tools/rtcg-worker/rtcg-worker --out $OUT/$1 > $OUT/$1.log 2>&1
  echo "$(( $(date +%s) - t0 )) s: $1 rc $?" >> $log
}
fixed after
fixed mid
fixed before
for v in mid after; do
  for n in 4096 8192; do
    echo "== $v run $n" >> $log
    RTCG_CACHE_DIR=$(mktemp -d) timeout 100 $G/$v/build-gpu/tools/rtcgc/rtcgc run examples/dgemm.rtcg -D n=$n --precision fp64x \
      --schedule "$(python3 -c "import json;print(json.load(open('$G/oz-8192-nest2-recon.json'))['workloads'][0]['schedule'])")" --repeats 5 2>&1 | grep -E "rel |time |per launch" >> $log
  done
done
for d in after mid before; do
  python3 -c "
import json
d=json.load(open('$OUT/$d/bench.json'))
for w in d['workloads']:
  print('$d', w['name'], 'rtcg', w.get('rtcgMs'), 'peer', w.get('peerMs'), 'err rtcg/ref', w.get('relErrReference'), 'peer/ref', w.get('relErrPeerReference'), '|', w.get('schedule'))
" >> $log 2>&1
  cp $OUT/$d/bench.json $OUT/$d.json 2>/dev/null
  rm -rf $OUT/$d
done
rm -rf $G
