#!/usr/bin/env bash
# Issue 41, session 41, helper `residues`, call 2: branch `residues` (two-halves residues, the
# reconstruction's digits by u32 %) with probe switches RTCG_PROBE_OLDREC (main's reconstruction) and
# RTCG_PROBE_OLD (main's residues and reconstruction); per launch (rtcgc run), then bench_suite
# with cublasDgemm in the same job, new and old, under the same schedule files.
set -uo pipefail
root=$(pwd)
P=$root/.probe/residues
tar -xJf $P/pack.tar.xz -C /tmp
G=/tmp/.gpu
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $log
t0=$(date +%s)
S4=$(python3 -c "import json;print(json.load(open('$P/s4096b4.json'))['workloads'][0]['schedule'])")
S8=$(python3 -c "import json;print(json.load(open('$P/s8192b4.json'))['workloads'][0]['schedule'])")
runone() {  # $1 label, $2 n, $3 schedule; env from caller
  echo "== $1 n=$2 ($(( $(date +%s) - t0 )) s)" >> $log
  RTCG_CACHE_DIR=$(mktemp -d) timeout 120 $G/rtcgc run examples/dgemm.rtcg -D n=$2 --precision fp64x \
    --schedule "$3" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
runone new 8192 "$S8"; runone new 4096 "$S4"
RTCG_PROBE_OLDREC=1 runone oldrec 8192 "$S8"; RTCG_PROBE_OLDREC=1 runone oldrec 4096 "$S4"
bench() {  # $1 label; env from caller
  RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $G/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192 \
    --schedules $P/s4096.json --schedules $P/s4096b4.json --schedules $P/s8192r.json --schedules $P/s8192d.json --schedules $P/s8192b4.json \
    --max-candidates 8 --time-limit 20 --worker $G/rtcg-worker --out $OUT/$1 > $OUT/$1.log 2>&1
  echo "$(( $(date +%s) - t0 )) s: bench $1 rc $?" >> $log
  python3 -c "
import json
d=json.load(open('$OUT/$1/bench.json'))
for w in d['workloads']:
  print('$1', w['name'], 'rtcg', w.get('rtcgMs'), 'peer', w.get('peerMs'), 'ratio', w.get('speedRatio'), 'err rtcg/ref', w.get('relErrReference'), 'peer/ref', w.get('relErrPeerReference'), '|', w.get('schedule'))
" >> $log 2>&1
  cp $OUT/$1/bench.json $OUT/$1.json 2>/dev/null; rm -rf $OUT/$1
}
bench new
RTCG_PROBE_OLD=1 bench old
echo "done $(( $(date +%s) - t0 )) s" >> $log
