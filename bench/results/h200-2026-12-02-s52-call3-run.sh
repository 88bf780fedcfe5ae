#!/usr/bin/env bash
# Session 52, call 3 (one H200): the N8 pingpong epilogue's share and a lean epilogue (hand edits of main
# d1ab29a's modules, .probe-me/s52; -call3-lean.py, -call3-leandg.py): -skip the whole epilogue skipped (a
# timing bound, results unchecked), -lean interior tiles' (dg_diff: interior rows' chunks inside one statement)
# stores with pointers and row alignment once and one float2 a chunk and row, -wu the consumer index
# warp-uniform, -leanwu both; harness.py, twice interleaved with cuBLAS (cupy.matmul).
set -uo pipefail
P=$PWD/.probe-me/s52; O=$OUT/c3; mkdir -p $O
cd $P
V=""; for f in dg_diff_stacked dg_diff; do k=$([ $f = dg_diff ] && echo dgdiff || echo stacked); for s in "" -skip -lean -leanwu -wu; do V="$V $f$s.cubin:$k"; done; done
timeout 300 python3 harness.py $V 2>&1 | tee $O/probe.txt
