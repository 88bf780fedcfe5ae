#!/usr/bin/env bash
# Session 53, call 18 (one H200): the stacked N8 module with __nanosleep(NS) before every EVERY-th epilogue chunk
# (nap.py NS EVERY: 0, 16, 32, 64 ns each chunk; 32, 64 ns every second), against the emitted module;
# harness.py, three rounds.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c18; mkdir -p $O
cd $P
ROUNDS=3 timeout 400 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-nap0x1.cubin:stacked dg_diff_stacked-nap16x1.cubin:stacked dg_diff_stacked-nap32.cubin:stacked \
  dg_diff_stacked-nap64x1.cubin:stacked dg_diff_stacked-nap32x2.cubin:stacked dg_diff_stacked-nap64x2.cubin:stacked 2>&1 | tee $O/probe.txt
