// z = 2 x - 0.5 y on the GPU through the exported axpby (n = 1000), checked on the host.
#include <cmath>
#include <cstdio>
#include <vector>

#include "axpby.h"

#define CHECK(call)                                                  \
  if (CUresult r = (call); r != CUDA_SUCCESS) {                      \
    std::fprintf(stderr, "%s failed: %d\n", #call, int(r));          \
    return 1;                                                        \
  }

int main() {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CHECK(cuCtxSetCurrent(ctx));
  constexpr long long n = rtcg_export::axpby::sizes::n;
  std::vector<float> x(n), y(n), z(n);
  for (long long i = 0; i < n; ++i) x[i] = float(i), y[i] = float(n - i);
  CUdeviceptr dx, dy, dz;
  CHECK(cuMemAlloc(&dx, n * 4));
  CHECK(cuMemAlloc(&dy, n * 4));
  CHECK(cuMemAlloc(&dz, n * 4));
  CHECK(cuMemcpyHtoD(dx, x.data(), n * 4));
  CHECK(cuMemcpyHtoD(dy, y.data(), n * 4));
  rtcg_export::axpby kernel;
  std::string error = kernel.load(EXPORT_DIR);
  if (error.empty()) error = kernel.launch(2.0f, dx, -0.5f, dy, dz, nullptr);
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  CHECK(cuMemcpyDtoH(z.data(), dz, n * 4));
  for (long long i = 0; i < n; ++i)
    if (std::fabs(z[i] - (2.0f * x[i] - 0.5f * y[i])) > 1e-3f) {
      std::fprintf(stderr, "z[%lld] = %g\n", i, z[i]);
      return 1;
    }
  std::puts("ok");
  return 0;
}
