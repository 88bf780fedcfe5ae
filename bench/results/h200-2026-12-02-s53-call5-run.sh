#!/usr/bin/env bash
# Session 53, call 5 (one H200): dg_diff's epilogue once per N origin (EmitMma.cpp epiloguePerOrigin) against
# main fcd935f: the same schedules twice interleaved (`rtcgc run`, median of 30, L2 flushed, verified), N6 and N8
# in their winners' forms; the searches of dg_diff N6, N8 (bench_suite, both builds); compute-sanitizer
# (memcheck, racecheck, synccheck) on the new form at K = 5003.
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
N8="-D K=101556 -D Np=165"; N6="-D K=199665 -D Np=84"
for i in 1 2; do
  hand dg_diff "$N8" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff "$N8" tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
  hand dg_diff "$N6" tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 $T pingpong resident a"
done
for v in base cur; do
  RTCG_CACHE_DIR=/tmp/c5b$v timeout 200 $P/m/$v/bench_suite --only dg_diff_tf32x3_N6,dg_diff_tf32x3_N8 --out /tmp/b5$v --max-candidates 48 --time-limit 12 --worker $P/m/$v/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$v.log; cp /tmp/b5$v/bench.json $O/bench-$v.json
done
R=$P/m/cur/rtcgc
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $O/sanitizer.txt
  RTCG_CACHE_DIR=/tmp/c5s timeout 100 compute-sanitizer --tool $tool $R run $E/dg_diff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
done
grep -E "==|time|MISMATCH|rror" $O/byhand.txt | cut -c1-170; for v in base cur; do tail -4 $O/bench-$v.log | cut -c1-200; done
cat $O/sanitizer.txt
