#!/usr/bin/env bash
# Nsight Compute on benchmark rows, as the suite ran them (after scripts/bench.sh on the GPU
# machine): each row's winner is taken from the suite's bench.json (--schedules) or tuning
# database (--use-db), with no search, and ncu records the first launch of every kernel the row's process starts -- rtcg's winner and
# the peer's kernels (cuBLAS, cuSPARSE; for the rows whose peer is PyTorch, the peer script's
# forms in a second process). One ncu process per row, so each row's kernels are its own.
# Writes $OUT/ncu-rows/summary.md (a line per kernel: time, throughputs, issue, occupancy, top
# warp stalls), made by scripts/ncu-summary.py from ncu's CSV; the reports stay in a scratch
# folder (NCU_KEEP=DIR keeps them there); the CSVs and ncu's logs go to $OUT/ncu-rows/ncu-rows.tar.gz.
#
#   scripts/gpu-ncu-rows.sh RESULTS ROW[,ROW...]   RESULTS: a bench.json or a tuning database, e.g.
#     $OUT/bench/bench.json sgemm_tf32_4096,spmv_powerlaw_4M
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
db=${1:?usage: scripts/gpu-ncu-rows.sh RESULTS ROW[,ROW...]}
rows=${2:?usage: scripts/gpu-ncu-rows.sh RESULTS ROW[,ROW...]}
[[ -f "$db" ]] || { echo "gpu-ncu-rows: no bench.json or tuning database at $db (run scripts/bench.sh first)" >&2; exit 2; }
# The winners: an earlier run's bench.json (each row measured with its schedule there) or the
# tuning database's best.
case $db in
  *.json) winners=(--schedules "$db") ;;
  *) winners=(--use-db --db "$db") ;;
esac
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$root/build-gpu/bench/suite/bench_suite
out=${OUT:-$root/gpu-out}/ncu-rows
work=${NCU_KEEP:-$(mktemp -d)}
mkdir -p "$out" "$work"
export RTCG_CACHE_DIR=$work/cache
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# --clock-control none: the clocks the benchmark saw. --kernel-id ::regex:.:1: the first launch of
# each kernel name in the process (mangled: the float and double instances of a template differ).
profile() {  # NAME COMMAND...
  local name=$1
  shift
  "$ncu" --target-processes application-only --clock-control none --kernel-name-base mangled --kernel-id '::regex:.:1' \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    -f -o "$work/$name" "$@" >"$work/$name.log" 2>&1 ||
    echo "gpu-ncu-rows: $name: ncu or the row failed (see $work/$name.log)" >&2
  "$ncu" --import "$work/$name.ncu-rep" --csv --page details >"$work/$name.csv" 2>>"$work/$name.log" || true
}
IFS=, read -r -a list <<<"$rows"
for row in "${list[@]}"; do
  peers=()
  # A row whose peer is PyTorch runs in bench_suite only with the peer's times: the peer script
  # (profiled itself) writes them first.
  if "$bin" --list --only "$row" | grep -q ' PyTorch$'; then
    profile "$row.torch" python3 "$root/bench/peers/torch_peers.py" --bench-suite "$bin" --only "$row" --repeats 3 \
      --out "$work/torch-$row.json"
    peers=(--peer-times "$work/torch-$row.json")
  fi
  profile "$row" "$bin" "${winners[@]}" --only "$row" --repeats 3 --reference-max-flops 0 --out "$work/bench-$row" \
    "${peers[@]}"
done
python3 "$root/scripts/ncu-summary.py" "$work"/*.csv >"$out/summary.md"
# The CSVs and logs in one file (the whole metrics of every kernel), not the binary reports.
tar -C "$work" -czf "$out/ncu-rows.tar.gz" $(cd "$work" && ls ./*.csv ./*.log 2>/dev/null)
cat "$out/summary.md"
