#!/usr/bin/env bash
# Issue 41, session 42, helper `ozaki`, call 1: what limits the s8 wgmma products of dgemm_fp64x_8192
# (main's build): cuBLASLt's INT8 GEMM (torch._int_mm) for what is attainable, per-launch times, and
# Nsight Compute on the products' kernel and on cuBLASLt's.
set -uo pipefail
P=$PWD/.probe/ozaki
mkdir -p /tmp/m && tar -xJf $P/main.tar.xz -C /tmp/m
G=/tmp/m/main
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
log=$OUT/summary.txt; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $log
python3 $P/intmm.py 8192 >> $log 2>&1
python3 $P/intmm.py 4096 >> $log 2>&1
echo "intmm done $(( $(date +%s) - t0 )) s" >> $log
S8=$(python3 -c "import json;print(json.load(open('$P/s8192b4.json'))['workloads'][0]['schedule'])")
RTCG_CACHE_DIR=/tmp/c1 timeout 100 $G/rtcgc run examples/dgemm.rtcg -D n=8192 --precision fp64x --schedule "$S8" --repeats 5 --reference-max-flops 3e8 2>&1 | grep -E "rel |time |per launch|rror" >> $log
echo "run done $(( $(date +%s) - t0 )) s" >> $log
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy"
RTCG_CACHE_DIR=/tmp/c1 timeout 120 $NCU -k regex:dgemm_4 -c 1 $G/rtcgc run examples/dgemm.rtcg -D n=8192 --precision fp64x --schedule "$S8" --repeats 1 --reference-max-flops 3e8 > $OUT/ncu-products.txt 2>&1
echo "ncu products done rc $? $(( $(date +%s) - t0 )) s" >> $log
timeout 90 $NCU -k regex:gemm -c 1 python3 $P/intmm.py 8192 > $OUT/ncu-intmm.txt 2>&1
echo "ncu intmm done rc $? $(( $(date +%s) - t0 )) s" >> $log
