"""Conjugate gradients on PyTorch tensors with rtcg's CSR sparse matrix-vector product
(examples/spmv.rtcg, a data-dependent range: row i's nonzeros are rowptr[i]..rowptr[i + 1]).

    python examples/python/torch_cg.py

The matrix is the 7-point Laplacian of a side^3 grid (symmetric positive definite), built in CSR
form on the GPU; rtcg does every product A p of the iteration on PyTorch's current stream, PyTorch
the vector updates. The result is checked against PyTorch's own sparse CSR product: the residual
||b - A x|| / ||b|| recomputed with torch.sparse must fall below the tolerance. Exits with 4 without
a GPU or PyTorch, 5 when CG does not converge."""

import pathlib
import sys

import rtcg

try:
    import torch
except ImportError:
    sys.exit(print("torch_cg: PyTorch is not installed") or 4)
if not torch.cuda.is_available():
    sys.exit(print("torch_cg: PyTorch sees no CUDA device") or 4)

dev = torch.device("cuda", 0)


def laplacian3d(side):
    """CSR arrays (rowptr, col, val) of the 7-point Laplacian on a side^3 grid, built on the GPU."""
    n = side**3
    idx = torch.arange(n, device=dev)
    x, y, z = idx % side, (idx // side) % side, idx // (side * side)
    cols, vals = [idx], [torch.full((n,), 6.0, device=dev)]
    for d, coord, stride in ((-1, x, 1), (1, x, 1), (-1, y, side), (1, y, side), (-1, z, side * side), (1, z, side * side)):
        inside = (coord + d >= 0) & (coord + d < side)
        cols.append(torch.where(inside, idx + d * stride, torch.full_like(idx, -1)))
        vals.append(torch.full((n,), -1.0, device=dev))
    col = torch.stack(cols, 1)  # n x 7, -1 where the neighbour is outside the grid
    val = torch.stack(vals, 1)
    keep = col >= 0
    counts = keep.sum(1)
    rowptr = torch.zeros(n + 1, dtype=torch.int32, device=dev)
    rowptr[1:] = torch.cumsum(counts, 0).to(torch.int32)
    return rowptr, col[keep].to(torch.int32).contiguous(), val[keep].to(torch.float32).contiguous()


side = 48
rowptr, col, val = laplacian3d(side)
n = rowptr.numel() - 1
spmv = rtcg.Kernel(pathlib.Path(__file__).resolve().parents[1].joinpath("spmv.rtcg"))  # n, nnz from shapes

g = torch.Generator(device=dev).manual_seed(0)
b = torch.rand(n, device=dev, generator=g)
x = torch.zeros(n, device=dev)
r = b.clone()
p = r.clone()
ap = torch.empty(n, device=dev)
rr = torch.dot(r, r)
tol, steps = 1e-5, 0
for steps in range(1, 1001):
    spmv(rowptr, col, val, p, ap)  # ap = A p, on torch.cuda.current_stream()
    alpha = rr / torch.dot(p, ap)
    x += alpha * p
    r -= alpha * ap
    rr_new = torch.dot(r, r)
    if float(rr_new.sqrt() / b.norm()) < tol:
        break
    p = r + (rr_new / rr) * p
    rr = rr_new

a = torch.sparse_csr_tensor(rowptr.to(torch.int64), col.to(torch.int64), val, size=(n, n))
residual = float((b - a @ x).norm() / b.norm())
compiled = spmv.compiled[0]
print(f"CG on the 7-point Laplacian of a {side}^3 grid ({n} rows, {col.numel()} nonzeros): {steps} iterations, "
      f"residual {residual:.2e} (torch.sparse)")
print(f"spmv compiled once ({compiled.signature}); schedule {compiled.schedule!r} ({compiled.schedule_origin})")
sys.exit(0 if residual < 10 * tol else 5)
