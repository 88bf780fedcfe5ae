#!/usr/bin/env bash
# Session 50, call 1 (one H200): compute-sanitizer on 083170d's dg_diff N8 pingpong setmaxnreg form (K = 5003), then Nsight
# Compute's per-instruction stall samples of the N8 pingpong forms (dg_diff, dg_diff_stacked; K = 101556, Np = 165).
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/cur/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d1; mkdir -p $O
R=$P/m/cur/rtcgc; T="swizzle 128 tma producer persistent"
S="mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
san() { # file sizes schedule
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $1 $2 | $3" >> $O/sanitizer.txt
    RTCG_CACHE_DIR=/tmp/d1s timeout 150 compute-sanitizer --tool $tool $R run $P/$1.rtcg $2 --precision tf32x3 -s "$3" --repeats 1 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rel [0-9]|rror" | grep -v "again after" >> $O/sanitizer.txt
  done
}
san dgdiff "-D K=5003 -D Np=165" "$S"
san dgdiff "-D K=5003 -D Np=165" "stores: streaming; $S"
prof() { # name file schedule
  RTCG_CACHE_DIR=/tmp/d1p timeout 200 ncu --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active -o $O/$1 \
    $R run $P/$2.rtcg -D K=101556 -D Np=165 --precision tf32x3 -s "$3" --repeats 5 > $O/$1-run.txt 2>&1
  ncu -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/$1-sass.csv 2>&1
  ncu -i $O/$1.ncu-rep --page details > $O/$1-details.txt 2>&1
}
prof dgdiff dgdiff "stores: streaming; $S"
prof stacked stacked "stores: streaming; $S"
grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" $O/sanitizer.txt
ls -la $O; head -3 $O/dgdiff-sass.csv | cut -c1-600; grep -E "time|hmma" $O/*-run.txt $O/*-details.txt | head
