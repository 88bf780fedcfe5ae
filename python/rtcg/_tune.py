"""Tuning from Python: the search of ``rtcgc tune``, recorded in the same tuning database."""

from __future__ import annotations

import os
import tempfile
import threading
import time
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
    devices: int = 1  # measuring devices (under mpiexec: every rank's)
    # where the candidates compiled: [{"host": "local" or "rank R", "slots": N, "compiled": N}]
    compiled_on: list = field(default_factory=list, repr=False)

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


# Tags of rtcg.tune's messages between MPI ranks: on the search's communicator the setup, the
# candidates and the end; on a duplicate of it (the compile traffic apart) slot s's compile frames
# (_COMPILE + 2 s, to the rank) and replies (_COMPILE + 2 s + 1, to rank 0), and a rank's word that
# its compile slots have stopped (_RELAY_DONE).
_SETUP, _CANDIDATE, _END = 3801, 3802, 3803
_RELAY_DONE, _COMPILE = 3804, 3900
_POLL = 0.005           # seconds between probes (a compile takes 0.1 s and more)
_COMPILE_MARGIN = 120.0  # beyond the compile timeout, before rank 0 gives up on a reply


def _mpi_world(mpi):
    """mpi4py's COMM_WORLD when this process is one of several MPI ranks (mpi None: when a launcher
    started it and mpi4py is installed; True: mpi4py must be there; False: never)."""
    if mpi is False:
        return None
    if mpi is None and not any(os.environ.get(v) for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        if mpi:
            raise
        return None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def _node(comm) -> tuple[int, int]:
    """This rank's rank within its node, and how many ranks its node has."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def _compile_slots(ranks_on_node: int) -> int:
    """A rank's compile slots (rank 0's own compile workers, a CompileSlotServer's elsewhere): what
    one rank alone would use, the cores (at most 16), of its share of the node's cores, as rtcgc
    tune under mpirun: the cores it is bound to (mpirun --bind-to, srun), else the node's over the
    ranks on it."""
    machine = os.cpu_count() or 1
    try:
        mine = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        mine = machine
    cores = mine if mine < machine else machine // max(1, ranks_on_node)
    return min(16, max(1, cores))


def _remote_devices(comm):
    """Rank 0's side: the other ranks as the search's remote devices (each a measuring worker on
    its GPU, set up from this search's setup and reference outputs)."""

    def measure_on(rank):
        def measure(candidate: bytes) -> bytes:
            comm.send(candidate, dest=rank, tag=_CANDIDATE)
            ok, outcome = comm.recv(source=rank, tag=_CANDIDATE)
            if not ok:
                raise RuntimeError(f"rank {rank}: {outcome}")
            return outcome

        return measure

    def make(setup: bytes, reference: bytes):
        for rank in range(1, comm.Get_size()):
            comm.send((setup, reference), dest=rank, tag=_SETUP)
        devices, errors = [], []
        for rank in range(1, comm.Get_size()):
            ok, what = comm.recv(source=rank, tag=_SETUP)
            if ok:
                devices.append((f"rank {rank} ({what})", measure_on(rank)))
            else:
                errors.append(f"rank {rank}: {what}")
        names = {d[0].split("(", 1)[1] for d in devices}
        if errors or len(names) > 1:
            raise RuntimeError("; ".join(errors) or "the ranks' devices differ (a search compares medians measured on "
                               "all of them): " + ", ".join(d[0] for d in devices))
        return devices

    return make


def _remote_compile_slots(compiles, offers):
    """Rank 0's side: every other rank's compile slots (``offers[r]`` of rank r) as (host, compile)
    pairs for the search's compile pool. A frame goes out with a sequence number; a reply with
    another (to a request given up on) is dropped."""

    def slot_of(rank, slot):
        sent = [0]
        ask, answer = _COMPILE + 2 * slot, _COMPILE + 2 * slot + 1

        def compile(frame: bytes, timeout: float, abandoned):
            sent[0] += 1
            compiles.send((sent[0], timeout, frame), dest=rank, tag=ask)
            deadline = time.monotonic() + timeout + _COMPILE_MARGIN
            while not abandoned() and time.monotonic() < deadline:
                if compiles.Iprobe(source=rank, tag=answer):
                    seq, reply = compiles.recv(source=rank, tag=answer)
                    if seq == sent[0]:
                        return reply
                    continue
                time.sleep(_POLL)
            return None

        return compile

    return [(f"rank {rank}", slot_of(rank, s)) for rank in range(1, len(offers)) for s in range(offers[rank])]


def _end(comm, compiles, message):
    """Rank 0: tells every other rank the search is over (``message``: (ok, result or why)), then
    waits until each has stopped its compile slots, dropping the replies that come meanwhile (so
    that none is left sending one nobody receives)."""
    from mpi4py import MPI

    for rank in range(1, comm.Get_size()):
        comm.send(message, dest=rank, tag=_END)
    status = MPI.Status()
    for rank in range(1, comm.Get_size()):
        while True:
            if not compiles.Iprobe(source=rank, tag=MPI.ANY_TAG, status=status):
                time.sleep(_POLL)
                continue
            compiles.recv(source=rank, tag=status.Get_tag())
            if status.Get_tag() == _RELAY_DONE:
                break


class _CompileRelay:
    """Another rank's compile slots for rank 0's pool: a thread per slot relays the compile frames
    rank 0 sends to a compile worker of this node (native.CompileSlotServer: the compile timeout
    and restarts are this rank's) and sends the reply frames back."""

    def __init__(self, compiles, slots: int, worker: str):
        self._compiles = compiles
        self._server = native.CompileSlotServer(slots, worker)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(s,), daemon=True) for s in range(slots)]
        for t in self._threads:
            t.start()

    def _run(self, slot: int):
        ask, answer = _COMPILE + 2 * slot, _COMPILE + 2 * slot + 1
        while not self._stop.is_set():
            if not self._compiles.Iprobe(source=0, tag=ask):
                time.sleep(_POLL)
                continue
            seq, timeout, frame = self._compiles.recv(source=0, tag=ask)
            reply = self._server.compile(slot, frame, timeout)
            if not self._stop.is_set():
                self._compiles.send((seq, reply), dest=0, tag=answer)

    def close(self):
        """Stops the slots (compiles in flight end at once) and tells rank 0 so."""
        self._stop.set()
        self._server.abandon()
        for t in self._threads:
            t.join()
        self._compiles.send(None, dest=0, tag=_RELAY_DONE)


