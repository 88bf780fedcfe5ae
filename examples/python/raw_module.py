"""A raw CUDA module from Python, as PyCUDA's SourceModule (examples/cuda/axpy_tiled.cu): compiled
at run time through rtcg's NVRTC route and kernel cache, launched on PyTorch tensors (or CuPy arrays)
in place on the framework's current stream, a wrong argument refused before the launch, then tuned
over TILE and the block size against the module's reference kernel (Kernel Tuner's use), the
results in rtcg's tuning database, and the winner rebuilt and checked.

    python examples/python/raw_module.py        # needs a CUDA GPU, and PyTorch or CuPy

Exits 0 when every result matches, 1 otherwise."""

import pathlib
import sys

import numpy as np

import rtcg

SOURCE = pathlib.Path(__file__).resolve().parents[1] / "cuda" / "axpy_tiled.cu"


def framework_arrays(n):
    """x, y on the GPU and a reader back to NumPy: PyTorch where installed, else CuPy."""
    try:
        import torch

        x = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(1013).sub_(500)
        y = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(7)
        return "PyTorch", x, y, lambda a: a.cpu().numpy(), lambda a: a.clone()
    except ImportError:
        import cupy

        x = (cupy.arange(n, dtype=cupy.float32) % 1013) - 500
        y = cupy.arange(n, dtype=cupy.float32) % 7
        return "CuPy", x, y, cupy.asnumpy, lambda a: a.copy()


def main() -> int:
    n, a = (1 << 24) | 7, 0.5
    name, x, y, host, copy = framework_arrays(n)
    y0 = copy(y)
    expected = a * host(x) + host(y0)

    def geometry(tile, block):
        return ((n + tile * block - 1) // (tile * block),), (block,)

    mod = rtcg.SourceModule(SOURCE, ["-DTILE=4"], file_name="axpy_tiled.cu")
    axpy = mod.get_function("axpy_tiled")
    grid, block = geometry(4, 256)
    axpy(n, a, x, y, grid=grid, block=block)  # Python numbers take the declared types: int n, float a
    bad = int(np.count_nonzero(host(y) != expected))
    print(f"axpy_tiled (TILE=4) on {name} arrays: {bad} mismatches of {n}")

    try:
        axpy(n, np.float64(a), x, y, grid=grid, block=block)  # a double for `float a`
        print("a wrong argument was launched")
        bad += 1
    except rtcg.Error as e:
        print(f"refused before the launch: {e}")

    y[:] = y0
    ref = mod.get_function("axpy_reference")
    result = rtcg.tune_source(SOURCE, "axpy_tiled", {"TILE": [1, 2, 4, 8], "BLOCK": [128, 256, 512]}, (n, a, x, y),
                              geometry=lambda v: geometry(int(v["TILE"]), int(v["BLOCK"])), reference=ref,
                              reference_grid=geometry(1, 256)[0], reference_block=(256,), outputs=[3],
                              poison_outputs=False, file_name="axpy_tiled.cu", problem=f"n={n}",
                              log=lambda line: print("  " + line))
    if result.best is None:
        print("no variant verified")
        return 1
    origin = "from the tuning database" if result.from_database else "measured now"
    print(f"best: {result.best['text']}, {result.best['median_ms']:.4f} ms ({origin})")

    y[:] = y0
    best = rtcg.SourceModule(SOURCE, result.best_options, file_name="axpy_tiled.cu").get_function("axpy_tiled")
    grid, block = geometry(int(result.variant["TILE"]), int(result.variant["BLOCK"]))
    best(n, a, x, y, grid=grid, block=block)
    best_bad = int(np.count_nonzero(host(y) != expected))
    print(f"best variant: {best_bad} mismatches")
    return 0 if bad == 0 and best_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
