#!/usr/bin/env bash
# Session 53, call 4 (one H200): the emitted epilogue repeated once per value of the block's N origin (sw.py,
# block_n_4 a literal per case) against the emitted modules and spec.py's; harness.py, three rounds.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c4; mkdir -p $O
cd $P
ROUNDS=3 timeout 400 python3 harness.py dg_diff.cubin:dgdiff dg_diff-spec.cubin:dgdiff dg_diff-sw.cubin:dgdiff dg_diff_stacked.cubin:stacked dg_diff_stacked-sw.cubin:stacked 2>&1 | tee $O/probe.txt
