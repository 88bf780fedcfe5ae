// wgmma's fragment epilogue on output rows of an odd number of floats (dg_diff_stacked at N = 8:
// 495 values a row), where each row pairs its columns from its own alignment (EmitMma.cpp,
// oddPairStores): the emitted code takes that path, and every point lands once, in the host
// emulation, at sizes no tile divides, for rows starting 8-byte aligned and 4 bytes past,
// streaming or not, with one warpgroup's N range or several.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/Schedule.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel rect32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel shifted(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m + 1, n + 2]) {
  for i in 0..m, j in 0..n {
    c[i + 1, j + 1] = sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel rect16(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel scaled(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
)";

Kernel rect(const char* name, int64_t m, int64_t n, int64_t kk) {
  return fromSource(kKernels, name, {{"m", m}, {"n", n}, {"kk", kk}});
}

std::string emitted(const Kernel& k, const std::string& schedule, const ScheduleLimits& limits) {
  auto parsed = parseSchedule(schedule);
  EXPECT_TRUE(parsed.schedule) << schedule << ": " << parsed.error;
  return emitCuda(k, *parsed.schedule, limits).source;
}

bool pairsOddRows(const std::string& cuda) {
  return cuda.find("__shfl_sync") != std::string::npos && cuda.find("make_float2") != std::string::npos &&
         cuda.find("& 4)") != std::string::npos;
}

}  // namespace

TEST(WgmmaOddRows, PairsRowsOfAnOddNumberOfFloatsOnly) {
  const std::string s = "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3";
  EXPECT_TRUE(pairsOddRows(emitted(rect("rect32", 200, 135, 40), s, kH200)));
  // Even rows pair as the accumulators hold them; a statement with more than its sum keeps single stores.
  EXPECT_FALSE(pairsOddRows(emitted(rect("rect32", 200, 136, 40), s, kH200)));
  EXPECT_FALSE(pairsOddRows(emitted(rect("scaled", 200, 135, 40), s, kH200)));
  const Kernel n8 = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 131}, {"Np", 165}});
  EXPECT_TRUE(pairsOddRows(emitted(n8,
                                   "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 "
                                   "swizzle 128 tma producer persistent pingpong resident a",
                                   limitsOf(4))));
}