def _serve(comm, compiles, device: int, worker: str, slots: int):
    """Another rank's side: compile (``slots`` compile slots) and measure what rank 0's search sends
    until it ends; rank 0's result."""
    from mpi4py import MPI

    relay = _CompileRelay(compiles, slots, worker)
    measuring = None
    status = MPI.Status()
    try:
        while True:
            # Probed, not waited for in recv: the relay's threads need the interpreter meanwhile.
            if not comm.Iprobe(source=0, tag=MPI.ANY_TAG, status=status):
                time.sleep(_POLL)
                continue
            tag = status.Get_tag()
            message = comm.recv(source=0, tag=tag)
            if tag == _END:
                measuring = None
                return message
            try:
                if tag == _SETUP:
                    measuring = native.MeasuringWorker(message[0], message[1], device, worker)
                    reply = (True, measuring.device)
                else:
                    reply = (True, measuring.measure(message))
            except Exception as e:  # rank 0 reports it and stops the search
                reply = (False, f"{type(e).__name__}: {e}")
            comm.send(reply, dest=0, tag=tag)
    finally:
        relay.close()


def tune(source, sizes: Mapping, *, kernel: str | None = None, time_limit: float = 60.0, max_candidates: int = 0,
         precision=None, devices=None, db: str | None = None, progress=True, log=None, seed: int = 1,
         resume: bool = False, file_name: str | None = None, inputs: Mapping | None = None,
         mpi: bool | None = None) -> TuneResult:
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
    other inputs stay random. Raises NoDeviceError without a GPU.

    Under ``mpiexec`` (with mpi4py installed; ``mpi=False`` turns it off) every rank calls tune with
    the same arguments: rank 0 runs the search and every other rank compiles and measures its
    candidates, as ``mpirun rtcgc tune FILE`` does: each measures on its own GPU (the device of its
    rank within its node, ``devices[local rank]`` when given) and hosts compile slots in rank 0's
    compile pool (a compile worker each: its share of its node's cores, at most 16, as rank 0's own);
    ``compiled_on`` says where the candidates compiled. Every rank returns rank 0's result, and rank 0
    alone writes the database. Ranks must see the same GPU model."""
    comm = _mpi_world(mpi)
    if comm is not None:
        from mpi4py import MPI

        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:  # the same on every rank: every rank raises
            from ._errors import Error

            raise Error("rtcg.tune under mpiexec needs MPI's thread level MPI_THREAD_MULTIPLE (compile slots and "
                        "devices talk to the other ranks from threads of their own): leave mpi4py.rc.thread_level "
                        "at its default, 'multiple'")
        local, on_node = _node(comm)
        device = list(devices)[local % len(devices)] if devices else local
        slots = _compile_slots(on_node)
        offers = comm.gather(slots, root=0)
        compiles = comm.Dup()  # the compile frames, apart from the search's messages
        try:
            if comm.Get_rank() != 0:
                ok, result = _serve(comm, compiles, device, os.environ.get("RTCG_WORKER", ""), slots)
                if not ok:
                    from ._errors import Error

                    raise Error(f"rank 0's search failed: {result}")
                return result
            try:
                result = _tune_here(source, sizes, kernel=kernel, time_limit=time_limit,
                                    max_candidates=max_candidates, precision=precision, devices=(device,), db=db,
                                    progress=progress, log=log, seed=seed, resume=resume, file_name=file_name,
                                    inputs=inputs, remote=_remote_devices(comm), remote_count=comm.Get_size() - 1,
                                    compile_slots=_remote_compile_slots(compiles, offers), compile_threads=slots)
            except BaseException as e:
                _end(comm, compiles, (False, f"{type(e).__name__}: {e}"))
                raise
            _end(comm, compiles, (True, result))
            return result
        finally:
            compiles.Free()
    return _tune_here(source, sizes, kernel=kernel, time_limit=time_limit, max_candidates=max_candidates,
                      precision=precision, devices=devices or (0,), db=db, progress=progress, log=log, seed=seed,
                      resume=resume, file_name=file_name, inputs=inputs)


def _tune_here(source, sizes, *, kernel, time_limit, max_candidates, precision, devices, db, progress, log, seed,
               resume, file_name, inputs, remote=None, remote_count=0, compile_slots=None,
               compile_threads=0) -> TuneResult:
    """The search in this process (with other ranks' devices, ``remote``)."""
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
                            files, remote, int(remote_count), compile_slots, int(compile_threads))
    finally:
        if display is not None:
            display.close()
    return TuneResult(r["kernel"], r["sizes"], r["device"], r["arch"], r["search_id"], _candidate(r["best"]),
                      _candidate(r["default"]), [Candidate(**c) for c in r["candidates"]], r["counts"],
                      r["time_limit_reached"], r["wall_seconds"], r["reference"], r["devices"], r["compiled_on"])
