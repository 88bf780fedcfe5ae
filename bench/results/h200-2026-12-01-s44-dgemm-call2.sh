#!/bin/bash
# Session 44 helper dgemm, call 2: main's build (old) and the branch's (new) in one call:
# fixed schedules by rtcgc run (warm pass, then timed), then bench_suite rows, cuBLAS in the same process.
cd "$(dirname "$0")/../.."
for b in old new; do mkdir -p /tmp/$b && tar -xJf .probe/dgemm/$b.tar.xz -C /tmp/$b; done
export LD_LIBRARY_PATH=/tmp/new/.gpu/lib:/usr/local/cuda/lib64
O=$OUT/c2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt
run() { # build n schedule
  /tmp/$1/.gpu/build-gpu/tools/rtcgc/rtcgc run examples/dgemm.rtcg -D n=$2 -s "$3" --repeats 30 2>&1 | grep -E "time|rror|refus|ok$|spill" | sed "s#^#$1 n=$2 | $3 | #"
}
B2048=("mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 epilogue shared")
H2048=(
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
"mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k8 warps 2x2 tile 4x4 k 8 stages 3 fragments 2 copies hoisted"
"blocks_per_sm: 2; mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 4 fragments 2 copies hoisted"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 16 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k8 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared"
)
B1000=("blocks_per_sm: 2; mma: f64 m16n8k16 warps 2x4 tile 2x2 k 16 stages 4 epilogue shared")
H1000=(
"mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k4 warps 4x2 tile 2x4 k 8 stages 3 fragments 2 copies hoisted"
"mma: f64 m16n8k8 warps 4x2 tile 2x4 k 16 stages 3 fragments 2 copies hoisted"
"blocks_per_sm: 2; mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
"mma: f64 m16n8k16 warps 2x4 tile 2x2 k 16 stages 4 fragments 2 copies hoisted epilogue shared"
)
( for pass in warm timed; do echo "=== $pass"
  for s in "${B2048[@]}"; do run old 2048 "$s"; run new 2048 "$s"; done
  for s in "${H2048[@]}"; do run new 2048 "$s"; done
  for s in "${B1000[@]}"; do run old 1000 "$s"; run new 1000 "$s"; done
  for s in "${H1000[@]}"; do run new 1000 "$s"; done
done ) > $O/runs.txt 2>&1
for b in old new; do
  /tmp/$b/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048,dgemm_4096 --out $O/bench-$b --max-candidates 48 --time-limit 12 --worker /tmp/$b/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench-$b.log 2>&1
  cp $O/bench-$b/bench.json $O/bench-$b.json; rm -rf $O/bench-$b
done
cd $OUT && tar -czf c2.tgz c2 && rm -rf c2
