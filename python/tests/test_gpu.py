"""The package on a GPU: NumPy arrays (copied in and out), CuPy and PyTorch arrays (in place),
streams, the cache of bindings, a search and the tuned-schedule lookup. Skipped without a GPU;
the CuPy and PyTorch tests also without those packages."""

import os
import subprocess

import numpy as np
import pytest

import rtcg
from conftest import example, requires_gpu

pytestmark = requires_gpu

AXPY = """kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
  for i in 0..n { y[i] = a * x[i] + y[i]; }
}"""
MATMUL = example("matmul.rtcg")
DG_DIFF = example("dg_diff.rtcg")
DOT = example("dot.rtcg")


def rng(seed=0):
    return np.random.default_rng(seed)


def dg_numpy(K, Np, seed=0):
    r = rng(seed)
    D = [r.standard_normal((Np, Np)).astype(np.float32) for _ in range(3)]
    u = r.standard_normal((K, Np)).astype(np.float32)
    return D, u


def dg_reference(D, u):
    return [u.astype(np.float64) @ d.astype(np.float64).T for d in D]


def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def test_context_describes_the_device():
    ctx = rtcg.Context(0)
    assert ctx.arch.startswith("sm_") and ctx.name
    assert ctx.device_info["multiprocessors"] > 0
    assert "Context(device=0" in repr(ctx)


def test_numpy_inout_is_copied_in_and_back():
    k = rtcg.Kernel(AXPY)
    x = rng().standard_normal(1000).astype(np.float32)
    y = rng(1).standard_normal(1000).astype(np.float32)
    y0 = y.copy()
    k(2.0, x, y)
    np.testing.assert_allclose(y, 2 * x + y0, rtol=1e-6, atol=1e-6)


