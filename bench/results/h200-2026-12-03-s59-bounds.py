# Session 59 probes (one process, CUDA events, L2 flushed by a 256 MB fill, median of 30 after 3 warm-ups):
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

stream_src = r'''
extern "C" __global__ void lift_stream(const float4* __restrict__ flux, const float* __restrict__ invJ,
                                       float4* __restrict__ rhs, long long n4, int per_row) {
  // rhs as n4 float4 (per_row a row), flux as 1.5 n4 float4 (n4 + n4 / 2): item j reads flux4[j] and,
  // when even, flux4[n4 + j / 2]; every byte read once, rhs written once.
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n4; j += (long long)gridDim.x * blockDim.x) {
    float4 f = flux[j];
    if ((j & 1) == 0) { float4 g = flux[n4 + j / 2]; f.x += g.x; f.y += g.y; f.z += g.z; f.w += g.w; }
    float s = invJ[j / per_row]; float4 r = rhs[j];
    r.x += s * f.x; r.y += s * f.y; r.z += s * f.z; r.w += s * f.w; rhs[j] = r;
  }
}
extern "C" __global__ void lift_stream4(const float4* __restrict__ flux, const float* __restrict__ invJ,
                                        float4* __restrict__ rhs, long long n4, int per_row) {
  // four items a thread, their loads issued before any store.
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j0 = blockIdx.x * (long long)blockDim.x + threadIdx.x; j0 < n4; j0 += 4 * stride) {
    float4 f[4], g[4], r[4]; float s[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      long long j = j0 + u * stride;
      if (j < n4) { f[u] = flux[j]; r[u] = rhs[j]; s[u] = invJ[j / per_row];
                    g[u] = (j & 1) == 0 ? flux[n4 + j / 2] : make_float4(0, 0, 0, 0); }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      long long j = j0 + u * stride;
      if (j < n4) { r[u].x += s[u] * (f[u].x + g[u].x); r[u].y += s[u] * (f[u].y + g[u].y);
                    r[u].z += s[u] * (f[u].z + g[u].z); r[u].w += s[u] * (f[u].w + g[u].w); rhs[j] = r[u]; }
    }
  }
}
'''
mod = cp.RawModule(code=stream_src, options=('-std=c++17',))
k1, k4 = mod.get_function('lift_stream'), mod.get_function('lift_stream4')
sms = cp.cuda.Device().attributes['MultiProcessorCount']
for (name, K, Np, Nfp) in [("N5", 340630, 56, 21)]:  # 4 Nfp = 1.5 Np: the stream pairs them
    nf = 4 * Nfp; assert Np % 4 == 0 and nf == Np * 3 // 2 or True
    flux = cp.random.standard_normal((K, nf), dtype=cp.float32); invJ = cp.random.standard_normal(K, dtype=cp.float32)
    rhs = cp.random.standard_normal((K, Np), dtype=cp.float32); LIFT = cp.random.standard_normal((Np, nf), dtype=cp.float32)
    p = cp.empty((K, Np), dtype=cp.float32)
    peer = timed(lambda: cp.matmul(flux, LIFT.T, out=p))
    nbytes = K * (nf + 1 + 2 * Np) * 4
    print(f"lift {name} K={K} Np={Np} 4Nfp={nf}: cuBLAS lift product (cupy.matmul, beta 0) {peer:.4f} ms; lifting's bytes {nbytes/1e6:.1f} MB; 2x needs {peer/2:.4f} ms = {nbytes/(peer/2)/1e6:.0f} GB/s")
    if nf * 2 != Np * 3:
        # the stream kernel pairs flux's 4Nfp with 1.5 Np values a row: other shapes stream a flux of that size instead
        flux = cp.random.standard_normal((K, Np * 3 // 2), dtype=cp.float32)
    n4 = K * Np // 4; best = None
    for kern, kn in ((k1, "1 a thread"), (k4, "4 a thread")):
        for threads in (256, 512, 1024):
            for blocks in (sms * 2048 // threads, sms * 4096 // threads, sms * 16, (n4 + threads - 1) // threads):
                try:
                    t = timed(lambda: kern((blocks,), (threads,), (flux, invJ, rhs, cp.int64(n4), cp.int32(Np // 4))))
                except Exception as e:
                    print(f"  ({kn}, {threads} threads: {e})"); break
                if best is None or t < best[0]: best = (t, kn, threads, blocks)
    sbytes = K * (flux.shape[1] + 1 + 2 * Np) * 4
    print(f"  fastest stream of {sbytes/1e6:.1f} MB: {best[0]:.4f} ms ({sbytes/best[0]/1e6:.0f} GB/s; {best[1]}, {best[2]} threads, {best[3]} blocks); cuBLAS / stream = {peer/best[0]:.2f}x")
    src = cp.empty(nbytes // 2, dtype=cp.uint8); dst = cp.empty_like(src)
    tc = timed(lambda: cp.copyto(dst, src))
    print(f"  cudaMemcpy of half the bytes (read and write {nbytes/1e6:.1f} MB): {tc:.4f} ms ({nbytes/tc/1e6:.0f} GB/s); cuBLAS / copy = {peer/tc:.2f}x")
    del flux, invJ, rhs, LIFT, p, src, dst

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
dm = cp.RawModule(code=dmma_src, options=('-arch=sm_90',)).get_function('dmma')
for shape in (4, 8, 16):
    for threads in (128, 256, 512):
        blocks = sms * (1024 // threads); iters = 4096 // (shape // 4)
        out = cp.empty(blocks * threads, dtype=cp.float64)
        t = timed(lambda: dm((blocks,), (threads,), (out, cp.int32(iters), cp.int32(shape))), reps=10)
        flops = 2.0 * 16 * 8 * shape * 4 * iters * blocks * threads / 32
        print(f"mma.sync f64 m16n8k{shape}, {blocks} blocks of {threads}, 4 chains a warp: {flops/t/1e9:.0f} GF/s ({flops/t/1e9/67000*100:.0f}% of 67 TF/s)")
K, Np = 100000, 120
u = cp.random.standard_normal((K, Np)); D = cp.random.standard_normal((3 * Np, Np)); w = cp.empty((K, 3 * Np))
t = timed(lambda: cp.matmul(u, D.T, out=w))
print(f"cuBLAS DGEMM u D^T, K={K}, Np={Np} (D stacked): {t:.4f} ms, {2*K*3*Np*Np/t/1e9:.0f} GF/s useful; 1.5x needs {t/1.5:.4f} ms")
