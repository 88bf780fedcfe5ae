// Every examples/*.rtcg kernel, parsed by the frontend and bound at sizes that divide the block
// shapes and sizes that do not, emitted with its default schedule and with hand-written ones,
// must compile with NVRTC; the resources of every kernel are read back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/Schedule.h"
#include "FullTests.h"

using namespace rtcg;

namespace {

std::vector<Kernel> exampleKernels() {
  std::vector<Kernel> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(RTCG_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".rtcg") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    Diagnostics diags;
    auto prog = parseProgram(entry.path().filename().string(), ss.str(), diags);
    EXPECT_TRUE(prog.has_value()) << entry.path() << "\n" << diags.render(entry.path().string(), ss.str());
    if (prog)
      for (const Kernel& k : prog->kernels) out.push_back(k);
  }
  return out;
}

// Hand-written schedules for the examples, by kernel name (in addition to the default one).
std::vector<std::string> handSchedules(const std::string& kernel) {
  if (kernel == "matmul" || kernel == "matmul_flat")
    return {"i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4",
            "j: grid.x, thread.x 16, reg 2; i: grid.y, thread.y 8, reg 2; k: unroll, serial 3",
            "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 8; shared: a, b",
            "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, thread.z 4; shared: a, b"};
  if (kernel == "gemm_bf16")  // 16-bit tiles: staged through registers (no cp.async of 2 bytes)
    return {"i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4",
            "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 16, reg 2; k: serial, unroll 8; shared: a^T, b"};
  if (kernel == "axpby")
    return {"i: grid.x, thread.x 128, reg 4", "i: grid.x, serial 3, thread.x 64", "i: grid.x, thread.x 128, reg 4; shared: x, y"};
  if (kernel == "dot") return {"i: serial, unroll 8", "i: serial, thread.x 256", "i: serial, unroll 4, thread.x 96"};
  if (kernel == "gemv")
    return {"i: grid.x, thread.x 64, reg 2; j: serial, unroll 4", "i: grid.x, thread.y 4; j: serial, thread.x 32; shared: x",
            "i: grid.x, thread.x 64, reg 2; j: serial, unroll 4; shared: a, x"};
  if (kernel == "transpose")
    return {"i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 32", "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 32; shared: a"};
  if (kernel == "dg_diff")
    return {"k: grid.x, thread.y 4, reg 2; i: serial, thread.x 32; j: unroll, serial 4",
            "k: grid.x, thread.y 4, reg 2; i: serial, thread.x 32; j: unroll, serial 4; shared: Dr, Ds, Dt, u",
            "k: grid.x, thread.y 8; i: serial, thread.x 32; j: serial, thread.z 2; shared: u"};
  if (kernel == "dg_diff_stacked")  // an H100 search's winner at N=6 and 7
    return {"k: grid.y, thread.y 8, reg 8; m: grid.x, reg 8, thread.x 16; j: serial, unroll 8; shared: D, u^T; blocks_per_sm: 2"};
  if (kernel == "dg_lift")
    return {"k: grid.x, thread.y 4; i: serial, thread.x 32; f: serial, unroll 4",
            "k: grid.x, thread.y 4; i: serial, thread.x 32; f: serial, unroll 4; shared: LIFT, flux, invJ"};
  if (kernel == "dg_face_gather") return {"k: grid.x, thread.y 8, reg 2; f: serial, thread.x 32"};
  if (kernel == "batched_matmul")
    return {"b: grid.z; i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 16; k: serial, unroll 4",
            "b: grid.z; i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 16; k: serial, unroll 4; shared: a, x"};
  return {};
}

}  // namespace

TEST(Examples, EmitAndCompileAtSeveralSizes) {
  std::vector<Kernel> kernels = exampleKernels();
  ASSERT_GE(kernels.size(), 10u);
  for (const Kernel& k : kernels) {
    for (int64_t n : {500, 17, 1}) {
      SizeBindings sizes;
      for (const Param& p : k.params)
        if (p.kind == ParamKind::Size) sizes[p.name] = n;
      Diagnostics diags;
      auto bound = bindSizes(k, sizes, diags);
      ASSERT_TRUE(bound.has_value()) << k.name << " n=" << n;
      std::vector<Schedule> schedules{defaultSchedule(*bound)};
      for (const std::string& text : handSchedules(k.name)) {
        auto r = parseSchedule(text);
        ASSERT_TRUE(r.ok()) << text << ": " << r.error;
        schedules.push_back(*r.schedule);
      }
      for (const Schedule& s : schedules) {
        // Every generated schedule round-trips through its text.
        auto again = parseSchedule(printSchedule(s));
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(*again.schedule, s);
        ScheduleLimits limits;
        limits.maxSharedBytes = 227 * 1024;  // the sm_90 opt-in: large tiles use dynamic shared memory
        auto reasons = validateSchedule(*bound, s, limits);
        ASSERT_TRUE(reasons.empty()) << k.name << " n=" << n << " " << printSchedule(s) << ": " << reasons[0];
        EmittedModule m = emitCuda(*bound, s, limits);
        // NVRTC takes seconds a module on a loaded machine: by default every schedule compiles at
        // n = 17 (no tile divides it) and the default one at every size; RTCG_FULL_TESTS=1 all.
        bool compile = rtcgtest::fullTests() || n == 17 || &s == &schedules.front();
        if (!compile) continue;
        CudaCompileResult c = compileCuda(m.source, k.name + ".cu");
        ASSERT_TRUE(c.success) << k.name << " n=" << n << " " << printSchedule(s) << "\n" << c.log << "\n" << m.source;
        for (const LaunchSpec& l : m.launches) {
          const KernelResources* res = c.find(l.function);
          ASSERT_NE(res, nullptr) << l.function;
          EXPECT_GT(res->registers, 0) << l.function;
        }
      }
    }
  }
}
