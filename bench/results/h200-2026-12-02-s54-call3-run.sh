#!/usr/bin/env bash
# Session 54, call 3 (one H200): setmaxnreg (88 producer / 208 consumers) is the one mainloop difference between
# dg_diff N8's module and the stacked one's: each with and without it; harness.py, three rounds.
set -uo pipefail
cd $PWD/.probe-me/s54; O=$OUT/c3; mkdir -p $O
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked stacked-smr.cubin:stacked dg_diff.cubin:dgdiff dg_diff-nosmr.cubin:dgdiff 2>&1 | tee $O/probe.txt
