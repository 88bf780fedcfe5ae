#!/usr/bin/env bash
# Session 40, call 8: merged main (the kept B by threads, the chunked stacked epilogue, the enumeration on threads): sanitizers and the table.
set -uo pipefail
tar -xJf .probe/pack.tar.xz
ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=build-gpu/tools/rtcgc/rtcgc
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
P="swizzle 128 tma producer persistent"
for cfg in "56 m64n192k8 3" "84 m64n128k8 4"; do
  set -- $cfg
  for tool in memcheck racecheck synccheck; do
    RTCG_CACHE_DIR=/tmp/rc timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=20001 -D Np=$1 \
      --precision tf32x3 --repeats 1 -s "mma: tf32x3 wgmma $2 warpgroups 2x1 k 32 stages $3 $P pingpong resident a" > /tmp/san.log 2>&1
    echo "$tool Np=$1 $2 2x1 st$3 pingpong resident a: rc $?: $(grep -E 'SUMMARY' /tmp/san.log)" >> $OUT/sanitize.txt
  done
done
stamp sanitize
RTCG_CACHE_DIR=$(mktemp -d) timeout 420 build-gpu/bench/suite/bench_suite --only dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_lift_tf32x3_N7,sgemm_tf32x3_4096,gemm_bf16_4096 \
  --out /tmp/bench --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker > /tmp/bench.log 2>&1
stamp "bench rc $?"
cp /tmp/bench/bench.json $OUT/bench.json; grep -A16 "^workload" /tmp/bench.log > $OUT/table.txt; grep -E "search done|tuned" /tmp/bench.log > $OUT/searches.txt
rm -rf .gpu build-gpu
