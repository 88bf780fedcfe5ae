#!/usr/bin/env bash
# Session 52, call 2 (one H200): what the N8 pingpong forms' time is made of. Main d1ab29a's stacked and
# dg_diff modules (K = 101556, Np = 165, tf32x3, `stores: streaming; ... m64n128 2x1 st2 pingpong resident a`;
# nvcc -O3 -arch=sm_90a cubins of `rtcgc emit`) against hand edits (.probe-me/s52): -noepi the epilogue's
# stores skipped (a timing probe, results unchecked), -keptn the consumers' N origin taken from the block
# (resident keeps it), -wu the consumer index warp-uniform; harness.py, twice interleaved with cuBLAS.
# Then SASS (cuobjdump) and Nsight Compute's source page (per-instruction stall samples) of both.
set -uo pipefail
P=$PWD/.probe-me/s52; O=$OUT/c2; mkdir -p $O
cd $P
V=""; for f in dg_diff_stacked dg_diff; do k=$([ $f = dg_diff ] && echo dgdiff || echo stacked); for s in "" -noepi -keptn -wu; do V="$V $f$s.cubin:$k"; done; done
timeout 300 python3 harness.py $V 2>&1 | tee $O/probe.txt
for f in dg_diff_stacked dg_diff; do
  cuobjdump -sass $f.cubin > $O/$f.sass 2>&1
  k=$([ $f = dg_diff ] && echo dgdiff || echo stacked)
  REPS=6 ROUNDS=1 timeout 150 ncu --kernel-name regex:dg_diff --launch-skip 4 --launch-count 1 --set full --import-source no -o $O/$f \
    python3 harness.py $f.cubin:$k > $O/$f-ncu.log 2>&1
  ncu -i $O/$f.ncu-rep --page details > $O/$f-details.txt 2>&1
  ncu -i $O/$f.ncu-rep --page source --csv --print-source sass > $O/$f-source.csv 2>&1
  rm -f $O/$f.ncu-rep; xz -9 $O/$f-source.csv $O/$f.sass
done
ls -la $O; grep -E "Duration|Eligible|Issued Warp" $O/*-details.txt
