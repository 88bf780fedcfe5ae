#!/usr/bin/env bash
# Session 59, call 15 (one H200), tree s59d: Nsight Compute on lifting N5's winner and on the f64 N7 row-group
# winner (one launch each, after rtcgc run's first), for what bounds them.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c15; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59d/rtcgc; SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section ComputeWorkloadAnalysis --section LaunchStats"
RTCG_CACHE_DIR=/tmp/c15 timeout 150 ncu $SEC -k regex:dg_lift --launch-skip 1 --launch-count 1 $R run examples/dg_lift.rtcg -D K=340630 -D Np=56 -D Nfp=21 --precision tf32x3 -s "mma: tf32x3 wgmma m64n56k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong resident a" --repeats 1 > $O/ncu-lift5.txt 2>&1
RTCG_CACHE_DIR=/tmp/c15 timeout 150 ncu $SEC -k regex:dg_diff --launch-skip 1 --launch-count 1 $R run $S/dgdiff64.rtcg -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a fragments 2" --repeats 1 > $O/ncu-f64n7.txt 2>&1
for f in $O/ncu-*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Executed Ipc|Pipe|Shared" $f | head -40; done
tar -C $OUT -czf $OUT/c15.tgz c15 && rm -rf $O
