#!/usr/bin/env bash
# Session 44, helper side41, call 3: branch side41's build per launch at n = 4096 under A's fused
# launch with other schedules of the reconstruction and of B's scale nest (each run changes both;
# each launch is timed alone, so each nest's fastest is read off separately); the fastest of each
# goes into the final schedule files (s44-final-4096 / -8192); then bench_suite (cublasDgemm in the
# same process) for main's build (session 42's files) and side41's (the final files and call 2's
# s44-fusedA256), twice, alternating; side41's final schedule per launch at 8192.
set -uo pipefail
P=$PWD/.probe/side41
for b in main new; do mkdir -p /tmp/$b && tar -xJf $P/$b.tar.xz -C /tmp/$b; done
export LD_LIBRARY_PATH=/tmp/main/main/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $log
sched() { python3 -c "import json;print(json.load(open('$1'))['workloads'][0]['schedule'])"; }
S42() { echo $P/h200-2026-11-30-s42-ozaki-schedule-$1-group8.json; }
runone() {  # $1 build, $2 label, $3 n, $4 schedule
  echo "== $1 $2 n=$3 ($(( $(date +%s) - t0 )) s) [$4]" >> $log
  RTCG_CACHE_DIR=/tmp/cache-$1 timeout 90 /tmp/$1/$1/rtcgc run examples/dgemm.rtcg -D n=$3 --precision fp64x \
    --schedule "$4" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
BASE=$(sched $P/s44-fusedA256-4096.json)
var() { echo "$BASE" | awk -v b="$1" -v r="$2" -F' [|] ' '{print $1" | "$2" | "b" | "$4" | "$5" | "r}'; }
R=('i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 32; k: serial' 'i: grid.y, thread.y 4; j: grid.x, thread.x 32; k: serial'
   'i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 32; k: serial' 'i: grid.y, thread.y 2, reg 2; j: grid.x, thread.x 64; k: serial'
   'i: grid.y, reg 2; j: grid.x, thread.x 128; k: serial')
BS=('j: grid.x, thread.x 16; k: serial, unroll 8, thread.y 16' 'j: grid.x, thread.x 16; k: serial, unroll 4, thread.y 16'
    'j: grid.x, thread.x 16; k: serial, unroll 8, thread.y 32' 'j: grid.x, thread.x 8; k: serial, unroll 8, thread.y 32'
    'j: grid.x, thread.x 16; k: serial, unroll 8, thread.y 16')
runone new warm 4096 "$(var "${BS[0]}" "${R[0]}")"
for v in 0 1 2 3 4; do runone new v$v 4096 "$(var "${BS[$v]}" "${R[$v]}")"; done
# the fastest reconstruction (dgemm_5) and B scale (dgemm_2) over the runs v0..v4
pick() { python3 - $log $1 <<'PY'
import re, sys
best = {}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"== new v(\d) ", line)
    if m: cur = int(m.group(1)); continue
    if line.startswith("=="): cur = None; continue
    m = re.search(sys.argv[2] + r" ([0-9.]+)", line)
    if m and cur is not None and (not best or float(m.group(1)) < best[1]): best = (cur, float(m.group(1)))
print(best[0])
PY
}
RB=$(pick "dgemm_5"); BB=$(pick "dgemm_2")
echo "picked: reconstruction v$RB [${R[$RB]}], B scale v$BB [${BS[$BB]}]" >> $log
for n in 4096 8192; do
  python3 - $P/s44-fusedA256-$n.json "${BS[$BB]}" "${R[$RB]}" $OUT/s44-final-$n.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); w = d['workloads'][0]; p = w['schedule'].split(' | ')
p[2] = sys.argv[2]; p[5] = sys.argv[3]; w['schedule'] = ' | '.join(p)
d['settings'] = "session 44 (side41) final: A's scale and residues fused (keep: a), B's scale and the reconstruction the fastest per launch at 4096 in call 3"
json.dump(d, open(sys.argv[4], 'w'))
PY
done
bench() {  # $1 build, $2 tag, files...
  local b=$1 tag=$2; shift 2
  local fs=(); for f in "$@"; do fs+=(--schedules $f); done
  RTCG_CACHE_DIR=/tmp/cache-$b timeout 200 /tmp/$b/$b/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192 "${fs[@]}" \
    --max-candidates 8 --time-limit 20 --worker /tmp/$b/$b/rtcg-worker --out /tmp/b$b$tag > $OUT/bench-$b$tag.log 2>&1
  echo "$(( $(date +%s) - t0 )) s: bench $b$tag rc $?" >> $log
  python3 -c "
import json
d=json.load(open('/tmp/b$b$tag/bench.json'))
for w in d['workloads']:
  print('$b$tag', w['name'], 'rtcg', w.get('rtcgMs'), 'peer', w.get('peerMs'), 'ratio', w.get('speedRatio'), 'err rtcg/ref', w.get('relErrReference'), 'peer/ref', w.get('relErrPeerReference'), 'pass', w.get('pass'), '|', w.get('scheduleSource'), '|', w.get('schedule'))
" >> $log 2>&1
  cp /tmp/b$b$tag/bench.json $OUT/bench-$b$tag.json 2>/dev/null
}
NEWF=($OUT/s44-final-4096.json $OUT/s44-final-8192.json $P/s44-fusedA256-4096.json $P/s44-fusedA256-8192.json)
bench main 1 $(S42 4096) $(S42 8192)
bench new 1 "${NEWF[@]}"
bench main 2 $(S42 4096) $(S42 8192)
bench new 2 "${NEWF[@]}"
runone new final 8192 "$(sched $OUT/s44-final-8192.json)"
echo "done $(( $(date +%s) - t0 )) s" >> $log
cd $OUT && tar -cf call3.tar summary.txt bench-*.log bench-*.json s44-final-*.json && rm -f bench-*.log bench-*.json
