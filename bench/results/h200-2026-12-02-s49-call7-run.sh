#!/usr/bin/env bash
# Session 49, call 7 (one H200): HEAD 3ee9cae: compute-sanitizer (memcheck, racecheck, synccheck) on the new forms at sizes no
# tile divides (K = 5003), then the DG tensor-core rows' searches (bench_suite, 48 candidates, cuBLAS in the same process).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/new.tar.xz; chmod +x $P/m/main/* $P/m/new/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c7; mkdir -p $O
R=$P/m/new/rtcgc; T="swizzle 128 tma producer persistent"
san() { # file sizes schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $1 $2 | $3" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/c7s timeout 120 compute-sanitizer --tool $tool $R run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
}
san dgdiff "-D K=5003 -D Np=165" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san stacked "-D K=5003 -D Np=165" "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2 $T resident a"
san stacked "-D K=5003 -D Np=120" "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T resident a"
B=$P/m/new/bench_suite; W=$P/m/new/rtcg-worker
run() { # name rows timeout
  RTCG_CACHE_DIR=/tmp/c7$1 timeout $3 $B --only $2 --out /tmp/b7$1 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-$1.log; cp /tmp/b7$1/bench.json $O/bench-$1.json
}
run a dg_diff_tf32x3_N5,dg_diff_tf32x3_N6,dg_diff_tf32x3_N7,dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N5,dg_diff_stacked_tf32x3_N6,dg_diff_stacked_tf32x3_N7,dg_diff_stacked_tf32x3_N8 200
run b dg_lift_tf32x3_N3,dg_lift_tf32x3_N5,dg_lift_tf32x3_N7,dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7,dgemm_1000,dgemm_2048 200
grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" $O/sanitizer.txt
tail -11 $O/bench-a.log | cut -c1-150; tail -11 $O/bench-b.log | cut -c1-150
