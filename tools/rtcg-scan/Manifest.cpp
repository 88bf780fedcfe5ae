#include "Manifest.h"

#include <fmt/format.h>

#include <fstream>

#include "support/Error.h"

namespace rtcg {

nlohmann::json manifestEntry(const FoundKernel& found, const KernelCheck& check) {
  nlohmann::json j = {{"file", found.file},
                      {"line", found.callPos.line},
                      {"column", found.callPos.col},
                      {"kernels", check.kernelNames},
                      {"source", found.source.text},
                      {"sizes", nlohmann::json::object()},
                      {"sizesConstant", found.sizesConstant},
                      {"errors", check.errors}};
  for (const auto& [name, value] : found.sizes) j["sizes"][name] = value;
  if (found.kernelName && !found.kernelName->empty())
    j["kernel"] = *found.kernelName;
  else if (check.kernelNames.size() == 1)
    j["kernel"] = check.kernelNames.front();
  if (!found.variable.empty()) j["variable"] = found.variable;
  return j;
}

nlohmann::json manifest(const std::vector<nlohmann::json>& entries) {
  return {{"version", 1}, {"kernels", entries}};
}

void writeManifest(const std::string& path, const nlohmann::json& manifest) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("rtcg-scan: cannot write the manifest '{}'", path));
  out << manifest.dump(2) << '\n';
  if (!out) throw Error(fmt::format("rtcg-scan: writing the manifest '{}' failed", path));
}

}  // namespace rtcg