def test_numpy_dg_diff_and_one_compile_per_binding():
    k = rtcg.Kernel(DG_DIFF)
    for K in (1000, 1000, 333):
        D, u = dg_numpy(K, 20)
        out = [np.full((K, 20), np.nan, np.float32) for _ in range(3)]
        k(*D, u, *out)
        for got, want in zip(out, dg_reference(D, u)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert len(k.compiled) == 2
    assert {tuple(sorted(c.sizes.items())) for c in k.compiled} == {(("K", 1000), ("Np", 20)), (("K", 333), ("Np", 20))}


def test_compile_with_explicit_schedule():
    ctx = rtcg.Context(0)
    n = 128
    default = ctx.compile(MATMUL, {"n": n}, tuning="off")
    assert default.schedule_origin == "default"
    explicit = ctx.compile(MATMUL, {"n": n}, schedule="i: grid.y, thread.y 8; j: grid.x, thread.x 32; k: serial")
    assert explicit.schedule_origin == "explicit"
    assert "threadIdx.y" in explicit.cuda_source
    a = rng().standard_normal((n, n)).astype(np.float32)
    b = rng(1).standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    explicit(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    assert explicit.signature == "matmul(a: f32[128, 128], b: f32[128, 128], out c: f32[128, 128]) with n = 128"
    with pytest.raises(TypeError, match=r"argument 3 \(out c\)"):
        explicit(a, b, np.zeros((n, n)))


def test_stream_needs_device_arrays():
    k = rtcg.Kernel(AXPY)
    with pytest.raises(ValueError, match="stream="):
        k(2.0, np.zeros(8, np.float32), np.zeros(8, np.float32), stream=0)


def test_cupy_arrays_in_place_on_streams():
    cp = pytest.importorskip("cupy")
    k = rtcg.Kernel(AXPY)
    x = cp.arange(4096, dtype=cp.float32)
    y = cp.ones(4096, dtype=cp.float32)
    ptr = y.data.ptr
    k(2.0, x, y)  # CuPy's current stream
    cp.cuda.get_current_stream().synchronize()
    assert y.data.ptr == ptr
    assert bool(cp.allclose(y, 2 * x + 1))
    s = cp.cuda.Stream(non_blocking=True)
    k(1.0, x, y, stream=s)
    s.synchronize()
    assert bool(cp.allclose(y, 3 * x + 1))
    k(1.0, x, y, stream=s.ptr)  # a raw handle
    s.synchronize()
    assert bool(cp.allclose(y, 4 * x + 1))
    with s:
        k(1.0, x, y)  # CuPy's current stream is s
    s.synchronize()
    assert bool(cp.allclose(y, 5 * x + 1))
    with pytest.raises(TypeError, match=r"argument 2 \(x\).*float64"):
        k(1.0, x.astype(cp.float64), y)
    with pytest.raises(ValueError, match=r"argument 2 \(x\).*not contiguous"):
        k(1.0, cp.arange(8192, dtype=cp.float32)[::2], y)


def test_cupy_mixed_with_numpy_is_synchronous():
    cp = pytest.importorskip("cupy")
    k = rtcg.Kernel(AXPY)
    x = cp.arange(1000, dtype=cp.float32)
    y = np.ones(1000, np.float32)
    k(2.0, x, y)
    np.testing.assert_allclose(y, 2 * np.arange(1000, dtype=np.float32) + 1)


def test_cupy_dot_reduction():
    cp = pytest.importorskip("cupy")
    k = rtcg.Kernel(DOT)
    n = 1 << 20
    x = cp.random.standard_normal(n, dtype=cp.float32)
    y = cp.random.standard_normal(n, dtype=cp.float32)
    params = [p for p in k.info["params"] if p["kind"] == "array"]
    out = cp.zeros(tuple(1 for _ in params[-1]["shape"]), dtype=cp.float32)
    k(x, y, out)
    cp.cuda.get_current_stream().synchronize()
    want = float(cp.dot(x.astype(cp.float64), y.astype(cp.float64)))
    assert abs(float(out.ravel()[0]) - want) <= 1e-3 * max(1.0, abs(want)) + 1e-2


def test_torch_tensors_in_place_on_the_current_stream():
    torch = torch_cuda()
    dev = torch.device("cuda", 0)
    K, Np = 5000, 20
    g = torch.Generator(device=dev).manual_seed(0)
    D = [torch.randn(Np, Np, device=dev, generator=g) for _ in range(3)]
    u = torch.randn(K, Np, device=dev, generator=g)
    out = [torch.empty_like(u) for _ in range(3)]
    k = rtcg.Kernel(DG_DIFF)
    k(*D, u, *out)  # enqueued on torch's current stream: what follows there sees the results
    want = [(u.double() @ d.double().T).float() for d in D]
    for got, w in zip(out, want):
        torch.testing.assert_close(got, w, rtol=1e-4, atol=1e-4)

    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        u2 = u * 2
        k(*D, u2, *out)  # the current stream is s
        first = out[0].clone()
    s.synchronize()
    torch.testing.assert_close(first, (u2.double() @ D[0].double().T).float(), rtol=1e-4, atol=1e-4)

    s.wait_stream(torch.cuda.current_stream())
    k(*D, u, *out, stream=s)  # an explicit stream object
    s.synchronize()
    torch.testing.assert_close(out[1], want[1], rtol=1e-4, atol=1e-4)
    k(*D, u, *out, stream=s.cuda_stream)  # a raw handle
    torch.cuda.synchronize()

    with pytest.raises(TypeError, match=r"argument 4 \(u\).*float64"):
        k(*D, u.double(), *out)
    with pytest.raises(ValueError, match=r"argument 1 \(Dr\).*not contiguous.*contiguous\(\)"):
        k(D[0].t(), D[1], D[2], u, *out)
    with pytest.raises(ValueError, match=r"argument 5 \(out ur\): expected shape \[5000, 20\]"):
        k(*D, u, out[0][:100], out[1], out[2])


def test_int8_tensors_through_the_s8_tensor_cores():
    torch = torch_cuda()
    dev = torch.device("cuda", 0)
    g = torch.Generator(device=dev).manual_seed(1)
    m, n, K = 301, 203, 1008
    a = torch.randint(-128, 128, (m, K), dtype=torch.int8, device=dev, generator=g)
    bt = torch.randint(-128, 128, (n, K), dtype=torch.int8, device=dev, generator=g)
    q = torch.empty(m, n, dtype=torch.int8, device=dev)
    exact = a.cpu().long() @ bt.cpu().long().T  # integer products on the CPU (CUDA has no int64 matmul)
    want = exact.div(4096 * 3, rounding_mode="floor").clamp(-128, 127).to(torch.int8)
    for schedule in ("", "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3"):
        q.fill_(7)
        rtcg.Kernel(example("gemm_i8.rtcg"), schedule=schedule)(3, a, bt, q)
        torch.cuda.synchronize()
        assert torch.equal(q.cpu(), want), schedule


def test_torch_cpu_tensors_are_host_arrays():
    torch = pytest.importorskip("torch")
    k = rtcg.Kernel(AXPY)
    x = torch.arange(100, dtype=torch.float32)
    y = torch.ones(100, dtype=torch.float32)
    k(2.0, x, y)
    assert torch.allclose(y, 2 * x + 1)


def test_torch_graph_capture():
    torch = torch_cuda()
    k = rtcg.Kernel(AXPY)
    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    y = torch.zeros(1024, dtype=torch.float32, device="cuda")
    k(1.0, x, y)  # compiled and loaded before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            k(1.0, x, y)
    torch.cuda.synchronize()
    y.zero_()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, 3 * x)


def test_tune_then_compile_uses_the_tuned_schedule(tmp_path, monkeypatch):
    db = tmp_path / "tuning.sqlite"
    monkeypatch.setenv("RTCG_TUNING_DB", str(db))
    events = []
    result = rtcg.tune(MATMUL, {"n": 256}, max_candidates=8, time_limit=120,
                       progress=lambda *p: events.append(p))
    assert result.best is not None and result.best.status == "verified" and result.best.median_ms > 0
    assert result.kernel == "matmul" and result.sizes == "n=256"
    assert len(result.candidates) >= 2 and events
    assert all(c.status for c in result.candidates) and result.records()[0]["schedule"]
    assert result.default is not None and result.schedule == result.best.schedule
    assert "best" in str(result)

    ctx = rtcg.Context(0)
    k = ctx.compile(MATMUL, {"n": 256})
    assert k.schedule_origin == "tuning database"
    assert k.schedule == result.best.schedule
    lines = []
    kernel = rtcg.Kernel(MATMUL, log=lines.append, context=ctx)
    a = np.ones((256, 256), np.float32)
    c = np.zeros((256, 256), np.float32)
    kernel(a, a, c)
    assert np.all(c == 256)
    assert kernel.compiled[0].schedule_origin == "tuning database"

    # The same database as rtcgc's.
    from rtcg._paths import tool

    rtcgc = tool("rtcgc") or os.environ.get("RTCGC")
    if rtcgc:
        listing = subprocess.run([rtcgc, "db", "list"], capture_output=True, text=True, env=dict(os.environ))
        assert "matmul" in listing.stdout, listing.stdout + listing.stderr


def test_tune_on_own_inputs_and_under_a_precision(tmp_path, monkeypatch):
    monkeypatch.setenv("RTCG_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    # A skewed CSR matrix of one's own: the search runs on these rows (the values stay random).
    r = rng(3)
    lengths = np.minimum(r.zipf(1.6, 2000), 1500).astype(np.int64)
    lengths[::7] = 0
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    nnz = int(rowptr[-1])
    col = r.integers(0, 2000, nnz).astype(np.int32)
    sizes = {"n": 2000, "nnz": nnz}
    result = rtcg.tune(example("spmv.rtcg"), sizes, inputs={"rowptr": rowptr, "col": col}, max_candidates=6,
                       time_limit=120, progress=False)
    assert result.best is not None and result.best.status == "verified"

    # The policy is part of the key: a tf32 search is found by a tf32 compile, not by an IEEE one.
    tuned = rtcg.tune(MATMUL, {"n": 256}, precision="tf32", max_candidates=8, time_limit=120, progress=False)
    assert tuned.best is not None and tuned.best.status == "verified"
    ctx = rtcg.Context(0)
    assert ctx.compile(MATMUL, {"n": 256}, precision="tf32").schedule_origin == "tuning database"
    assert not ctx.compile(MATMUL, {"n": 256}).schedule_origin.startswith("tuning database")
    a = rng(4).standard_normal((256, 256)).astype(np.float32)
    c = np.full((256, 256), np.nan, np.float32)
    rtcg.Kernel(MATMUL, precision="tf32", context=ctx)(a, a, c)
    ref = a.astype(np.float64) @ a.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-2


def test_tune_on_first_use_shows_progress(tmp_path, monkeypatch):
    monkeypatch.setenv("RTCG_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    seen = []
    ctx = rtcg.Context(0)
    k = ctx.compile(AXPY, {"n": 1 << 20}, tuning="tune", max_candidates=4, time_limit=30,
                    progress=lambda *p: seen.append(p))
    assert k.schedule_origin == "tuned"
    assert seen and seen[-1][1] >= 1  # measured
