"""Kernel arguments from Python: NumPy arrays (host memory, copied in and out by the parameter's
mode), device arrays used in place (PyTorch tensors, ``__cuda_array_interface__``: CuPy, Numba,
PyTorch; DLPack: JAX and others) and scalars. Everything is checked against the bound signature
before anything is launched; a mismatch raises TypeError or ValueError naming the argument."""

from __future__ import annotations

import math
import numbers
import operator
import sys
from dataclasses import dataclass, field

from ._native import native

_NUMPY_TYPES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "int8": "i8", "uint8": "u8",
                "uint32": "u32"}
_TYPE_NUMPY = {v: k for k, v in _NUMPY_TYPES.items()}
_TYPESTR = {"f4": "f32", "f8": "f64", "i4": "i32", "i8": "i64", "i1": "i8", "u1": "u8", "u4": "u32"}  # NumPy's typestr codes
_ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "i8": 1, "u8": 1, "u32": 4}
# DLPack's type codes (kDLInt 0, kDLUInt 1, kDLFloat 2) and device types (kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3,
# kDLCUDAManaged 13).
_DLPACK_TYPES = {(2, 32): "f32", (2, 64): "f64", (0, 32): "i32", (0, 64): "i64", (0, 8): "i8", (1, 8): "u8",
                 (1, 32): "u32"}


@dataclass
class Array:
    """An array argument as rtcg sees it."""

    kind: str                 # "host" or "device"
    address: int
    shape: tuple
    dtype: str | None         # "f32", "f64", "i32", "i64", "i8", "u8", "u32"; None: a type rtcg has no arrays of
    dtype_name: str           # as its library names it, for messages
    contiguous: bool
    writable: bool
    device: int | None        # CUDA device ordinal of a device array, where known
    framework: str            # "numpy", "torch", "cupy", "cuda_array_interface", "dlpack"
    owner: object = field(repr=False, default=None)  # kept alive until the launch is done
    # __cuda_array_interface__ v3: the stream the producer's work on the data is ordered on (None:
    # nothing to wait for).
    stream: int | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _ITEMSIZE.get(self.dtype, 1)

    def describe(self) -> str:
        where = "" if self.kind == "host" else f" on cuda:{self.device}" if self.device is not None else " (device)"
        kind = {"numpy": "NumPy array", "torch": "torch.Tensor", "cupy": "CuPy array"}.get(self.framework, "array")
        return f"{kind} of {self.dtype_name} {list(self.shape)}{where}"


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _contiguous(shape, strides, itemsize) -> bool:
    """Row-major: every dimension of more than one element has the C stride."""
    if strides is None:
        return True
    want = _c_strides(shape, itemsize)
    return all(extent <= 1 or s == w for extent, s, w in zip(shape, strides, want))


def _numpy_array(a, framework="numpy", owner=None) -> Array:
    dtype = _NUMPY_TYPES.get(a.dtype.name) if a.dtype.isnative else None
    return Array("host", a.ctypes.data if a.size else 0, tuple(a.shape), dtype, str(a.dtype),
                 bool(a.flags.c_contiguous), bool(a.flags.writeable), None, framework,
                 owner if owner is not None else a)


def _module_of(obj) -> str:
    return type(obj).__module__.split(".")[0]


