# Session 61 probe: do FP64 mma.sync (DMMA) and FP64 FMA (DFMA) run at once? Modes fixed at compile time.
import numpy as np, cupy as cp
def timed(fn, reps=10):
    ts = []
    for r in range(reps + 3):
        s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))
src = r'''
template <int NMMA, int NFMA, int MODE>
__global__ void kern(double* out, int iters) {
  // MODE 0: mma only; 1: fma only; 2: both in every warp; 3: even warps mma, odd warps fma
  const int w = threadIdx.x / 32;
  const bool doMma = MODE == 0 || MODE == 2 || (MODE == 3 && !(w & 1));
  const bool doFma = MODE == 1 || MODE == 2 || (MODE == 3 && (w & 1));
  double d[4][4]; double a[4], b[2]; double f[16]; double g[4], h[4];
  for (int c = 0; c < 4; ++c) for (int i = 0; i < 4; ++i) d[c][i] = 0.0;
  for (int i = 0; i < 4; ++i) a[i] = 1e-3 * (threadIdx.x + i); for (int i = 0; i < 2; ++i) b[i] = 1e-3 * (blockIdx.x + i);
  for (int i = 0; i < 16; ++i) f[i] = 1e-3 * (threadIdx.x + 3 * i);
  for (int i = 0; i < 4; ++i) { g[i] = 0.999 + 1e-9 * (threadIdx.x + i); h[i] = 1e-7 * (blockIdx.x + i); }
  if (MODE == 3) {
    if (doMma) {
      for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < NMMA; ++c)
          asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+d"(d[c & 3][0]), "+d"(d[c & 3][1]), "+d"(d[c & 3][2]), "+d"(d[c & 3][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    } else {
      for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int c = 0; c < NFMA; ++c) asm volatile("fma.rn.f64 %0, %1, %2, %0;" : "+d"(f[c & 15]) : "d"(g[(c >> 2) & 3]), "d"(h[c & 3]));
    }
  } else {
    for (int it = 0; it < iters; ++it) {
      if (MODE != 1) {
#pragma unroll
        for (int c = 0; c < NMMA; ++c)
          asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+d"(d[c & 3][0]), "+d"(d[c & 3][1]), "+d"(d[c & 3][2]), "+d"(d[c & 3][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
      }
      if (MODE != 0) {
#pragma unroll
        for (int c = 0; c < NFMA; ++c) asm volatile("fma.rn.f64 %0, %1, %2, %0;" : "+d"(f[c & 15]) : "d"(g[(c >> 2) & 3]), "d"(h[c & 3]));
      }
    }
  }
  double s = 0; for (int c = 0; c < 4; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  for (int i = 0; i < 16; ++i) s += f[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
names = [f'kern<4,{nf},{m}>' for nf in (8, 16, 32, 64) for m in range(4)]
mod = cp.RawModule(code=src, options=('-arch=sm_90',), name_expressions=names)
sms = cp.cuda.Device().attributes['MultiProcessorCount']
iters = 2048
mmaflop = 2.0 * 16 * 8 * 8 * 4
for threads in (256, 512):
    blocks = sms * (1024 // threads); out = cp.empty(blocks * threads, dtype=cp.float64)
    warps = blocks * threads / 32
    for nf in (8, 16, 32, 64):
        res = {}
        for m in range(4):
            fn = mod.get_function(f'kern<4,{nf},{m}>')
            res[m] = timed(lambda: fn((blocks,), (threads,), (out, cp.int32(iters))))
        M = mmaflop * iters * warps; F = 2.0 * 32 * nf * iters * warps
        tm, tf, tb, th = res[0], res[1], res[2], res[3]
        print(f"{threads} thr, nfma {nf}: mma only {tm:.3f} ms ({M/tm/1e9:.1f} TF/s), fma only {tf:.3f} ms ({F/tf/1e9:.1f} TF/s), "
              f"both each warp {tb:.3f} ms ({(M+F)/tb/1e9:.1f} TF/s; sum alone {tm+tf:.3f}), half warps each {th:.3f} ms ({(M+F)/2/th/1e9:.1f} TF/s)")
