#!/usr/bin/env bash
# scripts/bench-record.py on bench results recorded on an H200: every row of the runs appears once,
# with its target where the issues name one, and a row that misses its target is counted as missed.
set -euo pipefail
root=${1:?usage: check_bench_record.sh SOURCE_DIR}
res=$root/bench/results
out=$(python3 "$root/scripts/bench-record.py" "$res/h200-2026-11-26-s23-run1.json" "$res/h200-2026-11-26-s23-run2.json" \
  --previous "$res/h200-2026-11-26-s21-mma-spmv.json")
# 18 rows in run 1, 15 in run 2, 4 of them in both (the later file's row is kept): 29 rows.
[[ $(grep -c '^| [a-z]' <<<"$out") -eq 30 ]] || { echo "expected 29 rows and the header"; echo "$out"; exit 1; }
grep -q '^| spmv_powerlaw_4M | 0.1385 .* | 0.85× | 0.23× | .* | ≥ 1.0× | \*\*no\*\* |$' <<<"$out"
grep -q '^| syrk_4096x1024 | .* | 1.17× | .* | ≥ 1.0×, ≥ 60% FP32 | yes |$' <<<"$out"
grep -q '^| sgemm_tf32x3_4096 | 2.5285 .* | ≥ 2.0×, err ≤ 2× peer.s | \*\*no\*\* |$' <<<"$out"
grep -q '^Missed: [0-9]* of [0-9]* rows with a target (.*spmv_powerlaw_4M' <<<"$out"
