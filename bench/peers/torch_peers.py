#!/usr/bin/env python3
"""PyTorch peers of the benchmark suite's rows whose peer is "PyTorch" (issue 23's row-wise
normalisations (softmax, layer normalisation) and distance-style nested reductions; issue 37's
histograms (torch.bincount, Tensor.index_add_) and assembly through a map (index_add_), and its
scans (torch.cumsum, and CuPy's cumsum, CUB's scan, where CuPy is installed)); issue 36's sum
factorisation (torch.einsum and the same product as one cuBLAS GEMM)), timed in the same GPU
job as bench_suite.

For each such workload (read from `bench_suite --list`), every PyTorch form of its computation runs
on fresh random inputs of the workload's sizes; each form is checked against a float64 computation
(on a sample of rows where the whole would be slow) and timed as bench_suite times rtcg: CUDA events
around one call after warm-up, the L2 flushed before each run (a 256 MiB buffer overwritten), the
median of --repeats runs. The fastest form that passed its check is the peer. Writes
{"workloads": {NAME: {"peer": LABEL, "ms": MS, "relErr": E, "forms": {LABEL: MS, ...}}}, ...} for
`bench_suite --peer-times`.

  bench/peers/torch_peers.py --bench-suite BUILD/bench/suite/bench_suite --out FILE [--only GROUPS]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

import torch

FLUSH_BYTES = 256 << 20


def workloads(bench_suite, only):
    cmd = [bench_suite, "--list"] + (["--only", only] if only else [])
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    out = []
    for line in text.splitlines()[1:]:
        m = re.match(r"^(\S+)\s+(\S+)\s+((?:\w+=\d+(?:, )?)+)\s+\S+\s+\S+\s+(.*)$", line)
        if not m:
            raise SystemExit(f"torch_peers: cannot read this line of bench_suite --list: {line!r}")
        name, group, sizes, peer = m.groups()
        if peer.strip() != "PyTorch":
            continue
        out.append((name, group, {k: int(v) for k, v in (s.split("=") for s in sizes.split(", "))}))
    return out


def timed(fn, repeats, flush):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return float(torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref))


def compiled(fn):
    try:
        return torch.compile(fn)
    except Exception as e:  # noqa: BLE001 - no compiler on this machine: the form is left out
        print(f"torch_peers: torch.compile unavailable: {e}", file=sys.stderr)
        return None


def softmax_case(s, gen):
    x = torch.randn(s["m"], s["n"], device="cuda", generator=gen)
    ref = torch.softmax(x.double(), dim=1)
    # The library kernel alone, writing its own output: the fused peer.
    forms = {"torch.softmax": lambda: torch.softmax(x, dim=1)}
    c = compiled(lambda t: torch.softmax(t, dim=1))
    if c is not None:
        forms["torch.compile(softmax)"] = lambda: c(x)
    check = lambda f: rel_err(f(), ref)
    return forms, check


def layernorm_case(s, gen):
    x = torch.randn(s["m"], s["n"], device="cuda", generator=gen)
    n = s["n"]
    ref = torch.nn.functional.layer_norm(x.double(), (n,), eps=1e-5)
    # Without weight and bias, as bench_suite's kernel: y = (x - mean) / sqrt(var + 1e-5), var biased.
    forms = {"torch.nn.functional.layer_norm": lambda: torch.nn.functional.layer_norm(x, (n,), eps=1e-5)}
    c = compiled(lambda t: torch.nn.functional.layer_norm(t, (n,), eps=1e-5))
    if c is not None:
        forms["torch.compile(layer_norm)"] = lambda: c(x)
    check = lambda f: rel_err(f(), ref)
    return forms, check


def nearest_case(s, gen):
    n, m, d = s["n"], s["m"], s["D"]
    q = torch.rand(n, d, device="cuda", generator=gen) * 2 - 1
    r = torch.rand(m, d, device="cuda", generator=gen) * 2 - 1
    rows = torch.randperm(n, device="cuda", generator=gen)[:256]
    ref = ((q[rows].double()[:, None, :] - r.double()[None, :, :]) ** 2).sum(2).min(1).values

    def expanded(a, b):  # |a|^2 - 2 a.b + |b|^2 through one GEMM (FP32: TF32 is off)
        return ((a * a).sum(1, keepdim=True) - 2 * (a @ b.T) + (b * b).sum(1)[None, :]).min(1).values

    def direct(a, b):
        return ((a[:, None, :] - b[None, :, :]) ** 2).sum(2).min(1).values

    forms = {
        "torch.cdist().min": lambda: torch.cdist(q, r).square().min(1).values,
        "torch |q|^2-2qr^T+|r|^2 .min": lambda: expanded(q, r),
    }
    c = compiled(direct)
    if c is not None:
        forms["torch.compile(direct differences)"] = lambda: c(q, r)
    ce = compiled(expanded)
    if ce is not None:
        forms["torch.compile(|q|^2-2qr^T+|r|^2)"] = lambda: ce(q, r)
    check = lambda f: rel_err(f()[rows], ref)
    return forms, check


def histogram_case(s, gen):
    n, bins = s["n"], s["bins"]
    b = torch.randint(0, bins, (n,), device="cuda", generator=gen, dtype=torch.int64)
    ref = torch.bincount(b, minlength=bins).double()
    b32 = b.int()
    ones = torch.ones(n, device="cuda", dtype=torch.int32)
    forms = {"torch.bincount": lambda: torch.bincount(b, minlength=bins),
             "torch.bincount(int32)": lambda: torch.bincount(b32, minlength=bins),
             "Tensor.index_add_": lambda: torch.zeros(bins, device="cuda", dtype=torch.int32).index_add_(0, b32, ones)}
    check = lambda f: rel_err(f(), ref)
    return forms, check


def histogram_weighted_case(s, gen):
    n, bins = s["n"], s["bins"]
    b = torch.randint(0, bins, (n,), device="cuda", generator=gen, dtype=torch.int64)
    w = torch.rand(n, device="cuda", generator=gen) * 2 - 1
    ref = torch.zeros(bins, dtype=torch.float64, device="cuda").index_add_(0, b, w.double())
    b32 = b.int()
    forms = {"torch.bincount(weights)": lambda: torch.bincount(b, weights=w, minlength=bins),
             "Tensor.index_add_": lambda: torch.zeros(bins, device="cuda").index_add_(0, b32, w)}
    check = lambda f: rel_err(f(), ref)
    return forms, check


def assemble_case(s, gen):
    k, np_, nodes = s["K"], s["Np"], s["N"]
    m = torch.randint(0, nodes, (k * np_,), device="cuda", generator=gen, dtype=torch.int32)
    c = torch.rand(k * np_, device="cuda", generator=gen) * 2 - 1
    u = torch.zeros(nodes, device="cuda")
    ref = torch.zeros(nodes, dtype=torch.float64, device="cuda").index_add_(0, m, c.double())
    # In place into the global vector, as rtcg's inout u (the vector's zeroing is not timed).
    forms = {"Tensor.index_add_": lambda: u.index_add_(0, m, c)}
    check = lambda f: rel_err(torch.zeros_like(u).index_add_(0, m, c), ref)
    return forms, check


def cupy_or_none():
    try:
        import cupy  # noqa: PLC0415 - optional: CuPy's cumsum (CUB's scan) is a second peer where installed
        return cupy
    except Exception as e:  # noqa: BLE001 - no CuPy: torch's forms only
        print(f"torch_peers: cupy unavailable: {e}", file=sys.stderr)
        return None


def cumsum_case(s, gen):
    x = torch.rand(s["n"], device="cuda", generator=gen) * 2 - 1
    ref = torch.cumsum(x.double(), 0)
    forms = {"torch.cumsum": lambda: torch.cumsum(x, 0)}
    cp = cupy_or_none()
    if cp is not None:
        xc = cp.from_dlpack(x)
        forms["cupy.cumsum"] = lambda: torch.from_dlpack(cp.cumsum(xc))
    return forms, lambda f: rel_err(f(), ref)


def exclusive_scan_case(s, gen):
    c = torch.randint(-8, 8, (s["n"],), device="cuda", generator=gen, dtype=torch.int32)
    inclusive = torch.cumsum(c.long(), 0)
    ref = inclusive - c.long()
    forms = {"torch.cumsum - x": lambda: torch.cumsum(c, 0, dtype=torch.int32).sub_(c)}
    cp = cupy_or_none()
    if cp is not None:
        cc = cp.from_dlpack(c)
        forms["cupy.cumsum - x"] = lambda: torch.from_dlpack(cp.cumsum(cc, dtype=cp.int32) - cc)
    return forms, lambda f: rel_err(f(), ref)


def row_cumsum_case(s, gen):
    x = torch.rand(s["m"], s["n"], device="cuda", generator=gen) * 2 - 1
    ref = torch.cumsum(x.double(), 1)
    forms = {"torch.cumsum(dim=1)": lambda: torch.cumsum(x, 1)}
    cp = cupy_or_none()
    if cp is not None:
        xc = cp.from_dlpack(x)
        forms["cupy.cumsum(axis=1)"] = lambda: torch.from_dlpack(cp.cumsum(xc, axis=1))
    return forms, lambda f: rel_err(f(), ref)


def segmented_sum_case(s, gen):
    # Segments as rtcg's inputs: a start at position 0 and at each other with probability 1/64.
    n = s["n"]
    x = torch.rand(n, device="cuda", generator=gen) * 2 - 1
    starts = torch.rand(n, device="cuda", generator=gen) < 1.0 / 64
    starts[0] = True
    idx = torch.arange(n, device="cuda")
    head = torch.cummax(torch.where(starts, idx, torch.zeros_like(idx)), 0).values
    ref64 = torch.cumsum(x.double(), 0)
    ref = ref64 - ref64[head] + x.double()[head]
    # Neither library has a segmented scan: a cumsum, less its value before each segment's start
    # (in f32, and in f64 where f32's cancellation fails the check).
    def by_cumsum(dtype):
        def f():
            cs = torch.cumsum(x.to(dtype), 0)
            return (cs - cs[head] + x.to(dtype)[head]).float()
        return f
    forms = {"cumsum - cumsum[head]": by_cumsum(torch.float32), "cumsum(f64) - cumsum[head]": by_cumsum(torch.float64)}
    return forms, lambda f: rel_err(f(), ref)


def sumfact_case(s, gen):
    # v[e, a, b, i] = sum_j A[i, j] u[e, a, b, j]: one GEMM of (E p^2 x p) by A^T, FP32 (TF32 off).
    e, p = s["E"], s["p"]
    A = torch.randn(p, p, device="cuda", generator=gen)
    u = torch.randn(e, p, p, p, device="cuda", generator=gen)
    ref = torch.einsum("ij,eabj->eabi", A.double(), u.double())
    flat = u.view(-1, p)
    forms = {"torch.einsum": lambda: torch.einsum("ij,eabj->eabi", A, u),
             "torch.matmul (u flat by A^T)": lambda: torch.matmul(flat, A.t()),
             "torch.tensordot": lambda: torch.tensordot(u, A, dims=([3], [1]))}
    c = compiled(lambda x, m: torch.einsum("ij,eabj->eabi", m, x))
    if c is not None:
        forms["torch.compile(einsum)"] = lambda: c(u, A)
    check = lambda f: rel_err(f().reshape(ref.shape), ref)
    return forms, check


CASES = {"softmax": softmax_case, "sumfact": sumfact_case, "layernorm": layernorm_case, "nearest": nearest_case,
         "histogram": histogram_case, "histogram_weighted": histogram_weighted_case, "assemble": assemble_case,
         "cumsum": cumsum_case, "exclusive_scan": exclusive_scan_case, "row_cumsum": row_cumsum_case,
         "segmented_sum": segmented_sum_case}
TOLERANCE = 1e-4  # FP32 forms against float64


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-suite", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 peers, as the rows' arithmetic
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda")
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "workloads": {}}
    for name, group, sizes in workloads(a.bench_suite, a.only):
        if group not in CASES:
            raise SystemExit(f"torch_peers: workload {name}: no PyTorch form for group {group!r}")
        forms, check = CASES[group](sizes, gen)
        times, errors = {}, {}
        for label, fn in forms.items():
            try:
                errors[label] = check(fn)
                times[label] = timed(fn, a.repeats, flush)
            except Exception as e:  # noqa: BLE001 - a form that fails (out of memory, a compiler error) is left out
                print(f"torch_peers: {name}: {label} failed: {e}", file=sys.stderr)
                continue
            print(f"torch_peers: {name}: {label}: {times[label]:.4f} ms, rel err {errors[label]:.2e}", file=sys.stderr)
        ok = [l for l in times if errors[l] <= TOLERANCE]
        if not ok:
            print(f"torch_peers: {name}: no form passed its check", file=sys.stderr)
            continue
        best = min(ok, key=times.get)
        result["workloads"][name] = {"peer": best, "ms": times[best], "relErr": errors[best], "forms": times}
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"torch_peers: wrote {a.out} ({len(result['workloads'])} workloads)", file=sys.stderr)


if __name__ == "__main__":
    main()
