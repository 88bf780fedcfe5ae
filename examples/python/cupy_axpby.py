"""rtcg with CuPy: examples/axpby.rtcg on CuPy arrays, used in place on CuPy's current stream.

    python examples/python/cupy_axpby.py

The kernel's size n is bound from the arrays' shapes (one compile per distinct n, cached); the
arrays never leave the GPU. Exits with 4 without a GPU or CuPy, as the C++ examples do."""

import pathlib
import sys

import rtcg

try:
    import cupy as cp
except ImportError:
    sys.exit(print("cupy_axpby: CuPy is not installed") or 4)

source = pathlib.Path(__file__).resolve().parents[1].joinpath("axpby.rtcg")
try:
    axpby = rtcg.Kernel(source)  # kernel axpby(n: int, a: f32, x: f32[n], b: f32, y: f32[n], out z: f32[n])
except rtcg.CompileError as e:
    sys.exit(f"{e}")

n = 1_000_000
x = cp.random.standard_normal(n, dtype=cp.float32)
y = cp.random.standard_normal(n, dtype=cp.float32)
z = cp.empty_like(x)
try:
    axpby(2.0, x, -0.5, y, z)  # z = 2 x - 0.5 y, enqueued on CuPy's current stream
except rtcg.NoDeviceError as e:
    sys.exit(print(f"cupy_axpby: {e}") or 4)

# Then CuPy's own work on the same stream sees z.
err = float(cp.abs(z - (2.0 * x - 0.5 * y)).max())
print(f"axpby on {n} elements with CuPy arrays: max error {err:.2e}")

# On a stream of our own: the launch follows that stream's earlier work.
stream = cp.cuda.Stream(non_blocking=True)
with stream:
    w = x * 3
axpby(1.0, w, 1.0, y, z, stream=stream)
stream.synchronize()
err2 = float(cp.abs(z - (3.0 * x + y)).max())
print(f"on a CuPy stream: max error {err2:.2e}")
compiled = axpby.compiled[0]
print(f"compiled once: {compiled.signature}, schedule {compiled.schedule!r} ({compiled.schedule_origin})")
sys.exit(0 if err < 1e-5 and err2 < 1e-5 else 5)
