#!/usr/bin/env bash
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; chmod +x $P/m/main/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/main/rtcgc; export RTCG_CACHE_DIR=/tmp/cc1; O=$OUT/c1; mkdir -p $O
F=$P/dg64.rtcg
W="mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2"
for s in "$W" "stores: streaming; $W" "mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 4 persistent resident a fragments 2" "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 4 fragments 2" "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"; do
  echo "== N5 $s" >> $O/byhand.txt
  timeout 60 $R run $F -D K=100000 -D Np=56 -s "$s" --repeats 30 >> $O/byhand.txt 2>&1
done
$R emit $F -D K=100000 -D Np=56 -s "$W" > $O/n5.cu 2>&1
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --launch-count 1 -k regex:dg_diff \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy \
  --section WarpStateStats --section InstructionStats --section SchedulerStats --section ComputeWorkloadAnalysis \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_write.sum" \
  $R run $F -D K=100000 -D Np=56 -s "$W" --repeats 2 > $O/ncu-n5.txt 2>&1
tar -C $OUT -czf $OUT/c1.tgz c1; rm -rf $O
