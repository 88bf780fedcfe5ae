#!/usr/bin/env bash
# Session 49, call 2 (one H200): the producer's loads one step ahead (aLoadsAhead) on dg_diff / dg_diff_stacked N8
# (K = 101556, Np = 165, tf32x3): old (main 73efcab) against new, the same schedules, each twice, interleaved.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-new.xz > $P/m/main/rtcgc-new; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c2; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file schedule
  for v in rtcgc rtcgc-new; do
    echo "== $v $1 | $2" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c2$v timeout 90 $P/m/main/$v run $P/$1.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
for i in 1 2; do
  for f in dgdiff stacked; do
    for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" \
             "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" \
             "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" \
             "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a"; do
      hand $f "$s"
    done
  done
done
RTCG_CACHE_DIR=/tmp/c2n timeout 150 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio \
  $P/m/main/rtcgc-new run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 5 > $O/ncu-new-pingpong.txt 2>&1
grep -E "time" $O/byhand.txt | wc -l
