#!/usr/bin/env bash
# Session 43, helper f64occ, call 1: main (de5de1c) against branch f64occ on one H200. By hand (median
# of 30) the f64 DG persistent forms whose grid the branch sizes by the ring's register floor, old
# and new build; stores: streaming on N3's forms; compute-sanitizer on a changed form; the three
# rows' searches with the branch's build.
set -uo pipefail
o=/tmp/o; mkdir -p $o old new
tar -xJf .probe/f64occ/old.tar.xz -C old; tar -xJf .probe/f64occ/new.tar.xz -C new
export LD_LIBRARY_PATH=$PWD/new/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $o/timeline.txt; tar -czf $OUT/call1.tgz -C /tmp o; }
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
hand "old new" 56 "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $P"
hand "old new" 56 "mma: f64 m16n8k4 warps 2x2 tile 4x2 k 8 stages 3 $P"
hand "old new" 56 "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 $P"
hand "new" 56 "stores: streaming; mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $P"
hand "old new" 20 "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 $P"
hand "old new" 20 "mma: f64 m16n8k4 warps 2x2 tile 2x2 k 8 stages 3 $P"
hand "new" 20 "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 $P"
hand "new" 20 "mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3"
hand "new" 20 "stores: streaming; mma: f64 m16n8k16 warps 2x4 tile 2x4 k 16 stages 3"
stamp hand
B=new/.gpu/build-gpu/bench/suite/bench_suite; W=$PWD/new/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker
RTCG_CACHE_DIR=/tmp/rc-bench timeout 170 $B --only dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 --out /tmp/b-new --max-candidates 200 --time-limit 45 --worker $W > $o/bench-new.log 2>&1
rc=$?; cp /tmp/b-new/bench.json $o/bench-new.json 2>/dev/null; stamp "bench rc $rc"
S=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  echo "== $tool Np=56 K=20011" >> $o/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc-san timeout 45 $S --tool $tool --error-exitcode 9 new/.gpu/build-gpu/tools/rtcgc/rtcgc run /tmp/dg64.rtcg -D K=20011 -D Np=56 --repeats 1 -s "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 $P" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel|MISMATCH|error|grid" | tail -4 >> $o/sanitize.txt
  echo "rc ${PIPESTATUS[0]}" >> $o/sanitize.txt
done
stamp sanitize
