#!/usr/bin/env bash
# lift7 call 1 (one H200): dg_lift N7's winner by hand against probe variants (environment switches of
# the lift7 build: RTCG_PROBE_EPI_PREFETCH=1 the producer prefetches the tile's rhs and invJ rows into L2
# (cp.async.bulk.prefetch.L2) as it starts the tile, =2 the next tile's; RTCG_PROBE_VALUES the epilogue's
# values in flight, 16 by default), neighbouring forms, Nsight Compute, and N7 / N5 searches with the switch.
set -uo pipefail
tar -xJf .probe-lift7/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu; export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export RTCG_CACHE_DIR=$(mktemp -d)
O=/tmp/o1; rm -rf $O; mkdir -p $O
R=build-gpu/tools/rtcgc/rtcgc
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/gpu.txt 2>&1
N7="examples/dg_lift.rtcg -D K=174263 -D Np=120 -D Nfp=36 --precision tf32x3"
N5="examples/dg_lift.rtcg -D K=340630 -D Np=56 -D Nfp=21 --precision tf32x3"
W="stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident a"
W120="stores: streaming; mma: tf32x3 wgmma m64n120k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident a"
W2="stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a"
W64="stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident a"
W5="stores: streaming; mma: tf32x3 wgmma m64n56k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident a"
one() {  # label env... -- args
  local label=$1; shift; local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  echo "== $label"
  timeout 60 env "${envs[@]}" $R run "$@" --repeats 30 2>&1 | grep -vE "^  [a-zA-Z]+: " | tail -3
}
{
for pass in 1 2; do
one "N7 winner pass $pass" RTCG_PROBE_EPI_PREFETCH=0 -- $N7 -s "$W"
one "N7 winner PF1 pass $pass" RTCG_PROBE_EPI_PREFETCH=1 -- $N7 -s "$W"
one "N7 winner PF2 pass $pass" RTCG_PROBE_EPI_PREFETCH=2 -- $N7 -s "$W"
done
one "N7 winner V64" RTCG_PROBE_VALUES=64 -- $N7 -s "$W"
one "N7 winner PF2 V64" RTCG_PROBE_EPI_PREFETCH=2 RTCG_PROBE_VALUES=64 -- $N7 -s "$W"
one "N7 n120" RTCG_PROBE_EPI_PREFETCH=0 -- $N7 -s "$W120"
one "N7 n120 PF2" RTCG_PROBE_EPI_PREFETCH=2 -- $N7 -s "$W120"
one "N7 stages 2" RTCG_PROBE_EPI_PREFETCH=0 -- $N7 -s "$W2"
one "N7 stages 2 PF2" RTCG_PROBE_EPI_PREFETCH=2 -- $N7 -s "$W2"
one "N7 n64" RTCG_PROBE_EPI_PREFETCH=0 -- $N7 -s "$W64"
one "N7 n64 PF2" RTCG_PROBE_EPI_PREFETCH=2 -- $N7 -s "$W64"
one "N5 n56" RTCG_PROBE_EPI_PREFETCH=0 -- $N5 -s "$W5"
one "N5 n56 PF2" RTCG_PROBE_EPI_PREFETCH=2 -- $N5 -s "$W5"
} > $O/byhand.txt 2>&1
NCU="--launch-skip 2 --launch-count 1 -k dg_lift_0 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy"
RTCG_PROBE_EPI_PREFETCH=0 timeout 90 ncu $NCU $R run $N7 -s "$W" --repeats 3 > $O/ncu-winner.txt 2>&1
RTCG_PROBE_EPI_PREFETCH=2 timeout 90 ncu $NCU $R run $N7 -s "$W" --repeats 3 > $O/ncu-pf2.txt 2>&1
RTCG_PROBE_EPI_PREFETCH=2 timeout 100 build-gpu/bench/suite/bench_suite --only dg_lift_tf32x3_N7,dg_lift_tf32x3_N5 --out /tmp/b1 --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-pf2.log; cp /tmp/b1/bench.json $O/bench-pf2.json
tar -czf $OUT/call1.tgz -C $O .
