#!/usr/bin/env bash
# Session 45 helper n8, call 1 (one H200): the producer ring whose A (u, 660-byte rows at N = 8)
# the producer's threads copy (MmaPlan::aByThreads). By hand: dg_diff and dg_diff_stacked at N = 8
# (K = 101556, Np = 165) under tf32x3, the new forms and the old winner, median of 30; Nsight
# Compute on the best-predicted form; compute-sanitizer at K = 5003 (no tile divides it; Np = 165
# no step does); bench_suite's searches of the two N8 rows (48 candidates, cuBLAS in the process).
set -uo pipefail
tar -xJf .probe-n8/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o1; rm -rf $o; mkdir -p $o
export RTCG_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
P="swizzle 128 tma producer persistent"
S=("mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
   "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $P resident a"
   "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $P pingpong resident a"
   "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128")
for f in dg_diff dg_diff_stacked; do
  for s in "${S[@]}"; do
    echo "== $f N8 $s" >> $o/byhand.txt
    timeout 60 $R run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
  done
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
SEC="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis"
timeout 45 $NCU $SEC --kernel-name regex:dg_diff --launch-skip 1 --launch-count 1 $R run examples/dg_diff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "${S[0]}" --repeats 2 > $o/ncu-dg_diff-n8.txt 2>&1
for tool in memcheck racecheck synccheck; do
  echo "== $tool dg_diff K=5003 Np=165 ${S[0]}" >> $o/sanitize.txt
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "${S[0]}" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b1 --max-candidates 48 --time-limit 12 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b1/bench.json $o/bench.json 2>/dev/null
tar -czf $OUT/call1.tgz -C $o .
