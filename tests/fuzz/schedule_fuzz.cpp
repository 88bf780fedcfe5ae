// libFuzzer target for the schedule text: any string must parse or be refused with a message and a
// column; a parsed schedule must print to text that parses back to it; validated against example
// kernels (the first byte picks one), a schedule with no reasons must plan and emit. Never a crash,
// sanitizer report or InternalError (which escapes here and aborts the run).
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Emitter.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "schedule/Schedule.h"

using namespace rtcg;

namespace {

Kernel boundExample(const std::string& file, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  Diagnostics diags;
  auto prog = parseProgram(file, ss.str(), diags);
  if (!prog) __builtin_trap();
  auto bound = bindAndProve(prog->kernels.front(), sizes, diags);
  if (!bound) __builtin_trap();
  return *bound;
}

Kernel boundSource(const std::string& text, const SizeBindings& sizes) {
  Diagnostics diags;
  auto prog = parseProgram("source.rtcg", text, diags);
  if (!prog) __builtin_trap();
  auto bound = bindAndProve(prog->kernels.front(), sizes, diags);
  if (!bound) __builtin_trap();
  return *bound;
}

// Sizes that divide no tile, small enough that emitting stays fast.
const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> ks{
      boundExample("matmul.rtcg", {{"n", 37}}), boundExample("dot.rtcg", {{"n", 1003}}),
      boundExample("gemv.rtcg", {{"m", 45}, {"n", 70}}), boundExample("transpose.rtcg", {{"m", 33}, {"n", 65}}),
      boundExample("dg_lift.rtcg", {{"K", 37}, {"Np", 20}, {"Nfp", 5}}),
      boundExample("batched_matmul.rtcg", {{"nb", 37}, {"n", 16}}),
      // Index ranges at the end of i32: a clause's last point must stay below 2^31.
      boundExample("axpby.rtcg", {{"n", 2147483647}}), boundExample("matmul.rtcg", {{"n", 46340}}),
      // A triangle of 2^31 + 2^15 points (65536 rows): the domain passes i32 where its box does not.
      boundSource("kernel tri(n: int, a: f32[n, n], inout b: f32[n, n]) {\n"
                  "  for i in 0..n, j in 0..i + 1 { b[i, j] = a[i, j]; }\n}\n",
                  {{"n", 65536}}),
      // Names from the C++ and CUDA keyword and macro lists (issue 40, item 5), as the kernel, its
      // size, arrays and indices: schedules name the indices (schedule.dict holds the words).
      boundSource("kernel noexcept(NULL: int, typeid: f32[NULL, NULL], out wchar_t: f32[NULL, NULL]) {\n"
                  "  for protected in 0..NULL, xor_eq in 0..NULL {\n"
                  "    wchar_t[protected, xor_eq] = sum(and_eq in 0..NULL, typeid[protected, and_eq] * "
                  "typeid[and_eq, xor_eq]);\n  }\n}\n",
                  {{"NULL", 37}})};
  return ks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Kernel& k = kernels()[data[0] % kernels().size()];
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  ScheduleParseResult r = parseSchedule(text);
  if (!r.ok()) {
    if (r.error.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  std::string printed = printSchedule(*r.schedule);
  ScheduleParseResult again = parseSchedule(printed);
  if (!again.ok() || !(*again.schedule == *r.schedule)) __builtin_trap();  // print and parse round-trip
  ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  std::vector<std::string> reasons = validateSchedule(k, *r.schedule, limits);
  for (const std::string& reason : reasons)
    if (reason.empty()) __builtin_trap();
  if (reasons.empty() && emitCuda(k, *r.schedule, limits).source.empty()) __builtin_trap();
  return 0;
}
