#!/usr/bin/env bash
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; export RTCG_CACHE_DIR=/tmp/cc3; O=$OUT/c3; mkdir -p $O
F=$P/dg64.rtcg
pa="persistent resident a fragments 2"
run() { echo "== $1 | $2" >> $O/byhand.txt; timeout 90 $R run $3 -D $1 -s "$2" --repeats 30 2>&1 | grep -E "time|error|rel" | grep -v again >> $O/byhand.txt; }
for s in "k 8 stages 4" "k 8 stages 5" "k 8 stages 6" "k 4 stages 6" "k 4 stages 8" "k 8 stages 4"; do run "K=100000 -D Np=56" "mma: f64 m16n8k4 warps 2x2 tile 2x4 $s $pa" $F; done
for s in "k 32 stages 4" "k 16 stages 6" "k 16 stages 8" "k 8 stages 8"; do run "K=100000 -D Np=120" "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x4 $s $pa" $F; done
for s in "stages 3" "stages 4" "stages 6"; do run "K=100000 -D Np=20" "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 $s fragments 2 epilogue shared" $F; done
for s in "stages 3" "stages 4" "stages 5" "stages 6"; do run "n=2048" "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 $s fragments 2 copies hoisted epilogue shared" examples/dgemm.rtcg; done
tar -C $OUT -czf $OUT/c3.tgz c3; rm -rf $O
