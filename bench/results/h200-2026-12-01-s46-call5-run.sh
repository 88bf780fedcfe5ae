#!/usr/bin/env bash
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; export RTCG_CACHE_DIR=/tmp/cc5; O=$OUT/c5; mkdir -p $O
F=$P/dg64.rtcg
run() { echo "== $1 | $2" >> $O/byhand.txt; timeout 90 $R run $F -D $1 -s "$2" --repeats 30 2>&1 | grep -E "time|error|rel" | grep -v again >> $O/byhand.txt; }
for s in "warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted" "warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted" "warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared" \
  "warps 2x4 tile 2x4 k 8 stages 4 fragments 2 copies hoisted" "warps 4x2 tile 2x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared" "warps 2x4 tile 2x4 k 32 stages 4 persistent resident a fragments 2"; do
  run "K=100000 -D Np=120" "stores: streaming; mma: f64 m16n8k4 $s"; run "K=100000 -D Np=120" "mma: f64 m16n8k4 $s"; done
for s in "warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted" "warps 2x4 tile 2x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"; do run "K=100000 -D Np=56" "mma: f64 m16n8k4 $s"; done
tar -C $OUT -czf $OUT/c5.tgz c5; rm -rf $O
