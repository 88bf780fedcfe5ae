#!/usr/bin/env bash
# Session 60, call 3 (one H200), probe tree s60b (s60a + RTCG_PROBE_INSIDE: no bounds on the cp.async copies and the
# epilogue's points where the tiles and steps divide the domain): the f64 DG rows by rtcgc run with and without it
# (verified, median of 30, L2 flushed; cublasDgemm by CuPy), then Nsight Compute's per-instruction stall sampling
# of N7's winner with it.
set -uo pipefail
P=$PWD/.probe-me; S=$P/s60; O=$OUT/c3; mkdir -p $O
mkdir -p $P/m; tar -C $P/m -xJf $S/s60b.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
R=$P/m/s60b/rtcgc; F=$S/dgdiff64.rtcg; TP="persistent pingpong resident a fragments 2"
run() { echo "== $1 K=$2 Np=$3 $4" >> $O/byhand.txt; RTCG_CACHE_DIR=/tmp/c3 timeout 60 env $1 $R run $F -D K=$2 -D Np=$3 -s "$4" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt; }
for i in 1 2; do
python3 $S/cublas64t.py 120 >> $O/byhand.txt
for pv in RTCG_PROBE_INSIDE=1 RTCG_NONE=0; do
  run $pv 100000 120 "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP"
  run $pv 100000 120 "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 24 stages 4 $TP"
done
python3 $S/cublas64t.py 56 >> $O/byhand.txt
for pv in RTCG_PROBE_INSIDE=1 RTCG_NONE=0; do run $pv 100000 56 "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4 $TP"; done
python3 $S/cublas64t.py 20 >> $O/byhand.txt
for pv in RTCG_PROBE_INSIDE=1 RTCG_NONE=0; do run $pv 100000 20 "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20"; done
done
run RTCG_PROBE_INSIDE=1 100003 120 "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP"
run RTCG_PROBE_INSIDE=1 99984 120 "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP"
RTCG_PROBE_INSIDE=1 RTCG_CACHE_DIR=/tmp/c3n timeout 300 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source no -o $O/n7 $R run $F -D K=100000 -D Np=120 -s "stores: streaming; mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 $TP" --repeats 1 > $O/ncu-log.txt 2>&1
ncu -i $O/n7.ncu-rep --page source --csv --print-source sass > $O/n7-source.csv 2> $O/n7-source.err
ncu -i $O/n7.ncu-rep --page details > $O/n7-details.txt 2>&1
grep -E "==|time|cublas|rror" $O/byhand.txt | sed 's/ (median of 30, L2 flushed)//; s/persistent pingpong resident a fragments 2/PP/' | cut -c1-150
wc -l $O/n7-source.csv; head -c 600 $O/n7-source.err; grep -E "Duration|Compute \(SM\)|Warp Cycles Per Issued" $O/n7-details.txt
tar -C $OUT -czf $OUT/c3.tgz c3 && rm -rf $O
