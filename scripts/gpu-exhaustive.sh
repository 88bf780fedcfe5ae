#!/usr/bin/env bash
# Continues an exhaustive search over several device calls (docs/bench.md, "Exhaustive search"):
# imports the tuning database exported by the last call, runs `rtcgc tune --resume` (every
# candidate the database has not measured for the key, best predicted first) until the time
# limit, and exports the database again, gzipped, under $OUT for the next call.
#
#   scripts/gpu-exhaustive.sh DB.json[.gz] SECONDS FILE.rtcg -D n=4096 [more rtcgc tune options]
#
# Run on the GPU machine from the repository root with .gpu/ (scripts/gpu-pack.sh) beside it.
# Writes $OUT/exhaustive-db.json.gz, $OUT/exhaustive.log (the search's log) and
# $OUT/exhaustive.txt (its table).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 DB.json[.gz] SECONDS FILE.rtcg [rtcgc tune options]" >&2; exit 2; }
db_in=$1 limit=$2
shift 2
source "$(dirname "$0")/gpu-db-common.sh" "$db_in"
rc=0
"$rtcgc" tune "$@" --db "$work/tuning.sqlite" --resume --time-limit "$limit" >"$out/exhaustive.txt" \
  2>"$out/exhaustive.log" || rc=$?
export_db "$out/exhaustive-db.json.gz"
tail -3 "$out/exhaustive.log"
cat "$out/exhaustive.txt"
exit $rc
