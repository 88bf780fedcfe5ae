#!/usr/bin/env bash
# Session 42 helper f64dg, call 2: the persistent mma.sync form by hand (double2 stores), against the old winners' shapes.
set -uo pipefail
P=.probe/f64dg
mkdir -p new; tar -xJf $P/new.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $OUT/timeline.txt; }
R=new/.gpu/build-gpu/tools/rtcgc/rtcgc
run() {  # Np schedule
  local np=$1; shift
  echo "== Np=$np : $*" >> $OUT/byhand.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 40 $R run $P/dg64.rtcg -D K=100000 -D Np=$np --repeats 30 --reference-max-flops 3e8 -s "$*" 2>&1 | grep -E "time|error|refused|illegal|mismatch" | head -3 >> $OUT/byhand.txt
}
P2="persistent resident a fragments 2"
for np in 20 56 120; do
  if [ $np = 20 ]; then k1="k 4 stages 4"; k2="k 8 stages 3"; else k1="k 8 stages 3"; k2="k 8 stages 4"; fi
  run $np "mma: f64 m16n8k4 warps 2x4 tile 2x4 $k2 fragments 2"
  run $np "mma: f64 m16n8k4 warps 2x4 tile 2x4 $k2 persistent fragments 2"
  run $np "mma: f64 m16n8k4 warps 4x2 tile 2x4 $k2 persistent fragments 2"
  run $np "mma: f64 m16n8k4 warps 2x4 tile 2x2 $k1 $P2"
  run $np "mma: f64 m16n8k4 warps 2x4 tile 2x2 $k2 $P2"
  run $np "mma: f64 m16n8k4 warps 2x4 tile 4x2 $k1 $P2"
  run $np "mma: f64 m16n8k4 warps 4x2 tile 2x2 $k1 $P2"
  run $np "mma: f64 m16n8k4 warps 4x2 tile 4x1 $k1 $P2"
  run $np "mma: f64 m16n8k4 warps 2x2 tile 4x2 $k1 $P2"
  run $np "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x2 $k1 $P2"
done
run 20 "mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3"
run 56 "mma: f64 m16n8k4 warps 2x4 tile 4x2 k 16 stages 3 $P2"
run 120 "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 3 $P2"
stamp byhand
rm -rf new
