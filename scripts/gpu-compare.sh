#!/usr/bin/env bash
# Times several schedules of one kernel side by side on the GPU machine (after scripts/gpu-pack.sh):
# each is verified against the float64 reference and timed by `rtcgc run`, in one process each.
# With RTCGC_BASELINE=PATH (an rtcgc of an earlier commit, e.g. packed into .gpu/baseline), each
# schedule is also run with it, right after, so that an emitter change is measured A/B on one GPU.
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
binaries=("$root/build-gpu/tools/rtcgc/rtcgc")
labels=("this build")
if [[ -n "${RTCGC_BASELINE:-}" ]]; then
  binaries+=("$RTCGC_BASELINE")
  labels+=("baseline")
fi
for s in "$@"; do
  echo "== $file ${defines[*]}: $s"
  for b in "${!binaries[@]}"; do
    result=$("${binaries[$b]}" run "$file" "${defines[@]}" --schedule "$s" --repeats 50 2>&1)
    rc=$?
    echo "  ${labels[$b]}: $(grep -E '^  time|error|mismatch' <<<"$result" | head -2 | tr '\n' ' ')(rc=$rc)"
  done
done
