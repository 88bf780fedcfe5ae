#!/usr/bin/env bash
# Session 46, lead's call 10 (one H200): main after the review (4411975): the producer's prelude and thread-copied steps.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
B=$P/m/main/bench_suite; W=$P/m/main/rtcg-worker; R=$P/m/main/rtcgc; O=$OUT/c10; mkdir -p $O
RTCG_CACHE_DIR=/tmp/c10a timeout 200 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_lift_tf32x3_N7,sgemm_tf32x3_4096 --out /tmp/b10 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b10/bench.json $O/bench.json
export RTCG_CACHE_DIR=/tmp/c10b
T="swizzle 128 tma producer persistent"
for pr in tf32x3 tf32; do for t in memcheck racecheck synccheck; do
  echo "== $t $pr dg_diff K=5003 Np=165 m64n128 2x1 st2 pingpong resident a" >> $O/sanitize.txt
  timeout 90 compute-sanitizer --tool $t $R run $P/dgdiff.rtcg -D K=5003 -D Np=165 --precision $pr -s "mma: $pr wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel |error" >> $O/sanitize.txt
done; done
tar -C $OUT -czf $OUT/c10.tgz c10; rm -rf $O
