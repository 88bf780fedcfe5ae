#!/usr/bin/env bash
# Session 47, lead's call 3 (one H200): Nsight Compute on N8's forms (main's code: no probe env set): where the warps wait.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; O=$OUT/c3; mkdir -p $O; export RTCG_CACHE_DIR=/tmp/c3
T="swizzle 128 tma producer persistent"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
prof() { # name file schedule
  timeout 240 $ncu --clock-control none --launch-count 1 -k regex:dg_diff --import-source no \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters \
    --metrics "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio" \
    $R run $P/$2 -D K=101556 -D Np=165 --precision tf32x3 -s "$3" --repeats 1 > $O/ncu-$1.txt 2>&1
  $R emit $P/$2 -D K=101556 -D Np=165 --precision tf32x3 -s "$3" > $O/$1.cu 2>&1
}
prof stacked stacked.rtcg "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
prof dgdiff1x1 dgdiff.rtcg "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"
tar -C $OUT -czf $OUT/c3.tgz c3; rm -rf $O
