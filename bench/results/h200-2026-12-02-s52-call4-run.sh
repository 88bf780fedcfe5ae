#!/usr/bin/env bash
# Session 52, call 4 (one H200): the N8 pingpong epilogue replaced by a slim one (hand edits of main d1ab29a's
# modules, .probe-me/s52; -call4-slim.py for dg_diff_stacked, -call4-slimdg.py for dg_diff: pointers and row
# alignment once, a float2 a chunk and row, the emitted per-point bounds and address code gone), against the
# emitted modules, -emit (the working tree's emitter: one statement's odd rows from pointers declared once a tile) and -wu (the consumer index warp-uniform); harness.py, twice interleaved with cuBLAS.
set -uo pipefail
P=$PWD/.probe-me/s52; O=$OUT/c4; mkdir -p $O
cd $P
timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-slim.cubin:stacked dg_diff_stacked-emit.cubin:stacked dg_diff_stacked-wu.cubin:stacked \
  dg_diff.cubin:dgdiff dg_diff-slim.cubin:dgdiff dg_diff-wu.cubin:dgdiff 2>&1 | tee $O/probe.txt
