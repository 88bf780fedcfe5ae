#!/usr/bin/env bash
# Times several schedules of one kernel side by side on the GPU machine (after scripts/gpu-pack.sh):
# each is verified against the float64 reference and timed by `rtcgc run`, in one process each.
#
#   scripts/gpu-compare.sh FILE "-D n=2048" "SCHEDULE" ["SCHEDULE" ...]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:?usage: scripts/gpu-compare.sh FILE DEFINES SCHEDULE...}
read -r -a defines <<<"${2:?usage: scripts/gpu-compare.sh FILE DEFINES SCHEDULE...}"
shift 2
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_CACHE_DIR=${RTCG_CACHE_DIR:-$(mktemp -d)}
for s in "$@"; do
  echo "== $s"
  "$root/build-gpu/tools/rtcgc/rtcgc" run "$file" "${defines[@]}" --schedule "$s" --repeats 50 2>&1 | tail -4
  echo "rc=$?"
done
