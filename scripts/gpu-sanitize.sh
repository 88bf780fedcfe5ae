#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on the code rtcg emits, on the GPU machine
# from the repository root with .gpu/ beside it (scripts/gpu-pack.sh), like scripts/gpu-check.sh.
# For every example, at sizes that no tile divides: its default schedule, its tuned winner (the
# fastest verified schedule of the kernel in DB, else the best of a short search), and a seeded
# sample of N candidates of its space (the search's sample, every family the space has in it:
# split-K, reductions across blocks, pipelined positions, cp.async copies, staged tiles), each as
# `rtcgc run FILE -D ... --schedule TEXT --repeats 1` under each tool, JOBS processes at a time.
# Writes $OUT/sanitize/{cases.tsv,results.tsv,summary.txt,logs/}; exits 1 on any sanitizer error,
# wrong result or failed run.
#   usage: scripts/gpu-sanitize.sh [--list] [--db DB.sqlite|EXPORT.json[.gz]] [--per-example N]
#                                  [--jobs J] [--seed S] [--tools "memcheck racecheck synccheck"]
#                                  [--only REGEX]   (the examples whose file name matches)
#                                  [--precision ieee|tf32x3|tf32]  (the policy of every search, sample
#                                  and run: tf32x3/tf32 put the mma schedules of the qualifying examples
#                                  in the sample)
#                                  [--budget SECONDS]  (default 420: runs not started by then are
#                                  counted as not run, so the summary comes within ~8 minutes)
# --list prints the cases (FILE, bindings, kind, schedule) without a GPU: tests/scripts checks it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
list=0 only="" precision=ieee budget=420 db="" per=100 jobs=16 seed=1 tools="memcheck racecheck synccheck"
while [[ $# -gt 0 ]]; do
  case $1 in
    --list) list=1 ;;
    --db) db=$2; shift ;;
    --per-example) per=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --seed) seed=$2; shift ;;
    --tools) tools=$2; shift ;;
    --only) only=$2; shift ;;
    --budget) budget=$2; shift ;;
    --precision) precision=$2; shift ;;
    *) echo "gpu-sanitize.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

# Sizes that divide no tile (odd, prime-ish), small enough that racecheck, which follows every
# shared-memory access, runs a candidate in seconds.
sizes=(
  "matmul.rtcg n=257"
  "matmul_flat.rtcg n=131"
  "axpby.rtcg n=100003"
  "dot.rtcg n=100003"
  "transpose.rtcg m=257 n=1031"
  "gemv.rtcg m=259 n=1025"
  "dg_diff.rtcg K=1001 Np=20"
  "dg_diff_stacked.rtcg K=1001 Np=20"
  "dg_lift.rtcg K=1001 Np=20 Nfp=10"
  "dg_face_gather.rtcg K=1001 Np=20 Nfaces=4 Nfp=10"
  "batched_matmul.rtcg nb=1001 n=20"
  "gemm_bf16.rtcg n=257"
  "spmv.rtcg n=2003 nnz=14011"
  "nearest.rtcg n=1001 m=777 D=13"
  "max_inner_product.rtcg n=999 m=1031 D=37"
  "softmax.rtcg m=1001 n=1031"
  "layernorm.rtcg m=1001 n=1031"
  "trmv.rtcg n=1031"
  "syrk.rtcg n=257 K=131"
  "histogram.rtcg n=100003 bins=256"
  "histogram_weighted.rtcg n=100003 bins=1000"
  "assemble.rtcg K=1001 Np=20 N=5003"
  "cumsum.rtcg n=100003"
  "exclusive_scan.rtcg n=100003"
  "row_cumsum.rtcg m=257 n=1031"
  "segmented_sum.rtcg n=100003"
  "sumfact.rtcg E=101 p=7"
)

# rtcgc: $RTCGC, else the packed GPU build (set up as gpu-check.sh does), else this build.
if [[ -n "${RTCGC:-}" ]]; then
  rtcgc=$RTCGC
