#!/usr/bin/env bash
# Session 53, call 6 (one H200): dg_diff N8 in the new emitter's form (epilogue once per N origin) with and
# without setmaxnreg (88 / 208; -nomax all threads at the launch's 167), against dg_diff_stacked's module;
# harness.py, three rounds.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c6; mkdir -p $O
cd $P
ROUNDS=3 timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff-new.cubin:dgdiff dg_diff-new-nomax.cubin:dgdiff 2>&1 | tee $O/probe.txt
