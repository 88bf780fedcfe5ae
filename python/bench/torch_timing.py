"""A tuned rtcg kernel called from PyTorch on a PyTorch stream, against the same computation in
PyTorch: the DG differentiation step of examples/dg_diff.rtcg (three Np x Np derivative matrices
applied to the nodal values of K elements).

    python python/bench/torch_timing.py [--K 1000000] [--Np 20] [--time-limit 90] [--calls 200]

Tunes the kernel first (rtcg.tune, recorded in the tuning database), then rtcg.Kernel finds the
winner through the same lookup as the C++ API. Prints a table: GPU time per call (CUDA events over
`--calls` back-to-back calls on one torch stream), host time per call (the Python call itself,
argument checks and launch), and the effective bandwidth."""

import argparse
import pathlib
import time

import torch

import rtcg

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gpu_ms_per_call(fn, stream, calls):
    for _ in range(10):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream.synchronize()
    t0 = time.perf_counter()
    start.record(stream)
    for _ in range(calls):
        fn()
    end.record(stream)
    host = (time.perf_counter() - t0) / calls * 1e3
    end.synchronize()
    return start.elapsed_time(end) / calls, host


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--K", type=int, default=1_000_000)
    ap.add_argument("--Np", type=int, default=20)
    ap.add_argument("--time-limit", type=float, default=90)
    ap.add_argument("--max-candidates", type=int, default=0)
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    K, Np = a.K, a.Np
    source = (ROOT / "examples" / "dg_diff.rtcg").read_text()
    dev = torch.device("cuda", 0)
    print(f"device: {torch.cuda.get_device_name(dev)}; torch {torch.__version__}; rtcg {rtcg.__version__}")
    print(f"dg_diff: K={K} elements, Np={Np} nodes, f32")

    result = rtcg.tune(source, {"K": K, "Np": Np}, time_limit=a.time_limit, max_candidates=a.max_candidates,
                       progress=True)
    print(result)

    g = torch.Generator(device=dev).manual_seed(0)
    Dr, Ds, Dt = (torch.randn(Np, Np, device=dev, generator=g) for _ in range(3))
    u = torch.randn(K, Np, device=dev, generator=g)
    ur, us, ut = (torch.empty_like(u) for _ in range(3))
    Dcat = torch.cat([Dr, Ds, Dt]).contiguous()  # (3 Np, Np): one matrix product for all three
    out_cat = torch.empty(K, 3 * Np, device=dev)

    k = rtcg.Kernel(source)
    tuned = k.compile({"K": K, "Np": Np})
    default = rtcg.default_context(0).compile(source, {"K": K, "Np": Np}, tuning="off")
    print(f"rtcg schedule ({tuned.schedule_origin}): {tuned.schedule}")

    stream = torch.cuda.Stream(device=dev)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        k(Dr, Ds, Dt, u, ur, us, ut)  # on the current (torch) stream
        want = [(u.double() @ D.double().T) for D in (Dr, Ds, Dt)]
        err = max(float(((o.double() - w).abs().max() / w.abs().max())) for o, w in zip((ur, us, ut), want))
    stream.synchronize()
    print(f"max relative error against float64: {err:.2e}")
    assert err < 1e-4, err

    cases = [
        ("rtcg tuned, rtcg.Kernel (shapes bound per call)", lambda: k(Dr, Ds, Dt, u, ur, us, ut, stream=stream)),
        ("rtcg tuned, CompiledKernel", lambda: tuned(Dr, Ds, Dt, u, ur, us, ut, stream=stream)),
        ("rtcg default schedule, CompiledKernel", lambda: default(Dr, Ds, Dt, u, ur, us, ut, stream=stream)),
        ("torch: three matmuls (u @ D.T, out=)", lambda: (torch.matmul(u, Dr.T, out=ur), torch.matmul(u, Ds.T, out=us),
                                                          torch.matmul(u, Dt.T, out=ut))),
        ("torch: one matmul into (K, 3Np)", lambda: torch.matmul(u, Dcat.T, out=out_cat)),
        ("torch: einsum", lambda: torch.einsum("kj,dij->dki", u, torch.stack([Dr, Ds, Dt]))),
    ]
    bytes_moved = 4 * (K * Np * 4 + 3 * Np * Np)
    print(f"\n| computation | GPU ms/call | host ms/call | GB/s |\n|---|---|---|---|")
    with torch.cuda.stream(stream):
        for name, fn in cases:
            ms, host = gpu_ms_per_call(fn, stream, a.calls)
            print(f"| {name} | {ms:.4f} | {host:.4f} | {bytes_moved / ms / 1e6:.0f} |")


if __name__ == "__main__":
    main()