elif [[ -d "$root/.gpu" ]]; then
  src=$(cat "$root/.gpu/source-dir" 2>/dev/null || echo /work/main)
  if [[ ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
  [[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
  export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export PATH=$root/build-gpu/tools/rtcg-worker:$PATH
  rtcgc=$root/build-gpu/tools/rtcgc/rtcgc
else
  rtcgc=$root/build/tools/rtcgc/rtcgc
fi
export PATH=$PATH:/usr/local/cuda/bin  # compute-sanitizer, unless one comes first
[[ -x "$rtcgc" ]] || { echo "gpu-sanitize.sh: no rtcgc at $rtcgc" >&2; exit 2; }

out=${OUT:-$root/gpu-out}/sanitize
[[ $list == 1 ]] && out=$(mktemp -d)
mkdir -p "$out/logs"
export RTCG_CACHE_DIR=$out/kernel-cache  # the three tools of a candidate share one NVRTC compile

defines() { local d=() b; for b in $1; do d+=(-D "$b"); done; echo "${d[@]}"; }

# The fastest verified schedule of each kernel in the database (any sizes and device): kernel<TAB>schedule.
winners_from_db() {
  local json=$out/db.json
  case $db in
    *.json.gz) gzip -dc "$db" >"$json" ;;
    *.json) cp "$db" "$json" ;;
    *) "$rtcgc" db export --db "$db" -o "$json" ;;
  esac
  python3 - "$json" <<'EOF'
import json, sys
best = {}
for key in json.load(open(sys.argv[1]))["keys"]:
    name = key["key"]["kernelName"]
    for c in key["candidates"]:
        if c["status"] == "verified" and c["medianMs"] and (name not in best or c["medianMs"] < best[name][0]):
            best[name] = (c["medianMs"], c["schedule"])
for name, (_, s) in best.items():
    print(f"{name}\t{s}")
EOF
}

# Short searches at the sanitizer sizes (needs the GPU), all examples at once: their timings suffer
# from sharing the GPU, but a winner is only needed as code to check. search-FILE.{json,log}.
short_searches() {
  local entry file
  for entry in "${sizes[@]}"; do
    file=${entry%% *}
    [[ -n "$only" && ! "$file" =~ $only ]] && continue
    "$rtcgc" tune "examples/$file" $(defines "${entry#* }") --precision "$precision" --max-candidates 8 --time-limit 15 --repeats 3 \
      --db - --json >"$out/search-$file.json" 2>"$out/search-$file.log" &
  done
  wait
}
winner_of_search() {
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1])).get("best"); print(b["schedule"] if b else "")' \
    "$out/search-$1.json" 2>/dev/null || true
}

