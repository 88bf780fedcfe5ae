"""A DG differentiation step inside a PyTorch program: rtcg computes the reference-element
derivatives of examples/dg_diff.rtcg on PyTorch tensors, in place and on PyTorch's current stream;
PyTorch does the rest (geometric factors, the update), as a time-stepping code would.

    python examples/python/torch_dg.py

A few steps of u <- u - dt * du/dx, with du/dx = rx ur + sx us + tx ut per element, checked
against the same program written in PyTorch alone. Exits with 4 without a GPU or PyTorch."""

import pathlib
import sys

import rtcg

try:
    import torch
except ImportError:
    sys.exit(print("torch_dg: PyTorch is not installed") or 4)
if not torch.cuda.is_available():
    sys.exit(print("torch_dg: PyTorch sees no CUDA device") or 4)

source = pathlib.Path(__file__).resolve().parents[1].joinpath("dg_diff.rtcg")
dg_diff = rtcg.Kernel(source)  # sizes K and Np from the tensors' shapes

K, Np, steps, dt = 50_000, 20, 10, 1e-3
dev = torch.device("cuda", 0)
g = torch.Generator(device=dev).manual_seed(0)
Dr, Ds, Dt = (torch.randn(Np, Np, device=dev, generator=g) / Np for _ in range(3))
rx, sx, tx = (torch.rand(K, 1, device=dev, generator=g) for _ in range(3))  # per-element factors
u0 = torch.randn(K, Np, device=dev, generator=g)


def step_rtcg(u, ur, us, ut):
    dg_diff(Dr, Ds, Dt, u, ur, us, ut)  # on torch.cuda.current_stream(): ordered with the code around it
    return u - dt * (rx * ur + sx * us + tx * ut)


def step_torch(u):
    return u - dt * (rx * (u @ Dr.T) + sx * (u @ Ds.T) + tx * (u @ Dt.T))


stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):  # the whole program on a stream of its own
    ur, us, ut = (torch.empty_like(u0) for _ in range(3))
    u = u0.clone()
    for _ in range(steps):
        u = step_rtcg(u, ur, us, ut)
    v = u0.clone()
    for _ in range(steps):
        v = step_torch(v)
stream.synchronize()

err = float((u - v).abs().max() / v.abs().max())
compiled = dg_diff.compiled[0]
print(f"{steps} DG steps on K={K} elements of Np={Np} nodes: rtcg against PyTorch, max relative difference {err:.2e}")
print(f"dg_diff compiled once ({compiled.signature}); schedule {compiled.schedule!r} ({compiled.schedule_origin})")
sys.exit(0 if err < 1e-4 else 5)
