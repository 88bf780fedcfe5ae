// Loaded GPU code: a Module (a cubin or PTX image loaded into a context) and its Functions
// (kernels), with their attributes, dynamic shared memory limit and occupancy.
//
// Module and Function are cheap handles to shared state: the module is unloaded when the last
// Module or Function referring to it goes away, so a Function never dangles.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Device.h"

struct CUfunc_st;  // = CUfunction

namespace rtcg::cuda {

namespace detail {
struct ModuleState;
}

struct FunctionAttributes {
  int registers = 0;            // per thread
  size_t staticSharedBytes = 0;
  size_t constBytes = 0;
  size_t localBytes = 0;        // per thread (spills, local arrays)
  int maxThreadsPerBlock = 0;   // for this function, given its register use
  size_t maxDynamicSharedBytes = 0;  // the current limit (raise with setMaxDynamicSharedMemory)
  int ptxVersion = 0;           // e.g. 90 for compute_90
  int binaryVersion = 0;        // e.g. 90 for sm_90
};

class Function {
 public:
  Function() = default;

  const std::string& name() const { return name_; }
  CUfunc_st* handle() const { return fn_; }
  const std::shared_ptr<Context>& context() const;
  bool valid() const { return fn_ != nullptr; }

  FunctionAttributes attributes() const;

  // Allows launches with up to `bytes` of dynamic shared memory (needed above 48 KiB). Throws
  // rtcg::Error when static + dynamic shared memory exceeds the device's opt-in limit per block.
  void setMaxDynamicSharedMemory(size_t bytes) const;

  // Resident blocks per multiprocessor for blocks of `blockThreads` threads and `dynamicSharedBytes`
  // of dynamic shared memory (0 when the configuration cannot run at all).
  int maxActiveBlocksPerMultiprocessor(int blockThreads, size_t dynamicSharedBytes) const;
  // The same as a fraction of the multiprocessor's warp slots (0..1).
  double occupancy(int blockThreads, size_t dynamicSharedBytes) const;

  // The size in bytes of each kernel parameter, when the driver can tell (cuFuncGetParamInfo,
  // CUDA 12.4+); launch() uses it to check arguments.
  const std::optional<std::vector<size_t>>& parameterSizes() const { return paramSizes_; }

 private:
  friend class Module;
  std::shared_ptr<detail::ModuleState> module_;
  CUfunc_st* fn_ = nullptr;
  std::string name_;
  std::optional<std::vector<size_t>> paramSizes_;
};

class Module {
 public:
  Module() = default;
  // Loads a cubin (ELF) or PTX text (JIT-compiled by the driver for this device). Throws
  // CudaError with the JIT's error log when the image does not load.
  Module(std::shared_ptr<Context> ctx, std::string_view image);

  // The kernel `name` (its mangled name for C++ kernels; extern "C" kernels keep theirs). Throws
  // rtcg::Error naming the kernel when the module has none of that name. `expectedParams`: the
  // parameter count the caller will launch it with, when it knows it (the emitter's LaunchSpec):
  // only those indices are asked of cuFuncGetParamInfo, so no call fails on purpose (a failing call
  // is an API error to compute-sanitizer; without it, the count is found by asking until one fails).
  Function function(const std::string& name, std::optional<size_t> expectedParams = std::nullopt) const;
  // The device address of the module's `__device__` variable `name` (a kernel-local array). Throws
  // rtcg::Error naming it when the module has none of that name.
  uint64_t globalAddress(const std::string& name) const;

  const std::shared_ptr<Context>& context() const;
  // What the driver's JIT said while loading (PTX only; often empty).
  const std::string& jitLog() const;

 private:
  std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace rtcg::cuda
