#!/usr/bin/env bash
# Session 52, call 6 (one H200): the committed build (one statement's odd rows from pointers declared once a tile;
# dg_diff's stacked statements as in d1ab29a): scripts/gpu-check.sh's odd-row lines (K = 77777: a last M tile of
# 17 rows; verified against the CPU reference, exit 5 on a mismatch) and the stacked rows at sizes no tile divides
# (Np = 35: one N tile of 105 columns; K = 5003), then the stacked N8 row's search again (bench_suite, 48 candidates).
set -uo pipefail
P=$PWD/.probe-me; E=$PWD/examples
mkdir -p $P/m; tar -C $P/m -xJf $P/base.tar.xz; tar -C $P/m -xJf $P/cur.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/c6; mkdir -p $O; R=$P/m/cur/rtcgc
T="swizzle 128 tma producer persistent"
check() { # file precision schedule sizes...
  local f=$1 prec=$2 s=$3; shift 3
  echo "== $f $* | $s" >> $O/check.txt
  RTCG_CACHE_DIR=/tmp/c6 timeout 120 $R run $E/$f.rtcg "$@" --precision $prec -s "$s" --repeats 3 >> $O/check.txt 2>&1
  echo "rc=$?" >> $O/check.txt
}
check dg_diff_stacked tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" -D K=77777 -D Np=165
check dg_diff_stacked tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" -D K=77777 -D Np=165
check dg_diff tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a" -D K=77777 -D Np=165
check dg_diff tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" -D K=77777 -D Np=35
check gemm_bf16 ieee "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3" -D n=1003
check dg_diff_stacked tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a" -D K=5003 -D Np=35
check dg_diff_stacked tf32x3 "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 3" -D K=5003 -D Np=35
check dg_diff_stacked tf32x3 "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 $T resident a" -D K=5003 -D Np=21
B=$P/m/cur/bench_suite; W=$P/m/cur/rtcg-worker
RTCG_CACHE_DIR=/tmp/c6b timeout 200 $B --only dg_diff_stacked_tf32x3_N8 --out /tmp/b6 --max-candidates 48 --time-limit 12 --worker $W 2>&1 | grep -vE "^\s+pruned " | tail -30 > $O/bench-tail.txt; cp /tmp/b6/bench.json $O/bench.json
grep -E "^==|rc=|time|MISMATCH|rror| ok$" $O/check.txt | grep -v "again after" | cut -c1-160; tail -3 $O/bench-tail.txt | cut -c1-200
