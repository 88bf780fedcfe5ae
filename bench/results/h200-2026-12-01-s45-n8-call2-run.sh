#!/usr/bin/env bash
# Session 45 helper n8, call 2 (one H200): branch n8 with the thread-copied A ring's final model
# and the copying threads' wait for the split they overwrite. By hand (median of 30): N = 8 new
# form against the old winners, both kernels; compute-sanitizer at K = 5003 (no element tile
# divides it, Np = 165 no step does); Nsight Compute's stall sources on the new form; bench_suite's
# searches of the N8 and N7 rows (48 candidates, 12 s, cuBLAS in the same process).
set -uo pipefail
tar -xJf .probe-n8/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=/tmp/o2; rm -rf $o; mkdir -p $o
export RTCG_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt
P="swizzle 128 tma producer persistent"
N1="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
N2="mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $P pingpong resident a"
for fs in "dg_diff|$N1" "dg_diff|mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128" \
          "dg_diff_stacked|$N1" "dg_diff_stacked|mma: tf32x3 wgmma m64n64k8 warpgroups 2x2 k 32 stages 3 swizzle 128"; do
  f=${fs%%|*}; s=${fs#*|}
  echo "== $f N8 $s" >> $o/byhand.txt
  timeout 60 $R run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
done
for ts in "racecheck|dg_diff|$N1" "memcheck|dg_diff_stacked|$N2" "racecheck|dg_diff_stacked|$N2" "synccheck|dg_diff_stacked|$N2"; do
  t=${ts%%|*}; r=${ts#*|}; f=${r%%|*}; s=${r#*|}
  echo "== $t $f K=5003 Np=165 $s" >> $o/sanitize.txt
  timeout 60 compute-sanitizer --tool $t --error-exitcode 9 $R run examples/$f.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$s" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
timeout 60 $NCU --section WarpStateStats --section SourceCounters --section SpeedOfLight --kernel-name regex:dg_diff --launch-skip 1 --launch-count 1 $R run examples/dg_diff.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$N1" --repeats 2 > $o/ncu-dg_diff-n8-sources.txt 2>&1
timeout 240 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_diff_tf32x3_N7,dg_diff_stacked_tf32x3_N7 --out /tmp/b2 --max-candidates 48 --time-limit 12 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b2/bench.json $o/bench.json 2>/dev/null
tar -czf $OUT/call2.tgz -C $o .
