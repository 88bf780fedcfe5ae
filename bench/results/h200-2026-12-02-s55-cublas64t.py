# cublasDgemm's time for the f64 DG product (D stacked, u D^T) at K = 100000, Np given: CUDA events, L2 flushed, median of 30.
import sys, numpy as np, cupy as cp
np_ = int(sys.argv[1]); K = 100000
u = cp.random.standard_normal((K, np_)); D = cp.random.standard_normal((3 * np_, np_)); w = cp.empty((K, 3 * np_))
flush = cp.empty(256 << 20, dtype=cp.uint8); ts = []
for r in range(33):
    flush.fill(r & 0xff); s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); cp.matmul(u, D.T, out=w); e.record(); e.synchronize()
    if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
print(f"cublasDgemm Np={np_}: {np.median(ts):.4f} ms")
