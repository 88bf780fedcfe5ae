# cublasDgemm's call for the f64 DG products (D stacked, u D^T), N3 then N7, under Nsight Compute.
import cupy as cp
for np_ in (20, 120):
    u = cp.random.standard_normal((100000, np_)); D = cp.random.standard_normal((3 * np_, np_))
    w = cp.empty((100000, 3 * np_))
    for _ in range(2): cp.matmul(u, D.T, out=w)
    cp.cuda.Device().synchronize()
