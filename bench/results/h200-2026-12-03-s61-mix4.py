# Session 61 probe (2): DMMA and DFMA in separate warps of one block, against each half alone.
# MODE 0: every warp mma; 1: every warp fma; 2: both in every warp; 3: even warps mma, odd fma;
# 4: even warps mma, odd idle; 5: odd warps fma, even idle. CH independent mma chains a warp.
import numpy as np, cupy as cp
def timed(fn, reps=10):
    ts = []
    for r in range(reps + 3):
        s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))
src = r'''
template <int CH, int NFMA>
__device__ void mmaLoop(double (&d)[8][4], const double (&a)[4], const double (&b)[2], int iters) {
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < CH; ++c)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
template <int NFMA>
__device__ void fmaLoop(double (&f)[16], const double (&g)[4], const double (&h)[4], int iters) {
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < NFMA; ++c) asm volatile("fma.rn.f64 %0, %1, %2, %0;" : "+d"(f[c & 15]) : "d"(g[(c >> 2) & 3]), "d"(h[c & 3]));
}
template <int CH, int NFMA, int MODE>
__global__ void kern(double* out, int iters, int fiters) {
  const int w = threadIdx.x / 32;
  double d[8][4]; double a[4], b[2]; double f[16]; double g[4], h[4];
  for (int c = 0; c < 8; ++c) for (int i = 0; i < 4; ++i) d[c][i] = 0.0;
  for (int i = 0; i < 4; ++i) a[i] = 1e-3 * (threadIdx.x + i); for (int i = 0; i < 2; ++i) b[i] = 1e-3 * (blockIdx.x + i);
  for (int i = 0; i < 16; ++i) f[i] = 1e-3 * (threadIdx.x + 3 * i);
  for (int i = 0; i < 4; ++i) { g[i] = 0.999 + 1e-9 * (threadIdx.x + i); h[i] = 1e-7 * (blockIdx.x + i); }
  const bool even = !(w & 1);
  if (MODE == 0) mmaLoop<CH, NFMA>(d, a, b, iters);
  if (MODE == 1) fmaLoop<NFMA>(f, g, h, fiters);
  if (MODE == 2) {
    for (int it = 0; it < iters; ++it) { mmaLoop<CH, NFMA>(d, a, b, 1); fmaLoop<NFMA>(f, g, h, 1); }
  }
  if (MODE == 3) { if (even) mmaLoop<CH, NFMA>(d, a, b, iters); else fmaLoop<NFMA>(f, g, h, fiters); }
  if (MODE == 4) { if (even) mmaLoop<CH, NFMA>(d, a, b, iters); }
  if (MODE == 5) { if (!even) fmaLoop<NFMA>(f, g, h, fiters); }
  double s = 0; for (int c = 0; c < 8; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  for (int i = 0; i < 16; ++i) s += f[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
NF = 32
names = [f'kern<{ch},{NF},{m}>' for ch in (4, 8) for m in range(6)]
mod = cp.RawModule(code=src, options=('-arch=sm_90',), name_expressions=names)
sms = cp.cuda.Device().attributes['MultiProcessorCount']
iters = 2048
for ch in (4, 8):
  for threads in (256, 512):
    blocks = sms * (1024 // threads); out = cp.empty(blocks * threads, dtype=cp.float64)
    warps = blocks * threads / 32
    # fma iterations such that the fma half alone takes about as long as the mma half alone
    for fiters in (iters * ch // 4 // 2, iters * ch // 4):
        res = {}
        for m in range(6):
            fn = mod.get_function(f'kern<{ch},{NF},{m}>')
            res[m] = timed(lambda: fn((blocks,), (threads,), (out, cp.int32(iters), cp.int32(fiters))))
        M = 2.0 * 16 * 8 * 8 * ch * iters * warps; F = 2.0 * 32 * NF * fiters * warps
        print(f"chains {ch}, {threads} thr, fma iters {fiters}: all mma {res[0]:.3f} ms ({M/res[0]/1e9:.1f} TF/s); all fma {res[1]:.3f} ({F/res[1]/1e9:.1f} TF/s); "
              f"half mma alone {res[4]:.3f}; half fma alone {res[5]:.3f}; halves together {res[3]:.3f} ({(M+F)/2/res[3]/1e9:.1f} TF/s); "
              f"both in each warp {res[2]:.3f}")
