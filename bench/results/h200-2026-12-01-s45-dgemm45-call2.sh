#!/bin/bash
# dgemm45 call 2: main's build (old, 937aeef) against the branch's (new) in one call. By hand (rtcgc run,
# median of 30, L2 flushed, verified against the float64 reference): the rows' winners, warm pass first;
# the new forms at sizes no tile divides / no step divides. Then bench_suite's dgemm rows (48 candidates,
# 12 s, cublasDgemm in the same process) for each build, the branch's winners again from its database
# (--use-db), its f64 DG rows, and compute-sanitizer memcheck / racecheck on the new forms.
set -uo pipefail
cd "$(dirname "$0")/.."
for b in old new; do mkdir -p /tmp/$b; done
tar -xJf .probe-dgemm45main/pack.tar.xz -C /tmp/old; tar -xJf .probe-dgemm45/pack.tar.xz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/.gpu/lib:/usr/local/cuda/lib64
O=$OUT/c2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/gpu.txt 2>&1
cat /tmp/old/.gpu/commit >> $O/gpu.txt
export RTCG_CACHE_DIR=$(mktemp -d)
run() { /tmp/$1/.gpu/build-gpu/tools/rtcgc/rtcgc run ${4:-examples/dgemm.rtcg} $2 -s "$3" --repeats 30 2>&1 | grep -E "time|rror|refus|spill| ok|mismatch|FAIL" | sed "s#^#$1 $2 | $3 | #"; }
W2="mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
{
echo "=== warm"; run old "-D n=2048" "$W2"; run new "-D n=2048" "$W2"
echo "=== timed"
for b in old new; do
  run $b "-D n=2048" "stores: streaming; $W2"
  run $b "-D n=2048" "$W2"
  run $b "-D n=2048" "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared"
  run $b "-D n=4096" "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted"
  run $b "-D n=1000" "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
done
for b in new old; do run $b "-D n=2048" "stores: streaming; $W2"; done
echo "=== new forms off the tiles"
run new "-D n=1003" "$W2"
run new "-D m=256 -D n=256 -D kk=1003" "$W2" .probe-dgemm45/rect64.rtcg
run new "-D m=384 -D n=192 -D kk=999" "mma: f64 m16n8k8 warps 2x2 tile 4x4 k 16 stages 3 fragments 2 copies hoisted" .probe-dgemm45/rect64.rtcg
} > $O/runs.txt 2>&1
for b in old new; do
  export RTCG_CACHE_DIR=$(mktemp -d)
  timeout 150 /tmp/$b/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048,dgemm_4096 --out /tmp/bench-$b --max-candidates 48 --time-limit 12 --worker /tmp/$b/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-$b.log 2>&1
  echo "rc=$?" >> $O/bench-$b.log; cp /tmp/bench-$b/bench.json $O/bench-$b.json
  if [ $b = new ]; then
    timeout 60 /tmp/new/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048,dgemm_4096 --out /tmp/bench-new --use-db --worker /tmp/new/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-new-again.log 2>&1
    echo "rc=$?" >> $O/bench-new-again.log; cp /tmp/bench-new/bench.json $O/bench-new-again.json
  fi
done
export RTCG_CACHE_DIR=$(mktemp -d)
timeout 100 /tmp/new/.gpu/build-gpu/bench/suite/bench_suite --only dg_diff_f64_N3,dg_diff_f64_N5,dg_diff_f64_N7 --out /tmp/bench-dg --max-candidates 48 --time-limit 12 --worker /tmp/new/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-dg-new.log 2>&1
echo "rc=$?" >> $O/bench-dg-new.log; cp /tmp/bench-dg/bench.json $O/bench-dg-new.json
R=/tmp/new/.gpu/build-gpu/tools/rtcgc/rtcgc
{
for tool in memcheck racecheck; do
  echo "=== $tool rect64 m=256 n=256 kk=1003 $W2"
  timeout 60 compute-sanitizer --tool $tool $R run .probe-dgemm45/rect64.rtcg -D m=256 -D n=256 -D kk=1003 -s "$W2" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel |Invalid|error" | head -20
  echo "=== $tool dgemm n=1003 $W2"
  timeout 60 compute-sanitizer --tool $tool $R run examples/dgemm.rtcg -D n=1003 -s "$W2" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel |Invalid|error" | head -20
done
} > $O/sanitizer.txt 2>&1
cd $OUT && tar -czf c2.tgz c2 && rm -rf c2
