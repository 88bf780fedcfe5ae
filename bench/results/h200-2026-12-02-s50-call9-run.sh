#!/usr/bin/env bash
# Session 50, call 9 (one H200): is N = 8 bound by the tensor cores' work? The stacked N8 kernel under plain tf32 (one
# product a fragment, no split, wgmma in flight across steps; the threads' cp.async) beside tf32x3's winner, HEAD d70a6b7.
set -uo pipefail
P=$PWD/.probe-me
mkdir -p $P/m; tar -C $P/m -xJf $P/main.tar.xz; tar -C $P/m -xJf $P/three.tar.xz; chmod +x $P/m/*/*; export LD_LIBRARY_PATH=$P/m/lib:/usr/local/cuda/lib64
O=$OUT/d9; mkdir -p $O
T="swizzle 128 tma producer persistent"; N8="-D K=101556 -D Np=165"
hand() { # precision schedule
  echo "== $1 | $2" >> $O/byhand.txt
  RTCG_CACHE_DIR=/tmp/d9 timeout 90 $P/m/three/rtcgc run $P/stacked.rtcg $N8 --precision $1 -s "$2" --repeats 30 2>&1 | grep -E "time|rel [0-9]|rror" | grep -v "again after" >> $O/byhand.txt
}
for st in 2 4; do hand tf32 "stores: streaming; mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages $st $T pingpong resident a"; done
hand tf32 "stores: streaming; mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 4 $T resident a"
hand tf32x3 "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $T pingpong resident a"
RTCG_CACHE_DIR=/tmp/d9 timeout 120 ncu --launch-skip 3 --launch-count 1 --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,smsp__inst_executed_pipe_uniform.sum \
  $P/m/three/rtcgc run $P/stacked.rtcg $N8 --precision tf32 -s "stores: streaming; mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 $T pingpong resident a" --repeats 5 > $O/ncu-tf32.txt 2>&1
grep -E "==|time|rel" $O/byhand.txt | cut -c1-150; grep -E "hmma|elapsed" $O/ncu-tf32.txt
