#!/usr/bin/env bash
# Session 46 helper n8ldg, call 2 (one H200): branch n8ldg cb724ce (the plain-load copy's rates
# fitted to call 1). bench_suite's searches of the N8 and N7 rows again with the final model (48
# candidates, 12 s, cuBLAS in the same process); by hand (median of 30, L2 flushed) call 1's new
# winners against merged main 8252c79 (rtcgc-old: the threads' cp.async and the splitters' pass).
set -uo pipefail
tar -xJf .probe-n8ldg/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; RO=$PWD/.gpu/rtcgc-old
W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=$OUT  # written as it goes: what ran comes back if the call is cut short
export RTCG_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt
timeout 150 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_diff_tf32x3_N7,dg_diff_stacked_tf32x3_N7 --out /tmp/b2 --max-candidates 48 --time-limit 12 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b2/bench.json $o/bench.json 2>/dev/null
P="swizzle 128 tma producer persistent"
D1="mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $P resident a"
S1="stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
for fs in "dg_diff|$D1" "dg_diff_stacked|$S1"; do
  f=${fs%%|*}; s=${fs#*|}
  for v in old new; do
    X=$R; [ $v = old ] && X=$RO
    echo "== $v $f N8 $s" >> $o/byhand.txt
    timeout 40 $X run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
  done
done
echo "== memcheck dg_diff K=5003 Np=165 $D1" >> $o/sanitize.txt
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$D1" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
echo "== racecheck dg_diff K=5003 Np=165 $D1" >> $o/sanitize.txt
timeout 45 compute-sanitizer --tool racecheck --error-exitcode 9 $R run examples/dg_diff.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$D1" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
ls $o
