#!/usr/bin/env bash
# Session 43 call 1: merged main (f896829+) on one H200: f64 DG double2 persistent form under
# compute-sanitizer, searches of the f64 DG rows and fp64x DGEMM rows (wrong-candidate counts), by-hand runs.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o; mkdir -p $o; t0=$(date +%s); stamp() { echo "$(( $(date +%s) - t0 )) s: $*" >> $o/timeline.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/device.txt
cat > /tmp/dg64.rtcg <<'K'
kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
K
S=/usr/local/cuda/bin/compute-sanitizer
san() {  # np K schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool Np=$1 K=$2 $3" >> $o/sanitize.txt
    RTCG_CACHE_DIR=/tmp/rc timeout 60 $S --tool $tool --error-exitcode 9 $R run /tmp/dg64.rtcg -D K=$2 -D Np=$1 --repeats 1 -s "$3" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel|MISMATCH|error" | tail -3 >> $o/sanitize.txt
    echo "rc ${PIPESTATUS[0]}" >> $o/sanitize.txt
  done
}
san 56 20011 "mma: f64 m16n8k4 warps 2x2 tile 4x2 k 8 stages 3 persistent resident a fragments 2"
san 35 7919 "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 3 persistent resident a fragments 2"
san 20 7919 "mma: f64 m16n8k8 warps 2x2 tile 2x2 k 8 stages 2 persistent resident b fragments 2"
stamp sanitize
bench() {  # rows candidates seconds tag limit
  RTCG_CACHE_DIR=$(mktemp -d) timeout $5 $B --only $1 --out /tmp/b-$4 --max-candidates $2 --time-limit $3 --worker $W > $o/bench-$4.log 2>&1
  stamp "bench $4 rc $?"; cp /tmp/b-$4/bench.json $o/bench-$4.json 2>/dev/null
}
bench dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 200 45 f64 200
bench dgemm_fp64x_4096,dgemm_fp64x_8192 40 40 fp64x 150
tar -czf $OUT/call1.tgz -C /tmp o
