#!/usr/bin/env bash
# Session 53, call 12 (one H200): the stacked N8 module with each consumer warp's rows of one parity (perm.py: the
# producer's u rows permuted within the tile, the epilogue's rows with them; -permsplit also the epilogue twice
# under a warp-uniform test, the aligned warps without rotation shuffles), against the emitted module; harness.py,
# three rounds; the SASS's counts.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c12; mkdir -p $O
cd $P
ROUNDS=3 timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-perm.cubin:stacked dg_diff_stacked-permsplit.cubin:stacked 2>&1 | tee $O/probe.txt
for f in dg_diff_stacked dg_diff_stacked-perm dg_diff_stacked-permsplit; do cuobjdump -sass $f.cubin > /tmp/$f.sass; echo "$f: $(grep -cE '^\s+/\*[0-9a-f]{4,5}\*/' /tmp/$f.sass) instructions, BRA $(grep -c ' BRA ' /tmp/$f.sass), SHFL $(grep -c SHFL /tmp/$f.sass), STG $(grep -c STG /tmp/$f.sass)" | tee -a $O/sass.txt; done
