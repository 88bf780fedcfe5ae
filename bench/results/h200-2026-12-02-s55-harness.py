#!/usr/bin/env python3
"""Session 52 probe harness (session 54: kinds dgdiffone, dgdiff501): times rtcg-emitted N8 modules (cubins) and hand-edited variants on the
GPU. u and D random (fresh), outputs poisoned (NaN) before every run, checked against float64 on
the GPU; CUDA events, L2 flushed (256 MB written) before each run, median of `reps`."""
import sys, json, numpy as np, cupy as cp
import os
K, Np, reps = 101556, 165, int(os.environ.get("REPS", "30"))
rng = np.random.default_rng(52)
u = cp.asarray(rng.standard_normal((K, Np), dtype=np.float32))
D = cp.asarray(rng.standard_normal((3 * Np, Np), dtype=np.float32))
ref = u.astype(cp.float64) @ D.astype(cp.float64).T  # K x 3Np
flush = cp.empty(256 << 20, dtype=cp.uint8)
def run(fn, args, outs, smem, grid=132, block=384):
    fn.max_dynamic_shared_size_bytes = smem
    times = []
    for r in range(reps + 3):
        for o in outs: o.fill(cp.nan)
        flush.fill(r & 0xff)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); fn((grid, 1, 1), (block, 1, 1), args, shared_mem=smem); e.record(); e.synchronize()
        if r >= 3: times.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(times))
def variant(path, kind, grid=132, block=384):
    mod = cp.RawModule(path=path)
    if kind == 'stacked':
        w = cp.empty((K, 3 * Np), dtype=cp.float32)
        t = run(mod.get_function('dg_diff_stacked_0'), (D, u, w), [w], 229456, grid, block)
        got = w
    elif kind == 'dgdiff501':
        Dr, Ds, Dt = (cp.ascontiguousarray(D[q * Np:(q + 1) * Np]) for q in range(3))
        w = cp.empty((K, 501), dtype=cp.float32)
        ur, us, ut = w[:, 0:], w[:, 168:], w[:, 336:]
        t = run(mod.get_function('dg_diff_0'), (Dr, Ds, Dt, u, ur, us, ut), [w], 229456, grid, block)
        got = cp.concatenate([w[:, 0:165], w[:, 168:333], w[:, 336:501]], axis=1)
    else:
        Dr, Ds, Dt = (cp.ascontiguousarray(D[q * Np:(q + 1) * Np]) for q in range(3))
        if kind == 'dgdiffone':
            one = cp.empty((3, K, Np), dtype=cp.float32)
            ur, us, ut = one[0], one[1], one[2]
        else:
            ur, us, ut = (cp.empty((K, Np), dtype=cp.float32) for _ in range(3))
        t = run(mod.get_function('dg_diff_0'), (Dr, Ds, Dt, u, ur, us, ut), [ur, us, ut], 229456, grid, block)
        got = cp.concatenate([ur, us, ut], axis=1)
    g = got.astype(cp.float64)
    err = float(cp.linalg.norm(g - ref) / cp.linalg.norm(ref))
    return t, err, bool(cp.isfinite(g).all())
def peer():
    w = cp.empty((K, 3 * Np), dtype=cp.float32)
    ts = []
    for r in range(reps + 3):
        flush.fill(r & 0xff)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); cp.matmul(u, D.T, out=w); e.record(); e.synchronize()
        if r >= 3: ts.append(cp.cuda.get_elapsed_time(s, e))
    err = float(cp.linalg.norm(w.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    return float(np.median(ts)), err
res = []
for rnd in range(int(os.environ.get("ROUNDS", "2"))):
    for spec in sys.argv[1:]:
        f = spec.split(':'); path, kind = f[0], f[1]
        g, b = (int(f[2]), int(f[3])) if len(f) > 3 else (132, 384)
        t, err, fin = variant(path, kind, g, b)
        res.append((rnd, path, t, err, fin))
        print(f"round {rnd} {path:40s} {t:.4f} ms  err {err:.2e}  finite {fin}", flush=True)
    pt, pe = peer()
    print(f"round {rnd} cupy.matmul (cuBLAS sgemm, u D^T)         {pt:.4f} ms  err {pe:.2e}", flush=True)
