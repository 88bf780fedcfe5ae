#!/usr/bin/env bash
# lift7 call 2 (one H200): branch lift7's build (the producer's epilogue prefetch, the epilogue-read
# model term, the fitting wgmma widths): the DG lifting rows' searches (cuBLAS in the same process),
# the forms by hand, compute-sanitizer at sizes no tile divides.
set -uo pipefail
tar -xJf .probe-lift7/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu; export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export RTCG_CACHE_DIR=$(mktemp -d)
O=/tmp/o2; rm -rf $O; mkdir -p $O
R=build-gpu/tools/rtcgc/rtcgc
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
timeout 120 build-gpu/bench/suite/bench_suite --only dg_lift_tf32x3_N7,dg_lift_tf32x3_N5,dg_lift_tf32x3_N3 --out /tmp/b2 --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b2/bench.json $O/bench.json
L="examples/dg_lift.rtcg --precision tf32x3"
T=" swizzle 128 tma producer persistent pingpong resident a"
{
for s in "m64n128k8 warpgroups 2x1 k 32 stages 3" "m64n120k8 warpgroups 2x1 k 32 stages 3"; do
  echo "== N7 $s"; timeout 40 $R run $L -D K=174263 -D Np=120 -D Nfp=36 -s "stores: streaming; mma: tf32x3 wgmma $s$T" --repeats 30 2>&1 | tail -2
done
echo "== N5 n56"; timeout 40 $R run $L -D K=340630 -D Np=56 -D Nfp=21 -s "stores: streaming; mma: tf32x3 wgmma m64n56k8 warpgroups 2x1 k 32 stages 3$T" --repeats 30 2>&1 | tail -2
} > $O/byhand.txt 2>&1
S7="mma: tf32x3 wgmma m64n120k8 warpgroups 2x1 k 32 stages 3$T"
S3="stores: streaming; mma: tf32x3 wgmma m64n24k8 warpgroups 2x1 k 32 stages 2$T"
for t in memcheck racecheck synccheck; do
  echo "== $t N7-form K=20011 $S7" >> $O/sanitize.txt
  timeout 60 compute-sanitizer --tool $t $R run $L -D K=20011 -D Np=120 -D Nfp=36 -s "$S7" --repeats 1 2>&1 | tail -4 >> $O/sanitize.txt
done
echo "== memcheck N3-form K=20011 Np=20 Nfp=10 $S3" >> $O/sanitize.txt
timeout 40 compute-sanitizer --tool memcheck $R run $L -D K=20011 -D Np=20 -D Nfp=10 -s "$S3" --repeats 1 2>&1 | tail -4 >> $O/sanitize.txt
tar -czf $OUT/call2.tgz -C $O .
