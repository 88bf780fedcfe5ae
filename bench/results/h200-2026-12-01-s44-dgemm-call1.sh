#!/bin/bash
# Session 44 helper dgemm, call 1: main's build, fixed schedules at n = 2048 / 1000, cuBLAS in the same call, ncu.
cd "$(dirname "$0")/../.."
mkdir -p /tmp/old && tar -xJf .probe/dgemm/main.tar.xz -C /tmp/old
export LD_LIBRARY_PATH=/tmp/old/.gpu/lib:/usr/local/cuda/lib64
R=/tmp/old/.gpu/build-gpu/tools/rtcgc/rtcgc
O=$OUT/c1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $O/gpu.txt
S2048=(
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 epilogue shared"
"mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 fragments 2"
"blocks_per_sm: 2; mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 4 fragments 2"
"mma: f64 m16n8k8 warps 2x2 tile 4x4 k 8 stages 3 fragments 2"
"mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 persistent fragments 2"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 persistent fragments 2"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 16 stages 3 fragments 2"
"mma: f64 m16n8k4 warps 4x2 tile 2x4 k 8 stages 3 fragments 2"
)
S1000=(
"blocks_per_sm: 2; mma: f64 m16n8k16 warps 2x4 tile 2x2 k 16 stages 4 epilogue shared"
"mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 fragments 2"
"mma: f64 m16n8k4 warps 4x2 tile 2x4 k 8 stages 3 fragments 2"
"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2"
"mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 3 fragments 2"
)
( for pass in warm timed; do
  for s in "${S2048[@]}"; do echo "== $pass n=2048 $s"; $R run examples/dgemm.rtcg -D n=2048 -s "$s" --repeats 30 2>&1 | grep -v "^  [abc]:" ; done
  for s in "${S1000[@]}"; do echo "== $pass n=1000 $s"; $R run examples/dgemm.rtcg -D n=1000 -s "$s" --repeats 30 2>&1 | grep -v "^  [abc]:"; done
done ) > $O/runs.txt 2>&1
/tmp/old/.gpu/build-gpu/bench/suite/bench_suite --only dgemm_1000,dgemm_2048 --out $O/bench --max-candidates 24 --time-limit 10 --worker /tmp/old/.gpu/build-gpu/tools/rtcg-worker/rtcg-worker > $O/bench.log 2>&1
cp $O/bench/bench.json $O/bench.json 2>/dev/null; rm -rf $O/bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
M=smsp__inst_executed.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__sass_inst_executed_op_ldgsts.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp64.sum,smsp__cycles_active.avg
SEC="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats"
python3 -c "import torch; a=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); b=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); [torch.mm(a,b) for _ in range(3)]; torch.cuda.synchronize()" 
timeout 120 $NCU $SEC --metrics $M --kernel-name regex:gemm --launch-skip 1 --launch-count 1 python3 -c "import torch; a=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); b=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); [torch.mm(a,b) for _ in range(3)]; torch.cuda.synchronize()" > $O/ncu-cublas.txt 2>&1
timeout 90 $NCU --section SourceCounters --page source --print-source sass --kernel-name regex:gemm --launch-skip 1 --launch-count 1 python3 -c "import torch; a=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); b=torch.randn(2048,2048,dtype=torch.float64,device='cuda'); [torch.mm(a,b) for _ in range(3)]; torch.cuda.synchronize()" > $O/ncu-cublas-sass.txt 2>&1
for i in 0 1; do timeout 90 $NCU $SEC --metrics $M --kernel-name regex:dgemm --launch-skip 3 --launch-count 1 $R run examples/dgemm.rtcg -D n=2048 -s "${S2048[$i]}" --repeats 3 > $O/ncu-rtcg-$i.txt 2>&1; done
timeout 90 $NCU --section SourceCounters --page source --print-source sass --kernel-name regex:dgemm --launch-skip 3 --launch-count 1 $R run examples/dgemm.rtcg -D n=2048 -s "${S2048[0]}" --repeats 3 > $O/ncu-rtcg-sass.txt 2>&1
cd $OUT && tar -czf c1.tgz c1 && rm -rf c1
