# Session 60: the f64 DG N7 product (K = 10^5, Np = 120, D stacked) by emitted modules and hand variants (argv: name=file.cu:sharedBytes ...),
# each checked against cuBLAS's DGEMM (also the peer, timed in the same process). CUDA events, L2 flushed by a 256 MB fill,
# median of 30 after 3 warm-ups; w poisoned with NaN before each check.
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
w = cp.empty((K, 3 * Np))
mods = {}
for rnd in range(2):
    for arg in sys.argv[1:]:
        name, rest = arg.split('=', 1); path, sb = rest.rsplit(':', 1); sb = int(sb)
        if name not in mods:
            mods[name] = cp.RawModule(code=open(path).read(), options=('-arch=sm_90', '-std=c++17'))
        f = mods[name].get_function('dg_diff_stacked64_0'); f.max_dynamic_shared_size_bytes = sb
        w.fill(np.nan); f((132,), (384,), (D, u, w), shared_mem=sb); cp.cuda.Device().synchronize()
        err = float(cp.linalg.norm(w - ref) / cp.linalg.norm(ref))
        t = timed(lambda: f((132,), (384,), (D, u, w), shared_mem=sb))
        print(f"{name}: {t:.4f} ms ({2 * K * 3 * Np * Np / t / 1e9:.1f} TF/s useful; {peer / t:.3f}x cuBLAS), rel err {err:.2e}, regs {f.num_regs}, local {f.local_size_bytes}")
    peer = timed(lambda: cp.matmul(u, D.T, out=ref)); print(f"cuBLAS DGEMM again: {peer:.4f} ms")
