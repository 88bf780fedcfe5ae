// Nests fused into one launch (`fuse: N`, FusionGroup in schedule/Plan.h): the fused code run by
// host emulation against the float64 reference at sizes no tile divides, the shared-memory
// placement of kernel-local rows, and the reasons a fusion is refused.
#include <gtest/gtest.h>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// The nest schedule `nest` three times, the first one fusing all three.
std::string fusedThree(const std::string& nest) { return nest + "; fuse: 3 | " + nest + " | " + nest; }

// Every reason of `schedule` for `k`, joined.
std::string reasonsOf(const Kernel& k, const std::string& schedule) {
  ScheduleParseResult r = parseSchedule(schedule);
  EXPECT_TRUE(r.ok()) << r.error;
  std::string all;
  for (const std::string& m : validateSchedule(k, *r.schedule)) all += m + "\n";
  return all;
}

}  // namespace

TEST(Fusion, ClausePrintsAndParsesBack) {
  const std::string text = "i: grid.x; j: serial, thread.x 128; fuse: 3 | i: grid.x; j: serial, thread.x 128 | -";
  ScheduleParseResult r = parseSchedule(text);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.schedule->nests[0].fuse, 3);
  EXPECT_EQ(r.schedule->nests[1].fuse, 1);
  EXPECT_EQ(printSchedule(*r.schedule), text);
  ScheduleParseResult bad = parseSchedule("i: grid.x; fuse: 0");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("fuse must be between 1 and 64"), std::string::npos) << bad.error;
}

// Softmax in one launch: a block per row (the row's reductions split across its threads), and a
// block of 2 rows (37 rows: the last block's second row lies outside, its threads still reach the
// barriers); blocks in shuffled order, twice in one module.
TEST(Fusion, SoftmaxFusedMatchesTheReference) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 300}});
  EmulationOptions o;
  o.runs = 2;
  o.blockOrder = 2;
  EXPECT_EQ(checkOnHost(softmax, fusedThree("i: grid.x; j: serial, thread.x 128"), 1e-5, {}, o), "");
  EXPECT_EQ(checkOnHost(softmax, fusedThree("i: grid.x, thread.y 2; j: serial, thread.x 32, unroll 2"), 1e-5, {}, o), "");
  // The row statistics never go to device memory: no module global holds them.
  EmittedModule m = emitCuda(softmax, *parseSchedule(fusedThree("i: grid.x; j: serial, thread.x 128")).schedule);
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].function, "softmax_0_2");
  EXPECT_EQ(m.source.find("__device__"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("__shared__ __align__(16) float softmax_local_rowmax_rows[1];"), std::string::npos);
}

// Two of three nests fused: rowmax, written by the unfused nest 0, stays in device memory; rowsum,
// used only by the fused nests, moves to shared memory.
TEST(Fusion, PartOfTheNestsFused) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 300}});
  const std::string s = "i: grid.x, thread.x 32; j: serial | i: grid.x; j: serial, thread.x 64; fuse: 2 | "
                        "i: grid.x; j: serial, thread.x 64";
  EXPECT_EQ(checkOnHost(softmax, s), "");
  EmittedModule m = emitCuda(softmax, *parseSchedule(s).schedule);
  ASSERT_EQ(m.launches.size(), 2u);
  EXPECT_NE(m.source.find("__device__ __align__(16) float softmax_local_rowmax["), std::string::npos) << m.source;
  EXPECT_EQ(m.source.find("float softmax_local_rowsum["), std::string::npos) << m.source;
}

TEST(Fusion, LayernormFusedMatchesTheReference) {
  Kernel layernorm = exampleKernel("layernorm.rtcg", "layernorm", {{"m", 29}, {"n", 41}});
  EmulationOptions o;
  o.blockOrder = 1;
  EXPECT_EQ(checkOnHost(layernorm, fusedThree("i: grid.x; j: serial, thread.x 32"), 1e-5, {}, o), "");
}

