#!/usr/bin/env bash
# Session 47, lead's call 7 (one H200): why dg_diff N8's pingpong form got slower with singleArrays: SASS of old and new, Nsight Compute of both.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-old.xz > $P/m/main/rtcgc-old; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c7; mkdir -p $O
for v in old new; do /usr/local/cuda/bin/cuobjdump -sass $P/$v-pp.cubin > $O/$v-pp.sass 2>&1; done
T="swizzle 128 tma producer persistent"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in rtcgc-old rtcgc; do
  RTCG_CACHE_DIR=/tmp/c7$v timeout 200 $ncu --clock-control none --launch-count 1 -k regex:dg_diff --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --metrics "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_write.sum" \
    $P/m/main/$v run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 1 > $O/ncu-$v.txt 2>&1
done
tar -C $OUT -czf $OUT/c7.tgz c7; rm -rf $O
