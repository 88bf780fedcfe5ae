#!/usr/bin/env bash
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; export RTCG_CACHE_DIR=/tmp/cc2; O=$OUT/c2; mkdir -p $O
F=$P/dg64.rtcg
pa="persistent resident a fragments 2"
run() { echo "== $1 | $2" >> $O/byhand.txt; timeout 60 $R run $F -D K=100000 -D Np=$1 -s "$2" --repeats 30 2>&1 | grep -E "time|error|rel" | grep -v again >> $O/byhand.txt; }
for s in "m16n8k4 warps 2x2 tile 2x4 k 8 stages 4" "m16n8k4 warps 2x2 tile 2x4 k 8 stages 3" "m16n8k4 warps 2x2 tile 2x4 k 8 stages 2" \
  "m16n8k4 warps 2x4 tile 2x2 k 8 stages 4" "m16n8k4 warps 2x4 tile 1x2 k 8 stages 4" "m16n8k4 warps 2x4 tile 1x2 k 8 stages 3" \
  "m16n8k4 warps 4x2 tile 2x2 k 8 stages 3" "m16n8k8 warps 2x2 tile 2x2 k 8 stages 4" "m16n8k4 warps 2x2 tile 2x4 k 16 stages 3" \
  "m16n8k4 warps 2x4 tile 2x4 k 8 stages 4" "m16n8k8 warps 2x2 tile 2x4 k 8 stages 4" "m16n8k4 warps 2x2 tile 2x2 k 8 stages 4" \
  "m16n8k4 warps 1x2 tile 2x4 k 8 stages 4" "m16n8k4 warps 2x2 tile 2x4 k 8 stages 4"; do run 56 "mma: f64 $s $pa"; done
run 56 "blocks_per_sm: 3; mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $pa"
for s in "m16n8k4 warps 2x4 tile 2x4 k 32 stages 4" "m16n8k4 warps 2x4 tile 2x2 k 32 stages 4" "m16n8k4 warps 2x4 tile 1x2 k 32 stages 3" \
  "m16n8k4 warps 2x4 tile 2x4 k 16 stages 4" "m16n8k4 warps 2x2 tile 2x4 k 32 stages 3" "m16n8k4 warps 2x4 tile 2x4 k 32 stages 4"; do run 120 "stores: streaming; mma: f64 $s $pa"; done
tar -C $OUT -czf $OUT/c2.tgz c2; rm -rf $O
