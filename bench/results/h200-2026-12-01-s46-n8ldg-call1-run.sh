#!/usr/bin/env bash
# Session 46 helper n8ldg, call 1 (one H200): branch n8ldg (A of the thread-copied ring by the
# producer's plain loads under tf32x3, MmaPlan::aByLoads) against merged main 8252c79 (the threads'
# cp.async and the splitters' pass; rtcgc-old) by hand, same schedules, median of 30, L2 flushed;
# bench_suite's searches of the N8 and N7 rows (48 candidates, 12 s, cuBLAS in the same process);
# compute-sanitizer at K = 5003 (no element tile of 64 divides it), Np = 165 (no step of 32 does).
set -uo pipefail
tar -xJf .probe-n8ldg/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; RO=$PWD/.gpu/rtcgc-old
W=$PWD/build-gpu/tools/rtcg-worker/rtcg-worker; B=$PWD/build-gpu/bench/suite/bench_suite
o=$OUT  # written as it goes: what ran comes back if the call is cut short
export RTCG_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt
P="swizzle 128 tma producer persistent"
N1="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a"
N2="mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 $P pingpong resident a"
timeout 150 $B --only dg_diff_tf32x3_N8,dg_diff_stacked_tf32x3_N8,dg_diff_tf32x3_N7,dg_diff_stacked_tf32x3_N7 --out /tmp/b1 --max-candidates 48 --time-limit 12 --worker $W > $o/bench.log 2>&1
echo "bench rc=$?" >> $o/bench.log; cp /tmp/b1/bench.json $o/bench.json 2>/dev/null
for fs in "dg_diff|$N1" "dg_diff_stacked|$N1" "dg_diff_stacked|$N2"; do
  f=${fs%%|*}; s=${fs#*|}
  for v in old new; do
    X=$R; [ $v = old ] && X=$RO
    echo "== $v $f N8 $s" >> $o/byhand.txt
    timeout 40 $X run examples/$f.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$s" --repeats 30 >> $o/byhand.txt 2>&1; echo "rc=$?" >> $o/byhand.txt
  done
done
for ts in "memcheck|dg_diff|$N1" "racecheck|dg_diff|$N1" "synccheck|dg_diff|$N1" "memcheck|dg_diff_stacked|$N1" "racecheck|dg_diff_stacked|$N1" "synccheck|dg_diff_stacked|$N2"; do
  t=${ts%%|*}; r=${ts#*|}; f=${r%%|*}; s=${r#*|}
  echo "== $t $f K=5003 Np=165 $s" >> $o/sanitize.txt
  timeout 45 compute-sanitizer --tool $t --error-exitcode 9 $R run examples/$f.rtcg -D K=5003 -D Np=165 --precision tf32x3 -s "$s" --repeats 1 >> $o/sanitize.txt 2>&1; echo "rc=$?" >> $o/sanitize.txt
done
ls $o
