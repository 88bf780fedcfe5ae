"""rtcg: run-time code generation for loop kernels on CUDA GPUs, from Python.

Compile-only (no GPU needed)::

    import rtcg
    src = '''kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
               for i in 0..n { y[i] = a * x[i] + y[i]; } }'''
    print(rtcg.emit(src, {"n": 1000}))          # CUDA C
    rtcg.check(src, {"n": 1000})                # raises rtcg.CompileError with diagnostics

On a GPU::

    axpy = rtcg.Kernel(src)                      # sizes bound from the arrays' shapes
    axpy(2.0, x, y)                              # NumPy: copied in/out; CuPy/PyTorch: in place

See docs/python.md.
"""

import importlib.util as _importlib_util
import sys as _sys

# PyTorch first, where it is installed: on the GPU machine (torch 2.11+cu130, Python 3.12),
# `import rtcg, torch` aborted inside torch's import ("free(): invalid pointer") while
# `import torch, rtcg` and rtcg's GPU tests with PyTorch tensors ran; the cause is not found yet
# (none of the extension's shared libraries alone does it). RTCG_NO_TORCH_PRELOAD=1 skips this.
if "torch" not in _sys.modules and not __import__("os").environ.get("RTCG_NO_TORCH_PRELOAD"):
    if _importlib_util.find_spec("torch") is not None:
        import torch as _torch  # noqa: F401

from ._paths import setup_worker as _setup_worker

_setup_worker()

from ._errors import CompileError, Diagnostic, Error, NoDeviceError  # noqa: E402
from ._compiler import PRECISIONS, check, cubin, emit, explain, parse, ptx  # noqa: E402
from ._kernel import CompiledKernel, Context, Kernel, default_context  # noqa: E402
from ._raw import RawFunction, RawTuneResult, SourceModule, tune_source  # noqa: E402
from ._progress import ProgressDisplay  # noqa: E402
from ._tune import Candidate, TuneResult, tune  # noqa: E402
from ._native import native as _native  # noqa: E402

__version__ = _native.version()

__all__ = [
    "CompileError", "Diagnostic", "Error", "NoDeviceError", "PRECISIONS", "check", "cubin", "emit", "explain",
    "parse", "ptx", "CompiledKernel", "Context", "Kernel", "default_context", "ProgressDisplay", "Candidate",
    "TuneResult", "tune", "RawFunction", "RawTuneResult", "SourceModule", "tune_source",
]
