#!/usr/bin/env bash
# Runs several searches in one device call into one tuning database: imports a database exported
# earlier (bench/results/*-tuning-db.json or a call's export), runs `rtcgc tune` with each line of
# PLAN, and exports the database again, gzipped, under $OUT (after every search, so a call cut
# off by its time limit keeps what was measured).
#
#   scripts/gpu-searches.sh DB.json[.gz] PLAN [more rtcgc tune options for every line]
#
# PLAN lines are `rtcgc tune` arguments; '#' starts a comment. For example
#   examples/dg_diff.rtcg -D K=479322 -D Np=35 --resume --time-limit 60
# continues the search of that key with the candidates the database has not measured (best
# predicted first) for 60 s, and
#   examples/matmul.rtcg -D n=3000 --max-candidates 160 --time-limit 30
# runs a new search of 160 candidates.
# Run on the GPU machine from the repository root with .gpu/ (scripts/gpu-pack.sh) beside it.
# Writes $OUT/searches-db.json.gz (the database after every search), $OUT/searches.txt (each
# search's table) and $OUT/searches.log (their logs). The exit status is the first failing
# search's, else 0.
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 DB.json[.gz] PLAN [rtcgc tune options]" >&2; exit 2; }
db_in=$1 plan=$2
shift 2
[[ -f "$db_in" ]] || { echo "gpu-searches: no database file $db_in" >&2; exit 2; }
[[ -f "$plan" ]] || { echo "gpu-searches: no plan file $plan" >&2; exit 2; }
source "$(dirname "$0")/gpu-db-common.sh" "$db_in"
: >"$out/searches.txt"
: >"$out/searches.log"
status=0
line_no=0
while IFS= read -r line; do
  line_no=$((line_no + 1))
  line=${line%%#*}
  read -r -a words <<<"$line"
  ((${#words[@]})) || continue
  echo "== $line" | tee -a "$out/searches.txt" >>"$out/searches.log"
  rc=0
  "$rtcgc" tune "${words[@]}" "$@" --db "$work/tuning.sqlite" \
    >>"$out/searches.txt" 2>>"$out/searches.log" </dev/null || rc=$?
  echo "rc=$rc" >>"$out/searches.txt"
  if ((rc != 0)); then
    echo "gpu-searches: $plan:$line_no: rtcgc tune exited with $rc" >&2
    ((status == 0)) && status=$rc
  fi
  export_db "$out/searches-db.json.gz"
done <"$plan"
# The summary: each search's plan line, size and wall time, best over the key's searches and status.
grep -E '^(==|rc=)|candidates in|best of this' "$out/searches.txt" || true
exit $status
