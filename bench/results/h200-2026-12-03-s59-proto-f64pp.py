# Session 59 prototype: the f64 DG product (K = 10^5, Np = 120, D stacked) by the emitted winner and by f64pp.cu's
# grouped rings (G = 1, 2, 4), each checked against cuBLAS's DGEMM (which is also the peer, timed in the same
# process). CUDA events, L2 flushed by a 256 MB fill, median of 30 after 3 warm-ups; w poisoned with NaN first.
import sys, numpy as np, cupy as cp
flush = cp.empty(256 << 20, dtype=cp.uint8)
def timed(fn, reps=30):
    ts = []
    for r in range(reps + 3):
        flush.fill(r & 0xff); s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))
K, Np = 100000, 120
u = cp.random.standard_normal((K, Np)); D = cp.random.standard_normal((3 * Np, Np)); ref = cp.empty((K, 3 * Np))
peer = timed(lambda: cp.matmul(u, D.T, out=ref))
print(f"cuBLAS DGEMM u D^T: {peer:.4f} ms; 1.5x needs {peer / 1.5:.4f} ms")
mod = cp.RawModule(path=sys.argv[1]) if sys.argv[1].endswith('.cubin') else cp.RawModule(code=open(sys.argv[1]).read(), options=('-arch=sm_90', '-std=c++17'))
w = cp.empty((K, 3 * Np))
def config(name):
    if name.startswith("emitted"): return 176384, 640
    g, wm, fm = int(name[1]), int(name[3]), int(name[5])
    return (g * 4 * wm * 16 * fm * 28 + 360 // 3 * 124) * 8, g * wm * 160
for name in ("emitted_plain", "g4w1f1", "g2w1f2", "g1w2f2", "g3w1f2", "g2w2f1", "g4w1f2", "emitted_plain", "g4w1f1"):
    f = mod.get_function(name); sb, nt = config(name); f.max_dynamic_shared_size_bytes = sb
    w.fill(np.nan)
    f((132,), (nt,), (D, u, w), shared_mem=sb); cp.cuda.Device().synchronize()
    err = float(cp.linalg.norm(w - ref) / cp.linalg.norm(ref))
    t = timed(lambda: f((132,), (nt,), (D, u, w), shared_mem=sb))
    print(f"{name} ({nt} threads, {sb} B shared): {t:.4f} ms ({2 * K * 3 * Np * Np / t / 1e9:.1f} TF/s useful; {peer / t:.2f}x cuBLAS), rel err {err:.2e}, regs {f.num_regs}, local {f.local_size_bytes}")
