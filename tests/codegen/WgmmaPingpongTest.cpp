// `mma: ... tma producer persistent pingpong` (schedule/Mma.h, MmaPlan::alternatingTiles): the
// clause's text, the plan's one-warpgroup block tile and its refusals, the emitted consumers'
// own tile loops in the host emulation (the roles as threads, the mbarriers' phases and counts: a
// stage freed by the wrong count of warps, a turn's parity wrong, or a consumer waiting on a
// stage two phases ahead gives wrong values or hangs), NVRTC's sm_90a compile, the space and the
// model.
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
#include "SpaceOptionsFor.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel rect(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel rect32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel rect32_nt(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, a[i, k] * b[j, k]) + 1;
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

const std::string kTail = " swizzle 128 tma producer persistent pingpong";

}  // namespace

TEST(WgmmaPingpong, ClausePrintsAndParsesBack) {
  for (const char* text :
       {"mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong",
        "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma producer persistent pingpong epilogue shared",
        // Refused by the plan, not the parser: printed back as written.
        "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer pingpong",
        "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 persistent pingpong"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_TRUE(parsed.schedule->nests[0].mma.pingpong) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
  auto plain = parseSchedule("mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent");
  ASSERT_TRUE(plain.schedule);
  EXPECT_FALSE(plain.schedule->nests[0].mma.pingpong);
}

// The plan: the block tile one warpgroup's, the stages freed by one warpgroup, a turn mbarrier per
// consumer, no per-step turns; the refusals with their reasons.
TEST(WgmmaPingpong, PlanTakesOneWarpgroupsTileAndRefusesWithReasons) {
  std::vector<std::string> reasons;
  const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 299551}, {"Np", 56}});
  const std::string persistent = "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent";
  auto twin = plan(k, persistent, kH200, reasons);
  auto p = plan(k, persistent + " pingpong", kH200, reasons);
  ASSERT_TRUE(p && twin) << joined(reasons);
  EXPECT_TRUE(p->alternatingTiles);
  EXPECT_FALSE(p->orderedIssue);
  EXPECT_TRUE(twin->orderedIssue);
  EXPECT_EQ(p->blockM, 64);
  EXPECT_EQ(p->blockN, 128);
  EXPECT_EQ(twin->blockM, 128);
  EXPECT_EQ(p->threads, 384);
  EXPECT_EQ(p->consumerGroups(), 2);
  EXPECT_EQ(p->releasingWarps(), 4);
  EXPECT_EQ(twin->releasingWarps(), 8);
  EXPECT_EQ(p->mTiles(), (p->c.mExtent + 63) / 64);
  EXPECT_GE(p->tileCount(), 2 * p->persistentBlocks);
  // The stages as 1x1's (a warpgroup's tiles), the two turn mbarriers after the ring's.
  auto one = plan(k, "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer persistent",
                  kH200, reasons);
  ASSERT_TRUE(one) << joined(reasons);
  EXPECT_EQ(p->sharedBytes, one->sharedBytes + 16);
  EXPECT_TRUE(reasons.empty()) << joined(reasons);
  // In words.
  NestPlanResult r = planNest(k, 0, parseSchedule(persistent + " pingpong").schedule->nests[0], kH200);
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("block tile 64x128 (one warpgroup's; its 2 consumer warpgroups take whole tiles in turn)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("pingpong: the 2 consumer warpgroups run the block's tiles in turn"), std::string::npos) << text;
  EXPECT_NE(text.find("(mbarrier 'empty', 4 arrivals)"), std::string::npos) << text;

  struct Refused {
    Kernel k;
    std::string text;
    ScheduleLimits limits;
    const char* reason;
  };
  const Kernel gemm = exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}});
  const Refused refused[] = {
      {k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer pingpong", kH200,
       "'pingpong' alternates a persistent block's tiles between its consumer warpgroups: it needs 'wgmma ... swizzle "
       "128 tma producer persistent' before it"},
      {k, "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong", kH200,
       "'pingpong' gives each consumer warpgroup whole tiles in turn, so that one's epilogue runs beneath another's "
       "wgmma: it needs two or more warpgroups ('warpgroups 2x1'), not 1x1"},
      // Without a producer: persistent's reason alone.
      {k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma persistent pingpong", kH200,
       "'persistent' loops over output tiles on a producer warpgroup's ring"},
      // 4 x 4 tiles of 64 x 64 over 132 x 2 resident blocks.
      {rect("rect32_nt", 200, 200, 64),
       "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong", kH200,
       "'pingpong' needs a tile per consumer warpgroup in every block: 16 tiles of 64x64 over 16 blocks leave some of "
       "the 2 consumers none"},
      // Four consumers and the producer: setmaxnreg cannot give each consumer m64n256's registers.
      {gemm, "mma: bf16 wgmma m64n256k16 warpgroups 4x1 k 64 stages 3 swizzle 128 tma producer persistent pingpong",
       kH200, "4 warpgroups of m64n256 need about 168 registers per thread (128 accumulators); with the producer's 40 "
              "setmaxnreg leaves them 104 of the block's"},
  };
  for (const Refused& c : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(c.k, c.text, c.limits, reasons)) << c.text;
    ASSERT_EQ(reasons.size(), 1u) << c.text << ": " << joined(reasons);
    EXPECT_NE(reasons[0].find(c.reason), std::string::npos) << reasons[0];
  }
}