TEST(HostEmulation, WgmmaOddRowsMatchTheReference) {
  struct Case {
    const char* kernel;
    int64_t m, n, kk;
    const char* schedule;
    double tolerance;
  };
  const Case cases[] = {
      {"rect32", 200, 135, 40, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5},
      {"rect32", 130, 71, 20, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2", 2e-5},
      {"rect32", 77, 9, 36, "mma: tf32 wgmma m64n32k8 warpgroups 1x1 k 32 stages 2", 2e-3},
      {"rect32", 200, 201, 100, "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2", 2e-5},
      {"rect16", 200, 135, 64, "mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 3", 1e-5},
      {"rect16", 130, 1003 % 256, 40, "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3", 1e-5},
      {"shifted", 150, 99, 40, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-5},
      {"shifted", 150, 98, 40, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 3", 2e-5},
      {"rect32", 200, 135, 56,
       "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong", 2e-5},
      {"rect32", 331, 99, 32, "stores: streaming; mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma "
       "producer persistent pingpong", 2e-3},
  };
  for (const Case& c : cases) {
    const Kernel k = rect(c.kernel, c.m, c.n, c.kk);
    EXPECT_TRUE(pairsOddRows(emitted(k, c.schedule, limitsOf(3)))) << c.kernel << " " << c.schedule;
    EXPECT_EQ(checkOnHost(k, c.schedule, c.tolerance, limitsOf(3)), "")
        << c.kernel << " " << c.m << "x" << c.n << "x" << c.kk << " " << c.schedule;
  }
  // dg_diff_stacked at N = 8 (Np = 165: 495 outputs a row, 6 steps of k 32, the last 1 fragment-k)
  // and an odd Np below one step's reduction (Np = 21: 63 a row), in the N = 8 rows' forms.
  for (int64_t np : {165, 21})
    for (const char* schedule :
         {"stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer "
          "persistent pingpong resident a",
          "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a"}) {
      const Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", np == 165 ? 131 : 515}, {"Np", np}});
      EXPECT_TRUE(pairsOddRows(emitted(k, schedule, limitsOf(4)))) << np << " " << schedule;
      EXPECT_EQ(checkOnHost(k, schedule, 2e-5, limitsOf(4)), "") << "Np " << np << " " << schedule;
    }
  // dg_diff's three statements of rows of an odd number of values (ur, us, ut): a chunk's columns
  // cross from one array into the next (Np no multiple of 8), where no pair may span two arrays.
  for (int64_t np : {165, 21, 35})
    for (const char* schedule :
         {"stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer "
          "persistent pingpong resident a",
          "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a",
          "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 3"}) {
      const Kernel k = exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", np == 165 ? 131 : 515}, {"Np", np}});
      // Without `resident a` the product is not transposed: the statements' rows lie along M,
      // whose points the fragments hold one a lane, and the stores stay single. Under pingpong the
      // chunks' arrays need the registers the plan counts for them (MmaPlan::singleArrays), as at
      // N = 8 (setmaxnreg 88 / 208).
      std::vector<std::string> reasons;
      auto planned = plan(k, schedule, limitsOf(4), reasons);
      ASSERT_TRUE(planned) << joined(reasons);
      const bool transposed = std::string(schedule).find("resident a") != std::string::npos;
      const bool paired = transposed && (!planned->alternatingTiles || planned->singleArrays);
      if (np == 165 && transposed) EXPECT_TRUE(paired) << schedule;
      EXPECT_EQ(pairsOddRows(emitted(k, schedule, limitsOf(4))), paired) << np << " " << schedule;
      EXPECT_EQ(checkOnHost(k, schedule, 2e-5, limitsOf(4)), "") << "dg_diff Np " << np << " " << schedule;
    }
}

// Under pingpong, dg_diff's three statements of odd rows take the epilogue once per N origin of the
// tile, the origin a literal in each copy (EmitMma.cpp, epiloguePerOrigin): 2, 3 and 4 origins
// (Np = 45, 99, 165: rows of 135, 297 and 495 outputs, tiles of 128), every copy run in the host
// emulation (K rows that no tile divides, four blocks, so each origin's tiles run; each statement's
// columns of a tile are a run, and the statements end inside chunks at 45, 90, 99, 165, 198, 330, so
// that a chunk belongs to two runs, the second from an odd or an even column); rows of an even
// number of values (Np = 56, column pairs) and the one statement of dg_diff_stacked keep one
// epilogue.
TEST(HostEmulation, WgmmaPingpongEpilogueOncePerNOriginMatchesTheReference) {
  const std::string schedule =
      "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer "
      "persistent pingpong resident a";
  const std::regex test(R"(if \(block_n(_\d+)? == (\d+)\))");
  for (int64_t np : {45, 99, 165}) {
    const Kernel k = exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", 331}, {"Np", np}});
    const std::string cuda = emitted(k, schedule, limitsOf(4));
    std::set<int64_t> tested;
    for (auto it = std::sregex_iterator(cuda.begin(), cuda.end(), test); it != std::sregex_iterator(); ++it)
      tested.insert(std::stoll((*it)[2].str()));
    std::set<int64_t> expected;  // every origin but the last, which is the chain's else
    for (int64_t n0 = 0; n0 + 128 < 3 * np; n0 += 128) expected.insert(n0);
    EXPECT_EQ(tested, expected) << "Np " << np;
    EXPECT_EQ(checkOnHost(k, schedule, 2e-5, limitsOf(4)), "") << "dg_diff Np " << np;
  }
  const Kernel even = exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", 331}, {"Np", 56}});
  EXPECT_FALSE(std::regex_search(emitted(even, schedule, limitsOf(4)), test));
  const Kernel stacked = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 331}, {"Np", 165}});
  EXPECT_FALSE(std::regex_search(emitted(stacked, schedule, limitsOf(4)), test));
}

// Under pingpong with the producer's threads loading A, one statement's odd rows pause between the
// epilogue's chunks (rtcg_epilogue_yield: EmitMmaOddRows.cpp), once before each chunk but the first,
// and so do dg_diff's stacked statements in each copy of the epilogue per N origin, before each
// chunk but the first that holds a column inside N; one consumer (no pingpong) does not, and the
// prelude comes only with the pauses.
TEST(WgmmaOddRows, PingpongPausesBetweenOneStatementsChunks) {
  const std::string ring = " swizzle 128 tma producer persistent";
  const std::string pingpong = "stores: streaming; mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" + ring +
                               " pingpong resident a";
  const std::string alone = "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2" + ring + " resident a";
  auto pauses = [](const std::string& cuda) {
    size_t n = 0;
    for (size_t at = cuda.find("rtcg_epilogue_yield();"); at != std::string::npos;
         at = cuda.find("rtcg_epilogue_yield();", at + 1))
      ++n;
    return n;
  };
  const Kernel stacked = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 331}, {"Np", 165}});
  const std::string cuda = emitted(stacked, pingpong, limitsOf(4));
  EXPECT_EQ(pauses(cuda), 15u);  // 16 chunks of 8 columns
  EXPECT_NE(cuda.find("__nanosleep(32)"), std::string::npos);
  const std::string one = emitted(stacked, alone, limitsOf(4));
  EXPECT_EQ(pauses(one), 0u);
  EXPECT_EQ(one.find("rtcg_epilogue_yield"), std::string::npos);
  const Kernel three = exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", 331}, {"Np", 165}});
  // Origins 0, 128 and 256: 16 chunks each; 384: 14 of its 16 hold columns below 495.
  EXPECT_EQ(pauses(emitted(three, pingpong, limitsOf(4))), 15u + 15u + 15u + 13u);
}
