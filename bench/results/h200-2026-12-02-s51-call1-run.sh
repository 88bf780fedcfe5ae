#!/usr/bin/env bash
# Session 51, call 1 (session 50's planned run, with the contraction alone added): the N = 8 rows with u and D repacked into rows of
# 168 values (16-byte multiples, zeros past 165) by copy nests into locals, so that TMA boxes copy u, against the kernels as
# written, the same schedules. Needs .probe-me/{main,cur}.tar.xz as in session 50's calls (rtcgc of the build under test and
# the libraries); the kernels are bench/results/h200-2026-12-02-s50-{stackedpad,dgdiffpad}.rtcg.
set -uo pipefail
P=$PWD/.probe-me; B=$PWD/bench/results
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/repack; mkdir -p $O
T="swizzle 128 tma producer persistent"; N8="-D K=101556 -D Np=165"; R=$P/m/cur/rtcgc
run() { echo "== $1 | $2" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/rp timeout 60 $R run $1 $N8 --precision tf32x3 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
for i in 1 2; do
  for s in "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" \
           "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a"; do
    run $B/h200-2026-12-02-s50-stackedpad.rtcg "m: grid.x; j: thread.x | k: grid.x, thread.y 4; j: thread.x | $s"
    run $PWD/examples/dg_diff_stacked.rtcg "$s"
    run $B/h200-2026-12-02-s50-dgdiffpad.rtcg "i: grid.x; j: thread.x | k: grid.x, thread.y 4; j: thread.x | $s"
    run $PWD/examples/dg_diff.rtcg "$s"
    run $B/h200-2026-12-02-s51-stackedmmaonly.rtcg "$s"
  done
done
grep -E "==|time" $O/byhand.txt | cut -c1-160
