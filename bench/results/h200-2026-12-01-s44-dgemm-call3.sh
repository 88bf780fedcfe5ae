#!/bin/bash
# Session 44 helper dgemm, call 3: the branch's final model (new) against main (old) in one call:
# a few fixed schedules (warm pass, then timed), then bench_suite's dgemm and f64 DG rows, each build's search with cuBLAS in the same process.
cd "$(dirname "$0")/../.."
for b in old new; do mkdir -p /tmp/$b && tar -xJf .probe/dgemm/$b.tar.xz -C /tmp/$b; done
export LD_LIBRARY_PATH=/tmp/new/.gpu/lib:/usr/local/cuda/lib64
O=$OUT/c3; mkdir -p $O
run() { /tmp/$1/.gpu/build-gpu/tools/rtcgc/rtcgc run examples/dgemm.rtcg -D n=$2 -s "$3" --repeats 30 2>&1 | grep -E "time|rror|refus|spill" | sed "s#^#$1 n=$2 | $3 | #"; }
S=(
"1000|mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3 fragments 2 copies hoisted"
"1000|mma: f64 m16n8k16 warps 4x2 tile 2x4 k 16 stages 3 fragments 2 copies hoisted"
"1000|mma: f64 m16n8k8 warps 4x2 tile 2x4 k 16 stages 3 fragments 2 copies hoisted"
"1000|mma: f64 m16n8k8 warps 4x2 tile 2x4 k 8 stages 3 fragments 2 copies hoisted"
"1000|mma: f64 m16n8k8 warps 4x2 tile 2x4 k 32 stages 3 fragments 2 copies hoisted"
"2048|mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3 fragments 2 copies hoisted"
"2048|mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared"
"2048|stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
)
( for pass in warm timed; do echo "=== $pass"; for e in "${S[@]}"; do run new "${e%%|*}" "${e#*|}"; done; done ) > $O/runs.txt 2>&1
for b in old new; do
  /tmp/$b/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048,dgemm_4096,dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 --out $O/bench-$b --max-candidates 48 --time-limit 12 --worker /tmp/$b/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-$b.log 2>&1
  cp $O/bench-$b/bench.json $O/bench-$b.json; rm -rf $O/bench-$b
done
cd $OUT && tar -czf c3.tgz c3 && rm -rf c3
