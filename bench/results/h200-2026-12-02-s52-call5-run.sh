#!/usr/bin/env bash
# Session 52, call 5 (one H200): the odd rows' slim epilogue built into the emitter (one statement: each row's pointer,
# kind and columns left once a tile, a float2 a chunk and row under one compare; dg_diff's stacked statements: a chunk
# in one statement stores from its pointer with the point's bounds once) against main d1ab29a, the same schedules twice
# interleaved (`rtcgc run`, median of 30, L2 flushed, verified); bf16 wgmma at n = 1003 (its golden hash moved); the N8
# rows' searches on the new build; compute-sanitizer (memcheck, racecheck, synccheck) on the new forms at K = 5003.
# Needs .probe-me/{base,cur}.tar.xz (base/rtcgc, cur/{rtcgc,bench_suite,rtcg-worker}, lib/).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c5; mkdir -p $O
T="swizzle 128 tma producer persistent"
hand() { # file sizes precision schedule
  for v in base cur; do
    echo "== $v $1 $2 | $4" >> $O/byhand.txt
    RTCG_CACHE_DIR=/tmp/c5$v timeout 90 $P/m/$v/rtcgc run $E/$1.rtcg $2 --precision $3 -s "$4" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
  done
}
N8="-D K=101556 -D Np=165"
for i in 1 2; do
  for f in dg_diff_stacked dg_diff; do
    hand $f "$N8" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
    hand $f "$N8" tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
    hand $f "-D K=101556 -D Np=35" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a"
  done
  hand gemm_bf16 "-D n=1003" ieee "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3"
done
B=$P/m/cur/bench_suite; W=$P/m/cur/rtcg-worker
RTCG_CACHE_DIR=/tmp/c5b timeout 250 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8 --out /tmp/b5 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b5/bench.json $O/bench.json
R=$P/m/cur/rtcgc
san() { # file sizes precision schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $1 $2 | $4" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/c5s timeout 100 compute-sanitizer --tool $tool $R run $E/$1.rtcg $2 --precision $3 -s "$4" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
}
san dg_diff "-D K=5003 -D Np=165" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san dg_diff_stacked "-D K=5003 -D Np=165" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san gemm_bf16 "-D n=1003" ieee "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3"
grep -E "==|time|MISMATCH|rror" $O/byhand.txt | cut -c1-150; tail -4 $O/bench.log | cut -c1-200
grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" $O/sanitizer.txt; grep -E "MISMATCH|[1-9][0-9]* errors|[1-9][0-9]* hazards" $O/sanitizer.txt | head
