#!/usr/bin/env bash
# Session 55, call 4 (one H200): stages freed before the partial sums' adds ('release'), the tile turn handed over once the last step is issued ('turn');
# the main loop without the ring's waits with each step in flight (timing only).
set -uo pipefail
S=$PWD/.probe-me/s55; O=$OUT/c4; mkdir -p $O; cd $S
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked stacked-release.cubin:stacked stacked-turn.cubin:stacked stacked-release-turn.cubin:stacked dg_diff.cubin:dgdiff dg_diff-release.cubin:dgdiff dg_diff-turn.cubin:dgdiff dg_diff-release-turn.cubin:dgdiff 2>&1 | tee $O/probe.txt
timeout 200 python3 tlrun.py stacked-release-turn-tl.cubin:stacked dg_diff-release-turn-tl.cubin:dgdiff stacked-nowait-tl.cubin:stacked stacked-direct-nowait-tl.cubin:stacked stacked-inflight-nowait-tl.cubin:stacked stacked-split2-nowait-tl.cubin:stacked 2>&1 | grep -v 'N tile' | tee $O/tl.txt
tar -C $OUT -czf $OUT/c4.tgz c4 && rm -rf $O
