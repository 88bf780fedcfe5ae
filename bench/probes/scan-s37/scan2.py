# Probe: the emitted warp-layout look-back scans, with the ticket (as emitted) and with tile = blockIdx.x
# (the ticket read only for the epoch), against torch.cumsum and a copy; one H200.
import glob, re, sys, statistics, cupy as cp, torch
N = 1 << 26
B = open('blockidx.cu').read()
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
xf = cp.random.standard_normal(N, dtype=cp.float32)
xi = cp.random.randint(0, 4, N, dtype=cp.int32)
yc = cp.empty_like(xf)
copy_ms = timeit(lambda: cp.copyto(yc, xf), reps)
print(f'copy {copy_ms:.4f} ms {8*N/copy_ms/1e6:.0f} GB/s', flush=True)
tx = torch.as_tensor(xf, device='cuda'); ti = torch.as_tensor(xi, device='cuda')
t_cs = timeit(lambda: torch.cumsum(tx, 0), reps); t_ex = timeit(lambda: torch.cumsum(ti, 0) - ti, reps)
print(f'torch.cumsum f32 {t_cs:.4f} ms ({copy_ms/t_cs*100:.1f}% copy); cumsum-x i32 {t_ex:.4f} ms', flush=True)
ref_f = cp.cumsum(xf.astype(cp.float64)); ref_i = cp.cumsum(xi.astype(cp.int64)) - xi
for path in sorted(glob.glob('cs_*.cu')) + sorted(glob.glob('ex_*.cu')):
    src = open(path).read()
    name = re.search(r'__global__ void __launch_bounds__\(\d+\) (\w+)\(', src).group(1)
    g, bl = re.search(r'// Launch: grid \((\d+), 1, 1\), block \((\d+), 1, 1\)', src).groups()
    srcB = src.replace('\n// Nest 0:', B + '\n// Nest 0:').replace('rtcg_scan::lookbackWarp<', 'rtcg_scan::lookbackWarpB<')
    for tag, code in (('ticket', src), ('blockidx', srcB)):
        label = f'{path[:-3]}_{tag}'
        if only and label != only: continue
        k = cp.RawModule(code=code, options=('--std=c++17',)).get_function(name)
        flt = path.startswith('cs')
        x = xf if flt else xi
        y = cp.empty_like(x)
        f = lambda: k((int(g),), (int(bl),), (x, y))
        y.fill(-7 if not flt else float('nan')); f(); cp.cuda.runtime.deviceSynchronize()
        err = float(cp.linalg.norm(y.astype(cp.float64) - ref_f) / cp.linalg.norm(ref_f)) if flt else int(cp.count_nonzero(y.astype(cp.int64) != ref_i))
        ms = timeit(f, reps)
        peer = t_cs if flt else t_ex
        print(f'{label:26s} regs {k.num_regs:3d} smem {k.shared_size_bytes:6d} {ms:.4f} ms {8*N/ms/1e6:6.0f} GB/s {copy_ms/ms*100:5.1f}% copy {peer/ms:5.2f}x torch err {err}', flush=True)
