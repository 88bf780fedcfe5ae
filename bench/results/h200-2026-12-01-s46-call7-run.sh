#!/usr/bin/env bash
# Session 46, lead's final call (one H200): merged main 58eb48a (lift7's epilogue prefetch, n8ldg's plain-load copy).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; R=$P/m/main/rtcgc; O=$OUT/c7; mkdir -p $O
RTCG_CACHE_DIR=/tmp/c7a timeout 200 $B --only dg_lift_tf32x3_N7,dg_lift_tf32x3_N5,dg_lift_tf32x3_N3,dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_diff_stacked_tf32x3_N4 --out /tmp/b7a --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-tc.log; cp /tmp/b7a/bench.json $O/bench-tc.json
RTCG_CACHE_DIR=/tmp/c7b timeout 90 $B --only dg_diff_f64_N5 --out /tmp/b7b --max-candidates 200 --time-limit 45 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-f64n5.log; cp /tmp/b7b/bench.json $O/bench-f64n5.json
export RTCG_CACHE_DIR=/tmp/c7c
for s in "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident b" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident b" "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident b"; do
  p=tf32x3; case "$s" in *"tf32 wgmma"*) p=tf32;; esac
  for t in memcheck racecheck synccheck; do echo "== $t $s" >> $O/sanitize.txt; timeout 60 compute-sanitizer --tool $t $R run $P/bias.rtcg -D m=1003 -D n=1000 -D kk=41 --precision $p -s "$s" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel |error" >> $O/sanitize.txt; done
done
tar -C $OUT -czf $OUT/c7.tgz c7; rm -rf $O
