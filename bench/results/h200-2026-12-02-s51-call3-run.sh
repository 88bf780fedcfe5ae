#!/usr/bin/env bash
# Session 51, call 3: is N = 8 bound by its output rows (495 values, 1980 bytes: not 32-byte aligned, so the
# epilogue's per-point stores touch two sectors a row)? The stacked kernel at Np = 160 and 168 (rows of 480 and
# 504 values, 32-byte multiples; u's rows 16-byte multiples, TMA) against the contraction over 168-value rows with
# Np = 165's 495 outputs, the same schedules, K = 101556. Needs .probe-me/{main,cur}.tar.xz as in call 1.
set -uo pipefail
P=$PWD/.probe-me; B=$PWD/bench/results
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/align; mkdir -p $O
T="swizzle 128 tma producer persistent"; R=$P/m/cur/rtcgc
run() { echo "== $1 | $2 | $3" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/rp timeout 60 $R run $1 -D K=101556 $2 --precision tf32x3 -s "$3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
S=$PWD/examples/dg_diff_stacked.rtcg; M=$B/h200-2026-12-02-s51-stackedmmaonly.rtcg
for i in 1 2; do
  for s in "m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "m64n128k8 warpgroups 2x1 k 32 stages 3 $T" \
           "m64n192k8 warpgroups 2x1 k 32 stages 2 $T"; do
    run $M "-D Np=165" "stores: streaming; mma: tf32x3 wgmma $s"
    run $S "-D Np=168" "stores: streaming; mma: tf32x3 wgmma $s"
    run $S "-D Np=160" "stores: streaming; mma: tf32x3 wgmma $s"
    run $S "-D Np=164" "stores: streaming; mma: tf32x3 wgmma $s"
  done
done
grep -E "==|time|rror" $O/byhand.txt | cut -c1-200
