// libFuzzer target for the DSL frontend: any byte string must produce either a program or
// diagnostics, never a crash, hang, sanitizer report or internal error. A program that parses is
// then bound at sizes near the ends of i32 (issue 40: size-only bounds whose products pass 2^31
// must be refused at bind time, with a message), proved, and emitted under its default schedule
// (names from the C++ and CUDA keyword lists must come out as valid CUDA names, never an
// InternalError).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "codegen/Emitter.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "support/Error.h"

namespace {

// Sizes the binder meets: small, a square root of 2^31 (46341^2 > 2^31 - 1), a cube root of 2^63
// (2097152^3 = 2^63), 4 * 600000000 > 2^31, and the largest i32.
constexpr std::array<int64_t, 6> kSizes{1, 37, 46341, 2097152, 600000000, 2147483647};

// FNV-1a: which size each parameter gets depends on the whole input, so that mutations try them all.
uint64_t hashOf(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

void bindAndEmit(const rtcg::Kernel& kernel, uint64_t choice, const std::string& source) {
  rtcg::SizeBindings sizes;
  for (const rtcg::Param& p : kernel.params) {
    if (p.kind != rtcg::ParamKind::Size) continue;
    sizes[p.name] = kSizes[choice % kSizes.size()];
    choice /= kSizes.size();
  }
  rtcg::Diagnostics diags;
  std::optional<rtcg::Kernel> bound = rtcg::bindAndProve(kernel, sizes, diags);
  if (bound.has_value() == diags.hasErrors()) __builtin_trap();
  if (!bound) {
    if (diags.render("fuzz.rtcg", source).empty()) __builtin_trap();  // a refusal always says why
    return;
  }
  rtcg::ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  limits.computeCapability = 90;
  std::optional<rtcg::ChosenSchedule> chosen = rtcg::chooseSchedule(*bound, "", limits, diags);
  if (chosen.has_value() == diags.hasErrors()) __builtin_trap();
  if (chosen && rtcg::emitCuda(*bound, chosen->plan).source.empty()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  rtcg::Diagnostics diags;
  // An InternalError escaping here is a bug the fuzzer must report: let it abort the run.
  std::optional<rtcg::Program> program = rtcg::parseProgram("fuzz.rtcg", source, diags);
  if (program.has_value() == diags.hasErrors()) __builtin_trap();  // the documented contract
  std::string rendered = diags.render("fuzz.rtcg", source);
  if (diags.hasErrors() && rendered.empty()) __builtin_trap();
  if (!program) return 0;
  // The first two kernels: a program of many kernels adds nothing one of them does not reach.
  uint64_t choice = hashOf(data, size);
  for (size_t i = 0; i < program->kernels.size() && i < 2; ++i)
    bindAndEmit(program->kernels[i], choice >> (16 * i), source);
  return 0;
}
