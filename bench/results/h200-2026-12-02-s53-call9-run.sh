#!/usr/bin/env bash
# Session 53, call 9 (one H200): the epilogue's guarded stores without branches: flat.py (stacked: a chunk row's
# `if (pair) ... else if (single) ...` as two independent guarded stores) and flatdg.py (dg_diff in the new
# emitter's form: each point's guard folded into its stores' conditions) against the modules they edit;
# harness.py, three rounds; the SASS's branch and convergence-barrier counts (cuobjdump).
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c9; mkdir -p $O
cd $P
ROUNDS=3 timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-flat.cubin:stacked dg_diff-new.cubin:dgdiff dg_diff-newflat.cubin:dgdiff 2>&1 | tee $O/probe.txt
for f in dg_diff_stacked dg_diff_stacked-flat dg_diff-new dg_diff-newflat; do cuobjdump -sass $f.cubin > /tmp/$f.sass; echo "$f: $(grep -cE '^\s+/\*[0-9a-f]{4,5}\*/' /tmp/$f.sass) instructions, BRA $(grep -c ' BRA ' /tmp/$f.sass), BSSY $(grep -c BSSY /tmp/$f.sass), STG $(grep -c STG /tmp/$f.sass)" | tee -a $O/sass.txt; done
