// The CUDA driver API, loaded at run time: rtcg never links libcuda, so it builds and its
// non-GPU parts run on machines without a GPU. The first use dlopen()s libcuda.so.1, resolves
// the entry points rtcg needs, and calls cuInit; the outcome is remembered for the process.
//
// Errors:
//  - no driver library, a driver without an entry point rtcg needs, or cuInit failing (no
//    device, driver/kernel-module mismatch, ...) -> rtcg::NoDeviceError (the CLI maps it to its
//    own exit code);
//  - any failing CUDA call -> CudaError: "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE
//    (invalid argument)", plus what was being done.
#pragma once
#include <string>

#include "support/Error.h"

namespace rtcg::cuda {

class CudaError : public Error {
 public:
  CudaError(std::string message, std::string call, int code, std::string errorName, bool sticky)
      : Error(std::move(message)), call_(std::move(call)), code_(code), errorName_(std::move(errorName)),
        sticky_(sticky) {}
  const std::string& call() const { return call_; }            // "cuLaunchKernel"
  int code() const { return code_; }                           // the CUresult
  const std::string& errorName() const { return errorName_; }  // "CUDA_ERROR_INVALID_VALUE"
  // A sticky error (illegal address, launch failure, ...) leaves the context unusable: every
  // later CUDA call in this process fails too.
  bool sticky() const { return sticky_; }

 private:
  std::string call_;
  int code_;
  std::string errorName_;
  bool sticky_;
};

// Loads the driver and runs cuInit once per process. Throws NoDeviceError when that fails
// ("no CUDA driver found (libcuda.so.1 could not be loaded: ...)", "no CUDA device ...").
void initialize();

// True when the driver loads, cuInit succeeds and at least one device is present. Never throws.
bool cudaAvailable() noexcept;

// Why cudaAvailable() is false (the NoDeviceError message); empty when it is true. Never throws.
std::string unavailableReason() noexcept;

// The driver's CUDA version as the driver reports it, e.g. 13000 for 13.0.
int driverVersion();
// "13.0" for 13000.
std::string formatCudaVersion(int version);

// True once a sticky error has been seen in this process: CUDA is unusable until restart.
bool contextPoisoned() noexcept;

// Loads `library` (a soname or path) and resolves every entry point rtcg uses, without cuInit and
// without touching the process-wide driver, then unloads it. Throws NoDeviceError saying what
// failed. For diagnostics (`rtcgc --device-info`) and tests.
void probeDriverLibrary(const std::string& library);

}  // namespace rtcg::cuda
