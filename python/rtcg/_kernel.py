"""Contexts and kernels: compile for a device, call with NumPy or device arrays."""

from __future__ import annotations

import threading
from typing import Mapping

from . import _arrays
from ._compiler import check_precision, sizes_dict, source_text
from ._errors import Error
from ._native import native

_TUNING = ("off", "cached", "tune")


class Context:
    """A CUDA device (its primary context, the one PyTorch and CuPy use) with rtcg's compile caches.

    Raises NoDeviceError without a CUDA driver or device."""

    def __init__(self, device: int = 0):
        self._native = native.Context(int(device))
        self._info = self._native.device_info()
        self.device = self._info["ordinal"]

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def arch(self) -> str:
        return self._info["arch"]

    @property
    def device_info(self) -> dict:
        return dict(self._info)

    def synchronize(self) -> None:
        """Waits for all work on the device."""
        self._native.synchronize()

    def cache_stats(self) -> dict:
        """How this context's compiles were served: nvrtc, disk, memory."""
        return self._native.cache_stats()

    def compile(self, source, sizes: Mapping | None = None, *, kernel: str | None = None, schedule: str | None = None,
                tuning: str = "cached", precision=None, file_name: str | None = None, max_candidates: int = 64,
                time_limit: float = 30.0, log=None, progress=None) -> "CompiledKernel":
        """Compiles the kernel for these sizes on this device.

        ``tuning``: "cached" (the tuning database's best schedule for the kernel, its sizes and this
        device, through the lookup of the C++ API; else the default schedule), "off" (the default
        schedule), or "tune" (as "cached"; on a miss, search now within ``max_candidates`` and
        ``time_limit`` seconds, showing ``progress``). ``schedule`` overrides all of them.
        ``log`` receives warnings and notes (which schedule was used and why)."""
        policy = check_precision(precision)
        if tuning not in _TUNING:
            raise ValueError(f"tuning={tuning!r}: expected one of {', '.join(map(repr, _TUNING))}")
        text, name = source_text(source, file_name)
        sizes = sizes_dict(sizes)
        info = native.check(text, sizes, kernel or "", name)
        if progress is True:
            from ._progress import ProgressDisplay

            progress = ProgressDisplay(f"tuning {info['name']}")
        compiled = self._native.compile(text, sizes, kernel or "", schedule or "", name, tuning, int(max_candidates),
                                        float(time_limit), log, progress, policy)
        if hasattr(progress, "close"):
            progress.close()
        return CompiledKernel(self, compiled, info)

    def __repr__(self) -> str:
        return f"rtcg.Context(device={self.device}: {self.name}, {self.arch})"


_contexts: dict[int, Context] = {}
_contexts_lock = threading.Lock()


def default_context(device: int = 0) -> Context:
    """The process's Context for a device, made on first use."""
    with _contexts_lock:
        ctx = _contexts.get(device)
        if ctx is None:
            ctx = _contexts[device] = Context(device)
        return ctx


class CompiledKernel:
    """A kernel compiled for bound sizes on one device. Call it with its non-size parameters.

    NumPy arrays are copied to the device and back by the parameter's mode (in: copied in; out:
    copied back; inout: both), like PyCUDA's In/Out/InOut, and the call returns when the kernel
    and the copies are done. Device arrays (PyTorch tensors, CuPy and Numba arrays, DLPack) are used
    in place, with no copy: the launch is enqueued on ``stream`` (a PyTorch, CuPy or Numba stream
    or a raw handle; default: the current stream of the arrays' framework, else the legacy default
    stream) and the call returns at once, as the frameworks' own operations do."""

    def __init__(self, context: Context, compiled, info: dict):
        self.context = context
        self._native = compiled
        self.info = info

    name = property(lambda self: self._native.name)
    signature = property(lambda self: self._native.signature)
    cuda_source = property(lambda self: self._native.cuda_source)
    schedule = property(lambda self: self._native.schedule)
    #: "explicit", "default", "tuned", or the tuning database's rung that served it.
    schedule_origin = property(lambda self: self._native.schedule_origin)
    loaded_from_disk_cache = property(lambda self: self._native.loaded_from_disk_cache)
    sizes = property(lambda self: dict(self.info["sizes"]))

    def __call__(self, *args, stream=None):
        described = _arrays.describe_args(self.info, args)
        plan = _arrays.prepare(self.info, described, device=self.context.device)
        self._launch(plan, stream)

    def _launch(self, plan: "_arrays.Plan", stream) -> None:
        ctx = self.context
        if plan.has_host:
            if stream is not None:
                raise ValueError(f"{self.name}: stream= needs device arrays (a launch with NumPy arrays copies them "
                                 f"back and returns when done); pass CuPy or PyTorch arrays, or leave stream out")
            if plan.has_device:
                ctx.synchronize()  # the device arrays' producers, on whatever stream, are done
            self._native.launch(ctx._native, plan.tuples)
            return
        handle = _arrays.stream_handle(stream) if stream is not None else _arrays.default_stream(plan.arrays)
        if _arrays.needs_device_sync(plan.arrays, handle):
            # The producer's stream is not the launch's: wait for the device, so the data is ready
            # (__cuda_array_interface__ v3 asks the consumer to synchronize).
            ctx.synchronize()
        self._native.enqueue(ctx._native, handle, plan.tuples)

    def __repr__(self) -> str:
        return f"rtcg.CompiledKernel({self.signature}; schedule {self.schedule!r}, {self.schedule_origin})"


