#!/usr/bin/env bash
# Session 52, call 1 (one H200): probe of consumers running their tiles at once (no tile turn; ring step i is
# consumer i % 2's, so each stage is one consumer's) against main d1ab29a's pingpong N8 modules, stacked and
# dg_diff, K = 101556, Np = 165, tf32x3, `stores: streaming; ... m64n128 2x1 st2 pingpong resident a`
# (cubins: nvcc -O3 -arch=sm_90a of `rtcgc emit` and of .probe-me/s52/concurrent.py's edit); harness.py (CuPy),
# twice interleaved with cuBLAS (cupy.matmul). Then Nsight Compute of the stacked probe.
set -uo pipefail
P=$PWD/.probe-me/s52; O=$OUT/c1; mkdir -p $O
cd $P
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/gpu.txt
timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-conc.cubin:stacked dg_diff.cubin:dgdiff dg_diff-conc.cubin:dgdiff 2>&1 | tee $O/probe.txt
timeout 200 ncu --kernel-name regex:dg_diff --launch-skip 36 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  python3 harness.py dg_diff_stacked-conc.cubin:stacked > $O/ncu-conc.txt 2>&1
grep -E "Duration|Throughput|tensor|Eligible|Issued" $O/ncu-conc.txt | head -20
