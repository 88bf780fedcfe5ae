#!/usr/bin/env bash
# Session 54, call 6 (one H200): seg.py's form with the pause and without setmaxnreg; pauses of 0 / 16 / 32 / 64 ns.
# between chunks, with and without setmaxnreg; against the emitted modules; harness.py, three rounds.
set -uo pipefail
cd $PWD/.probe-me/s54; O=$OUT/c6; mkdir -p $O
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked dg_diff-segnap.cubin:dgdiff dg_diff-segnap-nosmr.cubin:dgdiff dg_diff-segnap0-nosmr.cubin:dgdiff dg_diff-segnap16-nosmr.cubin:dgdiff dg_diff-segnap64-nosmr.cubin:dgdiff 2>&1 | tee $O/probe.txt
