#!/usr/bin/env bash
# The main job: installs what is missing, builds rtcg, then for every example kernel (with the sizes
# in examples/sizes.txt) checks it, emits its CUDA C, compiles it with NVRTC to a cubin, runs it on
# the CPU reference executor, and, where a GPU is present, runs it on the GPU against that reference.
# Outputs go to build/examples/. It installs and builds only what it uses: the library, rtcgc and
# rtcg-worker (no tests, benchmarks, rtcg-scan or Python package; scripts/test.sh adds them to the
# same build tree, whose objects it reuses).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RTCG_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" main
config=()
# A first configure leaves out what needs the test packages; an existing tree keeps its options.
[[ -f "$build/CMakeCache.txt" ]] || config=(-DRTCG_BUILD_TESTS=OFF -DRTCG_BUILD_BENCH=OFF -DRTCG_BUILD_SCAN=OFF)
"$root/scripts/build.sh" "${config[@]}" rtcgc rtcg-worker
rtcgc="$build/tools/rtcgc/rtcgc"
out="$build/examples"
mkdir -p "$out"
gpu=0
if "$rtcgc" devices >/dev/null 2>&1; then gpu=1; fi
while read -r file bindings; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  defs=()
  for b in $bindings; do defs+=(-D "$b"); done
  name=${file%.rtcg}
  echo "== $file ($bindings)"
  "$rtcgc" check "$root/examples/$file" "${defs[@]}"
  "$rtcgc" emit "$root/examples/$file" "${defs[@]}" -o "$out/$name.cu"
  "$rtcgc" emit "$root/examples/$file" "${defs[@]}" --cubin -o "$out/$name.cubin"
  echo "   CUDA C: $out/$name.cu ($(wc -l <"$out/$name.cu") lines), cubin: $(stat -c %s "$out/$name.cubin") bytes"
  "$rtcgc" run --cpu "$root/examples/$file" "${defs[@]}"
  if ((gpu)); then "$rtcgc" run "$root/examples/$file" "${defs[@]}"; fi
done <"$root/examples/sizes.txt"
((gpu)) || echo "(no CUDA device here: GPU runs skipped)"
