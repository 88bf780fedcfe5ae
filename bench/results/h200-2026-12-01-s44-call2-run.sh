#!/usr/bin/env bash
# Session 44 call 2 (one H200): merged main (4410471: fp64x where it pays, side41, dgemm).
# bench_suite searches (48 candidates, 12 s) of the native DGEMM and f64 DG rows with the final
# model; dgemm_fp64x 4096/8192 under side41's final schedule files; compute-sanitizer on the new
# forms (copies hoisted at n = 1003; fp64x's fused scale and residues of A at n = 1296).
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o2; rm -rf $o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
RTCG_CACHE_DIR=$(mktemp -d) timeout 200 $B --only dgemm_1000,dgemm_2048,dgemm_4096,dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 --out /tmp/b2 --max-candidates 48 --time-limit 12 --worker $W > $o/bench-native.log 2>&1
echo "bench rc=$?" >> $o/bench-native.log; cp /tmp/b2/bench.json $o/bench-native.json 2>/dev/null
S4=bench/results/h200-2026-12-01-s44-side41-schedule-4096-final.json; S8=bench/results/h200-2026-12-01-s44-side41-schedule-8192-final.json
RTCG_CACHE_DIR=$(mktemp -d) timeout 150 $B --only dgemm_fp64x_4096,dgemm_fp64x_8192 --schedules $S4 $S8 --out /tmp/b3 --worker $W > $o/bench-fp64x.log 2>&1
echo "bench rc=$?" >> $o/bench-fp64x.log; cp /tmp/b3/bench.json $o/bench-fp64x.json 2>/dev/null
H="mma: f64 m16n8k8 warps 4x2 tile 2x4 k 16 stages 4 fragments 2 copies hoisted epilogue shared"
F=$(python3 -c "import json;print(json.load(open('$S4'))['workloads'][0]['schedule'])")
for tool in memcheck racecheck synccheck; do
  echo "== $tool dgemm n=1003 $H" >> $o/sanitize.txt
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $R run examples/dgemm.rtcg -D n=1003 --schedule "$H" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
  echo "== $tool dgemm fp64x n=1296 fused A (kernel dgemm_0 only)" >> $o/sanitize.txt
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=dgemm_0 $R run examples/dgemm.rtcg -D n=1296 --precision fp64x --schedule "$F" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
tar -czf $OUT/call2.tgz -C $o .
