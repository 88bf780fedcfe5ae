#!/usr/bin/env bash
# Profiles rtcg's tuned kernels of some benchmark workloads with Nsight Compute, on the GPU
# machine (after scripts/gpu-pack.sh; see scripts/bench.sh): the suite tunes them (short searches),
# and ncu records the first launch of each winner in the suite's own process (the tuner's worker
# processes are not profiled). Writes $OUT/profile/ncu.txt (default ./gpu-out/profile).
#
#   scripts/gpu-profile.sh sgemm_4096,dg_diff_N3 [KERNEL_REGEX]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
only=${1:?usage: scripts/gpu-profile.sh WORKLOADS [KERNEL_REGEX]}
kernels=${2:-'^(matmul|dg_diff|dg_lift|gemv|transpose|dot|batched)'}
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-$root/gpu-out}/profile
mkdir -p "$out"
state=$(mktemp -d)
export RTCG_CACHE_DIR=$state/cache
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# --clock-control none: the clocks stay as the benchmarks see them.
# --kernel-id ...:1: the first launch of each kernel name (the suite's correctness launch).
"$ncu" --target-processes application-only --clock-control none --kernel-id "::regex:$kernels:1" \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats \
  "$root/build-gpu/bench/suite/bench_suite" --only "$only" --max-candidates "${PROFILE_CANDIDATES:-48}" \
  --time-limit "${PROFILE_TIME_LIMIT:-8}" --repeats 3 --out "$state/bench" --db "$state/tuning.sqlite" \
  >"$out/ncu.txt" 2>"$out/bench.log" || echo "gpu-profile: ncu or the suite failed (see $out/bench.log)" >&2
grep -E "^  [a-z_]+_[0-9]+|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Stall|Issue Slots Busy|Shared Memory|Bank" "$out/ncu.txt" | head -80
