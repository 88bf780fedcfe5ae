#!/usr/bin/env bash
# Session 60, call 1 (one H200), probe tree s60a (main + MmaPlan::pairedK behind RTCG_PROBE_PAIRS): f64 DG N7's
# winner with paired 16-byte fragment loads, by hand against cublasDgemm in the same process (harness.py: v0 the
# emitted winner, v1 paired, v2 paired without the copies' and stores' guards, v3 v0 without them: timing
# probes valid at K = 10^5 only), then by rtcgc run (verified against the CPU reference) other forms with pairs,
# sizes no tile divides, SASS instruction counts and Nsight Compute of v0 / v1's module.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c1; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60a.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60a/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
cd $S && python3 harness.py v0=v0.cu:186624 v1=v1.cu:176640 v2=v2.cu:176640 v3=v3.cu:186624 > $O/harness.txt 2>&1; cd - >/dev/null
run() { echo "== $1 K=$2 Np=$3 $4" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c1 timeout 60 env $1 $R run $F -D K=$2 -D Np=$3 -s "$4" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
python3 $S/cublas64t.py 120 >> $O/byhand.txt
for pv in RTCG_PROBE_PAIRS=1 RTCG_NONE=0; do
  for g in "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3" "m16n8k8 warps 4x3 tile 1x5 k 24 stages 4" "m16n8k8 warps 4x5 tile 1x3 k 24 stages 4" "m16n8k8 warps 4x5 tile 1x3 k 40 stages 3" "m16n8k8 warps 2x3 tile 2x5 k 40 stages 3" "m16n8k8 warps 3x3 tile 2x5 k 40 stages 3"; do
    run $pv 100000 120 "stores: streaming; mma: f64 $g $TP"
  done
done
python3 $S/cublas64t.py 56 >> $O/byhand.txt
for pv in RTCG_PROBE_PAIRS=1 RTCG_NONE=0; do
  for g in "m16n8k8 warps 4x1 tile 1x7 k 8 stages 4" "m16n8k8 warps 4x1 tile 1x7 k 16 stages 3"; do run $pv 100000 56 "mma: f64 $g $TP"; done
done
run RTCG_PROBE_PAIRS=1 100003 120 "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP"
run RTCG_PROBE_PAIRS=1 77777 37 "mma: f64 m16n8k8 warps 4x2 tile 1x2 k 16 stages 3 $TP"
run RTCG_PROBE_PAIRS=1 5003 45 "mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 fragments 2"
for v in v0 v1; do
  $R emit $F -D K=100000 -D Np=120 --max-shared 232448 --multiprocessors 132 --arch sm_90 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP" --cubin -o $O/$v.cubin $( [ $v = v1 ] && echo "" ) 2>&1 | tail -1
done
RTCG_PROBE_PAIRS=1 $R emit $F -D K=100000 -D Np=120 --max-shared 232448 --multiprocessors 132 --arch sm_90 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP" --cubin -o $O/v1.cubin 2>&1 | tail -1
for v in v0 v1; do cuobjdump -sass $O/$v.cubin > $O/$v.sass 2>&1; echo "$v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $O/$v.sass) instructions, DMMA $(grep -c DMMA $O/$v.sass), LDS $(grep -c 'LDS' $O/$v.sass)"; done > $O/sass-counts.txt
for v in v0 v1; do
  env $( [ $v = v1 ] && echo RTCG_PROBE_PAIRS=1 || echo RTCG_NONE=0 ) RTCG_CACHE_DIR=/tmp/c1n timeout 200 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP" --repeats 1 > $O/ncu-$v.txt 2>&1
done
cat $O/harness.txt; grep -E "==|time|cublas|rel [0-9]|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//; s/persistent pingpong resident a fragments 2/PP/' | cut -c1-150; cat $O/sass-counts.txt
for v in v0 v1; do echo "-- ncu $v"; grep -E "Duration|Issue Slots Busy|Executed Ipc A|L1/TEX Cache Throughput|Compute \(SM\)|Warp Cycles Per Issued|Registers Per" $O/ncu-$v.txt; grep -A3 "Est. Local Speedup" $O/ncu-$v.txt | grep -E "cycles being stalled" | head -4; done
tar -C $OUT -czf $OUT/c1.tgz c1 && rm -rf $O
