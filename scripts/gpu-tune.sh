#!/usr/bin/env bash
# Tunes every example on the GPU machine (after scripts/gpu-check.sh set up the paths) and runs the
# NVRTC throughput benchmark. Usage: scripts/gpu-tune.sh [MAX_CANDIDATES] [TIME_LIMIT_S]
set -uo pipefail
root=$(pwd)
# Logs go to $OUT/logs (default ./gpu-out/logs); scripts/gpu-collect.sh packs them into one file
# (the device tool brings back at most 8 files).
out=${OUT:-$root/gpu-out}/logs
mkdir -p "$out"
src=$(cat "$root/.gpu/source-dir" 2>/dev/null || echo /work/main)
if [[ ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_CACHE_DIR=${RTCG_CACHE_DIR:-$(mktemp -d)}
export PATH=$root/build-gpu/tools/rtcgc:$root/build-gpu/tools/rtcg-worker:$PATH
max=${1:-100}
limit=${2:-45}
: >"$out/tune.log"
while read -r file bindings; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  [[ -n "${TUNE_ONLY:-}" && " $TUNE_ONLY " != *" ${file%.rtcg} "* ]] && continue
  defs=(); for b in $bindings; do defs+=(-D "$b"); done
  echo "== tune $file $bindings" | tee -a "$out/tune.log"
  rtcgc tune "examples/$file" "${defs[@]}" --max-candidates "$max" --time-limit "$limit" \
    --db "$out/tuning.sqlite" --report "$out/tune-${file%.rtcg}.html" >>"$out/tune.log" 2>&1
  echo "rc=$?" | tee -a "$out/tune.log"
done <examples/sizes.txt
if [[ -n "${BENCH_NVRTC:-}" ]]; then
  build-gpu/bench/nvrtc_throughput --candidates 160 --n 1024 >"$out/nvrtc_throughput.log" 2>&1
  tail -25 "$out/nvrtc_throughput.log"
fi
