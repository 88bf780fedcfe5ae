#!/usr/bin/env bash
# Run on tree s59a: main 9a5f331 with the parser's mma stages cap raised from 4 to 8 (not kept). bounds.py failed in this call (its launch of 1024 threads asked too many registers); call 2 reran it.
# Session 59, call 1 (one H200), tree 's59a' = main 9a5f331 with mma 'stages' allowed up to 8 (parser cap only):
# deeper TMA rings for the memory-bound DG rows by hand (rtcgc run, verified, median of 30, L2 flushed), the f64 N7
# winner at 4 and 5 stages, then bounds.py (lifting's byte stream and the FP64 mma.sync rate against cuBLAS in one
# process), and compute-sanitizer on two deep rings at sizes no tile divides.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s59; O=$OUT/c1; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s59a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s59a/rtcgc; T="swizzle 128 tma producer persistent"; X="mma: tf32x3 wgmma"
run() { f=$1; d=$2; s=$3; pr=${4:-tf32x3}; echo "== $f $d | $s" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1 timeout 120 $R run $f $d --precision $pr -s "$s" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
L5="-D K=340630 -D Np=56 -D Nfp=21"; L3="-D K=828494 -D Np=20 -D Nfp=10"; D5="-D K=299551 -D Np=56"; D6="-D K=199665 -D Np=84"
for st in 4 6 8; do
  run examples/dg_lift.rtcg "$L5" "$X m64n56k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  run examples/dg_lift.rtcg "$L5" "stores: streaming; $X m64n56k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  run examples/dg_lift.rtcg "$L3" "stores: streaming; $X m64n24k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  run examples/dg_diff_stacked.rtcg "$D5" "$X m64n168k8 warpgroups 1x1 k 32 stages $st $T resident a"
  run examples/dg_diff.rtcg "$D5" "$X m64n192k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  run examples/dg_diff_stacked.rtcg "$D6" "stores: streaming; $X m64n128k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
  run examples/dg_diff.rtcg "$D6" "stores: streaming; $X m64n128k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"
done
for st in 4 5; do run $S/dgdiff64.rtcg "-D K=100000 -D Np=120" "stores: streaming; mma: f64 m16n8k8 warps 4x5 tile 1x3 k 24 stages $st persistent resident a fragments 2" ieee; done
python3 $S/bounds.py > $O/bounds.txt 2>&1
for tool in memcheck racecheck synccheck; do
  echo "== $tool dg_lift K=5003 Np=56 Nfp=21 stages 8 pingpong" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c1s timeout 120 compute-sanitizer --tool $tool $R run examples/dg_lift.rtcg -D K=5003 -D Np=56 -D Nfp=21 --precision tf32x3 -s "$X m64n56k8 warpgroups 2x1 k 32 stages 8 $T pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel [0-9]|rror" | head -5 >> $O/sanitizer.txt
  echo "== $tool dg_diff_stacked K=5003 Np=56 stages 6" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c1s timeout 120 compute-sanitizer --tool $tool $R run examples/dg_diff_stacked.rtcg -D K=5003 -D Np=56 --precision tf32x3 -s "$X m64n168k8 warpgroups 1x1 k 32 stages 6 $T resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel [0-9]|rror" | head -5 >> $O/sanitizer.txt
done
cat $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//' | cut -c1-200; cat $O/bounds.txt $O/sanitizer.txt
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
