#!/usr/bin/env bash
# Session 53, call 15 (one H200): spec.py's lean epilogue per N origin in the emitted one's branch structure
# (`br`: per chunk row `if (pair inside the run) pair else if (lane 3 of an odd row) single`, the bound made opaque
# to the compiler so that the branch stays), dg_diff and stacked, against the emitted modules and the new
# emitter's dg_diff; harness.py, three rounds; the SASS's counts.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c15; mkdir -p $O
cd $P
ROUNDS=3 timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-specbr.cubin:stacked dg_diff-new.cubin:dgdiff dg_diff-specbr.cubin:dgdiff 2>&1 | tee $O/probe.txt
for f in dg_diff_stacked-specbr dg_diff-specbr dg_diff-spec; do cuobjdump -sass $f.cubin > /tmp/$f.sass; echo "$f: $(grep -cE '^\s+/\*[0-9a-f]{4,5}\*/' /tmp/$f.sass) instructions, BRA $(grep -c ' BRA ' /tmp/$f.sass), SHFL $(grep -c SHFL /tmp/$f.sass), STG $(grep -c STG /tmp/$f.sass)" | tee -a $O/sass.txt; done
