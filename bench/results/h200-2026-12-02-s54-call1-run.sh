#!/usr/bin/env bash
# Session 54, call 1 (one H200). (1) dg_diff N8: what makes its epilogue 14% slower than the stacked
# kernel's: the emitted module (7210565) with its outputs in three allocations / one allocation / one
# array of rows of 501 (p501.py), and both kernels with the stores' traffic removed (sink.py);
# harness.py, three rounds. (2) f64 DG N3 / N7 (issues 36, 41): the winners by hand, Nsight Compute
# on each and on cublasDgemm's call for the same product; bench_suite's fp64x and f64 rows.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s54; O=$OUT/c1; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
cd $S
ROUNDS=3 timeout 300 python3 harness.py stacked.cubin:stacked dg_diff.cubin:dgdiff dg_diff.cubin:dgdiffone dg_diff-p501.cubin:dgdiff501 \
  dg_diff-sink.cubin:dgdiff stacked-sink.cubin:stacked 2>&1 | tee $O/probe.txt
R=$P/m/cur/rtcgc; F=$S/dg64.rtcg
W3="mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared"
W7="stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 4 persistent resident a fragments 2"
for i in 1 2; do
  echo "== N3 $W3" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1h timeout 60 $R run $F -D K=100000 -D Np=20 -s "$W3" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
  echo "== N7 $W7" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1h timeout 60 $R run $F -D K=100000 -D Np=120 -s "$W7" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" >> $O/byhand.txt
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats --section ComputeWorkloadAnalysis"
MET="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp64.sum,lts__t_sectors_srcunit_tex_op_write.sum"
RTCG_CACHE_DIR=/tmp/c1n timeout 150 $ncu --clock-control none --launch-count 1 -k regex:dg_diff $SEC $MET $R run $F -D K=100000 -D Np=20 -s "$W3" --repeats 2 > $O/ncu-f64n3.txt 2>&1
RTCG_CACHE_DIR=/tmp/c1n timeout 150 $ncu --clock-control none --launch-count 1 -k regex:dg_diff $SEC $MET $R run $F -D K=100000 -D Np=120 -s "$W7" --repeats 2 > $O/ncu-f64n7.txt 2>&1
timeout 150 $ncu --clock-control none -k "regex:[Gg]emm" --launch-count 4 $SEC $MET python3 cublas64.py > $O/ncu-cublas-f64.txt 2>&1
for r in ${BENCH_ROWS:-}; do
  RTCG_CACHE_DIR=/tmp/c1b timeout 120 $P/m/cur/bench_suite --only $r --out /tmp/b1$r --max-candidates 48 --time-limit 12 --worker $P/m/cur/rtcg-worker 2>&1 | grep -vE "^\s+pruned " > $O/bench-$r.log; cp /tmp/b1$r/bench.json $O/bench-$r.json
  tail -4 $O/bench-$r.log | head -1 | cut -c1-220
done
grep -E "==|time" $O/byhand.txt | cut -c1-150
grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|dram__bytes|pipe_fp64_cycles|Block Limit" $O/ncu-*.txt | cut -c1-200
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
