#!/usr/bin/env bash
# Issue 41, session 41, helper `residues`, call 1: one build of branch `residues` with probe switches
# (RTCG_PROBE_OLD: main's residue nests; default: the two-halves residues; RTCG_PROBE_PACK: those
# with four residues a conversion), per launch (rtcgc run) and bench_suite with cublasDgemm.
set -uo pipefail
root=$(pwd)
P=$root/.probe/residues
tar -xJf $P/pack.tar.xz -C /tmp
G=/tmp/.gpu
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $log
t0=$(date +%s)
S4=$(python3 -c "import json;print(json.load(open('$P/s4096.json'))['workloads'][0]['schedule'])")
S8=$(python3 -c "import json;print(json.load(open('$P/s8192r.json'))['workloads'][0]['schedule'])")
runone() {  # $1 label, $2 n, $3 schedule; env from caller
  echo "== $1 n=$2 ($(( $(date +%s) - t0 )) s)" >> $log
  RTCG_CACHE_DIR=$(mktemp -d) timeout 120 $G/rtcgc run examples/dgemm.rtcg -D n=$2 --precision fp64x \
    --schedule "$3" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
for v in old new pack; do
  case $v in old) export RTCG_PROBE_OLD=1;; new) unset RTCG_PROBE_OLD RTCG_PROBE_PACK;; pack) export RTCG_PROBE_PACK=1;; esac
  runone $v 8192 "$S8"; runone $v 4096 "$S4"
done
unset RTCG_PROBE_OLD RTCG_PROBE_PACK
# Other schedules of the new residue nests (A: nest 2, B: nest 4) and of the products (nest 5), n = 8192.
IFS='|' read -ra N <<< "$S8"
var() { local s=("${N[@]}"); s[$1]=" $2 "; local t; t=$(IFS='|'; echo "${s[*]}"); runone "$3" 8192 "$t"; }
var 1 "i: grid.y; k: grid.x, reg 2, thread.x 128" A-reg2
var 3 "j: grid.y, thread.y 4; k: grid.x, reg 4, thread.x 32; shared: b" B-reg4
var 4 "mma: s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma producer" P-producer
var 4 "mma: s8 wgmma m64n192k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma epilogue shared" P-n192
bench() {  # $1 label; env from caller
  RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $G/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192 \
    --schedules $P/s4096.json --schedules $P/s8192r.json --schedules $P/s8192d.json \
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
