// libFuzzer target for the manifest reader of `rtcgc tune --manifest` (rtcg-scan's JSON): any text
// must give entries or a ManifestError with a message, and planning the entries (front end, sizes,
// proof of each kernel) must give an outcome for each or an rtcg::Error; never a crash, sanitizer
// report, another exception (nlohmann's escaping is a finding) or an InternalError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ManifestTune.h"
#include "rtcg/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<rtcg::manifest::Entry> entries;
  try {
    entries = rtcg::manifest::parseManifest("fuzz.json", text);
  } catch (const rtcg::manifest::ManifestError& e) {
    if (std::string(e.what()).find("fuzz.json: error: ") != 0) __builtin_trap();
    return 0;
  }
  try {
    auto planned = rtcg::manifest::plan(entries);
    if (planned.size() != entries.size()) __builtin_trap();
  } catch (const rtcg::Error&) {
  }
  return 0;
}
