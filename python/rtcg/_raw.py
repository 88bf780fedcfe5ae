"""Raw CUDA modules from Python (PyCUDA's SourceModule): CUDA C text compiled at run time through
rtcg's NVRTC route and kernel cache, functions launched on device arrays (PyTorch, CuPy, anything
with ``__cuda_array_interface__`` or DLPack) with every argument checked against the function's
parameters first, and tune_source, the search over macro values (Kernel Tuner's use)."""

from __future__ import annotations

import itertools
import numbers
import operator
import struct
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from . import _arrays
from ._compiler import source_text
from ._errors import CompileError
from ._kernel import Context, default_context
from ._native import native

_RAW_ARRAY_TYPES = ("f32", "f64", "i32", "i64")


def _dims(value, what: str) -> tuple:
    """(x, y, z) of an int or a tuple of one to three ints."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),)
    try:
        dims = tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(f"{what}=: expected an int or a tuple of 1 to 3 ints, given {value!r}") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 or d >= 2**32 for d in dims):
        raise ValueError(f"{what}={value!r}: expected 1 to 3 positive extents")
    return dims + (1,) * (3 - len(dims))


def _number_bytes(value, param: dict | None, position: int, function: str):
    """A Python number as the bytes of its parameter's type: a float for float/double parameters,
    an integer of the parameter's size otherwise (the size as the driver reports it)."""
    size = param["size"] if param else None
    ctype = (param or {}).get("type", "")
    if param and param["pointer"]:
        raise TypeError(f"{function}: argument {position} is {value!r}, but parameter {position}"
                        f"{' ' + repr(param['name']) if param['name'] else ''} ({ctype}) is a pointer: pass a device "
                        f"array")
    is_float_param = any(w in ctype for w in ("float", "double", "half"))
    if isinstance(value, bool) or isinstance(value, numbers.Integral):
        if is_float_param:
            value = float(value)
        else:
            size = size or 4
            if size not in (1, 2, 4, 8):
                raise TypeError(f"{function}: argument {position} is the integer {value}, but the parameter takes "
                                f"{size} bytes: pass a NumPy value of that type")
            unsigned = ctype.startswith(("unsigned", "uint", "size_t")) or "unsigned " in ctype
            fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[size]
            try:
                return struct.pack("<" + (fmt.upper() if unsigned else fmt), int(value)), f"{ctype or 'int'} {value}"
            except struct.error:
                raise ValueError(f"{function}: argument {position} = {value} does not fit the parameter "
                                 f"({ctype or f'{size} bytes'})") from None
    if isinstance(value, numbers.Real):
        if param and ctype and not is_float_param:
            raise TypeError(f"{function}: argument {position} is the float {value!r}, but parameter {position}"
                            f"{' ' + repr(param['name']) if param['name'] else ''} is {ctype}")
        size = size or 8
        if size == 4:
            return struct.pack("<f", float(value)), f"float {value}"
        if size == 8:
            return struct.pack("<d", float(value)), f"double {value}"
        raise TypeError(f"{function}: argument {position} is the float {value!r}, but the parameter takes {size} bytes: "
                        f"pass a NumPy value of its type")
    raise TypeError(f"{function}: argument {position} is a {type(value).__name__}: raw kernels take device arrays "
                    f"(PyTorch, CuPy), NumPy scalars (numpy.float32(2)) or Python numbers")


def raw_arg_tuples(function: str, params: list[dict], args) -> tuple[list, list]:
    """The extension's argument tuples for `args`, and the device arrays among them."""
    tuples, arrays = [], []
    for i, a in enumerate(args):
        position = i + 1
        param = params[i] if i < len(params) else None
        described = _arrays.describe(a)
        if described is not None:
            if described.kind != "device":
                raise TypeError(f"{function}: argument {position} is {described.describe()} in host memory: raw "
                                f"kernels take device arrays (PyTorch, CuPy); copy it to the device first")
            arrays.append(described)
            count = 1
            for extent in described.shape:
                count *= extent
            if described.dtype in _RAW_ARRAY_TYPES:
                tuples.append(("array", described.address, count, described.dtype))
            else:
                tuples.append(("pointer", described.address, 0, described.dtype_name))
            continue
        generic = type(a).__module__ == "numpy" and hasattr(a, "dtype") and hasattr(a, "tobytes")
        if generic:  # a NumPy scalar: its own type and bytes
            tuples.append(("bytes", a.tobytes(), 0, f"numpy.{a.dtype} {a}"))
            continue
        data, what = _number_bytes(a, param, position, function)
        tuples.append(("bytes", data, 0, what))
    return tuples, arrays


