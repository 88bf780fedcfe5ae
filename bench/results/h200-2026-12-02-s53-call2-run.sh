#!/usr/bin/env bash
# Session 53, call 2 (one H200): dg_diff_stacked N8's epilogue with 16-byte stores (vec.py: per N origin, quad
# windows aligned to 16 bytes, each value by two shuffles; -vecbound the same stores without the shuffles, a
# timing bound with wrong results) against the emitted module and spec.py's; harness.py, three rounds.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c2; mkdir -p $O
cd $P
ROUNDS=3 timeout 400 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-spec.cubin:stacked dg_diff_stacked-vec.cubin:stacked dg_diff_stacked-vecbound.cubin:stacked \
  dg_diff.cubin:dgdiff dg_diff-spec.cubin:dgdiff 2>&1 | tee $O/probe.txt
