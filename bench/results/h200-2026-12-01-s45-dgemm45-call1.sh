#!/bin/bash
# dgemm45 call 1: hand-edited variants of the n = 2048 winner's emitted CUDA (flags: g guard-free copies with
# carried sources and a split loop, e 16-byte unguarded epilogue, u the loop unrolled by the 4 stages, s
# streaming stores; w_ 128x128 8 warps, h_ 128x64 4 warps 2 blocks/SM) against torch.matmul (cublasDgemm), then ncu.
cd "$(dirname "$0")/../.."
O=$OUT/c1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/gpu.txt 2>&1
W=16,16:256:135168; H=32,16:128:69632
python3 .probe-dgemm45/proto/harness.py w_0:$W w_g:$W w_ge:$W w_geu:$W w_geus:$W w_gu:$W h_0:$H h_ge:$H h_geu:$H > $O/harness.txt 2>&1
python3 .probe-dgemm45/proto/harness.py w_0:$W w_geu:$W w_ge:$W > $O/harness2.txt 2>&1
ONCE=1 timeout 200 ncu --kernel-name dgemm_0 --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy python3 .probe-dgemm45/proto/harness.py w_0:$W w_ge:$W w_geu:$W > $O/ncu.txt 2>&1
cd $OUT && tar -czf c1.tgz c1 && rm -rf c1
