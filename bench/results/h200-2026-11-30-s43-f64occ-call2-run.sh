#!/usr/bin/env bash
# Session 43, helper f64occ, call 2: the N5 row's search with main's build and the branch's in one
# call (same seed, 200 candidates, 45 s); by hand a few N3 forms on the branch's build.
set -uo pipefail
o=/tmp/o2; rm -rf $o; mkdir -p $o old new
tar -xJf .probe/f64occ/old.tar.xz -C old; tar -xJf .probe/f64occ/new.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $o/timeline.txt; tar -czf $OUT/call2.tgz -C /tmp o2; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/device.txt
cat > /tmp/dg64.rtcg <<'K'
kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
K
hand() {  # builds np schedule
  for v in $1; do
    echo "== $v Np=$2 $3" >> $o/hand.txt
    RTCG_CACHE_DIR=/tmp/rc-$v timeout 40 $v/.gpu/build-gpu/tools/rtcgc/rtcgc run /tmp/dg64.rtcg -D K=100000 -D Np=$2 --repeats 30 -s "$3" >> $o/hand.txt 2>&1
    echo "rc $?" >> $o/hand.txt
  done
}
P="persistent resident a fragments 2"
hand "new" 20 "mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3"
hand "new" 20 "mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 4"
hand "new" 20 "mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3 epilogue shared"
hand "new" 20 "blocks_per_sm: 2; mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 $P"
hand "new" 20 "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 $P"
hand "new" 56 "blocks_per_sm: 3; mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $P"
hand "new" 56 "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $P"
stamp hand
for v in old new; do
  RTCG_CACHE_DIR=/tmp/rc-b$v timeout 60 $v/.gpu/build-gpu/bench/suite/bench_suite --only dg_diff_f64_N5 --out /tmp/b-$v --max-candidates 200 --time-limit 45 --worker $PWD/$v/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $o/bench-$v.log 2>&1
  rc=$?; cp /tmp/b-$v/bench.json $o/bench-$v.json 2>/dev/null; stamp "bench $v rc $rc"
done
