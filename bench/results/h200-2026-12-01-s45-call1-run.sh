#!/usr/bin/env bash
# Session 45, lead's call 1 (one H200): the shared epilogue's 16-byte stores (epilogueVectorWidth),
# old (937aeef) against new in one call; the searches on the new build.
set -uo pipefail
P=$PWD/.probe-me; export LD_LIBRARY_PATH=$P/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar -C $P -xJf $P/bins.tar.xz; chmod +x $P/old/* $P/new/*
O=/tmp/o1; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt
runs() {  # file sizes precision schedule
  local f=$1 d=$2 pr=$3 s=$4
  for pass in 1 2; do for b in old new; do
    echo "== $b pass $pass $f $d [$pr] $s"
    RTCG_CACHE_DIR=/tmp/c-$b $P/$b/rtcgc run $f $d --precision $pr -s "$s" --repeats 30 2>&1 | grep -vE "^  [a-zA-Z]+: " | tail -4
  done; done
}
{
runs $P/dg64.rtcg "-D K=100000 -D Np=20" ieee "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"
runs $P/dg64.rtcg "-D K=100000 -D Np=20" ieee "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2"
runs examples/dgemm.rtcg "-D n=2048" ieee "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
runs examples/dgemm.rtcg "-D n=1000" ieee "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
runs examples/matmul.rtcg "-D n=4096" tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared"
runs examples/gemm_bf16.rtcg "-D n=4096" ieee "mma: bf16 wgmma m64n128k16 warpgroups 2x2 k 64 stages 4 swizzle 128 tma epilogue shared"
} > $O/byhand.txt 2>&1
# compute-sanitizer on the new vector epilogue at sizes no tile divides
for t in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $t $P/new/rtcgc run $P/dg64.rtcg -D K=20011 -D Np=20 -s "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared" --repeats 1 > $O/sanitize-$t.txt 2>&1
  timeout 120 compute-sanitizer --tool $t $P/new/rtcgc run examples/matmul.rtcg -D n=1003 --precision tf32x3 -s "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared" --repeats 1 >> $O/sanitize-$t.txt 2>&1
done
W() { echo $P/$1/rtcg-worker; }
RTCG_CACHE_DIR=/tmp/c-s1 timeout 120 $P/new/bench_suite --only dg_diff_f64_N3 --out /tmp/b1 --max-candidates 200 --time-limit 40 --worker $(W new) > $O/bench-n3.log 2>&1; cp /tmp/b1/bench.json $O/bench-n3.json
# (the rows dgemm_1000, dgemm_2048, sgemm_tf32x3_4096, gemm_bf16_4096: by hand above)
for b in old new; do
  RTCG_CACHE_DIR=/tmp/c-f$b timeout 100 $P/$b/bench_suite --only dgemm_fp64x_4096 --schedules $P/h200-2026-12-01-s44-side41-schedule-4096-final.json --out /tmp/bf$b --max-candidates 8 --time-limit 20 --worker $(W $b) > $O/bench-fp64x-$b.log 2>&1; cp /tmp/bf$b/bench.json $O/bench-fp64x-$b.json
done
tar -czf $OUT/call1.tgz -C $O .
