# Sourced by the GPU scripts (gpu-check.sh, gpu-rows.sh, gpu-scan.sh, gpu-scatter.sh), run on the
# GPU machine from the repository root with .gpu/ (scripts/gpu-pack.sh) beside it.
# gpu_env ROOT DIR: links the source tree to the path the packed test binaries have built in and
# build-gpu to the packed build, puts the packed libraries, rtcgc and the worker on the paths, gives
# the run a fresh kernel cache, and records the device in DIR/device.txt.
gpu_env() {
  local root=$1 dir=$2 src
  src=$(cat "$root/.gpu/source-dir" 2>/dev/null || echo /work/main)
  if [[ ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
  [[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
  export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export RTCG_CACHE_DIR=$(mktemp -d)
  export PATH=$root/build-gpu/tools/rtcgc:$root/build-gpu/tools/rtcg-worker:$PATH
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$dir/device.txt"
}