class Kernel:
    """A kernel whose sizes are bound from the shapes of the arrays it is called with, as PyCUDA
    users expect: ``Kernel(source)(a, b, c)``. Each distinct binding is compiled once and kept.

    ``sizes`` binds sizes no shape determines (or fixes them); ``context`` is the device (default:
    the device of the device arrays, else 0). ``schedule``, ``tuning`` and the rest are as for
    Context.compile: by default the tuning database's best schedule for each binding."""

    def __init__(self, source, kernel: str | None = None, *, sizes: Mapping | None = None,
                 schedule: str | None = None, tuning: str = "cached", precision=None, context: Context | None = None,
                 file_name: str | None = None, log=None):
        check_precision(precision)
        if tuning not in _TUNING:
            raise ValueError(f"tuning={tuning!r}: expected one of {', '.join(map(repr, _TUNING))}")
        self._text, self._file = source_text(source, file_name)
        kernels = native.parse(self._text, self._file)
        if kernel is None and len(kernels) > 1:
            raise ValueError(f"the source defines {len(kernels)} kernels ({', '.join(k['name'] for k in kernels)}): "
                             f"choose one with kernel=NAME")
        chosen = [k for k in kernels if kernel is None or k["name"] == kernel]
        if not chosen:
            raise ValueError(f"kernel={kernel!r}: the source defines no such kernel (it defines: "
                             f"{', '.join(k['name'] for k in kernels)})")
        self.info = chosen[0]
        self.name = self.info["name"]
        self._sizes = sizes_dict(sizes)
        self._schedule = schedule
        self._tuning = tuning
        self._precision = precision
        self._context = context
        self._log = log
        self._bindings: dict[tuple, tuple] = {}    # (shapes, given sizes) -> (sizes, where each came from)
        self._bound: dict[tuple, dict] = {}        # sizes -> checked kernel (no GPU needed)
        self._compiled: dict[tuple, CompiledKernel] = {}  # (device, sizes) -> compiled
        self._lock = threading.Lock()

    def bind(self, *args, sizes: Mapping | None = None) -> dict:
        """The sizes a call with these arguments binds (from the arrays' shapes and ``sizes``)."""
        described = _arrays.describe_args(self.info, args)
        return self._bind(described, sizes)[0]

    def _bind(self, described, sizes):
        given = dict(self._sizes)
        if sizes is not None:
            given.update(sizes_dict(sizes))
        shapes = [d.shape if isinstance(d, _arrays.Array) else None for d in described]
        # A call with the shapes of an earlier one binds the same sizes: kept, so that a call in a
        # loop costs no front end (binding parses the source).
        key = (tuple(shapes), tuple(sorted(given.items())))
        with self._lock:
            hit = self._bindings.get(key)
        if hit is not None:
            return hit
        try:
            bound, origin = native.bind_shapes(self._text, shapes, given, self.name, self._file)
        except Error as e:
            raise ValueError(str(e)) from None
        with self._lock:
            if len(self._bindings) < 4096:
                self._bindings[key] = (bound, origin)
        return bound, origin

    def check(self, *args, sizes: Mapping | None = None) -> dict:
        """Binds sizes from the arguments and checks them against the kernel, without a GPU: raises
        what a call would (CompileError for sizes the proof rejects, TypeError or ValueError for a
        mismatched argument) and returns the bound kernel's description."""
        described = _arrays.describe_args(self.info, args)
        info, bound_from = self._checked(described, sizes)
        _arrays.prepare(info, described, binding_from=bound_from)
        return info

    def _checked(self, described, sizes):
        bound, origin = self._bind(described, sizes)
        key = tuple(sorted(bound.items()))
        with self._lock:
            info = self._bound.get(key)
        if info is None:
            info = native.check(self._text, bound, self.name, self._file)
            with self._lock:
                self._bound[key] = info
        return info, origin

    def compile(self, sizes: Mapping | None = None, *, context: Context | None = None) -> CompiledKernel:
        """The kernel compiled for explicit sizes (merged over the constructor's)."""
        given = dict(self._sizes)
        given.update(sizes_dict(sizes))
        return self._compile(given, context or self._context or default_context(0))

    def _compile(self, sizes: dict, ctx: Context) -> CompiledKernel:
        key = (ctx.device, tuple(sorted(sizes.items())))
        with self._lock:
            k = self._compiled.get(key)
        if k is None:
            k = ctx.compile(self._text, sizes, kernel=self.name, schedule=self._schedule, tuning=self._tuning,
                            precision=self._precision, file_name=self._file, log=self._log)
            with self._lock:
                self._compiled[key] = k
        return k

    def __call__(self, *args, stream=None, sizes: Mapping | None = None):
        described = _arrays.describe_args(self.info, args)
        info, bound_from = self._checked(described, sizes)
        device = self._context.device if self._context is not None else None
        plan = _arrays.prepare(info, described, device=device, binding_from=bound_from)
        ctx = self._context or default_context(plan.device if plan.device is not None else 0)
        compiled = self._compile(dict(info["sizes"]), ctx)
        compiled._launch(plan, stream)

    @property
    def compiled(self) -> list[CompiledKernel]:
        """The bindings compiled so far."""
        with self._lock:
            return list(self._compiled.values())

    def __repr__(self) -> str:
        params = ", ".join(_arrays._param_label(p) for p in self.info["params"])
        return f"rtcg.Kernel({self.name}({params}); {len(self._compiled)} binding(s) compiled)"
