#!/usr/bin/env bash
# Issue 41, session 42, helper `ozaki`, call 2: main's build against branch `ozaki` (integer modulo in
# the products' epilogue, Horner on digit pairs, s8 wgmma N = 256) on dgemm_fp64x_8192 / 4096:
# per launch (rtcgc run) under fixed schedules and probe switches of the branch's build (environment:
# RTCG_PROBE_EPIUNROLL the shared epilogue's loop left to the compiler, RTCG_PROBE_GROUP=8 the
# tiles in groups of 8 M tiles), then bench_suite (cublasDgemm in the same job) for main and for the
# branch under the best switches of the per-launch runs.
set -uo pipefail
P=$PWD/.probe/ozaki
for b in main new; do mkdir -p /tmp/$b && tar -xJf $P/$b.tar.xz -C /tmp/$b; done
export LD_LIBRARY_PATH=/tmp/main/main/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $log
sched() { python3 -c "import json;print(json.load(open('$P/$1'))['workloads'][0]['schedule'])"; }
runone() {  # $1 build, $2 label, $3 n, $4 schedule file, $5 env (VAR=1 ...)
  echo "== $1 $2 n=$3 file=$4 env=[$5] ($(( $(date +%s) - t0 )) s)" >> $log
  env $5 RTCG_CACHE_DIR=$(mktemp -d) timeout 60 /tmp/$1/$1/rtcgc run examples/dgemm.rtcg -D n=$3 --precision fp64x \
    --schedule "$(sched $4)" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
runone main base 8192 s8192b4.json ""
runone new base 8192 s8192b4.json ""
runone new base 8192 s8192b4.json "RTCG_PROBE_EPIUNROLL=1"
runone new base 8192 s8192b4.json "RTCG_PROBE_GROUP=8"
runone new n256 8192 s8192n256.json ""
runone new n256 8192 s8192n256.json "RTCG_PROBE_EPIUNROLL=1"
runone new n256 8192 s8192n256.json "RTCG_PROBE_EPIUNROLL=1 RTCG_PROBE_GROUP=8"
runone new n256p 8192 s8192n256p.json ""
runone main base 4096 s4096b4.json ""
runone new base 4096 s4096b4.json ""
runone new n256 4096 s4096n256.json "RTCG_PROBE_EPIUNROLL=1"
BEST=$(python3 - $log <<'PY'
import re, sys
best, env = 1e9, ""
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"== new \S+ n=8192 \S+ env=\[(.*)\]", line)
    if m: cur = m.group(1); continue
    if line.startswith("=="): cur = None; continue
    m = re.search(r"dgemm_4 ([0-9.]+)", line)
    if m and cur is not None and float(m.group(1)) < best: best, env = float(m.group(1)), cur
print(env)
PY
)
echo "best env for bench: [$BEST] ($(( $(date +%s) - t0 )) s)" >> $log
bench() {  # $1 build, $2 env, files...
  local b=$1 e=$2; shift 2
  local fs=(); for f in "$@"; do fs+=(--schedules $P/$f); done
  env $e RTCG_CACHE_DIR=$(mktemp -d) timeout 150 /tmp/$b/$b/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192 "${fs[@]}" \
    --max-candidates 8 --time-limit 20 --worker /tmp/$b/$b/rtcg-worker --out $OUT/b$b > $OUT/bench-$b.log 2>&1
  echo "$(( $(date +%s) - t0 )) s: bench $b rc $?" >> $log
  python3 -c "
import json
d=json.load(open('$OUT/b$b/bench.json'))
for w in d['workloads']:
  print('$b', w['name'], 'rtcg', w.get('rtcgMs'), 'peer', w.get('peerMs'), 'ratio', w.get('speedRatio'), 'err rtcg/ref', w.get('relErrReference'), 'peer/ref', w.get('relErrPeerReference'), 'pass', w.get('pass'), '|', w.get('scheduleSource'), '|', w.get('schedule'))
" >> $log 2>&1
  cp $OUT/b$b/bench.json $OUT/bench-$b.json 2>/dev/null; rm -rf $OUT/b$b
}
bench main "" s4096b4.json s8192b4.json
bench new "$BEST" s4096b4.json s8192b4.json s4096n256.json s8192n256.json s8192n256p.json
echo "done $(( $(date +%s) - t0 )) s" >> $log
