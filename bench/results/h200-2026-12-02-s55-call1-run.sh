#!/usr/bin/env bash
# Session 55, call 1 (one H200): clock64 timeline of the N8 pingpong modules (6c7fa13's emit), with and without store traffic.
set -uo pipefail
S=$PWD/.probe-me/s55; O=$OUT/c1; mkdir -p $O; cd $S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv > $O/smi.txt
timeout 200 python3 tlrun.py stacked-tl.cubin:stacked dg_diff-tl.cubin:dgdiff stacked-sink-tl.cubin:stacked dg_diff-sink-tl.cubin:dgdiff 2>&1 | tee $O/tl.txt
ROUNDS=2 timeout 150 python3 harness.py stacked.cubin:stacked stacked-tl.cubin:stacked dg_diff.cubin:dgdiff dg_diff-tl.cubin:dgdiff 2>&1 | tee $O/probe.txt
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
