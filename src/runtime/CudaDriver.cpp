#include "runtime/CudaDriver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>

#include "runtime/DriverApi.h"

namespace rtcg::cuda {
namespace detail {
namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

void* resolve(void* lib, const char* symbol) { return dlsym(lib, symbol); }

// Errors after which the context cannot be used again (CUDA documents these as leaving the
// process in an inconsistent state).
bool isSticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
      return true;
    default:
      return false;
  }
}

std::atomic<bool> poisoned{false};

// The process-wide driver state: set once by call_once, read-only afterwards.
struct DriverState {
  DriverTable table;
  std::string error;  // the NoDeviceError message when loading or cuInit failed
};

DriverState& state() {
  static DriverState s;
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      s.table = loadDriverTable(kDriverLibrary);
    } catch (const NoDeviceError& e) {
      s.error = e.what();
      return;
    }
    CUresult r = s.table.init(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      const char* text = nullptr;
      s.table.getErrorName(r, &name);
      s.table.getErrorString(r, &text);
      std::string why = fmt::format("cuInit failed: {} ({})", name ? name : "unknown error",
                                    text ? text : fmt::format("CUresult {}", static_cast<int>(r)));
      s.error = r == CUDA_ERROR_NO_DEVICE ? "no CUDA device (" + why + ")"
                                          : "no usable CUDA device (" + why + ")";
      return;
    }
    int count = 0;
    r = s.table.deviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) s.error = "no CUDA device (the driver reports 0 devices)";
  });
  return s;
}

}  // namespace

DriverTable loadDriverTable(const std::string& library) {
  DriverTable t;
  t.libraryName = library;
  // RTLD_LOCAL: the driver's symbols must not leak into the global namespace of the process.
  t.library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!t.library) {
    const char* why = dlerror();
    throw NoDeviceError(fmt::format("no CUDA driver found ({} could not be loaded: {})", library,
                                    why ? why : "unknown dlopen error"));
  }
  auto missing = [&](const char* symbol) {
    dlclose(t.library);
    throw NoDeviceError(fmt::format(
        "the CUDA driver {} is not usable: it does not provide {} (a CUDA 12 or newer driver is needed)",
        library, symbol));
  };
#define RTCG_CUDA_RESOLVE_ENTRY(member, symbol)                                  \
  t.member = reinterpret_cast<decltype(t.member)>(resolve(t.library, #symbol)); \
  if (!t.member) missing(#symbol);
  RTCG_CUDA_REQUIRED_ENTRIES(RTCG_CUDA_RESOLVE_ENTRY)
#undef RTCG_CUDA_RESOLVE_ENTRY
  t.eventElapsedTime = reinterpret_cast<decltype(t.eventElapsedTime)>(resolve(t.library, "cuEventElapsedTime_v2"));
  if (!t.eventElapsedTime)
    t.eventElapsedTime = reinterpret_cast<decltype(t.eventElapsedTime)>(resolve(t.library, "cuEventElapsedTime"));
  if (!t.eventElapsedTime) missing("cuEventElapsedTime");
  t.funcGetParamInfo = reinterpret_cast<decltype(t.funcGetParamInfo)>(resolve(t.library, "cuFuncGetParamInfo"));
  t.tensorMapEncodeTiled =
      reinterpret_cast<decltype(t.tensorMapEncodeTiled)>(resolve(t.library, "cuTensorMapEncodeTiled"));
  return t;
}

const DriverTable& driver() {
  DriverState& s = state();
  if (!s.error.empty()) throw NoDeviceError(s.error);
  return s.table;
}

void check(CUresult result, const char* call, std::string_view detail) {
  if (result == CUDA_SUCCESS) return;
  const DriverTable& t = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (t.getErrorName(result, &name) != CUDA_SUCCESS || !name) name = nullptr;
  if (t.getErrorString(result, &text) != CUDA_SUCCESS || !text) text = nullptr;
  std::string errorName = name ? name : fmt::format("CUresult {}", static_cast<int>(result));
  std::string message =
      fmt::format("{} failed: {} ({})", call, errorName, text ? text : "no description from the driver");
  if (!detail.empty()) message += fmt::format(" {}", detail);
  bool sticky = isSticky(result);
  if (sticky) {
    poisoned.store(true);
    message +=
        "; this is a sticky error, possibly from an earlier asynchronous kernel launch: the CUDA context is now "
        "unusable and every later CUDA call in this process will fail (restart the process)";
  }
  throw CudaError(std::move(message), call, static_cast<int>(result), std::move(errorName), sticky);
}

}  // namespace detail

void initialize() { detail::driver(); }

bool cudaAvailable() noexcept {
  try {
    return detail::state().error.empty();
  } catch (...) {
    return false;
  }
}

std::string unavailableReason() noexcept {
  try {
    return detail::state().error;
  } catch (...) {
    return "the CUDA driver state could not be determined";
  }
}

int driverVersion() {
  int v = 0;
  detail::check(detail::driver().driverGetVersion(&v), "cuDriverGetVersion");
  return v;
}

std::string formatCudaVersion(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

bool contextPoisoned() noexcept { return detail::poisoned.load(); }

void probeDriverLibrary(const std::string& library) {
  detail::DriverTable t = detail::loadDriverTable(library);
  dlclose(t.library);
}

}  // namespace rtcg::cuda
