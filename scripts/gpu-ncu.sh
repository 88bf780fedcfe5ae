#!/usr/bin/env bash
# Profiles one schedule of one kernel with Nsight Compute on the GPU machine (after
# scripts/gpu-pack.sh): `rtcgc run` verifies and times it, and ncu records its first launch.
# Prints the limiting numbers (throughputs, occupancy, warp stalls, bank conflicts); the full
# report goes to $OUT/ncu-NAME.txt (default ./gpu-out).
#
#   scripts/gpu-ncu.sh NAME FILE "-D n=4096" "SCHEDULE"
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: scripts/gpu-ncu.sh NAME FILE DEFINES SCHEDULE}
file=${2:?usage: scripts/gpu-ncu.sh NAME FILE DEFINES SCHEDULE}
read -r -a defines <<<"${3:?usage: scripts/gpu-ncu.sh NAME FILE DEFINES SCHEDULE}"
schedule=${4:?usage: scripts/gpu-ncu.sh NAME FILE DEFINES SCHEDULE}
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_CACHE_DIR=${RTCG_CACHE_DIR:-$(mktemp -d)}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# --clock-control none: the clocks stay as the benchmarks see them; the first launch only.
"$ncu" --clock-control none --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy \
  --section WarpStateStats --section InstructionStats --section SchedulerStats \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  "$root/build-gpu/tools/rtcgc/rtcgc" run "$file" "${defines[@]}" --schedule "$schedule" --repeats 3 \
  >"$out/ncu-$name.txt" 2>&1 || echo "gpu-ncu: ncu or rtcgc failed (see $out/ncu-$name.txt)" >&2
echo "== ncu $name: $schedule"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Stall [A-Z]|Issue Slots Busy|Issued Ipc|No Eligible|Eligible Warps|Bank|L1/TEX Hit|DRAM Throughput|Executed Ipc|issue_stalled" "$out/ncu-$name.txt" | head -40
