#!/usr/bin/env bash
# Session 53, call 17 (one H200): __nanosleep between the epilogue's chunks (nap.py: 32 or 100 ns before each chunk
# after the first) on the stacked module (emitted, sw2.py's branch-free form) and dg_diff's (the new emitter's form,
# spec.py's lean form), against the unslept modules; harness.py, three rounds.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c17; mkdir -p $O
cd $P
ROUNDS=3 timeout 400 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-nap32.cubin:stacked dg_diff_stacked-nap100.cubin:stacked dg_diff_stacked-sw2nap32.cubin:stacked \
  dg_diff-new.cubin:dgdiff dg_diff-newnap32.cubin:dgdiff dg_diff-spec.cubin:dgdiff dg_diff-specnap32.cubin:dgdiff 2>&1 | tee $O/probe.txt
