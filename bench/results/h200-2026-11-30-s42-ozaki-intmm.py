# cuBLASLt's INT8 GEMM through torch._int_mm at 8192: what an s8 product attains on this GPU.
import torch, sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
bt = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
b = bt.t()  # column-major B: cuBLASLt's TN form
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
for _ in range(3): torch._int_mm(a, b)
ts = []
for _ in range(10):
    flush.zero_()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); torch._int_mm(a, b); e.record(); torch.cuda.synchronize()
    ts.append(s.elapsed_time(e))
ts.sort(); ms = ts[len(ts) // 2]
ops = 2.0 * n ** 3
print(f"torch._int_mm n={n}: {ms:.4f} ms (median of 10, L2 flushed), {ops / ms / 1e9:.1f} TOPS, {100 * ops / ms / 1e9 / 1979:.1f}% of 1979; x14 = {14 * ms:.3f} ms")
