# Session 59 probes (bounds.py's second half, call 3) (one process, CUDA events, L2 flushed by a 256 MB fill, median of 30 after 3 warm-ups):
# 1. DG lifting's bytes streamed by the simplest kernels that read and write them once (flux K x 4Nfp, invJ K,
#    rhs K x Np read and written), against cuBLAS's lift product (flux LIFT^T, beta 0, by cupy.matmul) in
#    the same process: the fastest stream bounds any lifting kernel, so P / stream bounds its speed-up.
# 2. The FP64 tensor rate of mma.sync (m16n8k4 / k8 / k16) on register operands alone, and cuBLAS's DGEMM
#    for the f64 DG product (u D^T, D stacked) at K = 10^5, Np 120.
import sys, numpy as np, cupy as cp
flush = cp.empty(256 << 20, dtype=cp.uint8)
def timed(fn, reps=30):
    ts = []
    for r in range(reps + 3):
        flush.fill(r & 0xff); s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))

dmma_src = r'''
#define CHAINS 4
extern "C" __global__ void dmma(double* out, int iters, int shape) {
  double d[CHAINS][4]; double a[8], b[4];
  for (int c = 0; c < CHAINS; ++c) for (int i = 0; i < 4; ++i) d[c][i] = 0.0;
  for (int i = 0; i < 8; ++i) a[i] = 1e-3 * (threadIdx.x + i); for (int i = 0; i < 4; ++i) b[i] = 1e-3 * (blockIdx.x + i);
  if (shape == 16) {
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int c = 0; c < CHAINS; ++c)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
          : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  } else if (shape == 8) {
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int c = 0; c < CHAINS; ++c)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
  } else {
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int c = 0; c < CHAINS; ++c)
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
          : "+d"(d[c][0]), "+d"(d[c][1]), "+d"(d[c][2]), "+d"(d[c][3]) : "d"(a[0]), "d"(a[1]), "d"(b[0]));
  }
  double s = 0; for (int c = 0; c < CHAINS; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
sms = cp.cuda.Device().attributes['MultiProcessorCount']
dm = cp.RawModule(code=dmma_src, options=('-arch=sm_90', '-maxrregcount=64')).get_function('dmma')
for shape in (4, 8, 16):
    for threads in (128, 256, 512):
        blocks = sms * (1024 // threads); iters = 4096 // (shape // 4)
        out = cp.empty(blocks * threads, dtype=cp.float64)
        try:
            t = timed(lambda: dm((blocks,), (threads,), (out, cp.int32(iters), cp.int32(shape))), reps=10)
        except Exception as e:
            print(f"mma.sync f64 m16n8k{shape}, {threads} threads: {e}"); continue
        flops = 2.0 * 16 * 8 * shape * 4 * iters * blocks * threads / 32
        print(f"mma.sync f64 m16n8k{shape}, {blocks} blocks of {threads}, 4 chains a warp: {flops/t/1e9:.1f} TF/s ({flops/t/1e9/67*100:.0f}% of 67 TF/s)")
K, Np = 100000, 120
u = cp.random.standard_normal((K, Np)); D = cp.random.standard_normal((3 * Np, Np)); w = cp.empty((K, 3 * Np))
t = timed(lambda: cp.matmul(u, D.T, out=w))
print(f"cuBLAS DGEMM u D^T, K={K}, Np={Np} (D stacked): {t:.4f} ms, {2*K*3*Np*Np/t/1e9:.0f} GF/s useful; 1.5x needs {t/1.5:.4f} ms")
