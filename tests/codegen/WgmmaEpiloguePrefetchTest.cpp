// The producer's prefetch of the epilogue's reads into L2 (schedule/Mma.h, MmaPlan::epiloguePrefetch):
// which loads the plan takes (beside the sum, affine, dense over a tile, not under a select, under
// a producer only), the prefetches the producer's issuing thread emits per tile, and the host
// emulation at sizes no tile divides, where each prefetched range must lie within its array
// (cuda_host_emulation.h aborts otherwise).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel bias(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], d: f32[m, n], e: f32[n], inout c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 0.5 * c[i, j] + d[i, j] + e[j] + sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel chosen(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], d: f32[m, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = select(j < 3, d[i, j], 1.0) + sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
)";

Kernel kernel(const char* name, int64_t m, int64_t n, int64_t kk) {
  return fromSource(kKernels, name, {{"m", m}, {"n", n}, {"kk", kk}});
}

Kernel lift(int64_t elements, int64_t np, int64_t nfp) {
  return exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", elements}, {"Np", np}, {"Nfp", nfp}});
}

const std::string kProducer = " swizzle 128 tma producer";
const std::string kLift = "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3";

// The names of the arrays a plan prefetches, in the statement's order.
std::vector<std::string> prefetched(const Kernel& k, const MmaPlan& p) {
  std::vector<std::string> names;
  for (const Expr& load : p.epiloguePrefetch) names.push_back(k.params[size_t(load->array)].name);
  return names;
}

}  // namespace