class RawFunction:
    """A __global__ function of a SourceModule. Call it as PyCUDA's functions are called:
    ``f(*args, grid=(gx, gy, gz), block=(bx, by, bz), shared=0, stream=None)``.

    Arguments are device arrays (used in place), NumPy scalars (passed as their bytes) and Python
    numbers (converted to the parameter's declared type and size). Every argument is checked against
    the function's parameters before the launch (count, sizes from the driver, a pointer for a
    pointer parameter, an f32/f64/i32/i64 array against a declared pointer type): a mismatch raises
    rtcg.Error naming the parameter, and nothing runs. The launch is enqueued on ``stream`` (default:
    the arrays' framework's current stream) and the call returns at once."""

    def __init__(self, module: "SourceModule", native_function):
        self.module = module
        self._native = native_function
        self.name = native_function.name
        #: [{"name", "type", "size", "pointer"}]: sizes from the driver; names and types where the
        #: source's declaration is found ("" otherwise).
        self.parameters = native_function.parameters

    @property
    def max_threads_per_block(self) -> int:
        return self._native.max_threads_per_block

    @property
    def registers(self) -> int:
        return self._native.registers

    def _tuples(self, args):
        return raw_arg_tuples(self.name, self.parameters, args)

    def __call__(self, *args, grid=(1, 1, 1), block=(1, 1, 1), shared: int = 0, stream=None):
        tuples, arrays = self._tuples(args)
        ctx = self.module.context
        handle = _arrays.stream_handle(stream) if stream is not None else _arrays.default_stream(arrays)
        if _arrays.needs_device_sync(arrays, handle):
            ctx.synchronize()
        self._native.launch(ctx._native, _dims(grid, "grid"), _dims(block, "block"), int(shared), handle, tuples)

    def __repr__(self) -> str:
        params = ", ".join(f"{p['type']} {p['name']}".strip() or f"<{p['size']} bytes>" for p in self.parameters)
        return f"rtcg.RawFunction({self.name}({params}))"


class SourceModule:
    """CUDA C compiled for a device at run time (PyCUDA's ``SourceModule``), through rtcg's NVRTC
    route and kernel cache (a second process with the same text, options and device starts without
    NVRTC). ``options``: NVRTC options, each one word (``-DTILE=128``, ``--use_fast_math``); the
    architecture is the device's. Unlike PyCUDA, the text is compiled as given (no ``extern "C"``
    wrapped around it): declare kernels ``extern "C"`` to get them by their name.

    Raises rtcg.CompileError with NVRTC's errors at their lines and columns of ``file_name``."""

    def __init__(self, source, options: Sequence[str] = (), *, file_name: str | None = None,
                 context: Context | None = None, log=None):
        text, name = source_text(source, file_name)
        self.source = text
        self.file_name = name if name != "<string>" else "module.cu"
        self.options = [str(o) for o in options]
        self.context = context or default_context(0)
        self._native = native.raw_module(self.context._native, text, self.options, self.file_name, log)
        self._functions: dict[str, RawFunction] = {}

    def get_function(self, name: str) -> RawFunction:
        """The __global__ function `name` (raises rtcg.Error listing the module's functions)."""
        f = self._functions.get(name)
        if f is None:
            f = self._functions[name] = RawFunction(self, self._native.function(name))
        return f

    function = get_function

    @property
    def function_names(self) -> list[str]:
        return list(self._native.function_names)

    @property
    def loaded_from_disk_cache(self) -> bool:
        return self._native.loaded_from_disk_cache

    @property
    def warnings(self) -> str:
        return self._native.warnings

    def __repr__(self) -> str:
        return f"rtcg.SourceModule({self.file_name}: {', '.join(self.function_names)})"


@dataclass
class RawTuneResult:
    """What tune_source found. ``best``: the fastest verified variant ({"variant", "text",
    "median_ms", ...}) or None; ``candidates``: every variant measured now; ``from_database``: the
    best came from the tuning database and no search ran; ``best_options``: the NVRTC options that
    build the best variant (SourceModule(source, result.best_options))."""

    best: dict | None
    candidates: list
    from_database: bool
    kernel_hash: str
    best_options: list

    @property
    def variant(self) -> dict | None:
        return dict(self.best["variant"]) if self.best else None


