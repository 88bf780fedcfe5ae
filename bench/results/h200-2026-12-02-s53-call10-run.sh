#!/usr/bin/env bash
# Session 53, call 10 (one H200): the stacked N8 epilogue per N origin (sw.py) with the chunk rows inside N at that
# origin reduced to one guarded pair store (sw2.py), against the emitted module and sw.py's; harness.py, three
# rounds; the SASS's branch counts.
set -uo pipefail
P=$PWD/.probe-me/s53; O=$OUT/c10; mkdir -p $O
cd $P
ROUNDS=3 timeout 300 python3 harness.py dg_diff_stacked.cubin:stacked dg_diff_stacked-sw.cubin:stacked dg_diff_stacked-sw2.cubin:stacked 2>&1 | tee $O/probe.txt
for f in dg_diff_stacked dg_diff_stacked-sw dg_diff_stacked-sw2; do cuobjdump -sass $f.cubin > /tmp/$f.sass; echo "$f: $(grep -cE '^\s+/\*[0-9a-f]{4,5}\*/' /tmp/$f.sass) instructions, BRA $(grep -c ' BRA ' /tmp/$f.sass), BSSY $(grep -c BSSY /tmp/$f.sass), STG $(grep -c STG /tmp/$f.sass)" | tee -a $O/sass.txt; done
