// The CUDA driver functions an exported header (rtcgc export) calls, for test_cli: forwarded to
// libcuda.so.1 loaded with dlopen, as rtcg's runtime loads it, so that the test binary still starts
// on a machine without a driver (linking -lcuda would stop it there) and its GPU tests skip.
#include <cuda.h>
#include <dlfcn.h>

namespace {

void* driverLibrary() {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

template <class F>
F resolve(const char* name) {
  void* lib = driverLibrary();
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

}  // namespace

// Each forwarder resolves its entry point once; without a driver it answers CUDA_ERROR_NO_DEVICE.
#define RTCG_FORWARD(name, symbol, params, args)                                \
  extern "C" CUresult CUDAAPI name params {                                     \
    static auto entry = resolve<CUresult(CUDAAPI*) params>(symbol);             \
    return entry ? entry args : CUDA_ERROR_NO_DEVICE;                           \
  }

RTCG_FORWARD(cuGetErrorString, "cuGetErrorString", (CUresult e, const char** s), (e, s))
RTCG_FORWARD(cuCtxGetDevice, "cuCtxGetDevice", (CUdevice * d), (d))
RTCG_FORWARD(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int* v, CUdevice_attribute a, CUdevice d), (v, a, d))
RTCG_FORWARD(cuMemGetAddressRange, "cuMemGetAddressRange_v2", (CUdeviceptr * base, size_t* size, CUdeviceptr p),
             (base, size, p))
RTCG_FORWARD(cuModuleLoadData, "cuModuleLoadData", (CUmodule * m, const void* image), (m, image))
RTCG_FORWARD(cuModuleUnload, "cuModuleUnload", (CUmodule m), (m))
RTCG_FORWARD(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction * f, CUmodule m, const char* name), (f, m, name))
RTCG_FORWARD(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction f, CUfunction_attribute a, int v), (f, a, v))
RTCG_FORWARD(cuLaunchKernel, "cuLaunchKernel",
             (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
              unsigned shared, CUstream s, void** params, void** extra),
             (f, gx, gy, gz, bx, by, bz, shared, s, params, extra))
