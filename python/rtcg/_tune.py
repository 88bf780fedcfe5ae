"""Tuning from Python: the search of ``rtcgc tune``, recorded in the same tuning database."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Mapping

from ._compiler import check_precision, sizes_dict, source_text
from ._native import native


@dataclass(frozen=True)
class Candidate:
    """One schedule the search tried."""

    schedule: str
    status: str            # "verified", "wrong-result", "compile-failed", "launch-failed", "faulted", "timed-out", "skipped"
    reason: str = ""       # failures: what went wrong
    median_ms: float = 0.0  # verified only
    gflops: float = 0.0
    gbytes: float = 0.0
    relative_error: float = 0.0
    registers: int = 0
    spill_bytes: int = 0
    shared_bytes: int = 0
    occupancy: float = 0.0
    compile_ms: float = 0.0
    completed_s: float = 0.0  # seconds since the search started


@dataclass
class TuneResult:
    """What a search found: ``best`` (the fastest verified candidate), ``default`` (the default
    schedule's measurement), every candidate as a record, and the search's counts."""

    kernel: str
    sizes: str
    device: str
    arch: str
    search_id: int
    best: Candidate | None
    default: Candidate | None
    candidates: list[Candidate] = field(repr=False)
    counts: dict = field(repr=False)
    time_limit_reached: bool = False
    wall_seconds: float = 0.0
    reference: str = ""

    @property
    def schedule(self) -> str | None:
        """The best schedule's text (pass it as schedule= to compile), or None."""
        return self.best.schedule if self.best else None

    @property
    def speedup(self) -> float | None:
        """How many times faster the best schedule is than the default one."""
        if self.best and self.default and self.default.status == "verified" and self.best.median_ms > 0:
            return self.default.median_ms / self.best.median_ms
        return None

    def records(self) -> list[dict]:
        """Every candidate as a dict (e.g. for pandas.DataFrame)."""
        from dataclasses import asdict

        return [asdict(c) for c in self.candidates]

    def __str__(self) -> str:
        lines = [f"{self.kernel} ({self.sizes}) on {self.device} ({self.arch}): {len(self.candidates)} candidates "
                 f"in {self.wall_seconds:.1f} s, {self.counts.get('verified', 0)} verified"
                 + (" (time limit reached)" if self.time_limit_reached else "")]
        if self.best:
            lines.append(f"  best    {self.best.median_ms:.4f} ms  {self.best.schedule}")
        if self.default and self.default.status == "verified":
            lines.append(f"  default {self.default.median_ms:.4f} ms  {self.default.schedule}")
        if self.speedup:
            lines.append(f"  the best is {self.speedup:.2f}x faster than the default schedule")
        return "\n".join(lines)


def _candidate(d):
    return None if d is None else Candidate(**d)


def _input_files(inputs: Mapping | None, folder: str) -> dict[str, str]:
    """name -> file for the search's own input arrays: a path is passed on as it is; an array's
    values (NumPy, or anything numpy.asarray takes; CuPy and PyTorch arrays are copied to the host)
    are written to a file in ``folder``, row-major, in the format rtcgc tune --input reads."""
    out: dict[str, str] = {}
    for name, value in (inputs or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"inputs: keys are array names (str), given {type(name).__name__}")
        if isinstance(value, (str, os.PathLike)):
            out[name] = os.fspath(value)
            continue
        import numpy as np

        if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
            value = value.get()
        elif hasattr(value, "detach") and hasattr(value, "cpu"):
            value = value.detach().cpu()
        a = np.ascontiguousarray(np.asarray(value)).reshape(-1)
        if a.dtype.kind not in "iuf":
            raise TypeError(f"inputs[{name!r}]: expected integer or floating-point values, given dtype {a.dtype}")
        path = os.path.join(folder, f"{len(out)}.txt")
        np.savetxt(path, a, fmt="%d" if a.dtype.kind in "iu" else "%.17g")
        out[name] = path
    return out


def tune(source, sizes: Mapping, *, kernel: str | None = None, time_limit: float = 60.0, max_candidates: int = 0,
         precision=None, devices=(0,), db: str | None = None, progress=True, log=None, seed: int = 1,
         resume: bool = False, file_name: str | None = None, inputs: Mapping | None = None) -> TuneResult:
    """Searches the kernel's schedule space on the GPU for these sizes: compiles candidates with
    NVRTC, verifies each against the CPU reference, times the verified ones, and records every
    candidate in the tuning database that ``rtcgc tune`` and ``rtcgc db`` use (``db``: another
    file; "-": none), where compile()'s lookup (Context.compile, Kernel) finds the winner.

    ``time_limit`` (seconds; 0: none) stops starting candidates; ``max_candidates`` (0: no limit)
    samples the space. ``progress``: True shows a line on the terminal or in the notebook, False
    nothing, or a callable taking (candidates, measured, verified, elapsed s, time limit s, best ms).
    ``log`` receives the search's events. ``precision`` is the policy searched under (part of the
    tuning key, as for compile). ``inputs`` maps in or inout arrays to their values (an array, or
    the path of a file of whitespace-separated numbers, as rtcgc tune --input): the search then
    ranks schedules on the data the kernel will see, such as a sparse matrix's row pointers; the
    other inputs stay random. Raises NoDeviceError without a GPU."""
    policy = check_precision(precision)
    text, name = source_text(source, file_name)
    sizes = sizes_dict(sizes)
    display = None
    if progress is True:
        from ._progress import ProgressDisplay

        if kernel is None:
            names = [k["name"] for k in native.parse(text, name)]
            title = names[0] if len(names) == 1 else "kernel"
        else:
            title = kernel
        display = progress = ProgressDisplay(f"tuning {title} ({', '.join(f'{k}={v}' for k, v in sizes.items())})")
    elif progress is False:
        progress = None
    try:
        with tempfile.TemporaryDirectory(prefix="rtcg-inputs-") as folder:
            files = _input_files(inputs, folder)
            r = native.tune(text, sizes, kernel or "", name, int(max_candidates), float(time_limit),
                            [int(d) for d in devices], db or "", "", int(seed), bool(resume), progress, log, policy,
                            files)
    finally:
        if display is not None:
            display.close()
    return TuneResult(r["kernel"], r["sizes"], r["device"], r["arch"], r["search_id"], _candidate(r["best"]),
                      _candidate(r["default"]), [Candidate(**c) for c in r["candidates"]], r["counts"],
                      r["time_limit_reached"], r["wall_seconds"], r["reference"])
