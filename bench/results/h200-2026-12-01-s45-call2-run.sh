#!/usr/bin/env bash
# Session 45, lead's call 2 (one H200): the shared epilogue's vector loop unrolled (full, the
# compiler's default) against not unrolled (call 1's new build), each schedule in turn, two passes.
set -uo pipefail
P=$PWD/.probe-me; export LD_LIBRARY_PATH=$P/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar -C $P -xJf $P/bins.tar.xz; mkdir -p $P/full $P/default
xz -dc $P/rtcgc-full.xz > $P/full/rtcgc; xz -dc $P/rtcgc-default.xz > $P/default/rtcgc; chmod +x $P/*/rtcgc
O=/tmp/o2; rm -rf $O; mkdir -p $O
runs() {  # file sizes precision schedule
  local f=$1 d=$2 pr=$3 s=$4
  for pass in 1 2; do for b in new full default; do
    echo "== $b pass $pass $f $d [$pr] $s"
    RTCG_CACHE_DIR=/tmp/c-$b $P/$b/rtcgc run $f $d --precision $pr -s "$s" --repeats 30 2>&1 | grep -vE "^  [a-zA-Z]+: " | tail -3
  done; done
}
{
runs $P/dg64.rtcg "-D K=100000 -D Np=20" ieee "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"
runs $P/dg64.rtcg "-D K=100000 -D Np=20" ieee "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2"
runs $P/dg64.rtcg "-D K=100000 -D Np=20" ieee "mma: f64 m16n8k8 warps 2x2 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"
runs examples/dgemm.rtcg "-D n=2048" ieee "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
runs examples/matmul.rtcg "-D n=4096" tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared"
runs examples/gemm_bf16.rtcg "-D n=4096" ieee "mma: bf16 wgmma m64n128k16 warpgroups 2x2 k 64 stages 4 swizzle 128 tma epilogue shared"
} > $O/byhand.txt 2>&1
tar -czf $OUT/call2.tgz -C $O .
