#!/usr/bin/env bash
# Profiles cuBLAS's FP32 SGEMM (through PyTorch, TF32 off) at size n with Nsight Compute on the
# GPU machine, for comparison with scripts/gpu-ncu.sh's profile of rtcg's kernel: kernel name,
# launch shape, registers, throughputs and warp stalls. Full report in $OUT/ncu-cublas-N.txt.
#
#   scripts/gpu-ncu-peer.sh 4096
set -uo pipefail
n=${1:?usage: scripts/gpu-ncu-peer.sh N}
out=${OUT:-$(pwd)/gpu-out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
cat >/tmp/rtcg-peer-mm.py <<PY
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn($n, $n, device="cuda")
b = torch.randn($n, $n, device="cuda")
for _ in range(3):
    c = a @ b
torch.cuda.synchronize()
PY
# The third product: cuBLAS's heuristics have settled and its workspace exists.
"$ncu" --clock-control none -k 'regex:gemm|Kernel|xmma' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats \
  --section SchedulerStats \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  python3 /tmp/rtcg-peer-mm.py >"$out/ncu-cublas-$n.txt" 2>&1 || echo "gpu-ncu-peer: ncu failed" >&2
echo "== ncu cuBLAS n=$n"
grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Registers Per|Block Size|Grid Size|Shared Memory Configuration Size|Static Shared|Dynamic Shared|Achieved Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|Eligible Warps|DRAM Throughput|issue_stalled" "$out/ncu-cublas-$n.txt" | head -60
