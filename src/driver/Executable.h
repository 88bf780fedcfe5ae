// A compiled kernel loaded on a device: its module, one function per nest, and the launch of all
// nests in order with arguments given per kernel parameter. Also the host-array convenience path
// used by `rtcgc run` and the GPU tests (upload, poison outputs, launch, download).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "codegen/Emitter.h"
#include "ir/IR.h"
#include "reference/HostArgs.h"
#include "runtime/Benchmark.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"

namespace rtcg {

class Executable {
 public:
  // Loads `image` (cubin or PTX) and checks each launch against the device's limits. Throws
  // rtcg::Error naming the limit when a launch cannot run on this device.
  Executable(std::shared_ptr<cuda::Context> ctx, const Kernel& bound, const EmittedModule& module,
             std::string_view image);

  // Launches every nest in order on `stream`. `args[p]` is the argument of kernel parameter p (a
  // device pointer for arrays, the value for scalars; ignored for size parameters).
  void launch(const std::vector<std::optional<cuda::KernelArg>>& args, const cuda::Stream* stream) const;
  // Launches nest launch `n` alone (launches()[n]): for timing each launch of a module (it reads
  // what the launches before it left, as in launch()).
  void launchOne(size_t n, const std::vector<std::optional<cuda::KernelArg>>& args, const cuda::Stream* stream) const;
  // Each launch timed alone, in order (median ms under `options`, racing off): where a module of
  // several launches spends its time (`rtcgc run`'s per-launch line, the tuner's worker).
  std::vector<double> timeEachLaunch(const std::vector<std::optional<cuda::KernelArg>>& args, const cuda::Stream& stream,
                                     cuda::BenchmarkOptions options) const;

  const Kernel& kernel() const { return kernel_; }
  const std::vector<cuda::Function>& functions() const { return functions_; }
  const std::vector<LaunchSpec>& launches() const { return launches_; }

  // Some function combines a reduction across blocks through module-global scratch
  // (LaunchSpec::usesGlobalScratch): two launches of this module must not overlap. A caller that
  // may launch from several threads holds exclusiveLaunch() over the launch and its
  // synchronization (the lock is empty, locking nothing, when no function uses global scratch).
  bool usesGlobalScratch() const { return scratch_; }
  // What the code assumes of array addresses (EmittedModule::arrayAlignment); launch checks it.
  int arrayAlignment() const { return alignment_; }
  std::unique_lock<std::mutex> exclusiveLaunch() const {
    return scratch_ ? std::unique_lock<std::mutex>(launchMutex_) : std::unique_lock<std::mutex>();
  }

 private:
  Kernel kernel_;
  bool scratch_ = false;
  int alignment_ = kWholeAllocationAlignment;
  mutable std::mutex launchMutex_;
  cuda::Module module_;
  std::vector<LaunchSpec> launches_;
  std::vector<cuda::Function> functions_;
};

// Device copies of the arrays of a HostArgs, and the kernel arguments that point at them.
class DeviceArgs {
 public:
  // Allocates a buffer per array parameter and uploads `in`/`inout` arrays; `out` arrays are
  // poisoned on the device (NaN / sentinel) so unwritten elements show.
  DeviceArgs(std::shared_ptr<cuda::Context> ctx, const Kernel& bound, const HostArgs& host);
  // Copies every written array back into `host`.
  void download(const Kernel& bound, HostArgs& host) const;
  // Restores the inputs (inout arrays included) and re-poisons the outputs: inputs with a
  // snapshot (snapshotInputs) are copied from it on the device, the others uploaded from `host`.
  void reset(const Kernel& bound, const HostArgs& host);
  // Keeps a device copy of every input as it is now, so that reset() copies on the device
  // instead of uploading (a tuner restores the inputs before every candidate; a faulty candidate
  // may have written over them). Inputs whose copy does not fit in device memory are uploaded.
  // After this, reset() must be given the same input values.
  void snapshotInputs(const Kernel& bound);
  const std::vector<std::optional<cuda::KernelArg>>& args() const { return args_; }

 private:
  std::vector<std::optional<cuda::DeviceBuffer>> buffers_;  // by param
  std::vector<std::optional<cuda::KernelArg>> args_;        // by param
  std::vector<std::optional<cuda::DeviceBuffer>> snapshot_;  // by param: inputs (snapshotInputs)
};

// Poisons a device buffer holding elements of `type` (NaN for floats, kPoisonInt for integers).
void poisonDevice(cuda::DeviceBuffer& b, ScalarType type);

}  // namespace rtcg
