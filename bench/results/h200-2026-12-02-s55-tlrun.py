#!/usr/bin/env python3
"""Session 55 timeline probe: runs a stamped N8 module (tl.py) after warm-up on fresh random inputs
(outputs NaN-poisoned, L2 flushed), reads rtcg_tl and prints per-role medians in cycles."""
import sys, os, numpy as np, cupy as cp
K, Np = 101556, 165
rng = np.random.default_rng(55)
u = cp.asarray(rng.standard_normal((K, Np), dtype=np.float32))
D = cp.asarray(rng.standard_normal((3 * Np, Np), dtype=np.float32))
flush = cp.empty(256 << 20, dtype=cp.uint8)
for spec in sys.argv[1:]:
    path, kind = spec.split(':')
    mod = cp.RawModule(path=path)
    if kind == 'stacked':
        fn = mod.get_function('dg_diff_stacked_0'); w = cp.empty((K, 3 * Np), dtype=cp.float32); args = (D, u, w); outs = [w]
    else:
        fn = mod.get_function('dg_diff_0'); Dr, Ds, Dt = (cp.ascontiguousarray(D[q*Np:(q+1)*Np]) for q in range(3))
        outs = [cp.empty((K, Np), dtype=cp.float32) for _ in range(3)]; args = (Dr, Ds, Dt, u, *outs)
    fn.max_dynamic_shared_size_bytes = 229456
    ts = []
    for r in range(8):
        for o in outs: o.fill(cp.nan)
        flush.fill(r)
        s, e = cp.cuda.Event(), cp.cuda.Event(); s.record(); fn((132, 1, 1), (384, 1, 1), args, shared_mem=229456); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    ms = float(np.median(ts[2:]))
    tl = mod.get_global('rtcg_tl'); a = cp.ndarray((132, 2, 32, 4), dtype=cp.uint64, memptr=tl).get().astype(np.int64)
    turns = 24  # 6348 tiles / 132 blocks / 2 consumers
    t0, t1, t2, t3 = (a[:, :, :turns, k] for k in range(4))
    W, L, E = t1 - t0, t2 - t1, t3 - t2
    gap = t0[:, :, 1:] - t3[:, :, :-1]
    period = t1[:, :, 1:] - t1[:, :, :-1]
    span = t3.max(axis=(1, 2)) - t0.min(axis=(1, 2))
    # the other consumer's mainloop start after this one's hand-over
    hand = t1[:, 1, :turns - 1] - t2[:, 0, :turns - 1]
    hand2 = t1[:, 0, 1:turns] - t2[:, 1, :turns - 1]
    sl = slice(1, turns - 1)
    def q(x): x = np.asarray(x).ravel(); return "%6.0f [%6.0f %6.0f]" % (np.median(x), np.percentile(x, 10), np.percentile(x, 90))
    print(f"== {path} ({kind}): last run {ts[-1]:.4f} ms, median {ms:.4f} ms; block span median {np.median(span):.0f} cycles -> {np.median(span)/ms/1e6:.3f} GHz")
    print(f"   turn wait W {q(W[:, :, sl])}  mainloop L {q(L[:, :, sl])}  epilogue E {q(E[:, :, sl])}  epi->next turn {q(gap[:, :, sl])}")
    print(f"   period per consumer turn {q(period[:, :, 1:-1])}; hand-over -> other's mainloop start {q(np.concatenate([hand[:, 1:].ravel(), hand2[:, 1:].ravel()]))}")
    print(f"   L by consumer {q(L[:, 0, sl])} / {q(L[:, 1, sl])}; E by consumer {q(E[:, 0, sl])} / {q(E[:, 1, sl])}")
    # E per N tile (block % 4) for dg_diff's per-origin epilogue
    for nt in range(4):
        print(f"   N tile {nt}: L {q(L[nt::4, :, sl])}  E {q(E[nt::4, :, sl])}  W {q(W[nt::4, :, sl])}")
