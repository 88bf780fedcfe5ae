# Sourced by the scripts that search into an imported tuning database on the GPU machine
# (gpu-exhaustive.sh, gpu-searches.sh), from the repository root with .gpu/ beside it: sets
# root, out ($OUT, default ./gpu-out), rtcgc and work (a temporary folder removed on exit), and
# imports the database file $1 (.json or .json.gz) into $work/tuning.sqlite.
# export_db FILE.json.gz writes that database back, gzipped, replacing FILE atomically.
root=$(pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RTCG_WORKER=$root/build-gpu/tools/rtcg-worker/rtcg-worker
rtcgc=$root/build-gpu/tools/rtcgc/rtcgc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ "$1" == *.gz ]]; then gunzip -c "$1" >"$work/in.json"; else cp "$1" "$work/in.json"; fi
"$rtcgc" db import "$work/in.json" --db "$work/tuning.sqlite" || exit 1
export_db() {
  "$rtcgc" db export --db "$work/tuning.sqlite" -o "$work/out.json" && gzip -c "$work/out.json" >"$1.tmp" &&
    mv "$1.tmp" "$1"
}
