// Internal to src/runtime: the table of CUDA driver entry points, resolved with dlsym from
// libcuda.so.1, and the error check every call goes through. cuda.h is included for its types
// and enums only; none of its functions is called directly, so nothing links against libcuda.
//
// The public headers (CudaDriver.h, Device.h, ...) do not include this file, so users of rtcg
// need neither cuda.h nor the CUDA include path.
#pragma once
#include <cuda.h>

#include <string>
#include <string_view>

namespace rtcg::cuda::detail {

// X(member, symbol): `symbol` is the exported name that carries the ABI cuda.h maps the
// unversioned API name to (cuMemAlloc -> cuMemAlloc_v2, ...). Legacy default-stream variants are
// used (not _ptds / _ptsz), matching a build without CUDA_API_PER_THREAD_DEFAULT_STREAM.
#define RTCG_CUDA_REQUIRED_ENTRIES(X)                                              \
  X(init, cuInit)                                                                  \
  X(driverGetVersion, cuDriverGetVersion)                                          \
  X(getErrorName, cuGetErrorName)                                                  \
  X(getErrorString, cuGetErrorString)                                              \
  X(deviceGet, cuDeviceGet)                                                        \
  X(deviceGetCount, cuDeviceGetCount)                                              \
  X(deviceGetName, cuDeviceGetName)                                                \
  X(deviceGetAttribute, cuDeviceGetAttribute)                                      \
  X(deviceTotalMem, cuDeviceTotalMem_v2)                                           \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain)                                    \
  X(primaryCtxRelease, cuDevicePrimaryCtxRelease_v2)                               \
  X(ctxSetCurrent, cuCtxSetCurrent)                                                \
  X(ctxSynchronize, cuCtxSynchronize)                                              \
  X(memGetInfo, cuMemGetInfo_v2)                                                   \
  X(memAlloc, cuMemAlloc_v2)                                                       \
  X(memFree, cuMemFree_v2)                                                         \
  X(memAllocHost, cuMemAllocHost_v2)                                               \
  X(memFreeHost, cuMemFreeHost)                                                    \
  X(memHostRegister, cuMemHostRegister_v2)                                         \
  X(memHostUnregister, cuMemHostUnregister)                                        \
  X(memcpyHtoD, cuMemcpyHtoD_v2)                                                   \
  X(memcpyDtoH, cuMemcpyDtoH_v2)                                                   \
  X(memcpyDtoD, cuMemcpyDtoD_v2)                                                   \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync_v2)                                         \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync_v2)                                         \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync_v2)                                         \
  X(memsetD8, cuMemsetD8_v2)                                                       \
  X(memsetD32, cuMemsetD32_v2)                                                     \
  X(memsetD8Async, cuMemsetD8Async)                                                \
  X(memsetD32Async, cuMemsetD32Async)                                              \
  X(moduleLoadDataEx, cuModuleLoadDataEx)                                          \
  X(moduleUnload, cuModuleUnload)                                                  \
  X(moduleGetFunction, cuModuleGetFunction)                                        \
  X(moduleGetGlobal, cuModuleGetGlobal_v2)                                         \
  X(funcGetAttribute, cuFuncGetAttribute)                                          \
  X(funcSetAttribute, cuFuncSetAttribute)                                          \
  X(occupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(launchKernel, cuLaunchKernel)                                                  \
  X(streamCreate, cuStreamCreate)                                                  \
  X(streamDestroy, cuStreamDestroy_v2)                                             \
  X(streamSynchronize, cuStreamSynchronize)                                        \
  X(eventCreate, cuEventCreate)                                                    \
  X(eventRecord, cuEventRecord)                                                    \
  X(eventSynchronize, cuEventSynchronize)                                          \
  X(eventDestroy, cuEventDestroy_v2)

struct DriverTable {
#define RTCG_CUDA_DECLARE_ENTRY(member, symbol) decltype(&::symbol) member = nullptr;
  RTCG_CUDA_REQUIRED_ENTRIES(RTCG_CUDA_DECLARE_ENTRY)
#undef RTCG_CUDA_DECLARE_ENTRY

  // cuEventElapsedTime_v2 (CUDA 12.8+) when the driver has it, else cuEventElapsedTime: same
  // signature and meaning.
  decltype(&::cuEventElapsedTime_v2) eventElapsedTime = nullptr;
  // Optional (CUDA 12.4+): lets launch() check argument count and sizes. Null on older drivers.
  decltype(&::cuFuncGetParamInfo) funcGetParamInfo = nullptr;
  // Optional (CUDA 12.0+): TMA tensor maps ('mma: ... tma'). Null on older drivers: encoding one
  // then fails with the reason (encodeTensorMap2d).
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

  void* library = nullptr;  // dlopen handle
  std::string libraryName;
};

// Loads `library` and resolves every entry point, without cuInit. Throws NoDeviceError naming
// what is missing. The caller owns table.library (dlclose).
DriverTable loadDriverTable(const std::string& library);

// The process-wide table: loaded and cuInit'ed once (std::call_once); the outcome, success or
// the error, is remembered. Throws NoDeviceError without a usable driver or device.
const DriverTable& driver();

// Throws CudaError for a failing result: "<call> failed: <ERROR_NAME> (<description>)", then
// `detail` when it is not empty. A sticky error (illegal address, ...) also marks the process'
// CUDA contexts unusable and says so.
void check(CUresult result, const char* call, std::string_view detail = {});

// Makes `ctx` current on the calling thread. Every call path that needs a context does this
// first, so objects may be used from any thread.
inline void makeCurrent(CUcontext ctx) { check(driver().ctxSetCurrent(ctx), "cuCtxSetCurrent"); }

}  // namespace rtcg::cuda::detail
