# Probe: persistent look-back scans against the module's own lookbackWarp and torch.cumsum, one H200.
import sys, json, statistics, cupy as cp, torch
N = 1 << 26
pre = open('prelude.cu').read() + open('persist.cu').read()
variants = []  # (name, type, excl, threads, items, persistent, stream, minblocks)
for ty, ex in (('float', False), ('int', True)):
    variants.append(('orig512x16', ty, ex, 512, 16, False, False, 1))
    for th, it, mb in ((512, 16, 1), (512, 16, 2), (512, 16, 3), (256, 16, 4), (256, 16, 6), (256, 24, 4), (256, 32, 3), (128, 32, 8), (1024, 8, 1), (1024, 8, 2)):
        variants.append((f'p{th}x{it}m{mb}', ty, ex, th, it, True, False, mb))
    variants.append(('p512x16m2s', ty, ex, 512, 16, True, True, 2))
    variants.append(('p256x16m4s', ty, ex, 256, 16, True, True, 4))
src = [pre]
for v in variants:
    name, ty, ex, th, it, pers, st, mb = v
    tiles = (N + th * it - 1) // (th * it)
    kn = f'k_{name}_{ty}'
    fn = 'lookbackWarpP' if pers else 'lookbackWarp'
    targs = f'{ty}, rtcg_scan::Sum, {th}, {it}, false, {"true" if ex else "false"}' + (f', {"true" if st else "false"}' if pers else '')
    src.append(f'__device__ unsigned long long {kn}_status[{tiles}];\n__device__ unsigned long long {kn}_ticket[1];\n'
               f'extern "C" __global__ void __launch_bounds__({th}, {mb}) {kn}(const {ty}* __restrict__ x, {ty}* __restrict__ y) {{\n'
               f'  rtcg_scan::{fn}<{targs}>(x, y, static_cast<const int*>(0), {N}LL, 1LL, {tiles}LL, {tiles}LL, {kn}_status, {kn}_ticket);\n}}\n')
mod = cp.RawModule(code='\n'.join(src), options=('-std=c++17',), name_expressions=None)
dev = cp.cuda.Device()
sms = dev.attributes['MultiProcessorCount']
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
out = []
xf = cp.random.standard_normal(N, dtype=cp.float32)
xi = cp.random.randint(0, 4, N, dtype=cp.int32)
yc = cp.empty_like(xf)
copy_ms = timeit(lambda: cp.copyto(yc, xf), 3 if len(sys.argv) > 1 else 40)
bytes_ = 2 * 4 * N
print(f'copy {copy_ms:.4f} ms {bytes_/copy_ms/1e6:.0f} GB/s', flush=True)
tx = torch.as_tensor(xf, device='cuda'); ti = torch.as_tensor(xi, device='cuda')
t_cs = timeit(lambda: torch.cumsum(tx, 0)); t_ex = timeit(lambda: torch.cumsum(ti, 0) - ti)
print(f'torch.cumsum f32 {t_cs:.4f} ms ({bytes_/t_cs/1e6/ (bytes_/copy_ms/1e6)*100:.1f}% copy); cumsum-x i32 {t_ex:.4f}', flush=True)
ref_f = cp.cumsum(xf.astype(cp.float64)); ref_i = cp.cumsum(xi.astype(cp.int64)) - xi
NCU = len(sys.argv) > 1
for v in variants:
    name, ty, ex, th, it, pers, st, mb = v
    kn = f'k_{name}_{ty}'
    if NCU and kn not in ('k_orig512x16_float', 'k_p512x16m2_float', 'k_p256x16m4_float'): continue
    k = mod.get_function(kn)
    x = xf if ty == 'float' else xi
    y = cp.empty_like(x)
    if pers:
        occ = k.max_threads_per_block  # not occupancy; compute resident blocks from attributes
        regs = k.num_regs; shm = k.shared_size_bytes
        per_sm = min(2048 // th, 65536 // max(1, regs * th), (228 * 1024) // (shm + 1024), 32)
        grid = sms * per_sm
    else:
        grid = (N + th * it - 1) // (th * it)
    f = lambda: k((grid,), (th,), (x, y))
    y.fill(-7 if ty == 'int' else float('nan'))
    f(); cp.cuda.runtime.deviceSynchronize()
    if ty == 'float':
        err = float(cp.linalg.norm(y.astype(cp.float64) - ref_f) / cp.linalg.norm(ref_f))
    else:
        err = int(cp.count_nonzero(y.astype(cp.int64) != ref_i))
    ms = timeit(f, 3 if NCU else 40)
    peer = t_cs if ty == 'float' else t_ex
    line = f'{kn:22s} grid {grid:6d} regs {k.num_regs:3d} smem {k.shared_size_bytes:6d}  {ms:.4f} ms  {bytes_/ms/1e6:6.0f} GB/s  {copy_ms/ms*100:5.1f}% copy  {peer/ms:.2f}x torch  err {err}'
    print(line, flush=True)
