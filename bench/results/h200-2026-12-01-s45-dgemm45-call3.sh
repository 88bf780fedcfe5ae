#!/bin/bash
# dgemm45 call 3: main's build (old, 937aeef) against the branch's two finals in one call: A (the split
# hoisted loops; the shared epilogue as main's) and B (A with the f64 shared epilogue's store loop left
# to NVCC's unrolling). bench_suite's dgemm rows for each (48 candidates, 12 s, cublasDgemm in the same
# process), A's and B's winners again from their databases (--use-db), the winners by hand (rtcgc run,
# median of 30, L2 flushed, verified), compute-sanitizer on the new forms at sizes no tile / step divides.
set -uo pipefail
cd "$(dirname "$0")/.."
for b in old A B; do mkdir -p /tmp/$b; done
tar -xJf .probe-dgemm45main/pack.tar.xz -C /tmp/old; tar -xJf .probe-dgemm45/pack.tar.xz -C /tmp/A; tar -xJf .probe-dgemm45/packB.tar.xz -C /tmp/B
export LD_LIBRARY_PATH=/tmp/A/.gpu/lib:/usr/local/cuda/lib64
O=/tmp/c3; mkdir -p $O
save() { tar -czf $OUT/c3.tgz -C /tmp c3; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; for b in old A B; do echo "$b $(cat /tmp/$b/.gpu/commit | tr '\n' ' ')"; done; } > $O/gpu.txt 2>&1
bench() {  # build, label, options...
  local b=$1 l=$2; shift 2
  timeout 70 /tmp/$b/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048,dgemm_4096 --out /tmp/bench-$b "$@" --worker /tmp/$b/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-$l.log 2>&1
  echo "rc=$?" >> $O/bench-$l.log; cp /tmp/bench-$b/bench.json $O/bench-$l.json; save
}
for b in old A B; do bench $b $b --max-candidates 48 --time-limit 12; done
for b in B A; do bench $b $b-again --use-db; done
W="mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages"
run() { /tmp/$1/.gpu/build-gpu/tools/rtcgc/rtcgc run ${4:-examples/dgemm.rtcg} $2 -s "$3" --repeats 30 2>&1 | grep -E "time|rror|refus| ok|mismatch" | sed "s#^#$1 $2 | $3 | #"; }
{
echo "=== warm"; for b in old A B; do run $b "-D n=2048" "stores: streaming; $W 4 fragments 2 copies hoisted epilogue shared"; done
echo "=== timed"
for b in old A B; do
  run $b "-D n=2048" "stores: streaming; $W 4 fragments 2 copies hoisted epilogue shared"
  run $b "-D n=2048" "stores: streaming; $W 3 fragments 2 copies hoisted epilogue shared"
  run $b "-D n=1000" "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
  run $b "-D n=4096" "$W 4 fragments 2 copies hoisted epilogue shared"
done
} > $O/runs.txt 2>&1
save
R=/tmp/B/.gpu/build-gpu/tools/rtcgc/rtcgc
{
for tool in memcheck racecheck; do
  for args in "examples/dgemm.rtcg -D n=1003" ".probe-dgemm45/rect64.rtcg -D m=256 -D n=256 -D kk=1003"; do
    echo "=== B $tool $args"
    timeout 40 compute-sanitizer --tool $tool $R run $args -s "$W 4 fragments 2 copies hoisted epilogue shared" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel |Invalid" | head -8
  done
done
} > $O/sanitizer.txt 2>&1
save
