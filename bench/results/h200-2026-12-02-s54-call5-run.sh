#!/usr/bin/env bash
# Session 54, call 5 (one H200): dg_diff N8's per-origin epilogue in the stacked module's form (seg.py: per
# segment of whole chunks in one array a pointer, its alignment and the columns left once a tile; each chunk row
# one branch-guarded float2; chunks across an array's end single values), with and without the 32 ns pause
# between chunks, with and without setmaxnreg; against the emitted modules; harness.py, three rounds.
set -uo pipefail
cd $PWD/.probe-me/s54; O=$OUT/c5; mkdir -p $O
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked dg_diff.cubin:dgdiff dg_diff-seg.cubin:dgdiff dg_diff-segnap.cubin:dgdiff dg_diff-seg-nosmr.cubin:dgdiff 2>&1 | tee $O/probe.txt
