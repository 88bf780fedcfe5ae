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
#include "reference/RandomFill.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

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
kernel shifted(n: int, x: f32[n], inout s: f32[20]) {
  for i in 0..n { s[i % 7 + 9] += x[i]; }
}
kernel maxima(n: int, bins: int, bin: i32[n], v: i32[n], inout hi: i32[bins]) {
  for i in 0..n { hi[bin[i]] max= v[i]; }
}
kernel minima(n: int, bins: int, bin: i32[n], big: i64[n], inout lo: i64[bins]) {
  for i in 0..n { lo[bin[i]] min= big[i]; }
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

// `accumulate: shared slices S` (each block keeps 1/S of the range, grid.z the slice) and `copies R`
// (warp w updates copy w % R, the merge combines them): ranges no slice count divides (37 bins in 2,
// 3, 4, 5 slices: the last slice shorter), blocks of partial warps (80 threads: 3 warps), grid-stride
// and one-point-a-thread forms, register tiles, with and without warp aggregation, every element
// type and operator the copies take.
TEST(Accumulate, SlicesAndCopies) {
  const Kernel k = kernelOf("hist", {{"n", 1003}, {"bins", 37}});
  for (const char* s : {"i: serial, grid.x 3, thread.x 80; accumulate: shared slices 2",
                        "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 4; aggregate: warp",
                        "i: serial, grid.x 3, thread.x 96; accumulate: shared copies 3",
                        "i: serial, grid.x 2, thread.x 80; accumulate: shared copies 3; aggregate: warp",
                        "i: grid.x, thread.x 64, reg 3; accumulate: shared slices 3 copies 2",
                        "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 5 copies 2; aggregate: warp",
                        "i: serial, grid.x 5, thread.x 256; accumulate: shared copies 8"})
    EXPECT_EQ(checkOnHost(k, s, 0.0), "") << s;
  EXPECT_EQ(checkOnHost(kernelOf("weighted", {{"n", 1003}, {"bins", 37}}),
                        "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 3 copies 2", kFloatSum), "");
  EXPECT_EQ(checkOnHost(kernelOf("weighted64", {{"n", 1003}, {"bins", 5}}),
                        "i: serial, grid.x 2, thread.x 64; accumulate: shared slices 2 copies 2; aggregate: warp", 1e-12), "");
  EXPECT_EQ(checkOnHost(kernelOf("maxima", {{"n", 1003}, {"bins", 37}}),
                        "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 4 copies 3", 0.0), "");
  EXPECT_EQ(checkOnHost(kernelOf("minima", {{"n", 1003}, {"bins", 37}}),
                        "i: serial, grid.x 3, thread.x 64; accumulate: shared slices 2 copies 2; aggregate: warp", 0.0), "");
  // An affine target (seven elements in three slices) and a nest of two parallel indices.
  EXPECT_EQ(checkOnHost(kernelOf("folded", {{"n", 1003}}), "i: serial, grid.x 2, thread.x 80; accumulate: shared slices 3 copies 3",
                        kFloatSum), "");
  // A range that starts past the array's first element (s[9..16)): slices and the merge are relative to it.
  EXPECT_EQ(checkOnHost(kernelOf("shifted", {{"n", 1003}}), "i: serial, grid.x 2, thread.x 80; accumulate: shared slices 3 copies 2",
                        kFloatSum), "");
  EXPECT_EQ(checkOnHost(kernelOf("shifted", {{"n", 1003}}), "i: serial, grid.x 2, thread.x 64; accumulate: shared slices 2; aggregate: warp",
                        kFloatSum), "");
  EXPECT_EQ(checkOnHost(kernelOf("assemble", {{"K", 37}, {"Np", 7}, {"N", 101}}),
                        "k: grid.x, thread.y 5; j: thread.x; accumulate: shared slices 3 copies 2; aggregate: warp", kFloatSum), "");
}

// Every sample in one bin: one slice (of 4) and one element of each copy take every update, the
// other slices merge nothing; under the warp aggregation all lanes of a warp name that element.
TEST(Accumulate, SlicesAndCopiesWithEverySampleInOneBin) {
  const Kernel k = kernelOf("hist", {{"n", 1003}, {"bins", 37}});
  HostArgs args(k);
  fillInputs(k, args, 42);
  for (int64_t i = 0; i < 1003; ++i) args.array("bin").setInt(i, 30);
  for (const char* s : {"i: serial, grid.x 3, thread.x 80; accumulate: shared slices 4",
                        "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 4 copies 3; aggregate: warp",
                        "i: serial, grid.x 3, thread.x 128; accumulate: shared copies 4"})
    EXPECT_EQ(checkOnHostWith(k, s, args, 0.0), "") << s;
}

// Copies over 40 KiB live in dynamic shared memory (the launch provides them after an opt-in): 30011
// i32 bins, one copy (120 KB), two slices of 15006 (60 KB), two copies of a slice; under the
// H200's limit of 227 KiB a block.
TEST(Accumulate, LargeCopiesInDynamicSharedMemory) {
  const ScheduleLimits h200 = deviceScheduleLimits(232448, 1024);
  const Kernel k = kernelOf("hist", {{"n", 5003}, {"bins", 30011}});
  for (const char* s : {"i: serial, grid.x 3, thread.x 256; accumulate: shared",
                        "i: serial, grid.x 3, thread.x 256; accumulate: shared slices 2",
                        "i: serial, grid.x 2, thread.x 256; accumulate: shared slices 2 copies 2; aggregate: warp"})
    EXPECT_EQ(checkOnHost(k, s, 0.0, h200), "") << s;
  const SchedulePlan p = planSchedule(k, *parseSchedule("i: serial, grid.x 3, thread.x 256; accumulate: shared slices 2").schedule, h200);
  ASSERT_TRUE(p.ok()) << p.reasons[0];
  const AccumulationPlan& a = p.nests[0].accumulation;
  EXPECT_EQ(a.slices, 2);
  EXPECT_EQ(a.sliceExtent, 15006);
  EXPECT_TRUE(a.dynamic);
  EXPECT_EQ(p.nests[0].launch.grid[2], 2);
  EXPECT_EQ(p.nests[0].launch.blocks, 6);
  EXPECT_TRUE(p.nests[0].dynamicShared);
  EXPECT_EQ(p.nests[0].dynamicSharedBytes, 60032);  // 15006 x 4, 16-byte aligned
  const std::string cuda = emitCuda(k, p).source;
  EXPECT_NE(cuda.find("extern __shared__ __align__(16) int rtcg_smem_i32[];"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("blockIdx.z"), std::string::npos) << cuda;
}

// What the plan refuses, with the reason: copies that do not fit (with the fewest slices that
// would), more copies than warps, slices beside an index on grid.z, more slices than elements.
TEST(Accumulate, PlanRefusesSlicesAndCopiesThatDoNotFit) {
  const ScheduleLimits h200 = deviceScheduleLimits(232448, 1024);
  const Kernel large = kernelOf("hist", {{"n", 1 << 20}, {"bins", 65536}});
  auto reasonsOf = [](const Kernel& k, const char* s, const ScheduleLimits& lim) {
    auto parsed = parseSchedule(s);
    EXPECT_TRUE(parsed.ok()) << s;
    return planSchedule(k, *parsed.schedule, lim).reasons;
  };
  const char* twoSlices = "i: serial, grid.x 264, thread.x 512; accumulate: shared slices 2";
  EXPECT_TRUE(reasonsOf(large, twoSlices, h200).empty());
  std::vector<std::string> r = reasonsOf(large, "i: serial, grid.x 264, thread.x 512; accumulate: shared", h200);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("262144 bytes, more than the 232448"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("'slices 2' would fit"), std::string::npos) << r[0];
  // Under the default limits (48 KiB a block) two slices do not fit; six would.
  r = reasonsOf(large, twoSlices, ScheduleLimits{});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("a slice of 32768 of the 65536 elements of 'counts'"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("131072 bytes"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("'slices 6' would fit"), std::string::npos) << r[0];
  r = reasonsOf(large, "i: serial, grid.x 264, thread.x 512; accumulate: shared slices 2 copies 4", h200);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("4 copies of a slice"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("'slices 5' would fit"), std::string::npos) << r[0];
  const Kernel small = kernelOf("hist", {{"n", 1003}, {"bins", 37}});
  r = reasonsOf(small, "i: grid.x, thread.x 64; accumulate: shared copies 4", {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("a block of 64 threads has 2 warps"), std::string::npos) << r[0];
  r = reasonsOf(small, "i: grid.z, thread.x 64; accumulate: shared slices 2", {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("runs the slices on grid.z, which 'i' already uses"), std::string::npos) << r[0];
  r = reasonsOf(kernelOf("folded", {{"n", 1003}}), "i: grid.x, thread.x 64; accumulate: shared slices 8", {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("more slices than elements"), std::string::npos) << r[0];
}

// The clause prints and parses back; bad counts and orders are errors with their column.
TEST(Accumulate, SlicesAndCopiesPrintAndParseBack) {
  for (const char* s : {"i: serial, grid.x 264, thread.x 512; accumulate: shared slices 2",
                        "i: serial, grid.x 264, thread.x 512; accumulate: shared copies 16",
                        "i: grid.x, thread.x 64; accumulate: shared slices 64 copies 2; aggregate: warp"}) {
    auto parsed = parseSchedule(s);
    ASSERT_TRUE(parsed.ok()) << s << ": " << parsed.error;
    EXPECT_EQ(printSchedule(*parsed.schedule), s);
  }
  auto global = parseSchedule("i: grid.x, thread.x 64; accumulate: global");
  ASSERT_TRUE(global.ok());
  EXPECT_EQ(printSchedule(*global.schedule), "i: grid.x, thread.x 64");
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"i: grid.x; accumulate: shared slices 1", "accumulate slices must be between 2 and 64"},
      {"i: grid.x; accumulate: shared copies 33", "accumulate copies must be between 2 and 32"},
      {"i: grid.x; accumulate: shared slices", "expected a number after 'slices'"},
      {"i: grid.x; accumulate: shared copies 2 slices 2", "takes 'slices S' then 'copies R', each at most once"},
      {"i: grid.x; accumulate: private", "unknown accumulate 'private' (expected 'shared' or 'global')"},
      {"i: grid.x; accumulate: shared; accumulate: shared slices 2", "'accumulate:' is given twice"}};
  for (const auto& [text, message] : bad) {
    auto parsed = parseSchedule(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.error.find(message), std::string::npos) << text << ": " << parsed.error;
  }
}

// The space offers `copies` where one copy of the range fits a block (256 bins), also on
// grid-stride loops of `reg 4`, and `slices` where
// it does not (65536 i32 bins under the H200's 227 KiB), and every such candidate plans.
TEST(Accumulate, SpaceOffersCopiesOrSlices) {
  auto offered = [](const Kernel& k, const char* word) {
    SpaceOptions o;
    o.limits = deviceScheduleLimits(232448, 1024);
    int n = 0;
    for (const Candidate& c : enumerateSchedules(k, o).candidates)
      if (c.text.find(word) != std::string::npos) {
        EXPECT_TRUE(planSchedule(k, c.schedule, o.limits).ok()) << c.text;
        ++n;
      }
    return n;
  };
  const Kernel small = kernelOf("hist", {{"n", 1 << 26}, {"bins", 256}});
  const Kernel large = kernelOf("hist", {{"n", 1 << 26}, {"bins", 65536}});
  EXPECT_GT(offered(small, "copies"), 0);
  // Grid-stride loops with a register tile of 4 beside the copies (the fastest 256-bin form
  // measured on an H200, session 36).
  EXPECT_GT(offered(small, "reg 4; accumulate: shared copies"), 0);
  // 2^26 points in whole steps of 256 blocks of 512 threads of 4 points (no guarded last step),
  // not 264 blocks (2 per multiprocessor; 0.0942 against 0.0873 ms on an H200).
  EXPECT_GT(offered(small, "grid.x 256, thread.x 512, reg 4; accumulate: shared copies"), 0);
  EXPECT_EQ(offered(small, "grid.x 264, thread.x 512, reg 4"), 0);
  EXPECT_EQ(offered(small, "slices"), 0);
  EXPECT_GT(offered(large, "slices 2"), 0);
  EXPECT_GT(offered(large, "slices 4"), 0);
  EXPECT_EQ(offered(large, "copies"), 0);
}
