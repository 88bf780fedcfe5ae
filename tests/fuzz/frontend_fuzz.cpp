// libFuzzer target for the DSL frontend: any byte string must produce either a program or
// diagnostics, never a crash, hang, sanitizer report or internal error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/Frontend.h"
#include "support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  rtcg::Diagnostics diags;
  // An InternalError escaping here is a bug the fuzzer must report: let it abort the run.
  std::optional<rtcg::Program> program = rtcg::parseProgram("fuzz.rtcg", source, diags);
  if (program.has_value() == diags.hasErrors()) __builtin_trap();  // the documented contract
  std::string rendered = diags.render("fuzz.rtcg", source);
  if (diags.hasErrors() && rendered.empty()) __builtin_trap();
  return 0;
}
