#!/usr/bin/env bash
# Session 55, call 3 (one H200): the stacked N8 module's main loop without its ring's waits (and without the tile turn), with and without store traffic (timing only: results wrong on purpose).
set -uo pipefail
S=$PWD/.probe-me/s55; O=$OUT/c3; mkdir -p $O; cd $S
ROUNDS=2 timeout 200 python3 harness.py stacked.cubin:stacked stacked-nowait.cubin:stacked stacked-nowait-noturn.cubin:stacked stacked-sink.cubin:stacked stacked-sink-nowait.cubin:stacked stacked-sink-nowait-noturn.cubin:stacked 2>&1 | tee $O/probe.txt
timeout 200 python3 tlrun.py stacked-nowait-tl.cubin:stacked stacked-nowait-noturn-tl.cubin:stacked stacked-sink-nowait-tl.cubin:stacked stacked-sink-nowait-noturn-tl.cubin:stacked 2>&1 | grep -v 'N tile' | tee $O/tl.txt
tar -C $OUT -czf $OUT/c3.tgz c3 && rm -rf $O
