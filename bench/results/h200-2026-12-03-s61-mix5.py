# Session 61 probe (3): can DFMA warps run beside DMMA warps that alone keep the FP64 tensor pipe busy?
# m16n8k16 (2048 FMA an instruction), CH chains a warp; arrays local to each branch.
# MODE 0: every warp mma; 3: even warps mma, odd warps fma; 4: even warps mma, odd idle; 5: odd fma, even idle.
import numpy as np, cupy as cp
def timed(fn, reps=10):
    ts = []
    for r in range(reps + 3):
        s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))
src = r'''
template <int CH>
__device__ double mmaWork(int iters) {
  double d[CH][4]; double a[8], b[4];
  for (int c = 0; c < CH; ++c) for (int i = 0; i < 4; ++i) d[c][i] = 0.0;
  for (int i = 0; i < 8; ++i) a[i] = 1e-3 * (threadIdx.x + i); for (int i = 0; i < 4; ++i) b[i] = 1e-3 * (blockIdx.x + i);
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < CH; ++c)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
        : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  double s = 0; for (int c = 0; c < CH; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  return s;
}
__device__ double fmaWork(int iters) {
  double f[12]; double g[2], h[2];
  for (int i = 0; i < 12; ++i) f[i] = 1e-3 * (threadIdx.x + 3 * i);
  for (int i = 0; i < 2; ++i) { g[i] = 0.999 + 1e-9 * (threadIdx.x + i); h[i] = 1e-7 * (blockIdx.x + i); }
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < 24; ++c) asm volatile("fma.rn.f64 %0, %1, %2, %0;" : "+d"(f[c % 12]) : "d"(g[(c / 12) & 1]), "d"(h[c & 1]));
  double s = 0; for (int i = 0; i < 12; ++i) s += f[i];
  return s;
}
template <int CH, int MODE>
__global__ void kern(double* out, int iters, int fiters) {
  const bool even = !((threadIdx.x / 32) & 1);
  double s = 0;
  if (MODE == 0 || ((MODE == 3 || MODE == 4) && even)) s = mmaWork<CH>(iters);
  if ((MODE == 3 || MODE == 5) && !even) s = fmaWork(fiters);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
names = [f'kern<{ch},{m}>' for ch in (2, 4) for m in (0, 3, 4, 5)]
mod = cp.RawModule(code=src, options=('-arch=sm_90',), name_expressions=names)
sms = cp.cuda.Device().attributes['MultiProcessorCount']
iters = 1024
for ch in (2, 4):
  print('registers', ch, {m: mod.get_function(f'kern<{ch},{m}>').num_regs for m in (0, 3, 4, 5)})
  for threads, per in ((256, 4), (512, 2), (256, 2)):
    blocks = sms * per; out = cp.empty(blocks * threads, dtype=cp.float64)
    warps = blocks * threads / 32
    for fiters in (iters * ch // 8, iters * ch // 4, iters * ch // 2):
        res = {}
        for m in (0, 3, 4, 5):
            fn = mod.get_function(f'kern<{ch},{m}>')
            try: res[m] = timed(lambda: fn((blocks,), (threads,), (out, cp.int32(iters), cp.int32(fiters))))
            except Exception as e: res[m] = float('nan'); print(e)
        Mh = 2.0 * 16 * 8 * 16 * ch * iters * warps / 2; Fh = 2.0 * 32 * 24 * fiters * warps / 2
        print(f"chains {ch}, {per} blocks of {threads}, fma iters {fiters}: all mma {res[0]:.3f} ms ({2*Mh/res[0]/1e9:.1f} TF/s); "
              f"half mma alone {res[4]:.3f} ({Mh/res[4]/1e9:.1f}); half fma alone {res[5]:.3f} ({Fh/res[5]/1e9:.1f}); "
              f"halves together {res[3]:.3f} ({(Mh+Fh)/res[3]/1e9:.1f} TF/s)")