# cases.tsv: FILE<TAB>BINDINGS<TAB>KIND<TAB>SCHEDULE (empty: the default schedule, no --schedule).
cases=$out/cases.tsv
: >"$cases"
if [[ -n "$db" ]]; then winners_from_db >"$out/winners.tsv"; elif [[ $list == 0 ]]; then short_searches; fi
for entry in "${sizes[@]}"; do
  file=${entry%% *} bindings=${entry#* }
  kernel=${file%.rtcg}
  [[ -n "$only" && ! "$file" =~ $only ]] && continue
  printf '%s\t%s\tdefault\t\n' "$file" "$bindings" >>"$cases"
  if [[ $list == 0 ]]; then
    if [[ -n "$db" ]]; then
      w=$(awk -F'\t' -v k="$kernel" '$1 == k { print $2 }' "$out/winners.tsv")
    else
      w=$(winner_of_search "$file")
    fi
    [[ -n "$w" ]] && printf '%s\t%s\twinner\t%s\n' "$file" "$bindings" "$w" >>"$cases"
  fi
  # --max-candidates takes N/(2/3) so that the measured-first part (the dry run leaves out the
  # third kept for refinement rounds) holds N.
  "$rtcgc" tune "examples/$file" $(defines "$bindings") --precision "$precision" --dry-run --json --seed "$seed" \
    --max-candidates $((per * 3 / 2)) >"$out/sample.json" 2>>"$out/dry-run.log" &&
    "$rtcgc" tune "examples/$file" $(defines "$bindings") --precision "$precision" --dry-run --json >"$out/space.json" 2>>"$out/dry-run.log" ||
    { echo "gpu-sanitize.sh: dry run of $file failed" >&2; exit 1; }
  python3 "$root/scripts/gpu-sanitize-sample.py" "$out/sample.json" "$out/space.json" "$per" "examples/$file" |
    while IFS=$'\t' read -r fam s; do printf '%s\t%s\t%s\t%s\n' "$file" "$bindings" "$fam" "$s"; done >>"$cases"
done
if [[ $list == 1 ]]; then
  cat "$cases"
  rm -rf "$out"
  exit 0
fi

# One run: TOOL CASE-NUMBER; a line of results.tsv: tool, case, kind, exit code, sanitizer errors.
run_one() {
  local tool=$1 n=$2 line file bindings kind s log rc errors
  if (($(date +%s) >= deadline)); then printf '%s\t%s\t-\tnot-run\t-\n' "$tool" "$n"; return; fi
  line=$(sed -n "${n}p" "$cases")
  IFS=$'\t' read -r file bindings kind s <<<"$line"
  log=$out/logs/$n-$tool.log
  local sched=(); [[ -n "$s" ]] && sched=(--schedule "$s")
  timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
    "$rtcgc" run "examples/$file" $(defines "$bindings") --precision "$precision" "${sched[@]}" --repeats 1 >"$log" 2>&1
  rc=$?
  # memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY:
  # H hazards displayed (N errors, W warnings)"; a hazard that is an error also sets the exit code.
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?' "$log" |
    grep -oE '[0-9]+' | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$n" "$kind" "$rc" "${errors:-?}"
}
export -f run_one defines
deadline=$(($(date +%s) + budget))
export out cases rtcgc deadline precision
total=$(wc -l <"$cases")
echo "$total cases x ($tools) on $jobs processes, $budget s"
# The runs ordered by their rank within their example (the default, the winner, the best
# predicted, ...), the tools of a case together: if the budget runs out, every example and tool
# has had its first cases.
awk -F'\t' '{ print rank[$1]++ "\t" NR }' "$cases" | sort -n -k1,1 -k2,2 | cut -f2 |
  while read -r n; do for tool in $tools; do echo "$tool $n"; done; done |
  xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"' >"$out/results.tsv"

# Summary: runs and errors per tool; a run fails on a sanitizer error (exit 99 or a non-zero
# ERROR SUMMARY), a wrong result (5) or any other non-zero exit (1: the winner of another size
# invalid here is reported too, as it must not happen for the space's own candidates).
{
  printf '%-10s %6s %8s %8s %8s\n' tool runs errors failed not-run
  for tool in $tools; do
    awk -F'\t' -v t="$tool" '$1 == t && $4 == "not-run" { skipped++ }
      $1 == t && $4 != "not-run" { runs++; if ($5 != "0" && $5 != "?") err++; if ($4 != 0) failed++ }
      END { printf "%-10s %6d %8d %8d %8d\n", t, runs, err, failed, skipped }' "$out/results.tsv"
  done
  echo "failing runs (tool, case (line of cases.tsv), kind, rc, sanitizer errors; logs/CASE-TOOL.log):"
  awk -F'\t' '$4 != "not-run" && ($4 != 0 || ($5 != "0" && $5 != "?"))' "$out/results.tsv" | sort -k2n | head -50
} | tee "$out/summary.txt"
! awk -F'\t' '$4 != "not-run" && ($4 != 0 || ($5 != "0" && $5 != "?")) { bad = 1 } END { exit !bad }' "$out/results.tsv"
