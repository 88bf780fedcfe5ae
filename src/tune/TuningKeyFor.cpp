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

std::string kernelHashOf(const Kernel& bound, Precision precision) {
  uint64_t h = structuralHash(bound);
  if (precision != Precision::Ieee)  // FNV-1a over the policy's name, continuing from the kernel's hash
    for (const char* c = precisionName(precision); *c; ++c) h = (h ^ uint8_t(*c)) * 1099511628211ULL;
  return fmt::format("{:016x}", h);
}

TuningKey tuningKeyFor(const Kernel& bound, const cuda::DeviceProperties& device, Precision precision) {
  TuningKey key;
  key.kernelHash = kernelHashOf(bound, precision);
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
