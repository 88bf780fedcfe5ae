// `mma: ... tma producer persistent` (schedule/Mma.h, MmaPlan::persistentBlocks): the clause's text,
// the plan's grid and its refusals, the emitted loop over tiles in the host emulation (every block
// runs several tiles, or blocks unequal counts of them, at sizes no tile divides and reductions
// shorter than a step, one step and not a multiple of it; every arithmetic the producer takes,
// the ring's overlaps and register sets), NVRTC's sm_90a compile, the space and the model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/Space.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel rect(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel rect_t(m: int, n: int, kk: int, a: f16[kk, m], b: f16[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, f32(a[k, i]) * f32(b[j, k])) + 1;
  }
}
kernel rect32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel rect32_nt(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel rect_i8(m: int, n: int, kk: int, a: i8[m, kk], b: i8[n, kk], out c: i32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, i32(a[i, k]) * i32(b[j, k])) + i - 3 * j;
  }
}
)";

Kernel rect(const char* name, int64_t m, int64_t n, int64_t kk) {
  return fromSource(kKernels, name, {{"m", m}, {"n", n}, {"kk", kk}});
}


}  // namespace

TEST(WgmmaPersistent, ClausePrintsAndParsesBack) {
  for (const char* text : {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent",
                           "mma: bf16 wgmma m64n128k16 warpgroups 1x1 k 64 stages 3 swizzle 128 tma producer persistent",
                           // Refused by the plan, not the parser: printed back as written.
                           "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma persistent",
                           "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 persistent"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_TRUE(parsed.schedule->nests[0].mma.persistent) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
  EXPECT_FALSE(parseSchedule("mma: bf16 wgmma m64n128k16 warpgroups 1x1 k 64 stages 3 swizzle 128 tma producer").schedule->nests[0].mma.persistent);
}

// The grid: the blocks an H200's 132 multiprocessors hold at once, at most the tiles; the
// refusals where it does not apply or the multiprocessors are not known.
TEST(WgmmaPersistent, PlanSizesTheGridAndRefusesWithReasons) {
  std::vector<std::string> reasons;
  Kernel k = exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}});
  const std::string producer = "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer";
  auto p = plan(k, producer + " persistent", kH200, reasons);
  ASSERT_TRUE(p) << joined(reasons);
  // 384 threads of about 136 registers: one block a multiprocessor (65536 / (384 x 136)).
  EXPECT_EQ(p->tileCount(), 32 * 64);
  EXPECT_EQ(p->persistentBlocks, 132);
  EXPECT_EQ(p->gridX(), 132);
  EXPECT_EQ(p->gridY(), 1);
  // bf16 m64n64 1x1: 256 threads of about 72 registers and 4 stages of 16 KiB: three blocks a
  // multiprocessor by registers, and shared memory (228 KiB / (65 + 1 KiB)) too.
  Kernel g = exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}});
  auto b = plan(g, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 4 swizzle 128 tma producer persistent", kH200,
                reasons);
  ASSERT_TRUE(b) << joined(reasons);
  EXPECT_EQ(b->persistentBlocks, 132 * std::min<int64_t>(65536 / (256 * 72), 228 * 1024 / (b->sharedBytes + 1024)));
  // Fewer tiles than resident blocks: a block a tile (the product transposed, B along N: M = 136
  // in 2 tiles of 128, N = 200 in 4 of 64).
  auto small = plan(rect("rect32", 200, 136, 72), producer + " persistent", kH200, reasons);
  ASSERT_TRUE(small) << joined(reasons);
  EXPECT_EQ(small->persistentBlocks, 8);
  EXPECT_TRUE(reasons.empty()) << joined(reasons);
  // Refusals: no producer, mma.sync, the multiprocessors unknown.
  struct Refused {
    std::string text;
    ScheduleLimits limits;
    const char* reason;
  };
  const Refused refused[] = {
      {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma persistent", kH200,
       "'persistent' loops over output tiles on a producer warpgroup's ring: it needs 'wgmma ... swizzle 128 tma producer'"},
      {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 persistent", kH200, "on a producer warpgroup's ring"},
      {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 persistent", kH200,
       "on mma.sync it needs 'stages N' and 'fragments 2' (f64)"},
      {producer + " persistent", deviceScheduleLimits(227 * 1024, 1024),
       "'persistent' launches the blocks the device's multiprocessors hold at once, and the multiprocessor count is not "
       "known here"},
  };
  for (const Refused& r : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(k, r.text, r.limits, reasons)) << r.text;
    ASSERT_EQ(reasons.size(), 1u) << r.text << ": " << joined(reasons);
    EXPECT_NE(reasons[0].find(r.reason), std::string::npos) << reasons[0];
  }
  // The plan in words, and its launch.
  NestPlanResult r = planNest(k, 0, parseSchedule(producer + " persistent").schedule->nests[0], kH200);
  ASSERT_TRUE(r.plan);
  EXPECT_EQ(r.plan->launch.grid[0], 132);
  EXPECT_EQ(r.plan->launch.grid[1], 1);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("persistent: 132 blocks loop over the 2048 output tiles (up to 16 each)"), std::string::npos)
      << text;
}

