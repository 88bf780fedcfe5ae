#!/usr/bin/env bash
# Run on tree s59b = main 9a5f331 (rtcgc, rtcg-worker). bounds.py is h200-2026-12-03-s59-bounds.py.
# Session 59, call 2 (one H200), main 9a5f331 ('s59b'): bounds.py (call 1's script, its stream kernel's launches
# that ask too many registers skipped), then DG lifting N5's other forms by hand (rtcgc run, verified, median of 30,
# L2 flushed) beside the search winner.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c2; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59b/rtcgc; T="swizzle 128 tma producer persistent"; X="mma: tf32x3 wgmma"
python3 $S/bounds.py > $O/bounds.txt 2>&1
run() { f=$1; d=$2; s=$3; pr=${4:-tf32x3}; echo "== $f $d | $s" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c2 timeout 120 $R run $f $d --precision $pr -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
L5="-D K=340630 -D Np=56 -D Nfp=21"
for i in 1 2; do
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  run examples/dg_lift.rtcg "$L5" "$X m64n64k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 1x1 k 32 stages 4 $T resident a"
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 1x1 k 32 stages 2 $T resident a"
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 2x1 k 32 stages 4 $T pingpong"
done
cat $O/bounds.txt; sed 's/ (median of 30, L2 flushed)//' $O/byhand.txt | grep -E "^==|time|rror" | cut -c1-200
tar -C $OUT -czf $OUT/c2.tgz c2 && rm -rf $O
