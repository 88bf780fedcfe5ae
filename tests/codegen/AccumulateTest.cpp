// Accumulations (`h[bin[i]] += w[i]`, `max=`, `min=`) emitted under each way their updates can
// meet (global atomics, the block's copy in shared memory, warp aggregation, both), run on the host
// emulation and compared with the reference executor: integer results exactly, float sums within the
// error of a sum of that length in another order. Sizes no block divides, blocks with a partial last
// warp (80 threads), grid-stride loops (a serial part before the grid part).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "ir/Analysis.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kHistogram = R"(
kernel hist(n: int, bins: int, bin: i32[n], inout counts: i32[bins]) {
  for i in 0..n { counts[bin[i]] += 1; }
}
kernel weighted(n: int, bins: int, bin: i32[n], w: f32[n], inout h: f32[bins]) {
  for i in 0..n { h[bin[i]] += w[i]; }
}
kernel weighted64(n: int, bins: int, bin: i32[n], w: f64[n], inout h: f64[bins]) {
  for i in 0..n { h[bin[i]] += w[i]; }
}
kernel extremes(n: int, bins: int, bin: i32[n], v: i32[n], big: i64[n], inout hi: i32[bins], inout lo: i64[bins]) {
  for i in 0..n {
    hi[bin[i]] max= v[i];
    lo[bin[i]] min= big[i];
  }
}
kernel folded(n: int, x: f32[n], inout s: f32[7]) {
  for i in 0..n { s[i % 7] += x[i]; }
}
kernel assemble(K: int, Np: int, N: int, map: i32[K, Np], contrib: f32[K, Np], inout u: f32[N]) {
  for k in 0..K, j in 0..Np { u[map[k, j]] += contrib[k, j]; }
}
)";

Kernel kernelOf(const std::string& name, const SizeBindings& sizes) { return fromSource(kHistogram, name, sizes); }

// A float sum of about n / bins updates per element in another order: well within 1e-5 relative.
constexpr double kFloatSum = 1e-5;

}  // namespace

TEST(Accumulate, HistogramUnderEverySchedule) {
  const Kernel k = kernelOf("hist", {{"n", 1003}, {"bins", 37}});
  for (const char* s : {"i: grid.x, thread.x 80", "i: grid.x, thread.x 80; accumulate: shared",
                        "i: serial, grid.x 3, thread.x 80; aggregate: warp",
                        "i: serial, grid.x 3, thread.x 64; accumulate: shared; aggregate: warp",
                        "i: grid.x, thread.x 32, reg 3; accumulate: shared; aggregate: warp"})
    EXPECT_EQ(checkOnHost(k, s, 0.0), "") << s;
}

TEST(Accumulate, FloatSumsAndExtremes) {
  EXPECT_EQ(checkOnHost(kernelOf("weighted", {{"n", 1003}, {"bins", 37}}), "i: serial, grid.x 3, thread.x 80; accumulate: shared; aggregate: warp", kFloatSum), "");
  EXPECT_EQ(checkOnHost(kernelOf("weighted64", {{"n", 1003}, {"bins", 5}}), "i: grid.x, thread.x 96; aggregate: warp", 1e-12), "");
  // Two accumulations of different arrays: global atomics (the clauses take one accumulation).
  EXPECT_EQ(checkOnHost(kernelOf("extremes", {{"n", 1003}, {"bins", 37}}), "i: grid.x, thread.x 80", 0.0), "");
  // An affine target: seven elements, many lanes of a warp on each.
  EXPECT_EQ(checkOnHost(kernelOf("folded", {{"n", 1003}}), "i: serial, grid.x 2, thread.x 80; accumulate: shared; aggregate: warp", kFloatSum), "");
}

TEST(Accumulate, AssemblyThroughAMap) {
  const Kernel k = kernelOf("assemble", {{"K", 37}, {"Np", 7}, {"N", 101}});
  EXPECT_EQ(checkOnHost(k, "k: grid.x, thread.y 5; j: thread.x", kFloatSum), "");
  EXPECT_EQ(checkOnHost(k, "k: grid.x, thread.y 5; j: thread.x; accumulate: shared; aggregate: warp", kFloatSum), "");
  // The operands staged in shared memory beside global atomics (a family the space offers).
  EXPECT_EQ(checkOnHost(k, "k: grid.x, thread.x 16; j: serial, thread.y 4, reg 2; shared: contrib, map", kFloatSum), "");
}

TEST(Accumulate, PlanDecidesPrivatizationFromTheExtent) {
  const Kernel small = kernelOf("hist", {{"n", 1 << 20}, {"bins", 256}});
  const Kernel large = kernelOf("hist", {{"n", 1 << 20}, {"bins", 65536}});
  auto parsed = parseSchedule("i: serial, grid.x 264, thread.x 256; accumulate: shared");
  ASSERT_TRUE(parsed.ok());
  SchedulePlan p = planSchedule(small, *parsed.schedule);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.nests[0].accumulation.shared);
  EXPECT_EQ(p.nests[0].accumulation.extent, 256);
  EXPECT_TRUE(p.nests[0].cooperative);
  SchedulePlan q = planSchedule(large, *parsed.schedule);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.reasons[0].find("262144 bytes"), std::string::npos) << q.reasons[0];
  // Global atomics have no such limit; the clauses need an accumulation.
  EXPECT_TRUE(planSchedule(large, *parseSchedule("i: serial, grid.x 264, thread.x 256; aggregate: warp").schedule).ok());
  const Kernel plain = fromSource("kernel c(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } }", "c",
                                  {{"n", 100}});
  SchedulePlan r = planSchedule(plain, *parseSchedule("i: grid.x, thread.x 32; aggregate: warp").schedule);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.reasons[0].find("the nest has 0"), std::string::npos) << r.reasons[0];
}

TEST(Accumulate, NestsThatAccumulateRunAlone) {
  const Kernel k = fromSource(R"(
kernel h(n: int, bin: i32[n], out counts: i32[n]) {
  for i in 0..n { counts[i] = 0; }
  for i in 0..n { counts[bin[i]] += 1; }
})",
                              "h", {{"n", 100}});
  const std::vector<std::string> reasons = fusionConflicts(k, 0, 2);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("nest 1 accumulates into counts"), std::string::npos) << reasons[0];
  // The starting values from the first nest, the updates in the second: both on the host.
  EXPECT_EQ(checkOnHost(k, "i: grid.x, thread.x 64 | i: serial, grid.x 2, thread.x 64; accumulate: shared", 0.0), "");
}

TEST(Accumulate, EveryTypeAndOperatorWithGlobalAtomics) {
  // f32 and f64 sums, an i64 maximum, an i32 minimum, an affine f32 sum: one nest, five arrays.
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/tests/frontend/good/accumulate.rtcg");
  std::stringstream ss;
  ss << in.rdbuf();
  const Kernel k = fromSource(ss.str(), "scatter", {{"n", 1003}, {"m", 37}});
  EXPECT_EQ(checkOnHost(k, "j: grid.x, thread.x 32 | r: thread.x | i: grid.x, thread.x 80", kFloatSum), "");
}
