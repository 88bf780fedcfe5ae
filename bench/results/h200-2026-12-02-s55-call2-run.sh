#!/usr/bin/env bash
# Session 55, call 2 (one H200): tf32x3's steps in flight (direct accumulation / two sets over the tile) against the emitted N8 modules.
set -uo pipefail
S=$PWD/.probe-me/s55; O=$OUT/c2; mkdir -p $O; cd $S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv > $O/smi.txt
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked stacked-direct.cubin:stacked stacked-inflight.cubin:stacked stacked-split2.cubin:stacked dg_diff.cubin:dgdiff dg_diff-inflight.cubin:dgdiff dg_diff-split2.cubin:dgdiff 2>&1 | tee $O/probe.txt
timeout 200 python3 tlrun.py stacked-split2-tl.cubin:stacked stacked-inflight-tl.cubin:stacked dg_diff-split2-tl.cubin:dgdiff 2>&1 | tee $O/tl.txt
(/usr/local/cuda/bin/cuobjdump -sass stacked-split2.cubin || cuobjdump -sass stacked-split2.cubin) 2>&1 | grep -E 'HGMMA|WARPGROUP' | head -80 > $O/sass-split2.txt
tar -C $OUT -czf $OUT/c2.tgz c2 && rm -rf $O
