#!/usr/bin/env bash
# Issue 41, session 39 (helper branch ozaki): before (main at 6cccdc3) and after (branch ozaki) in one call.
set -uo pipefail
root=$(pwd)
tar -xJf .probe/ozaki/pack.tar.xz
G=$root/.gpu
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > $OUT/device.txt
t0=$(date +%s)
stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
fixed() {  # $1 = before|after, $2 = tag
  local B=$G/$1/build-gpu
  export RTCG_CACHE_DIR=$(mktemp -d)
  $B/bench/suite/bench_suite --only dgemm_fp64x_4096,dgemm_fp64x_8192,dg_diff_fp64x_N5 \
    --schedules $G/h200-2026-11-29-s37-fp64x4096.json --schedules $G/h200-2026-11-29-s37-fp64x8192.json \
    --schedules $G/h200-2026-11-29-s36-call1-dgfp64x.json --max-candidates 8 --time-limit 20 \
    --worker $B/tools/rtcg-worker/rtcg-worker --out $OUT/$1-$2 > $OUT/$1-$2.log 2>&1
  stamp "$1-$2 rc $?"
}
fixed before fixed1
fixed after fixed1
for n in 4096 8192; do
  for v in before after; do
    RTCG_CACHE_DIR=$(mktemp -d) timeout 120 $G/$v/build-gpu/tools/rtcgc/rtcgc run examples/dgemm.rtcg -D n=$n --precision fp64x \
      --schedule "$(cat $G/s37-$n.sched)" --repeats 5 > $OUT/$v-run-$n.log 2>&1
    stamp "$v run $n rc $?"
  done
done
# A search under the new rewrite (4096: at most 120 candidates, 60 s).
B=$G/after/build-gpu
RTCG_CACHE_DIR=$(mktemp -d) timeout 110 $B/bench/suite/bench_suite --only dgemm_fp64x_4096 --max-candidates 60 --time-limit 45 \
  --worker $B/tools/rtcg-worker/rtcg-worker --out $OUT/after-tuned4096 > $OUT/after-tuned4096.log 2>&1
stamp "after tuned 4096 rc $?"
rm -rf $G
