#!/usr/bin/env bash
# Session 60, call 7 (one H200), tree s60d (fdf4b6d: the rings' runs copied without bounds where the tiles and steps
# divide): the tensor-core examples' searches at examples/sizes.txt (rtcgc tune, 48 candidates, 6 s; tf32x3 where a
# contraction qualifies, ieee for the f64 / bf16 / s8 ones): the wrong counts (dg_lift's and batched_matmul's samples
# now hold such copies); the batched row of the table (bench_suite, cuBLAS in the same process); by hand, a divided
# TF32 ring and an s8 wgmma ring against the CPU reference.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c7; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60d.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60d/rtcgc; W=$P/m/s60d/rtcg-worker
RTCG_CACHE_DIR=/tmp/c7b timeout 120 $P/m/s60d/bench_suite --only batched_tf32x3_16x16x65536 --out /tmp/b7 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " > $O/bench-batched.log; cp /tmp/b7/bench.json $O/bench-batched.json
search() { local f=$1 p=$2; shift 2
  echo "== $f $p $*" >> $O/searches.txt
  RTCG_CACHE_DIR=/tmp/c7 timeout 60 $R tune examples/$f "$@" --precision $p --max-candidates 48 --time-limit 6 --worker $W --db /tmp/c7.sqlite > $O/one.log 2>&1
  echo "rc=$?" >> $O/searches.txt; grep -E "search done|error" $O/one.log | cut -c1-260 >> $O/searches.txt; cat $O/one.log >> $O/searches.log; }
for fp in "dg_lift.rtcg tf32x3 -D K=10000 -D Np=20 -D Nfp=10" "batched_matmul.rtcg tf32x3 -D nb=4096 -D n=16" "matmul.rtcg tf32x3 -D n=500" "matmul_flat.rtcg tf32x3 -D n=500" "dg_diff.rtcg tf32x3 -D K=10000 -D Np=20" "dg_diff_stacked.rtcg tf32x3 -D K=10000 -D Np=20" "sumfact.rtcg tf32x3 -D E=2001 -D p=7" "syrk.rtcg tf32x3 -D n=1000 -D K=300" "dgemm.rtcg ieee -D n=500" "gemm_bf16.rtcg ieee -D n=500" "gemm_i8.rtcg ieee -D m=300 -D n=200 -D K=1000" "trmm.rtcg tf32x3 -D n=501" "gemv.rtcg tf32x3 -D m=2000 -D n=1500"; do search $fp; done
run() { echo "== $*" >> $O/checks.txt; RTCG_CACHE_DIR=/tmp/c7r timeout 60 $R run "$@" --repeats 10 2>&1 | grep -E "rel [0-9]|rror|time|mismatch" | grep -v "again after" >> $O/checks.txt; }
run examples/dg_lift.rtcg -D K=10000 -D Np=20 -D Nfp=10 --precision tf32x3 -s "mma: tf32x3 m16n8k8 warps 1x1 tile 2x2 k 8 stages 3 epilogue shared"
run examples/batched_matmul.rtcg -D nb=4096 -D n=16 --precision tf32x3 -s "stores: streaming; mma: tf32x3 m16n8k8 warps 1x1 tile 1x2 k 8 stages 3"
run examples/gemm_i8.rtcg -D m=128 -D n=192 -D K=256 -s "mma: s8 wgmma m64n48k32 warpgroups 1x2 k 128 stages 3 swizzle 128"
run examples/gemm_i8.rtcg -D m=1024 -D n=1024 -D K=1024 -s "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 64 stages 3"
grep -c "^== " $O/searches.txt; grep -E "search done" $O/searches.txt | grep -vc " 0 wrong"; grep -B2 -E "rc=[1-9]" $O/searches.txt | head -20
grep -E "^==|search done" $O/searches.txt | sed -E 's/search done in ([0-9.]+ s): ([0-9]+) candidates.*, ([0-9]+) verified, ([0-9]+) wrong, ([0-9]+) faulted.*/\1 \2 cand \3 ok \4 wrong \5 faulted/' | paste - - | cut -c1-160
cat $O/checks.txt | cut -c1-200; grep -hE "^batched|search done" $O/bench-batched.log | cut -c1-250
tar -C $OUT -czf $OUT/c7.tgz c7 && rm -rf $O
