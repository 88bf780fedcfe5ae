#include "codegen/NvrtcArchs.h"
#include "codegen/NvrtcLibrary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace rtcg {

std::vector<int> nvrtcSupportedArchs() {
  // Without NVRTC (compile-only work that stops at CUDA C) no architecture is refused here; a
  // compile then says that NVRTC is missing.
  const detail::NvrtcTable* nvrtc = detail::tryNvrtcLibrary();
  int count = 0;
  if (!nvrtc || nvrtc->getNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(count));
  if (nvrtc->getSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  std::sort(archs.begin(), archs.end());
  return archs;
}

std::string checkNvrtcArch(const std::string& arch) {
  std::vector<int> archs = nvrtcSupportedArchs();
  std::string prefix = arch.rfind("sm_", 0) == 0 ? "sm_" : arch.rfind("compute_", 0) == 0 ? "compute_" : "";
  std::string digits = arch.substr(prefix.size());
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
  bool number = !digits.empty() && digits.size() <= 4 &&
                std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit((unsigned char)c); });
  if (!prefix.empty() && number &&
      (archs.empty() || std::find(archs.begin(), archs.end(), std::stoi(digits)) != archs.end()))
    return "";
  return fmt::format("NVRTC cannot compile for '{}'; it supports sm_XX and compute_XX for XX in {}", arch,
                     fmt::join(archs, ", "));
}

}  // namespace rtcg
