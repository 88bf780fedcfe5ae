"""The compile-only functions: check, emit, explain, cubin, ptx. They need no GPU."""

from __future__ import annotations

import operator
import os
import stat
from typing import Mapping

from ._native import native

#: The precision policies (rtcgc's --precision, docs/api.md "Precision"): which tensor-core
#: arithmetic f32 contractions may use. None and "ieee" (the default) never round an f32 operand to
#: TF32; "tf32x3" splits each operand into two TF32 values and sums three products (FP32-class
#: accuracy); "tf32" uses one TF32 product (about 3e-4 relative error); "fp64x" and "fp32x" compute
#: f64 and f32 contractions on INT8 tensor cores by the Ozaki scheme II (FP64- and FP32-class
#: accuracy, docs/api.md) where the scheme can be faster (the other contractions stay as written). The policy is part of the tuning key, and a policy that cannot apply to a
#: kernel (tf32 on an f64 kernel, fp64x on a kernel without an f64 contraction) is an error.
PRECISIONS = (None, "ieee", "tf32x3", "tf32", "fp64x", "fp32x")


def check_precision(precision) -> str:
    """The policy's name as the native layer takes it ("" for the default)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: expected one of {', '.join(map(repr, PRECISIONS))}")
    return precision or ""


#: The largest DSL source accepted, as rtcgc's (kMaxSourceBytes in src/support/InputFile.h): a
#: 100 MB string was parsed, and a path to /dev/zero read until MemoryError.
MAX_SOURCE_BYTES = 16 << 20


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def source_text(source, file_name: str | None) -> tuple[str, str]:
    """(text, file name) of a source given as a string or a path (os.PathLike). A path must name a
    regular file (a FIFO would block, a device never end) of at most MAX_SOURCE_BYTES; a string
    must be no longer (ValueError)."""
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"cannot read {path!r}: it is {_file_kind(mode)}, not a regular file")
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            raise ValueError(f"cannot read {path!r}: it is larger than {MAX_SOURCE_BYTES >> 20} MiB, the limit")
        return data.decode("utf-8"), file_name or path
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if not isinstance(source, str):
        raise TypeError(f"source: expected the DSL program as a str (or a path), given {type(source).__name__}")
    if len(source) > MAX_SOURCE_BYTES or len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise ValueError(f"source: the program is larger than {MAX_SOURCE_BYTES >> 20} MiB, the limit")
    return source, file_name or "<string>"


def max_shared_bytes(value) -> int:
    """Checks max_shared: 0 (the default limit) or a positive number of bytes."""
    if isinstance(value, bool):
        raise TypeError(f"max_shared must be an integer, given {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"max_shared must be an integer, given {value!r}") from None
    if not 0 <= n < 2**63:
        raise ValueError(f"max_shared={value}: expected 0 (the default limit) or a positive number of bytes")
    return n


def sizes_dict(sizes: Mapping | None, what: str = "sizes") -> dict[str, int]:
    """Checks a size binding: a mapping from names to integers."""
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise TypeError(f"{what}: expected a mapping of size names to integers, e.g. {{'n': 500}}, "
                        f"given {type(sizes).__name__}")
    out = {}
    for name, value in sizes.items():
        if not isinstance(name, str):
            raise TypeError(f"{what}: size names are strings, given {name!r}")
        if isinstance(value, bool):
            raise TypeError(f"{what}: size {name} must be an integer, given {value!r}")
        try:
            out[name] = operator.index(value)
        except TypeError:
            raise TypeError(f"{what}: size {name} must be an integer, given {value!r}") from None
        if not -(2**63) <= out[name] < 2**63:
            raise ValueError(f"{what}: size {name} = {value} is out of range")
    return out


def _opt(s):
    return "" if s is None else str(s)


def parse(source, *, file_name: str | None = None) -> list[dict]:
    """Every kernel of the source, unbound: name and parameters (kind, type, mode, shape as written)."""
    text, name = source_text(source, file_name)
    return native.parse(text, name)


def check(source, sizes: Mapping | None = None, *, kernel: str | None = None, file_name: str | None = None):
    """Checks a program; with sizes, also proves every access in bounds and every nest race-free
    for them (as ``rtcgc check -D``). Returns the kernel's description (a dict: name, params,
    sizes, signature, diagnostics holding warnings and notes); without sizes, the list of every
    kernel's. Raises CompileError with the diagnostics."""
    text, name = source_text(source, file_name)
    sizes = sizes_dict(sizes)
    if not sizes:
        kernels = native.parse(text, name)
        if kernel is None:
            return kernels
        for k in kernels:
            if k["name"] == kernel:
                return k
        names = ", ".join(k["name"] for k in kernels)
        raise ValueError(f"kernel={kernel!r}: the source defines no such kernel (it defines: {names})")
    return native.check(text, sizes, _opt(kernel), name)


def emit(source, sizes: Mapping, schedule: str | None = None, precision=None, kernel: str | None = None, *,
         file_name: str | None = None, max_shared: int = 0) -> str:
    """The CUDA C of the kernel for these sizes under the schedule (default: the default schedule)."""
    policy = check_precision(precision)
    text, name = source_text(source, file_name)
    return native.emit(text, sizes_dict(sizes), _opt(kernel), _opt(schedule), name, max_shared_bytes(max_shared), policy)


def explain(source, sizes: Mapping, schedule: str | None = None, precision=None, kernel: str | None = None, *,
            file_name: str | None = None, arch: str = "sm_90", max_shared: int = 0) -> str:
    """What the schedule means for the kernel, in words: launch, index parts, tiles, pipelines."""
    policy = check_precision(precision)
    text, name = source_text(source, file_name)
    return native.explain(text, sizes_dict(sizes), _opt(kernel), _opt(schedule), name, arch, max_shared_bytes(max_shared), policy)


def cubin(source, sizes: Mapping, schedule: str | None = None, precision=None, kernel: str | None = None, *,
          file_name: str | None = None, arch: str = "sm_90", max_shared: int = 0) -> bytes:
    """The cubin NVRTC makes of the emitted CUDA C for ``arch`` (needs NVRTC, not a GPU)."""
    policy = check_precision(precision)
    text, name = source_text(source, file_name)
    return native.cubin(text, sizes_dict(sizes), _opt(kernel), _opt(schedule), name, arch, max_shared_bytes(max_shared), False,
                        policy)


def ptx(source, sizes: Mapping, schedule: str | None = None, precision=None, kernel: str | None = None, *,
        file_name: str | None = None, arch: str = "sm_90", max_shared: int = 0) -> str:
    """The PTX NVRTC makes of the emitted CUDA C for ``arch``."""
    policy = check_precision(precision)
    text, name = source_text(source, file_name)
    data = native.cubin(text, sizes_dict(sizes), _opt(kernel), _opt(schedule), name, arch, max_shared_bytes(max_shared), True,
                        policy)
    return data.decode("utf-8", errors="replace")
