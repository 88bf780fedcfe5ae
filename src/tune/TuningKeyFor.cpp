#include "tune/TuningKeyFor.h"

#include <fmt/format.h>

#include "codegen/Nvrtc.h"
#include "ir/Analysis.h"

namespace rtcg {

std::string sizesText(const Kernel& bound) {
  std::string out;
  for (const auto& [name, value] : bound.sizes) out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
  return out;
}

std::string kernelHashOf(const Kernel& bound) { return fmt::format("{:016x}", structuralHash(bound)); }

TuningKey tuningKeyFor(const Kernel& bound, const cuda::DeviceProperties& device) {
  TuningKey key;
  key.kernelHash = kernelHashOf(bound);
  key.kernelName = bound.name;
  key.sizes = sizesText(bound);
  key.device = device.name;
  key.arch = device.arch();
  key.driverVersion = device.driverVersion;
  key.nvrtcVersion = nvrtcVersionString();
  key.rtcgVersion = RTCG_VERSION;
  key.multiprocessors = device.multiprocessors;
  return key;
}

}  // namespace rtcg
