#!/usr/bin/env bash
# Session 44, helper side41, call 2: main's build (9828e9b) against branch side41's on
# dgemm_fp64x 4096 / 8192: per launch (rtcgc run, each launch alone, median of 5, L2 flushed)
# under session 42's schedules (s42) and with A's scale and residues in one launch (fusedA256 /
# fusedA512: fuse: 2, keep: a), plus B's scale nest on other block shapes; then bench_suite
# (cublasDgemm in the same process) for each build with the fixed schedule files, twice,
# alternating; Nsight Compute on side41's reconstruction at 4096.
set -uo pipefail
P=$PWD/.probe/side41
for b in main new; do mkdir -p /tmp/$b && tar -xJf $P/$b.tar.xz -C /tmp/$b; done
export LD_LIBRARY_PATH=/tmp/main/main/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $log
sched() { python3 -c "import json;print(json.load(open('$P/$1'))['workloads'][0]['schedule'])"; }
S42() { echo h200-2026-11-30-s42-ozaki-schedule-$1-group8.json; }
runone() {  # $1 build, $2 label, $3 n, $4 schedule
  echo "== $1 $2 n=$3 ($(( $(date +%s) - t0 )) s) [$4]" >> $log
  RTCG_CACHE_DIR=/tmp/cache-$1 timeout 90 /tmp/$1/$1/rtcgc run examples/dgemm.rtcg -D n=$3 --precision fp64x \
    --schedule "$4" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
bs() {  # the 4096 fusedA256 schedule with B's scale nest (the third) replaced by $1
  sched s44-fusedA256-4096.json | awk -v r="$1" -F' [|] ' '{print $1" | "$2" | "r" | "$4" | "$5" | "$6}'; }
runone new warm 4096 "$(sched $(S42 4096))"
runone main s42 4096 "$(sched $(S42 4096))"
runone new s42 4096 "$(sched $(S42 4096))"
runone main fusedA256 4096 "$(sched s44-fusedA256-4096.json)"
runone new fusedA256 4096 "$(sched s44-fusedA256-4096.json)"
runone new fusedA256-bs1 4096 "$(bs 'j: grid.x, thread.x 16; k: serial, unroll 8, thread.y 16')"
runone new fusedA256-bs2 4096 "$(bs 'j: grid.x, thread.x 8; k: serial, unroll 8, thread.y 32')"
runone new fusedA256-bs3 4096 "$(bs 'j: grid.x, thread.x 32; k: serial, unroll 8, thread.y 32')"
runone new fusedA256-bs4 4096 "$(bs 'j: grid.x, thread.x 8; k: serial, unroll 4, thread.y 64')"
runone main s42 4096 "$(sched $(S42 4096))"
runone new fusedA256 4096 "$(sched s44-fusedA256-4096.json)"
runone main s42 8192 "$(sched $(S42 8192))"
runone new s42 8192 "$(sched $(S42 8192))"
runone new fusedA256 8192 "$(sched s44-fusedA256-8192.json)"
runone new fusedA512 8192 "$(sched s44-fusedA512-8192.json)"
bench() {  # $1 build, $2 tag, files...
  local b=$1 tag=$2; shift 2
  local fs=(); for f in "$@"; do fs+=(--schedules $P/$f); done
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
NEWF=(s44-fusedA256-4096.json s44-fusedA256-8192.json s44-fusedA512-8192.json)
bench main 1 $(S42 4096) $(S42 8192)
bench new 1 "${NEWF[@]}"
bench main 2 $(S42 4096) $(S42 8192)
bench new 2 "${NEWF[@]}"
echo "ncu ($(( $(date +%s) - t0 )) s)" >> $log
RTCG_CACHE_DIR=/tmp/cache-new timeout 120 $(command -v ncu || echo /usr/local/cuda/bin/ncu) --kernel-name regex:dgemm_5 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy \
  /tmp/new/new/rtcgc run examples/dgemm.rtcg -D n=4096 --precision fp64x --schedule "$(sched s44-fusedA256-4096.json)" --repeats 1 --reference-max-flops 3e8 > $OUT/ncu-recon-new.txt 2>&1
echo "done $(( $(date +%s) - t0 )) s" >> $log
cd $OUT && tar -cf call2.tar summary.txt bench-*.log bench-*.json ncu-recon-new.txt && rm -f bench-*.log bench-*.json ncu-recon-new.txt
