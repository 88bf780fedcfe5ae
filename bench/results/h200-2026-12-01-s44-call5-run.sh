#!/usr/bin/env bash
# Session 44 call 5 (one H200): the review build (66f523f): the three fragments-2 step emitters after
# leadingFragmentKs, verified and timed by rtcgc run at sizes no tile divides and at 2048.
set -uo pipefail
tar -xJf .probe/pack.tar.xz; ln -sfn .gpu/build-gpu build-gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/build-gpu/tools/rtcgc/rtcgc; o=/tmp/o5; rm -rf $o; mkdir -p $o
cat > /tmp/dg64.rtcg <<'K'
kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
K
run() { echo "== $*" >> $o/run.txt; timeout 60 "$R" run "$@" >> $o/run.txt 2>&1; echo "rc=$?" >> $o/run.txt; }
run examples/dgemm.rtcg -D n=2048 --schedule "stores: streaming; mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2 copies hoisted epilogue shared"
run examples/dgemm.rtcg -D n=1003 --schedule "mma: f64 m16n8k8 warps 4x2 tile 2x4 k 16 stages 4 fragments 2 copies hoisted epilogue shared"
run examples/dgemm.rtcg -D n=1003 --schedule "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 epilogue shared"
run /tmp/dg64.rtcg -D K=20011 -D Np=56 --schedule "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2"
run /tmp/dg64.rtcg -D K=7919 -D Np=20 --schedule "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2"
cp $o/run.txt $OUT/run.txt
