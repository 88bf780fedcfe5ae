# cublasSgemm's time for the DG product (D stacked, u D^T) at K = 101556, Np given: CUDA events, L2 flushed, median of 30.
import sys, numpy as np, cupy as cp
np_ = int(sys.argv[1]); K = 101556
u = cp.random.standard_normal((K, np_), dtype=cp.float32); D = cp.random.standard_normal((3 * np_, np_), dtype=cp.float32); w = cp.empty((K, 3 * np_), dtype=cp.float32)
flush = cp.empty(256 << 20, dtype=cp.uint8); ts = []
for r in range(33):
    flush.fill(r & 0xff); s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); cp.matmul(u, D.T, out=w); e.record(); e.synchronize()
    if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
print(f"cublasSgemm Np={np_}: {np.median(ts):.4f} ms")
