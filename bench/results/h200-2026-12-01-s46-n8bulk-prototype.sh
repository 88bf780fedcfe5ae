#!/usr/bin/env bash
# Session 46 helper n8bulk: how the prototype modules of calls 1-2 were made (here, no GPU): rtcgc
# emits the m64n64 / m64n128 persistent pingpong `resident a` modules (A = u copied by the producer's
# threads), the generators rewrite their producer, nvcc compiles cubins that the harness
# (h200-2026-12-01-s46-n8bulk-harness.cu) loads on the device. Run from the repository root after a
# build; writes into ${OUT:-/tmp/n8bulk}.
set -euo pipefail
o=${OUT:-/tmp/n8bulk}; mkdir -p "$o"; r=$PWD/bench/results/h200-2026-12-01-s46-n8bulk
R=build/tools/rtcgc/rtcgc; P="swizzle 128 tma producer persistent"
emit() {  # emit KERNEL K SCHEDULE OUT
  $R emit examples/$1.rtcg -D K=$2 -D Np=165 --precision tf32x3 --max-shared 232448 --multiprocessors 132 -s "$3" -o "$4"
}
for K in 101556 5003; do
  t=$([ $K = 5003 ] && echo k5_ || true)
  for st in 2 3; do
    emit dg_diff $K "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages $st $P pingpong resident a" $o/${t}d_st$st.cu
    emit dg_diff_stacked $K "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages $st $P pingpong resident a" $o/${t}s_st$st.cu
    for g in gen_bulk gen_bulk2; do
      python3 $r-$g.py $o/${t}d_st$st.cu $o/${t}d${g#gen_}_st$st.cu $st $K 165 8 128
      python3 $r-$g.py $o/${t}s_st$st.cu $o/${t}s${g#gen_}_st$st.cu $st $K 165 8 128
    done
  done
  emit dg_diff $K "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a" $o/${t}d_n128.cu
  emit dg_diff_stacked $K "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 $P pingpong resident a" $o/${t}s_n128.cu
  for rows in 8 16; do
    python3 $r-gen_ldg.py $o/${t}d_n128.cu $o/${t}dl${rows}_n128.cu 2 $K 165 4 132 128 $rows
    python3 $r-gen_ldg.py $o/${t}s_n128.cu $o/${t}sl${rows}_n128.cu 2 $K 165 4 132 128 $rows
  done
done
emit dg_diff_stacked 101556 "mma: tf32x3 wgmma m64n64k8 warpgroups 2x2 k 32 stages 3 swizzle 128" $o/s_win.cu
# The diagnostics (mkdiag.py) read db2_st2.cu (= dbulk2_st2.cu here) and d_win.cu (= d_n128.cu).
(cd $o && cp dbulk2_st2.cu db2_st2.cu && cp d_n128.cu d_win.cu && python3 $r-mkdiag.py)
for f in $o/*.cu; do nice nvcc -arch=sm_90a -cubin -O3 -o ${f%.cu}.cubin $f; done
nvcc -O2 -arch=sm_90a -o $o/harness $r-harness.cu -lcublas -L/usr/local/cuda/lib64/stubs -lcuda
