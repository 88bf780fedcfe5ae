// The stage ring (schedule/StageRing.h) is one plan part: the SIMT staging plan (`shared:` with
// `buffers:` and `copy:`) and the tensor-core plans (`mma: ... stages N [tma [producer]]`) fill
// the same StageRing, with the stages, the steps ahead, the copy engine and the hand-over their
// schedules mean.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "schedule/Plan.h"
#include "schedule/StageRing.h"
#include "schedule/TestKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const ScheduleLimits kSm90 = deviceScheduleLimits(227 * 1024, 1024);

// The plan of nest 0 of `k` under `text`: a test failure (and an empty plan) when there is none.
NestPlan planOf(const Kernel& k, const std::string& text, const ScheduleLimits& limits = kSm90) {
  auto parsed = parseSchedule(text);
  EXPECT_TRUE(parsed.schedule) << text << ": " << parsed.error;
  if (!parsed.schedule) return {};
  SchedulePlan plan = planSchedule(k, *parsed.schedule, limits);
  EXPECT_TRUE(plan.ok()) << text << ": " << fmt::format("{}", fmt::join(plan.reasons, "; "));
  return plan.ok() ? plan.nests[0] : NestPlan{};
}

// The ring of a plan: the staging's, or the mma plan's where there is one.
const StageRing& ringOf(const NestPlan& p) { return p.mma ? p.mma->ring : p.staging.ring; }

}  // namespace

TEST(StageRing, SimtStagingAndMmaPlanTheSamePart) {
  const Kernel mm = matmul(256);
  const std::string simt = "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16, reg 4; k: serial, unroll 8; shared: a, b";
  struct Case {
    std::string schedule;
    std::string ring;  // printStageRing
  };
  const Case cases[] = {
      // SIMT staging: one buffer (no ring: copied and read each step), two through registers,
      // N by cp.async N - 1 steps ahead; the block's barrier hands each step over.
      {simt, "1 stage, 0 steps ahead, registers, barrier"},
      {simt + "; buffers: 2", "2 stages, 1 step ahead, registers, barrier"},
      {simt + "; buffers: 3; copy: async", "3 stages, 2 steps ahead, cp.async, barrier"},
      // mma.sync: without stages loaded, converted and stored by the threads; with them cp.async,
      // stages - 1 ahead, or `stages` with `fragments 2` (the step's buffer is in registers before
      // its refill).
      {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16", "1 stage, 0 steps ahead, registers, barrier"},
      {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3", "3 stages, 2 steps ahead, cp.async, barrier"},
      // wgmma: cp.async fenced for the async proxy, one step fewer ahead where a step's wgmma stays
      // in flight through the next (not tf32x3's); TMA's mbarriers; the producer warpgroup `stages`
      // ahead.
      {"mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4",
       "4 stages, 2 steps ahead, cp.async, barrier, fenced for the async proxy"},
      {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4",
       "4 stages, 3 steps ahead, cp.async, barrier, fenced for the async proxy"},
      {"mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma", "4 stages, 2 steps ahead, TMA, mbarrier"},
      {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer",
       "4 stages, 4 steps ahead, TMA, producer-consumer"},
  };
  for (const Case& c : cases) {
    const NestPlan p = planOf(mm, c.schedule);
    EXPECT_EQ(printStageRing(ringOf(p)), c.ring) << c.schedule;
  }
  // The staged tiles' buffers are the ring's stages.
  const NestPlan async = planOf(mm, simt + "; buffers: 3; copy: async");
  for (const StagedArray& sa : async.staging.arrays) EXPECT_EQ(sa.buffers, async.staging.ring.stages);
  // `fragments 2` (FP64's sm_90 shapes): the ring runs `stages` ahead.
  const StageRing f64 = ringOf(planOf(matmul(256, ScalarType::F64), "mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 fragments 2"));
  EXPECT_EQ(f64.ahead(), 3);
  EXPECT_EQ(f64.release, StageRelease::BeforeRefill);
  EXPECT_EQ(f64.engine, CopyEngine::CpAsync);
}

// The tiles' form of the mma plans: padded and converted as stored without stages, as loaded with
// them, wgmma's canonical layout or its 128-byte swizzled atoms.
TEST(StageRing, MmaTileForms) {
  const Kernel mm = matmul(256);
  const std::pair<const char*, TileForm> cases[] = {
      {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16", TileForm::Padded},
      {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3", TileForm::AsLoaded},
      {"mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4", TileForm::Canonical},
      {"mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma", TileForm::Swizzle128},
  };
  for (const auto& [schedule, form] : cases) {
    const NestPlan p = planOf(mm, schedule);
    ASSERT_TRUE(p.mma) << schedule;
    EXPECT_STREQ(tileFormName(p.mma->tiles), tileFormName(form)) << schedule;
  }
}
