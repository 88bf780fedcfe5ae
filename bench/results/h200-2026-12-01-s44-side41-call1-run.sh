#!/usr/bin/env bash
# Session 44, helper side41, call 1: per launch (rtcgc run) of dgemm fp64x under session 42's
# schedules (base) and under variants whose scale and residue nests of each operand share one
# launch (`fuse: 2`, with and without `keep:`), n = 4096 and 8192; then Nsight Compute on the
# reconstruction at 4096.
set -uo pipefail
P=$PWD/.probe/side41
mkdir -p /tmp/b && tar -xJf $P/new.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/new/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=/tmp/b/new/rtcgc
log=$OUT/summary.txt; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $log
sched() { python3 -c "import json;print(json.load(open('$P/h200-2026-11-30-s42-ozaki-schedule-$1-group8.json'))['workloads'][0]['schedule'])"; }
runone() {  # $1 label, $2 n, $3 schedule
  echo "== $1 n=$2 ($(( $(date +%s) - t0 )) s) [$3]" >> $log
  RTCG_CACHE_DIR=/tmp/cache timeout 90 $R run examples/dgemm.rtcg -D n=$2 --precision fp64x \
    --schedule "$3" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
}
for n in 4096 8192; do
  S=$(sched $n); REST=$(echo "$S" | awk -F' [|] ' '{print $5" | "$6}')
  runone base $n "$S"
  while IFS='|' read -r name a1 a2 b1 b2; do
    if [[ $n == 8192 && $name != v1 && $name != v4 && $name != v3 ]]; then continue; fi
    runone $name $n "$a1|$a2|$b1|$b2 | $REST"
  done < $P/variants.txt
  [[ $n == 4096 ]] && runone base-again $n "$S"
done
echo "ncu ($(( $(date +%s) - t0 )) s)" >> $log
S=$(sched 4096)
RTCG_CACHE_DIR=/tmp/cache timeout 120 $(command -v ncu || echo /usr/local/cuda/bin/ncu) --kernel-name regex:dgemm_5 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy \
  $R run examples/dgemm.rtcg -D n=4096 --precision fp64x --schedule "$S" --repeats 1 --reference-max-flops 3e8 > $OUT/ncu-recon.txt 2>&1
echo "done $(( $(date +%s) - t0 )) s" >> $log
