# Times hand-edited rtcg dgemm cubins (n = 2048) against torch.matmul (cublasDgemm) in one process:
# CUDA events, L2 flushed before each launch (a 1 GiB fill the launch queues behind), median of 30, three rounds interleaved.
import ctypes, sys, statistics, torch
n = 2048
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0: raise RuntimeError(f"{what}: CUresult {r}")
torch.cuda.init(); dev = torch.device("cuda")
torch.manual_seed(0)
A = torch.rand(n, n, dtype=torch.float64, device=dev) - 0.5
B = torch.rand(n, n, dtype=torch.float64, device=dev) - 0.5
C = torch.empty(n, n, dtype=torch.float64, device=dev)
ref = (A.cpu() @ B.cpu())  # float64 on the host (MKL/OpenBLAS), the reference
flush = torch.empty(1024 * 1024 * 1024 // 4, dtype=torch.float32, device=dev)
kernels = {}
for spec in sys.argv[1:]:
    name, grid, block, smem = spec.split(":")
    data = open(f".probe-dgemm45/proto/{name}.cubin", "rb").read()
    mod = ctypes.c_void_p(); fn = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), data), "load " + name)
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"dgemm_0"), "func")
    ck(cu.cuFuncSetAttribute(fn, 8, int(smem)), "smem attr")
    kernels[name] = (fn, [int(x) for x in grid.split(",")], int(block), int(smem))
def launcher(name):
    fn, g, b, smem = kernels[name]
    ptrs = [ctypes.c_void_p(t.data_ptr()) for t in (A, B, C)]
    args = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in ptrs])
    def go(keep=ptrs):
        ck(cu.cuLaunchKernel(fn, g[0], g[1], 1, b, 1, 1, smem, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), args, None), "launch")
    return go
def peer(): torch.matmul(A, B, out=C)
runs = {k: launcher(k) for k in kernels}; runs["cublas"] = peer
def timeit(go, reps=30):
    ts = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); go(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)
if "ONCE" in __import__("os").environ:
    for k in kernels: runs[k](); torch.cuda.synchronize()
    sys.exit(0)
res = {k: [] for k in runs}
for k, go in runs.items():
    C.zero_(); go(); torch.cuda.synchronize()
    err = ((C.cpu() - ref).abs().max() / ref.abs().max()).item()
    print(f"{k}: max abs err / max |ref| = {err:.3e}", flush=True)
    for _ in range(3): go()
for rnd in range(3):
    for k, go in runs.items(): res[k].append(timeit(go))
for k, v in res.items():
    print(f"{k:8s} ms " + " ".join(f"{x:.4f}" for x in v) + f"  median {statistics.median(v):.4f}  vs cublas {statistics.median(res['cublas'])/statistics.median(v):.3f}x", flush=True)