def describe(obj) -> Array | None:
    """The array `obj` is, or None when it is no array (a scalar, or something else)."""
    mod = _module_of(obj)
    if mod == "numpy" and hasattr(obj, "ctypes") and hasattr(obj, "flags"):
        return _numpy_array(obj)
    if mod == "torch" and hasattr(obj, "data_ptr") and hasattr(obj, "is_cuda"):
        name = str(obj.dtype).replace("torch.", "")
        if not obj.is_cuda:
            # Host memory: a NumPy view of the tensor (shares its memory, so results land in it).
            try:
                view = obj.detach().numpy()
            except (TypeError, RuntimeError):
                return Array("host", 0, tuple(obj.shape), None, name, obj.is_contiguous(), True, None, "torch", obj)
            return _numpy_array(view, "torch", obj)
        return Array("device", obj.data_ptr(), tuple(obj.shape), _NUMPY_TYPES.get(name), name,
                     obj.is_contiguous(), True, obj.device.index, "torch", obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        address, readonly = cai["data"]
        typestr = cai["typestr"]
        native_order = typestr[0] in "<|=" if sys.byteorder == "little" else typestr[0] in ">|="
        dtype = _TYPESTR.get(typestr[1:]) if native_order else None
        shape = tuple(cai["shape"])
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
        device = None
        if mod == "cupy":
            device = obj.device.id
        name = str(getattr(obj, "dtype", typestr))
        stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
        return Array("device", int(address or 0), shape, dtype, name, _contiguous(shape, cai.get("strides"), itemsize),
                     not readonly, device, "cupy" if mod == "cupy" else "cuda_array_interface", obj,
                     int(stream) if isinstance(stream, int) else None)
    if hasattr(obj, "__dlpack__"):
        try:
            address, shape, strides, (code, bits, lanes), device_type, device_id = native.dlpack_info(obj)
        except Exception as e:  # an exporter that fails
            raise TypeError(f"cannot read the array through DLPack: {e}") from None
        dtype = _DLPACK_TYPES.get((code, bits)) if lanes == 1 else None
        shape = tuple(shape)
        contiguous = _contiguous(shape, [s * (bits // 8) for s in strides] if strides else None, bits // 8)
        if device_type in (1, 3):
            return Array("host", address, shape, dtype, f"dlpack({code},{bits})", contiguous, True, None, "dlpack", obj)
        if device_type in (2, 13):
            return Array("device", address, shape, dtype, f"dlpack({code},{bits})", contiguous, True, device_id,
                         "dlpack", obj)
        raise TypeError(f"a DLPack array on device type {device_type}: rtcg takes CUDA or host memory")
    return None


def stream_handle(stream) -> int:
    """The CUstream address of a stream given as an int, a PyTorch or CuPy stream, a Numba stream,
    or an object with ``__cuda_stream__``."""
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream=: expected a CUDA stream (PyTorch, CuPy or Numba stream, or a handle), given a bool")
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    handle = getattr(stream, "handle", None)  # numba.cuda stream
    if handle is not None:
        return int(getattr(handle, "value", handle) or 0)
    raise TypeError(f"stream=: expected a CUDA stream (PyTorch, CuPy or Numba stream, or a handle as int), "
                    f"given {type(stream).__name__}")


def default_stream(arrays) -> int:
    """The stream a launch on device arrays goes to without stream=: the current stream of the
    framework the arrays come from (PyTorch's, else CuPy's), else the legacy default stream."""
    for a in arrays:
        if a.framework == "torch":
            import torch

            return int(torch.cuda.current_stream(a.device).cuda_stream)
    for a in arrays:
        if a.framework == "cupy":
            import cupy

            with cupy.cuda.Device(a.device):
                return int(cupy.cuda.get_current_stream().ptr)
    return 0


def needs_device_sync(arrays, handle: int) -> bool:
    """Whether a launch on stream `handle` must first wait for the device: an array's producer
    declared (``__cuda_array_interface__`` v3 "stream") another stream than the launch's. 1 is
    the legacy default stream (0 here), 2 the per-thread default stream."""
    for a in arrays:
        if a.stream is None:
            continue
        producer = 0 if a.stream == 1 else a.stream
        if producer != handle:
            return True
    return False


def _param_label(p) -> str:
    return f"{p['mode']} {p['name']}" if p["kind"] == "array" and p["mode"] != "in" else p["name"]


def arg_params(info) -> list[dict]:
    return [p for p in info["params"] if p["kind"] != "size"]


def count_error(info, given: int) -> TypeError:
    params = arg_params(info)
    sizes = [p["name"] for p in info["params"] if p["kind"] == "size"]
    names = ", ".join(_param_label(p) for p in params)
    note = f"; its size{'s' if len(sizes) != 1 else ''} {', '.join(sizes)} {'are' if len(sizes) != 1 else 'is'} " \
           f"bound from the arrays' shapes or at compile time" if sizes else ""
    return TypeError(f"{info['name']} takes {len(params)} argument{'s' if len(params) != 1 else ''} "
                     f"({names}{note}), given {given}")


@dataclass
class Plan:
    """Checked arguments, ready for the extension's launch."""

    tuples: list
    arrays: list
    has_host: bool
    has_device: bool
    device: int | None  # of the device arrays, where known


def _scalar(value, p, where):
    t = p["type"]
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise TypeError(f"{where}: expected a {t} scalar, given {type(value).__name__}")
    if t in ("f32", "f64"):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: expected a {t} scalar (a number), given {type(value).__name__}") from None
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{where}: expected an {t} scalar (an integer), given {type(value).__name__}") from None
    if t == "u32":
        if not 0 <= v < 2 ** 32:
            raise ValueError(f"{where}: {v} is out of the range of u32 (0 to 4294967295)")
        return v
    bits = 32 if t == "i32" else 64
    if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
        raise ValueError(f"{where}: {v} is out of the range of {t}")
    return v


def describe_args(info, args) -> list:
    """Each argument described (Array for arrays, the value for scalars); checks the count."""
    params = arg_params(info)
    if len(args) != len(params):
        raise count_error(info, len(args))
    out = []
    for i, (a, p) in enumerate(zip(args, params)):
        d = describe(a) if p["kind"] == "array" else None
        if p["kind"] == "array" and d is None:
            raise TypeError(f"{info['name']}: argument {i + 1} ({_param_label(p)}): expected an array "
                            f"({p['type']}[{', '.join(p['shape'])}]: a NumPy array, or a device array such as a "
                            f"CuPy array or a PyTorch tensor), given {type(a).__name__}")
        out.append(d if d is not None else a)
    return out


def prepare(info, described, *, device: int | None = None, binding_from=None) -> Plan:
    """Checks described arguments against the bound kernel `info` (compiler.check's dict)."""
    params = arg_params(info)
    tuples, arrays = [], []
    devices = set()
    for i, (d, p) in enumerate(zip(described, params)):
        where = f"{info['name']}: argument {i + 1} ({_param_label(p)})"
        if p["kind"] == "scalar":
            tuples.append(("scalar", _scalar(d, p, where), 0, p["type"]))
            continue
        want_shape = tuple(p["bound_shape"])
        want = f"{p['type']}[{', '.join(str(x) for x in want_shape)}]"
        if d.dtype != p["type"]:
            raise TypeError(f"{where}: expected {want} ({_TYPE_NUMPY[p['type']]}), given {d.describe()}")
        if d.shape != want_shape:
            note = ""
            if binding_from:
                used = [f"{n} = {info['sizes'][n]} from {src}" for n, src in binding_from.items() if n in info["sizes"]]
                if used:
                    note = f" (bound {'; '.join(used)})"
            raise ValueError(f"{where}: expected shape {list(want_shape)} ({want}{note}), given {d.describe()}")
        if not d.contiguous:
            fix = "a.contiguous()" if d.framework == "torch" else "numpy.ascontiguousarray(a)" if d.kind == "host" \
                else "a contiguous copy"
            raise ValueError(f"{where}: the array is not contiguous in row-major (C) order; rtcg's arrays are dense "
                             f"and row-major: pass {fix}")
        if p["mode"] != "in" and not d.writable:
            raise ValueError(f"{where}: the kernel writes this array, but it is read-only")
        if d.kind == "device":
            if device is not None and d.device is not None and d.device != device:
                raise ValueError(f"{where}: the array is on cuda:{d.device}, the kernel's context on cuda:{device}")
            if d.device is not None:
                devices.add(d.device)
        if d.kind == "host" and d.address == 0 and math.prod(d.shape) != 0:
            raise TypeError(f"{where}: cannot take the host memory of {d.describe()}")
        tuples.append((d.kind, d.address, math.prod(d.shape), p["type"]))
        arrays.append((i, p, d))
    # A written array must not overlap another argument: the kernel was proved race-free for
    # distinct arrays (and an `out` array copied back would overwrite an input's copy).
    for i, p, d in arrays:
        if p["mode"] == "in" or d.nbytes == 0:
            continue
        for j, q, e in arrays:
            if j == i or e.kind != d.kind or e.nbytes == 0:
                continue
            if d.address < e.address + e.nbytes and e.address < d.address + d.nbytes:
                raise ValueError(f"{info['name']}: argument {i + 1} ({_param_label(p)}) shares memory with argument "
                                 f"{j + 1} ({_param_label(q)}); a written array must be distinct from the others")
    if len(devices) > 1:
        raise ValueError(f"{info['name']}: the device arrays are on several devices ({sorted(devices)})")
    kinds = {d.kind for _, _, d in arrays}
    return Plan(tuples, [d for _, _, d in arrays], "host" in kinds, "device" in kinds,
                next(iter(devices)) if devices else None)