// DG lifting's rhs[k, i] and invJ[k] under every producer form; none without a producer. A bias
// read along N alone (e[j]) is dense at any N; an output-shaped one (d[i, j]) only where a tile's
// rows are one run (its N tile spans N, or nearly); a read under a select is never taken.
TEST(WgmmaEpiloguePrefetch, PlanTakesDenseReadsBesideTheSum) {
  const std::vector<std::string> liftArrays{"rhs", "invJ"};
  for (const std::string& tail : {kProducer, kProducer + " persistent", kProducer + " persistent pingpong",
                                   kProducer + " persistent pingpong resident a"}) {
    std::vector<std::string> reasons;
    const Kernel k = lift(301, 120, 36);
    auto p = plan(k, kLift + tail, limitsOf(2), reasons);
    ASSERT_TRUE(p) << tail << ": " << joined(reasons);
    EXPECT_EQ(prefetched(k, *p), liftArrays) << tail;
  }
  for (const std::string& text : {kLift, kLift + " swizzle 128 tma", kLift + " swizzle 128 tma epilogue shared",
                                   std::string("mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3")}) {
    std::vector<std::string> reasons;
    const Kernel k = lift(301, 56, 21);
    auto p = plan(k, text, limitsOf(4), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_TRUE(p->epiloguePrefetch.empty()) << text;
  }
  const std::string bias = "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3" + kProducer;
  const struct {
    int64_t n;
    std::vector<std::string> arrays;
  } cases[] = {{40, {"c", "d", "e"}}, {120, {"c", "d", "e"}}, {1000, {"e"}}};
  for (const auto& c : cases) {
    std::vector<std::string> reasons;
    const Kernel k = kernel("bias", 200, c.n, 40);
    auto p = plan(k, bias, kH200, reasons);
    ASSERT_TRUE(p) << joined(reasons);
    EXPECT_EQ(prefetched(k, *p), c.arrays) << "n " << c.n;
  }
  std::vector<std::string> reasons;
  auto p = plan(kernel("chosen", 200, 40, 40), bias, kH200, reasons);
  ASSERT_TRUE(p) << joined(reasons);
  EXPECT_TRUE(p->epiloguePrefetch.empty());
}

// The issuing thread's prefetches: each tile's before its first box (persistent: in the tile loop),
// the prelude's helper, explain's line; nothing of it without a producer. NVRTC compiles it for
// sm_90a.
TEST(WgmmaEpiloguePrefetch, ProducerPrefetchesEachTileBeforeItsBoxes) {
  const Kernel k = lift(174263, 120, 36);
  for (const std::string& tail : {kProducer, kProducer + " persistent pingpong resident a"}) {
    const std::string text = "stores: streaming; " + kLift + tail;
    const EmittedModule m = emitCuda(k, *parseSchedule(text).schedule, kH200);
    const size_t rhs = m.source.find("rtcg_prefetch_l2_range(&rhs[");
    const size_t invJ = m.source.find("rtcg_prefetch_l2_range(&invJ[");
    ASSERT_NE(rhs, std::string::npos) << m.source;
    ASSERT_NE(invJ, std::string::npos) << m.source;
    EXPECT_EQ(m.source.find("rtcg_prefetch_l2_range(&rhs[", rhs + 1), std::string::npos) << "one per tile";
    EXPECT_LT(m.source.find("tid >= 256"), rhs) << "in the producer's branch";
    EXPECT_LT(invJ, m.source.find("rtcg_tma_load_2d(&rtcg_smem_f32[buffer")) << "before the tile's boxes";
    EXPECT_NE(m.source.find("cp.async.bulk.prefetch.L2.global"), std::string::npos);
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << text << "\n" << r.log;
    auto planned = planSchedule(k, *parseSchedule(text).schedule, kH200);
    ASSERT_TRUE(planned.ok()) << joined(planned.reasons);
    EXPECT_NE(printPlan(k, planned.nests[0]).find("epilogue prefetch: the producer's issuing thread prefetches the tile's 2 "
                                           "reads"),
              std::string::npos);
  }
  const EmittedModule plain = emitCuda(k, *parseSchedule(kLift + " swizzle 128 tma").schedule, kH200);
  EXPECT_EQ(plain.source.find("rtcg_prefetch_l2_range"), std::string::npos);
}

// Against the reference at sizes no tile divides: K = 301 elements (64-row tiles), Np = 20 and 56
// (N tiles of 64 and 128: partial), reductions of 4 Nfp = 68 and 84 (no multiple of the 32-value
// step); 1 to 4 multiprocessors, so that persistent blocks run several tiles; the bias kernel at N
// = 40 and 1000 (several N tiles) and with A copied by the producer's threads. Every prefetch lies within its array (the emulation checks).
TEST(HostEmulation, WgmmaEpiloguePrefetchMatchesTheReference) {
  const struct {
    int64_t np, nfp;
    const char* schedule;
    int64_t multiprocessors;
  } lifts[] = {
      {20, 17, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer", 4},
      {56, 21, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent", 1},
      {56, 21, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a", 2},
      {20, 17, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong", 1},
      {56, 17, "stores: streaming; mma: tf32x3 wgmma m64n56k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident a", 2},
      {20, 17, "mma: tf32x3 wgmma m64n24k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a", 1},
      {20, 21, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a", 1},
  };
  for (const auto& c : lifts) {
    const Kernel k = lift(301, c.np, c.nfp);
    std::vector<std::string> reasons;
    auto p = plan(k, c.schedule, limitsOf(c.multiprocessors), reasons);
    ASSERT_TRUE(p) << c.schedule << ": " << joined(reasons);
    EXPECT_EQ(p->epiloguePrefetch.size(), 2u) << c.schedule;
    const double tolerance = std::string(c.schedule).find("tf32 ") != std::string::npos ? 2e-3 : 2e-5;
    EXPECT_EQ(checkOnHost(k, c.schedule, tolerance, limitsOf(c.multiprocessors)), "")
        << c.schedule << " Np " << c.np << " Nfp " << c.nfp;
  }
  for (int64_t n : {40, 1000}) {
    const std::string text = "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong";
    EXPECT_EQ(checkOnHost(kernel("bias", 133, n, 44), text, 2e-5, limitsOf(n == 40 ? 1 : 3)), "") << "n " << n;
  }
  // Rows of 41 values (164 bytes) take no TMA box: the producer's threads copy A (MmaPlan::aByThreads),
  // by plain loads under tf32x3 (aByLoads), by cp.async under tf32; either way its thread 0
  // prefetches, once per tile.
  const Kernel byThreads = kernel("bias", 133, 40, 41);
  for (const char* arith : {"tf32x3", "tf32"}) {
    const std::string text = std::string("mma: ") + arith +
                             " wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident b";
    std::vector<std::string> reasons;
    auto p = plan(byThreads, text, limitsOf(2), reasons);
    ASSERT_TRUE(p) << joined(reasons);
    EXPECT_TRUE(p->aByThreads()) << text;
    EXPECT_EQ(p->aByLoads(), std::string(arith) == "tf32x3") << text;
    EXPECT_EQ(p->epiloguePrefetch.size(), 3u) << text;
    const EmittedModule m = emitCuda(byThreads, *parseSchedule(text).schedule, limitsOf(2));
    const size_t first = m.source.find("rtcg_prefetch_l2_range(&c[");
    EXPECT_NE(first, std::string::npos) << text << "\n" << m.source;
    EXPECT_EQ(m.source.find("rtcg_prefetch_l2_range(&c[", first + 1), std::string::npos) << "one per tile: " << text;
    EXPECT_EQ(checkOnHost(byThreads, text, std::string(arith) == "tf32" ? 2e-3 : 2e-5, limitsOf(2)), "") << text;
  }
}
