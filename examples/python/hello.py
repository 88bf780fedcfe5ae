"""The README's Python example: explain, a diagnostic, and a kernel called with NumPy arrays."""

import numpy as np
import rtcg

src = """kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
  for i in 0..n { y[i] = a * x[i] + y[i]; }
}"""
print(rtcg.explain(src, {"n": 1000}).splitlines()[0])
try:
    rtcg.check(src.replace("x[i] +", "x[i + 1] +"), {"n": 1000})
except rtcg.CompileError as e:
    print(e)

axpy = rtcg.Kernel(src)                      # n is bound from the arrays' shapes
x, y = np.ones(1000, np.float32), np.zeros(1000, np.float32)
try:
    axpy(2.0, x, y)                          # NumPy arrays are copied in and back
    print(y[:3])
except rtcg.NoDeviceError as e:
    print("no GPU here:", e)
