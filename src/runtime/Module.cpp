#include "runtime/Module.h"

#include <fmt/format.h>

#include <cstring>

#include "runtime/DriverApi.h"
#include "support/Error.h"

namespace rtcg::cuda {

using detail::check;
using detail::driver;

namespace detail {
struct ModuleState {
  std::shared_ptr<Context> ctx;
  CUmodule module = nullptr;
  std::string jitLog;
  ~ModuleState() {
    if (module && driver().ctxSetCurrent(ctx->handle()) == CUDA_SUCCESS) driver().moduleUnload(module);
  }
};
}  // namespace detail

namespace {
std::string trimLog(const char* buf) {
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}
}  // namespace

Module::Module(std::shared_ptr<Context> ctx, std::string_view image) {
  RTCG_ASSERT(ctx, "Module needs a context");
  if (image.empty()) throw Error("cannot load an empty GPU code image");
  auto state = std::make_shared<detail::ModuleState>();
  state->ctx = std::move(ctx);
  state->ctx->makeCurrent();

  // PTX must be NUL-terminated; a cubin is read by its ELF header. A std::string copy is both.
  std::string copy(image);
  constexpr size_t kLogBytes = 16 * 1024;
  std::vector<char> info(kLogBytes, '\0'), error(kLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info.data(), reinterpret_cast<void*>(kLogBytes - 1), error.data(),
                    reinterpret_cast<void*>(kLogBytes - 1)};
  CUmodule mod = nullptr;
  CUresult r = driver().moduleLoadDataEx(&mod, copy.c_str(), 4, options, values);
  state->jitLog = trimLog(info.data());
  if (r != CUDA_SUCCESS) {
    std::string log = trimLog(error.data());
    std::string detail = log.empty() ? std::string() : "loading the module; JIT error log:\n" + log;
    check(r, "cuModuleLoadDataEx", detail);
  }
  state->module = mod;
  state_ = std::move(state);
}

const std::shared_ptr<Context>& Module::context() const {
  RTCG_ASSERT(state_, "use of an empty Module");
  return state_->ctx;
}

const std::string& Module::jitLog() const {
  RTCG_ASSERT(state_, "use of an empty Module");
  return state_->jitLog;
}

uint64_t Module::globalAddress(const std::string& name) const {
  RTCG_ASSERT(state_, "use of an empty Module");
  const detail::DriverTable& d = driver();
  state_->ctx->makeCurrent();
  CUdeviceptr address = 0;
  size_t bytes = 0;
  CUresult r = d.moduleGetGlobal(&address, &bytes, state_->module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) throw Error(fmt::format("the GPU module has no variable named '{}'", name));
  check(r, "cuModuleGetGlobal", fmt::format("for variable '{}'", name));
  return uint64_t(address);
}

Function Module::function(const std::string& name, std::optional<size_t> expectedParams) const {
  RTCG_ASSERT(state_, "use of an empty Module");
  const detail::DriverTable& d = driver();
  state_->ctx->makeCurrent();
  CUfunction fn = nullptr;
  CUresult r = d.moduleGetFunction(&fn, state_->module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) throw Error(fmt::format("the GPU module has no kernel named '{}'", name));
  check(r, "cuModuleGetFunction", fmt::format("for kernel '{}'", name));

  Function f;
  f.module_ = state_;
  f.fn_ = fn;
  f.name_ = name;
  if (d.funcGetParamInfo) {
    // Parameters are numbered 0..n-1; asking for index n fails with CUDA_ERROR_INVALID_VALUE.
    // Any other failure means the driver cannot tell, and launch() then checks nothing.
    // With `expectedParams`, a kernel with fewer parameters still ends the loop early (and launch()
    // reports the count); one with more is not told apart, and its sizes are checked as far as asked.
    std::vector<size_t> sizes;
    constexpr size_t kMaxParams = 4096;  // far above any kernel's 32 KiB parameter space / 8
    for (size_t i = 0; i < expectedParams.value_or(kMaxParams); ++i) {
      size_t offset = 0, size = 0;
      CUresult pr = d.funcGetParamInfo(fn, i, &offset, &size);
      if (pr == CUDA_SUCCESS) {
        sizes.push_back(size);
        continue;
      }
      if (pr == CUDA_ERROR_INVALID_VALUE) f.paramSizes_ = std::move(sizes);
      return f;
    }
    if (expectedParams) f.paramSizes_ = std::move(sizes);
  }
  return f;
}

const std::shared_ptr<Context>& Function::context() const {
  RTCG_ASSERT(module_, "use of an empty Function");
  return module_->ctx;
}

FunctionAttributes Function::attributes() const {
  RTCG_ASSERT(fn_, "use of an empty Function");
  context()->makeCurrent();
  auto get = [&](CUfunction_attribute a, const char* what) {
    int v = 0;
    check(driver().funcGetAttribute(&v, a, fn_), "cuFuncGetAttribute",
          fmt::format("querying {} of kernel '{}'", what, name_));
    return v;
  };
  FunctionAttributes at;
  at.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS, "registers");
  at.staticSharedBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory"));
  at.constBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "constant memory"));
  at.localBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local memory"));
  at.maxThreadsPerBlock = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  at.maxDynamicSharedBytes =
      static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max dynamic shared memory"));
  at.ptxVersion = get(CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX version");
  at.binaryVersion = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "binary version");
  return at;
}

void Function::setMaxDynamicSharedMemory(size_t bytes) const {
  RTCG_ASSERT(fn_, "use of an empty Function");
  const DeviceProperties& p = context()->device().properties();
  FunctionAttributes at = attributes();
  if (at.staticSharedBytes + bytes > p.sharedPerBlockOptin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory ({} static + {} dynamic), more than the "
                            "{} bytes per block that {} allows",
                            name_, at.staticSharedBytes + bytes, at.staticSharedBytes, bytes, p.sharedPerBlockOptin,
                            p.name));
  context()->makeCurrent();
  check(driver().funcSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        "cuFuncSetAttribute", fmt::format("setting {} bytes of dynamic shared memory for kernel '{}'", bytes, name_));
}

int Function::maxActiveBlocksPerMultiprocessor(int blockThreads, size_t dynamicSharedBytes) const {
  RTCG_ASSERT(fn_, "use of an empty Function");
  if (blockThreads <= 0) throw Error(fmt::format("block size {} is not positive", blockThreads));
  context()->makeCurrent();
  int blocks = 0;
  check(driver().occupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn_, blockThreads, dynamicSharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        fmt::format("for kernel '{}' with {} threads and {} bytes of dynamic shared memory", name_, blockThreads,
                    dynamicSharedBytes));
  return blocks;
}

double Function::occupancy(int blockThreads, size_t dynamicSharedBytes) const {
  const DeviceProperties& p = context()->device().properties();
  int blocks = maxActiveBlocksPerMultiprocessor(blockThreads, dynamicSharedBytes);
  int warpsPerBlock = (blockThreads + p.warpSize - 1) / p.warpSize;
  int maxWarps = p.maxThreadsPerMultiprocessor / p.warpSize;
  return maxWarps > 0 ? static_cast<double>(blocks * warpsPerBlock) / maxWarps : 0.0;
}

}  // namespace rtcg::cuda
