#!/usr/bin/env bash
# scripts/ncu-summary.py on a CSV that Nsight Compute wrote on an H200 (dg_lift_N5: rtcg's winner
# and cuBLAS's kernel, by scripts/gpu-ncu-rows.sh): the summary must be the recorded one, and a
# file that is not ncu's CSV must give a line that says so, not a traceback.
set -euo pipefail
root=${1:?usage: check_ncu_summary.sh SOURCE_DIR}
here=$root/tests/scripts/ncu
diff -u "$here/dg_lift_N5.expected.md" <(python3 "$root/scripts/ncu-summary.py" "$here/dg_lift_N5.csv")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "==PROF== Disconnected" >"$tmp/empty.csv"
python3 "$root/scripts/ncu-summary.py" "$tmp/empty.csv" "$tmp/missing.csv" >"$tmp/out.md"
grep -q '^| empty | (no kernel profiled' "$tmp/out.md"
grep -q '^| missing | (no profile: ' "$tmp/out.md"