// A later nest that reads an earlier one's output at another value of the shared index cannot be
// fused: blocks run in any order.
TEST(Fusion, IllegalFusionIsRefusedWithItsReason) {
  Kernel k = fromSource(
      "kernel shift(m: int, n: int, x: f32[m, n], out a: f32[m], out y: f32[m, n]) {\n"
      "  for i in 0..m { a[i] = sum(j in 0..n, x[i, j]); }\n"
      "  for i in 0..m, j in 0..n { y[i, j] = x[i, j] * a[m - 1 - i]; }\n"
      "}\n",
      "shift", {{"m", 9}, {"n", 7}});
  const std::string why = reasonsOf(k, "i: grid.x; j: serial; fuse: 2 | i: grid.x; j: serial");
  EXPECT_NE(why.find("nest 0: fuse: 2: nest 1 reads a[8 - i] at another value of its leading index 'i'"),
            std::string::npos)
      << why;
  // The unfused form stays legal.
  EXPECT_EQ(reasonsOf(k, "i: grid.x; j: serial | i: grid.x; j: serial"), "");
}

TEST(Fusion, SchedulesThatCannotShareALaunchAreRefused) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 300}});
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial, thread.x 64; fuse: 3 | i: grid.x; j: serial, thread.x 64 | "
                               "i: grid.x; j: serial, thread.x 128")
                .find("nest 2's block (128, 1, 1) differs from nest 0's (64, 1, 1)"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial, thread.x 64; fuse: 3 | i: grid.x, thread.y 1; j: serial, "
                               "thread.x 64 | i: grid.x; j: serial, thread.x 64")
                .find("nest 1 maps its leading index differently"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial, thread.x 64; fuse: 3 | i: grid.x; j: serial, thread.x 64 | "
                               "i: grid.x; j: grid.y, thread.x 64")
                .find("nest 2: index 'j' has a grid part"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: thread.x, grid.x 37; j: serial; fuse: 2 | i: thread.x, grid.x 37; j: serial | i: grid.x; j: serial")
                .find("must start with a grid part"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial; fuse: 4 | i: grid.x; j: serial | i: grid.x; j: serial")
                .find("fuse: 4 asks for nests 0 to 3, but kernel 'softmax' has 3 nests"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial; fuse: 2 | i: grid.x; j: serial; fuse: 2 | i: grid.x; j: serial")
                .find("nest 1: fuse: 2 inside the nests that nest 0 fuses"),
            std::string::npos);
}

// `explain` says what is fused and what moved to shared memory.
TEST(Fusion, PlanInWords) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 300}});
  SchedulePlan plan = planSchedule(softmax, *parseSchedule(fusedThree("i: grid.x, thread.y 2; j: serial, thread.x 32")).schedule);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan.fusions.size(), 1u);
  EXPECT_EQ(printFusion(softmax, plan.fusions[0]),
            "fused: nests 0 to 2 in one launch over 'i' (2 values per block, a barrier between nests); locals in "
            "shared memory: rowmax, rowsum (16 bytes per block)\n");
}

// The space offers fused candidates beside the unfused ones, each legal, and the model ranks a
// fused one first for softmax at a bench shape (one launch, the statistics and re-reads of x saved).
TEST(Fusion, SpaceOffersFusedCandidates) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 8192}, {"n", 2048}});
  Space space = enumerateSchedules(softmax);
  int64_t fused = 0, unfused = 0;
  for (const Candidate& c : space.candidates) {
    const bool f = c.schedule.nests[0].fuse == 3;
    (f ? fused : unfused)++;
    if (f) EXPECT_TRUE(validateSchedule(softmax, c.schedule).empty()) << c.text;
  }
  EXPECT_GT(fused, 20);
  EXPECT_GT(unfused, 1000);
  ASSERT_FALSE(space.candidates.empty());
  EXPECT_EQ(space.candidates[0].schedule.nests[0].fuse, 3) << space.candidates[0].text;
  // A kernel whose nests cannot share a launch gets none.
  Kernel k = fromSource(
      "kernel shift(m: int, n: int, x: f32[m, n], out a: f32[m], out y: f32[m, n]) {\n"
      "  for i in 0..m { a[i] = sum(j in 0..n, x[i, j]); }\n"
      "  for i in 0..m, j in 0..n { y[i, j] = x[i, j] * a[m - 1 - i]; }\n"
      "}\n",
      "shift", {{"m", 64}, {"n", 64}});
  for (const Candidate& c : enumerateSchedules(k).candidates) EXPECT_EQ(c.schedule.nests[0].fuse, 1) << c.text;
}
