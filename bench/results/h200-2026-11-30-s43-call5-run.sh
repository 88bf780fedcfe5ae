#!/usr/bin/env bash
# Session 43 call 5 (one H200): merged main (08448bc) on the f64 DG rows (bench_suite, 200
# candidates) and compute-sanitizer on the N5 persistent form with its bound.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o5; rm -rf $o; mkdir -p $o
cat > /tmp/dg64.rtcg <<'K'
kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
K
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 $B --only dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 --out /tmp/b5 --max-candidates 200 --time-limit 45 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b5/bench.json $o/ 2>/dev/null
S="mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2"
for tool in memcheck racecheck synccheck; do
  echo "== $tool Np=56 K=20011 $S" >> $o/sanitize.txt
  RTCG_CACHE_DIR=/tmp/rc timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 9 $R run /tmp/dg64.rtcg -D K=20011 -D Np=56 --repeats 1 -s "$S" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rel|MISMATCH|error" | tail -3 >> $o/sanitize.txt
  echo "rc ${PIPESTATUS[0]}" >> $o/sanitize.txt
done
grep -A4 "^workload" $o/bench.log; grep "search done" $o/bench.log | sed -E 's/: [0-9]+ candidates \(/ (/' | cut -c1-200; cat $o/sanitize.txt
tar -czf $OUT/call5.tgz -C /tmp o5
