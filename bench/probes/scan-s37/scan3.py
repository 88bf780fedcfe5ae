# Probe: persistent bulk-copy look-back scans (bulk.cu) against the emitted warp layout, torch.cumsum, a copy; one H200.
import re, sys, statistics, cupy as cp, torch
N = 1 << 26
flush = cp.empty(1 << 28, dtype=cp.uint8)
def timeit(f, reps=40):
    ts = []
    for _ in range(5): f()
    for _ in range(reps):
        flush.fill(1)
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); f(); b.record(); b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(ts)
only = sys.argv[1] if len(sys.argv) > 1 else None
reps = 3 if only else 40
sms = cp.cuda.Device().attributes['MultiProcessorCount']
xf = cp.random.standard_normal(N, dtype=cp.float32)
xi = cp.random.randint(0, 4, N, dtype=cp.int32)
yc = cp.empty_like(xf)
copy_ms = timeit(lambda: cp.copyto(yc, xf), reps)
print(f'copy {copy_ms:.4f} ms {8*N/copy_ms/1e6:.0f} GB/s', flush=True)
tx = torch.as_tensor(xf, device='cuda'); ti = torch.as_tensor(xi, device='cuda')
t_cs = timeit(lambda: torch.cumsum(tx, 0), reps); t_ex = timeit(lambda: torch.cumsum(ti, 0) - ti, reps)
print(f'torch.cumsum f32 {t_cs:.4f} ms ({copy_ms/t_cs*100:.1f}% copy); cumsum-x i32 {t_ex:.4f} ms', flush=True)
ref_f = cp.cumsum(xf.astype(cp.float64)); ref_i = cp.cumsum(xi.astype(cp.int64)) - xi
def check(y, flt):
    return float(cp.linalg.norm(y.astype(cp.float64) - ref_f) / cp.linalg.norm(ref_f)) if flt else int(cp.count_nonzero(y.astype(cp.int64) != ref_i))
def report(label, k, grid, block, dyn, flt):
    x = xf if flt else xi
    y = cp.empty_like(x)
    f = lambda: k((grid,), (block,), (x, y), shared_mem=dyn)
    y.fill(-7 if not flt else float('nan')); f(); cp.cuda.runtime.deviceSynchronize()
    err = check(y, flt)
    ms = timeit(f, reps)
    y.fill(-7 if not flt else float('nan')); f(); cp.cuda.runtime.deviceSynchronize()
    err2 = check(y, flt)
    peer = t_cs if flt else t_ex
    print(f'{label:22s} grid {grid:5d} regs {k.num_regs:3d} dyn {dyn:6d} {ms:.4f} ms {8*N/ms/1e6:6.0f} GB/s {copy_ms/ms*100:5.1f}% copy {peer/ms:5.2f}x torch err {err} after {err2}', flush=True)
for path in ('cs_512x16.cu', 'ex_512x16.cu'):
    if only and only != path: continue
    src = open(path).read()
    name = re.search(r'__global__ void __launch_bounds__\(\d+\) (\w+)\(', src).group(1)
    g, bl = re.search(r'// Launch: grid \((\d+), 1, 1\), block \((\d+), 1, 1\)', src).groups()
    report(path, cp.RawModule(code=src, options=('--std=c++17',)).get_function(name), int(g), int(bl), 0, path.startswith('cs'))
mod = cp.RawModule(code=open('bulkmod.cu').read(), options=('--std=c++17',))
for m in re.finditer(r'void __launch_bounds__\((\d+)\) (bulk(\d+)x(\d+)_(\w+))\(', open('bulkmod.cu').read()):
    th, kn, _, it, ty = int(m.group(1)), m.group(2), m.group(3), int(m.group(4)), m.group(5)
    if only and only != kn: continue
    k = mod.get_function(kn)
    dyn = 2 * th * it * 4
    k.max_dynamic_shared_size_bytes = dyn
    regs = max(k.num_regs, 1)
    per_sm = min(2048 // th, 65536 // (((regs * 32 + 255) // 256) * 256 * (th // 32)), (228 * 1024) // (dyn + k.shared_size_bytes + 1024), 32)
    report(kn, k, sms * per_sm, th, dyn, ty == 'float')