// The consumers' own tile loops in the host emulation, whose mbarriers keep their phases across
// the tiles: 1, 3 or 4 multiprocessors (blocks run several tiles, and where a block's count is odd
// its two consumers unequal counts), sizes no tile divides, reductions of 20, 32, 56, 100 and 200
// values (one partial step to seven steps), every arithmetic the producer takes: tf32x3 (A from
// registers, or both tiles split), tf32 (A from registers in two sets, or one), bf16 (in flight)
// and s8. bf16 and s8 take the lengths whose rows TMA can copy (16-byte multiples: bf16's 8
// values, s8's 16).
TEST(HostEmulation, WgmmaPingpongMatchesTheReference) {
  struct Case {
    const char* kernel;
    int64_t m, n, kk;
    const char* schedule;
    double tolerance;
    int64_t multiprocessors;
  };
  const Case cases[] = {
      {"rect32", 200, 136, 20, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5, 1},
      {"rect32_nt", 200, 136, 32, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", 2e-5, 3},
      {"rect32", 200, 136, 56, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5, 4},
      {"rect32_nt", 200, 136, 100, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2", 2e-5, 1},
      {"rect32", 200, 136, 200, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", 2e-5, 3},
      {"rect32", 200, 136, 20, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", 2e-3, 1},
      {"rect32", 200, 136, 32, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2", 2e-3, 3},
      {"rect32_nt", 264, 200, 56, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-3, 4},
      {"rect32", 200, 136, 100, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-3, 1},
      {"rect32", 200, 136, 200, "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4", 2e-3, 3},
      {"rect", 200, 136, 32, "mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 3", 1e-5, 1},
      {"rect", 200, 136, 56, "mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 4", 1e-5, 3},
      {"rect", 264, 200, 104, "mma: bf16 wgmma m64n64k16 warpgroups 1x2 k 64 stages 2", 1e-5, 4},
      {"rect", 200, 136, 200, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4", 1e-5, 1},
      {"rect_i8", 200, 100, 32, "mma: s8 wgmma m64n32k32 warpgroups 2x1 k 128 stages 3", 0, 1},
      {"rect_i8", 200, 100, 112, "mma: s8 wgmma m64n16k32 warpgroups 2x1 k 128 stages 3", 0, 3},
      {"rect_i8", 200, 100, 208, "mma: s8 wgmma m64n16k32 warpgroups 2x1 k 128 stages 4", 0, 4},
  };
  int unequal = 0;  // cases where some block's two consumers run unequal counts of tiles
  for (const Case& c : cases) {
    const std::string text = c.schedule + kTail;
    const Kernel k = rect(c.kernel, c.m, c.n, c.kk);
    const ScheduleLimits limits = limitsOf(c.multiprocessors);
    std::vector<std::string> reasons;
    auto p = plan(k, text, limits, reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_EQ(p->blockM, 64) << text;
    EXPECT_GE(p->tileCount(), 2 * p->persistentBlocks) << text;
    for (int64_t b = 0; b < p->persistentBlocks; ++b)
      if ((p->tileCount() - b + p->persistentBlocks - 1) / p->persistentBlocks % 2 == 1) {
        ++unequal;
        break;
      }
    EXPECT_EQ(checkOnHost(k, text, c.tolerance, limits), "")
        << c.kernel << " " << c.m << "x" << c.n << "x" << c.kk << " " << text << " on " << c.multiprocessors;
  }
  EXPECT_GE(unequal, 5);
}

// The DG differentiation (dg_diff_stacked, issue 36) as measured on the GPU: Np = 56 (two steps of
// k 32), under tf32x3 (both tiles split by the producer's warps) and tf32.
TEST(HostEmulation, WgmmaPingpongDgDiffMatchesTheReference) {
  for (const char* schedule :
       {"mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong",
        "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer persistent pingpong"}) {
    const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 301}, {"Np", 56}});
    std::vector<std::string> reasons;
    auto p = plan(k, schedule, limitsOf(1), reasons);
    ASSERT_TRUE(p) << schedule << ": " << joined(reasons);
    EXPECT_GE(p->tileCount(), 2 * p->persistentBlocks) << schedule;
    const double tolerance = std::string(schedule).find("tf32x3") != std::string::npos ? 2e-5 : 2e-3;
    EXPECT_EQ(checkOnHost(k, schedule, tolerance, limitsOf(1)), "") << schedule;
  }
}

// The emitted consumers: each its own turns of the block's rounds, a turn's wait and pass; the
// producer's loop over all the rounds as without; NVRTC compiles it for sm_90a without local memory.
TEST(WgmmaPingpong, EmitsTheConsumersOwnTileLoopsThatNvrtcCompiles) {
  for (int64_t np : {56, 84, 120}) {
    const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 299551}, {"Np", np}});
    const std::string schedule =
        "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong";
    EmittedModule m = emitCuda(k, *parseSchedule(schedule).schedule, kH200);
    EXPECT_NE(m.source.find("const int consumer = warp / 4;"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("for (int turn = 0; turn < turns; ++turn)"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("const int turns = (rounds - consumer + 1) / 2;"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find(" = consumer + turn * 2;"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("if (turn - (int)(consumer == 0) >= 0) {"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("for (int round = 0; round < rounds; ++round)"), std::string::npos) << m.source;
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << "Np " << np << "\n" << r.log;
  }
}

// The space offers ping-pong beside each persistent candidate of 2x1 warpgroups, and the model
// credits it with the epilogue beneath the other consumer's steps: better than its persistent twin.
TEST(WgmmaPingpong, SpaceOffersItAndTheModelCreditsIt) {
  const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 299551}, {"Np", 56}});
  const SpaceOptions o = spaceOptionsFor("sm_90", Precision::Tf32x3);
  const Space space = enumerateSchedules(k, o);
  std::map<std::string, double> scores;
  for (const Candidate& c : space.candidates) scores[c.text] = c.score;
  size_t pingpong = 0, twins = 0;
  for (const auto& [text, score] : scores) {
    const size_t at = text.find(" pingpong");
    if (at == std::string::npos) continue;
    ++pingpong;
    EXPECT_NE(text.find("warpgroups 2x1"), std::string::npos) << text;
    // Its persistent twin, where the plan takes it (two warpgroups' tile of 128 rows in 4 stages
    // of tf32x3 take more than the shared memory).
    const std::string twin = text.substr(0, at) + text.substr(at + std::string(" pingpong").size());
    if (!scores.count(twin)) continue;
    ++twins;
    EXPECT_LT(score, scores.at(twin)) << text;
  }
  EXPECT_GT(pingpong, 0u);
  EXPECT_GT(twins, 0u);
}
