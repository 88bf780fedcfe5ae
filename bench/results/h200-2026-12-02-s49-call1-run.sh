#!/usr/bin/env bash
# Session 49, call 1 (one H200): dg_diff / dg_diff_stacked N8 (K = 101556, Np = 165, tf32x3) by hand on main 73efcab:
# the pingpong winner against consumers that interleave their steps (orderedIssue): 1x2 (two m64n64 consumers on a 64x128 tile)
# and 2x1 m64n64 (a 128x64 tile), resident D; then Nsight Compute on the winner and the 1x2 form.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; O=$OUT/c1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/gpu.txt
T="swizzle 128 tma producer persistent"
hand() { # file np schedule
  echo "== $1 Np=$2 | $3" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/c1 timeout 90 $R run $P/$1.rtcg -D K=$(( (67108864 - 3*$2*$2) / (4*$2) )) -D Np=$2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|error|rror" >> $O/byhand.txt
}
for f in dgdiff stacked; do
  for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" \
           "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" \
           "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a" \
           "stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a" \
           "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $T resident a" \
           "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 $T resident a"; do
    hand $f 165 "$s"
  done
done
for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a"; do
  n=$(echo "$s" | awk '{print $4"-"$6}')
  RTCG_CACHE_DIR=/tmp/c1 timeout 150 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio \
    $R run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 5 > $O/ncu-$n.txt 2>&1
done
cat $O/byhand.txt
