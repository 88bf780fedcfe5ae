#!/usr/bin/env bash
# Session 53, call 1 (one H200): the N8 pingpong epilogue emitted once per value of the block's N origin
# (spec.py; -spec, -specwu with the consumer index warp-uniform) against the emitted modules of fcd935f;
# harness.py, three rounds interleaved with cuBLAS.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c1; mkdir -p $O
cd $P
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/gpu.txt
ROUNDS=3 timeout 400 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-spec.cubin:stacked dg_diff_stacked-specwu.cubin:stacked dg_diff_stacked-scal.cubin:stacked \
  dg_diff.cubin:dgdiff dg_diff-spec.cubin:dgdiff dg_diff-specwu.cubin:dgdiff dg_diff-scal.cubin:dgdiff 2>&1 | tee $O/probe.txt
