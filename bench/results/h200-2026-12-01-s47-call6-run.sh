#!/usr/bin/env bash
# Session 47, lead's call 6 (one H200): dg_diff N8's epilogue: each of a chunk's two columns takes its array once (singleArrays), old (7cdb7e8) against new, by hand alternating; then the dg_diff N8 row's search.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; xz -dc $P/rtcgc-old.xz > $P/m/main/rtcgc-old; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; O=$OUT/c6; mkdir -p $O
T="swizzle 128 tma producer persistent"
for i in 1 2; do
for s in "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"; do
  for v in rtcgc-old rtcgc; do
    echo "== $i $v $s" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c6$v timeout 60 $P/m/main/$v run $P/dgdiff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 2>&1 | grep -E "time|error|rel" >> $O/byhand.txt
  done
done; done
RTCG_CACHE_DIR=/tmp/c6b timeout 150 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b6 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b6/bench.json $O/bench.json
tar -C $OUT -czf $OUT/c6.tgz c6; rm -rf $O
