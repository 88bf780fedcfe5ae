#!/usr/bin/env bash
# lift7 call 3 (one H200): compute-sanitizer on call 2's N5 and N3 winners' forms and a one-tile
# producer form at sizes no tile divides; the three lifting searches again (cuBLAS in the same process).
set -uo pipefail
tar -xJf .probe-lift7/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu; export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export RTCG_CACHE_DIR=$(mktemp -d)
O=/tmp/o3; rm -rf $O; mkdir -p $O
R=build-gpu/tools/rtcgc/rtcgc
L="examples/dg_lift.rtcg --precision tf32x3"
S5="mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong resident a"
S3="stores: streaming; mma: tf32x3 wgmma m64n24k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a"
SP="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer"
san() {  # tool sizes schedule
  echo "== $1 $2 $3" >> $O/sanitize.txt
  timeout 60 compute-sanitizer --tool $1 $R run $L $2 -s "$3" --repeats 1 2>&1 | tail -3 >> $O/sanitize.txt
}
for t in memcheck racecheck synccheck; do san $t "-D K=20011 -D Np=56 -D Nfp=21" "$S5"; done
for t in memcheck racecheck; do san $t "-D K=20011 -D Np=20 -D Nfp=10" "$S3"; done
san memcheck "-D K=20011 -D Np=120 -D Nfp=36" "$SP"
timeout 120 build-gpu/bench/suite/bench_suite --only dg_lift_tf32x3_N7,dg_lift_tf32x3_N5,dg_lift_tf32x3_N3 --out /tmp/b3 --max-candidates 48 --time-limit 12 --worker build-gpu/tools/rtcg-worker/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench.log; cp /tmp/b3/bench.json $O/bench.json
tar -czf $OUT/call3.tgz -C $O .