def _parameters_of_some_variant(text, file_name, options, function, pairs, restrict, ctx) -> list[dict]:
    """The function's parameters in the first variant that compiles (the kernel cache keeps it for the
    search); [] when none does (the search then records every variant's compile failure)."""
    for values in itertools.product(*(vs for _, vs in pairs)):
        variant = {k: v for (k, _), v in zip(pairs, values)}
        if restrict is not None and not restrict(dict(variant)):
            continue
        try:
            module = SourceModule(text, list(options) + [f"-D{k}={v}" for k, v in variant.items()],
                                  file_name=file_name, context=ctx, log=lambda line: None)
        except CompileError:
            continue
        return module.get_function(function).parameters
    return []


def tune_source(source, function: str, space: Mapping[str, Sequence], args: Sequence, *,
                geometry: Callable, reference: RawFunction | None = None, reference_grid=(1, 1, 1),
                reference_block=(1, 1, 1), reference_shared: int = 0, outputs: Sequence[int] = (),
                check: Callable | None = None, restrict: Callable | None = None, tolerance: float = 0.0,
                poison_outputs: bool = True, options: Sequence[str] = (), file_name: str | None = None,
                problem: str = "", db: str | None = None, use_cached: bool = True, max_variants: int = 0,
                warmup: int = 2, repeats: int = 20, context: Context | None = None, log=None) -> RawTuneResult:
    """Tunes `function` of a raw module over macro values (Kernel Tuner's use, inside rtcg).

    ``space``: {"TILE": [64, 128, 256], ...}; each variant compiles with -DTILE=128 and so on.
    ``geometry(variant)`` gives the launch of a variant as (grid, block) or (grid, block, shared)
    (``variant`` maps each macro to its value as a string). Each variant is verified, against
    ``reference`` (a RawFunction launched once with reference_grid/block/shared on the same
    arguments; ``outputs`` are the indices of the arguments compared, float ones within
    ``tolerance``, integer ones exactly) and/or
    by ``check(variant)`` (called after the variant's launch has completed: None or True when the
    outputs are right, False or a string saying why not), then timed like rtcg's own candidates;
    every variant goes into the tuning database (``db``: its file, "-" for none) under a key of the
    source, options, function, space, ``problem`` and device, and the next call with the same key
    returns the database's best without a search (``use_cached=False`` searches again).
    ``restrict(variant)`` False leaves a variant out."""
    text, name = source_text(source, file_name)
    file_name = name if name != "<string>" else "module.cu"
    ctx = context or default_context(0)
    if not isinstance(space, Mapping) or not space:
        raise TypeError("space: expected a mapping of macro names to lists of values, e.g. {'TILE': [64, 128]}")
    pairs = [(str(k), [str(v) for v in vs]) for k, vs in space.items()]
    params = _parameters_of_some_variant(text, file_name, options, function, pairs, restrict, ctx)
    tuples, _ = raw_arg_tuples(function, params, args)  # Python numbers as the parameters' types

    def geometry3(variant):
        g = geometry(dict(variant))
        if not isinstance(g, (tuple, list)) or len(g) not in (2, 3):
            raise TypeError(f"geometry({dict(variant)}) returned {g!r}: expected (grid, block) or (grid, block, shared)")
        return (_dims(g[0], "grid"), _dims(g[1], "block"), int(g[2]) if len(g) == 3 else 0)

    def wrap(f):
        return None if f is None else (lambda v: f(dict(v)))

    r = native.raw_tune(ctx._native, text, [str(o) for o in options], file_name, function, pairs, wrap(restrict),
                        geometry3, reference._native if reference is not None else None,
                        _dims(reference_grid, "reference_grid"), _dims(reference_block, "reference_block"),
                        int(reference_shared), [int(i) for i in outputs], float(tolerance), bool(poison_outputs),
                        wrap(check), problem, "" if db is None else db, bool(use_cached), int(max_variants),
                        int(warmup), int(repeats), log, tuples)
    return RawTuneResult(r["best"], r["candidates"], r["from_database"], r["kernel_hash"], r["best_options"])
