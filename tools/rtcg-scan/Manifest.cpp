#include "Manifest.h"

#include <fmt/format.h>

#include <fstream>

#include "support/Error.h"
#include "support/OutputFile.h"

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
  // Dumped first and written atomically, so a failure leaves the previous manifest as it was.
  // Bytes that are not UTF-8 (only DSL comments may hold them; or a file name) become U+FFFD:
  // JSON cannot carry them, and the default handler threw (SIGABRT). A comment changes nothing a
  // kernel is keyed by (its structural hash).
  std::string text = manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  try {
    writeOutputFile(path, text);
  } catch (const Error& e) {
    throw Error(fmt::format("rtcg-scan: the manifest: {}", e.what()));
  }
}

}  // namespace rtcg