// The loop over tiles in the host emulation, whose mbarriers keep their phases across the tiles:
// a ring step numbered from the tile instead of the block's run, a stage released late or early,
// or a tile's origin from blockIdx gives wrong values or hangs (and aborts). One multiprocessor
// (each block runs several tiles), or three or four (8 tiles over 3 blocks: 3, 3, 2; 12 over 8:
// four blocks run two, four one); the reduction
// shorter than a step (20 of 32), one step, and 2 or 3 steps with the last partial; every
// arithmetic the producer takes: tf32x3 (its split by the producer's warps, A from registers or
// both tiles split), tf32 from registers in two sets (odd and even step counts) and in one (2
// stages), bf16 in flight (wait_group 1: the tile's last stage released after the wait), f16
// MN-major, s8.
TEST(HostEmulation, WgmmaPersistentMatchesTheReference) {
  struct Case {
    const char* kernel;
    int64_t m, n, kk;
    const char* schedule;
    double tolerance;
    int64_t multiprocessors;
  };
  const std::string tail = " swizzle 128 tma producer persistent";
  const Case cases[] = {
      {"rect32", 200, 136, 72, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5, 1},
      {"rect32", 200, 136, 20, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5, 3},
      {"rect32", 200, 136, 32, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", 2e-5, 3},
      {"rect32_nt", 200, 136, 100, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-5, 1},
      {"rect32", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", 2e-3, 1},
      {"rect32", 200, 136, 56, "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 4", 2e-3, 4},
      {"rect32", 200, 136, 20, "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-3, 1},
      {"rect", 200, 136, 200, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4", 1e-5, 1},
      {"rect", 200, 136, 40, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3", 1e-5, 1},
      {"rect_t", 136, 200, 72, "mma: f16 wgmma m64n64k16 warpgroups 1x2 k 64 stages 2", 1e-5, 1},
      {"rect_i8", 200, 100, 160, "mma: s8 wgmma m64n32k32 warpgroups 1x1 k 128 stages 3", 0, 1},
      {"rect_i8", 70, 50, 64, "mma: s8 wgmma m64n16k32 warpgroups 1x1 k 128 stages 3", 0, 1},
  };
  int uneven = 0;  // cases whose blocks run unequal counts of tiles
  for (const Case& c : cases) {
    const std::string text = c.schedule + tail;
    const Kernel k = rect(c.kernel, c.m, c.n, c.kk);
    const ScheduleLimits limits = limitsOf(c.multiprocessors);
    std::vector<std::string> reasons;
    auto p = plan(k, text, limits, reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    // More tiles than blocks: some block runs two or more.
    EXPECT_GT(p->tileCount(), p->persistentBlocks) << text;
    uneven += p->tileCount() % p->persistentBlocks != 0;
    EXPECT_EQ(checkOnHost(k, text, c.tolerance, limits), "")
        << c.kernel << " " << c.m << "x" << c.n << "x" << c.kk << " " << text;
  }
  EXPECT_GE(uneven, 3);
}

// The DG differentiation with the derivative matrices stacked in one array (dg_diff_stacked: TMA
// boxes of D; dg_diff's three arrays are stacked statements, which no box copies), a reduction of
// Np, under tf32x3 and tf32, Np = 20 (one step, partial) and 56 (two), more elements than one
// multiprocessor's blocks hold.
TEST(HostEmulation, WgmmaPersistentDgDiffMatchesTheReference) {
  for (int64_t np : {20, 56})
    for (const char* schedule :
         {"mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer persistent",
          "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 4 swizzle 128 tma producer persistent"}) {
      const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 301}, {"Np", np}});
      std::vector<std::string> reasons;
      auto p = plan(k, schedule, limitsOf(1), reasons);
      ASSERT_TRUE(p) << schedule << ": " << joined(reasons);
      EXPECT_GT(p->tileCount(), p->persistentBlocks) << schedule;
      const double tolerance = std::string(schedule).find("tf32x3") != std::string::npos ? 2e-5 : 2e-3;
      EXPECT_EQ(checkOnHost(k, schedule, tolerance, limitsOf(1)), "") << "Np " << np << " " << schedule;
    }
}

// The emitted loop: tiles from blockIdx.x by the grid, the ring's steps numbered on across them,
// the accumulators zeroed per tile; NVRTC compiles it for sm_90a without local memory.
TEST(WgmmaPersistent, EmitsATileLoopThatNvrtcCompiles) {
  struct Case {
    Kernel k;
    const char* schedule;
  };
  const std::vector<Case> cases = {
      {exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 199665}, {"Np", 84}}),
       "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent"},
      {exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 199665}, {"Np", 84}}),
       "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent"},
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}),
       "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma producer persistent"},
  };
  for (const Case& c : cases) {
    EmittedModule m = emitCuda(c.k, *parseSchedule(c.schedule).schedule, kH200);
    EXPECT_NE(m.source.find("for (int round = 0; round < rounds; ++round)"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("const int ring_step"), std::string::npos) << m.source;
    EXPECT_EQ(m.source.find("blockIdx.y"), std::string::npos) << m.source;
    CudaCompileResult r = compileCuda(m.source, c.k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << c.schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << c.schedule << "\n" << r.log;
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << c.schedule << "\n" << r.log;
  }
}

// The space offers persistent producers where a tile has few steps and there are more tiles than
// multiprocessors, and only where the limits know the multiprocessors; the model credits them
// with the fill and drain their tiles overlap.
TEST(WgmmaPersistent, SpaceOffersThemAndTheModelCreditsThem) {
  const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 199665}, {"Np", 84}});
  SpaceOptions o;
  o.device = *archDeviceModel("sm_90");
  o.precision = Precision::Tf32x3;
  o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock, o.device.multiprocessors,
                                  o.device.sharedPerMultiprocessor);
  const Space space = enumerateSchedules(k, o);
  std::map<std::string, double> scores;
  for (const Candidate& c : space.candidates) scores[c.text] = c.score;
  size_t persistent = 0;
  for (const auto& [text, score] : scores) {
    const size_t at = text.find(" persistent");
    // pingpong's twin is its persistent schedule (WgmmaPingpongTest.cpp), resident's too
    // (WgmmaResidentTest.cpp); 2 stages and m64n192 (s8 aside) are offered persistent only.
    if (at == std::string::npos || text.find(" pingpong") != std::string::npos ||
        text.find(" resident") != std::string::npos || text.find(" stages 2 ") != std::string::npos ||
        text.find("m64n192") != std::string::npos)
      continue;
    ++persistent;
    // Its producer twin (the same text without the word) scores worse: 3 steps a tile.
    const std::string twin = text.substr(0, at) + text.substr(at + std::string(" persistent").size());
    ASSERT_TRUE(scores.count(twin)) << twin;
    EXPECT_LT(score, scores.at(twin)) << text;
  }
  EXPECT_GT(persistent, 0u);
  // Without the multiprocessor count in the limits: none (the plan refuses them).
  o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock);
  for (const Candidate& c : enumerateSchedules(k, o).candidates)
    EXPECT_EQ(c.text.find(" persistent"), std::string::npos) << c.text;
}
