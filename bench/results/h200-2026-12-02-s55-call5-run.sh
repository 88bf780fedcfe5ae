#!/usr/bin/env bash
# Session 55, call 5 (one H200): a proxy of 3 stages (D's small kept tile aliased onto its big one: timing only, results wrong on purpose),
# each step waited for / in flight (split2: big products into the tile's sums, small into partial sums over the tile; inflight: all into the tile's sums), the epilogue's pause kept or dropped.
set -uo pipefail
S=$PWD/.probe-me/s55; O=$OUT/c5; mkdir -p $O; cd $S
ROUNDS=3 timeout 400 python3 harness.py stacked.cubin:stacked stacked-nopause.cubin:stacked st2-alias.cubin:stacked st3-alias.cubin:stacked st3-alias-nopause.cubin:stacked st3-split2-alias.cubin:stacked st3-split2-alias-nopause.cubin:stacked st3-inflight-alias.cubin:stacked st3-inflight-alias-nopause.cubin:stacked 2>&1 | tee $O/probe.txt
timeout 200 python3 tlrun.py st3-alias-tl.cubin:stacked st3-split2-alias-tl.cubin:stacked st3-split2-alias-nopause-tl.cubin:stacked st3-inflight-alias-nopause-tl.cubin:stacked 2>&1 | grep -v 'N tile' | tee $O/tl.txt
tar -C $OUT -czf $OUT/c5.tgz c5 && rm -rf $O
