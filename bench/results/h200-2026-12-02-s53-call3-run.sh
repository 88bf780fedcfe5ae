#!/usr/bin/env bash
# Session 53, call 3 (one H200): three consumer warpgroups in pingpong ('warpgroups 3x1', m64n104: 5 N tiles on
# 130 blocks; m64n96: 6 on 132), stages 2 and 3, emitted by fcd935f, against the emitted 2x1 m64n128 modules;
# harness.py (grid and block per module), two rounds interleaved with cuBLAS.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c3; mkdir -p $O
cd $P
V="dg_diff_stacked.cubin:stacked"
for v in n104s2:130 n104s3:130 n96s2:132 n96s3:132; do V="$V dg_diff_stacked-3c-${v%%:*}.cubin:stacked:${v##*:}:512"; done
V="$V dg_diff.cubin:dgdiff dg_diff-spec.cubin:dgdiff"
for v in n104s2:130 n104s3:130 n96s2:132 n96s3:132; do V="$V dg_diff-3c-${v%%:*}.cubin:dgdiff:${v##*:}:512"; done
ROUNDS=2 timeout 400 python3 harness.py $V 2>&1 | tee $O/probe.txt
