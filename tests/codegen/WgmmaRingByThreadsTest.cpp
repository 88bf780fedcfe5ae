// A producer ring whose A no TMA box copies (schedule/Mma.h, MmaPlan::aByThreads): the DG rows at
// N = 8 (Np = 165: u's rows 660 bytes apart, 4-byte aligned only) under `tma producer persistent
// resident a`. The plan (no tensor map of A; tf32 the threads' cp.async, the stage's `full`
// counting the producer's 128 threads; tf32x3 their plain loads, MmaPlan::aByLoads, `ready`
// counting the 128, 16 or 8 rows in flight as the producer's registers allow; the refusals
// without `resident` or without `producer`), the emitted kernel, NVRTC's sm_90a compile without
// local memory, and the host emulation at sizes no tile divides (K not a multiple of the element
// tile, Np not a multiple of the step): a stage split before its copies landed, a copy into a
// stage the consumers still read, or a lost arrival give wrong values or hang.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/Plan.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

Kernel dgStacked(int64_t elements, int64_t np) {
  return exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", elements}, {"Np", np}});
}
Kernel dgThree(int64_t elements, int64_t np) {
  return exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", elements}, {"Np", np}});
}

// A's rows kk + 1 values apart (no TMA box), B's kk (16-byte multiples where kk is a multiple of
// 4: B kept by TMA's boxes while the threads copy A).
const char* kPadA = R"(
kernel rect32_apad(m: int, n: int, kk: int, a: f32[m, kk + 1], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[j, k]) + 0.5;
  }
}
)";

const std::string kRing = " swizzle 128 tma producer persistent";

}  // namespace

TEST(WgmmaRingByThreads, PlanCopiesAByThreadsWhereNoBoxDoes) {
  const Kernel k = dgThree(101556, 165);
  const std::string text = "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" + kRing + " pingpong resident a";
  std::vector<std::string> reasons;
  auto p = plan(k, text, kH200, reasons);
  ASSERT_TRUE(p) << joined(reasons);
  EXPECT_TRUE(p->aByThreads());
  EXPECT_TRUE(p->residentByThreads());
  EXPECT_LT(p->a.tma.array, 0);
  EXPECT_TRUE(p->ring.fenceAsyncProxy);
  // tf32x3: the plain loads. The consumers' m64n128 with partial sums fill the launch's 168
  // registers, and under pingpong the three statements' single stores (rows of 165 values) take
  // about 24 more: setmaxnreg, the producer keeping 88 for three steps' loads of 16 rows (the
  // tile's 6 steps group by three; with setmaxnreg's 40, 8 rows: 0.493 against 0.357 ms on an
  // H200), the consumers 208.
  EXPECT_TRUE(p->aByLoads());
  EXPECT_EQ(p->producerRegisters, 88);
  EXPECT_EQ(p->consumerRegisters, 208);
  EXPECT_EQ(p->aRowsInFlight, 16);
  EXPECT_TRUE(p->singleArrays);
  const SchedulePlan sp = planSchedule(k, *parseSchedule(text).schedule, kH200);
  ASSERT_TRUE(sp.ok());
  const std::string words = printPlan(k, sp.nests[0]);
  EXPECT_NE(words.find("A by the producer's 128 threads by plain loads"), std::string::npos) << words;
  EXPECT_NE(words.find("16 rows in flight"), std::string::npos) << words;
  // A warp's 16 loads are all of a step's, and the tile's 6 steps group by three: three steps'
  // loads in flight, each loaded before its stage is free.
  EXPECT_EQ(p->aLoadsAhead, 3);
  EXPECT_NE(words.find("each step's loaded as soon as the one three before is stored (three steps in flight)"),
            std::string::npos) << words;
  EXPECT_NE(words.find("copies A up to 2 steps ahead"), std::string::npos) << words;
  EXPECT_NE(words.find("setmaxnreg: producer 88, consumers 208 registers (with the odd-length rows' output arrays picked once a "
                       "chunk)"),
            std::string::npos) << words;
  // 165 values in 6 steps of 32: the last step issues the one fragment-k of 8 the reduction
  // reaches (MmaPlan::lastStepFragments), emitted after the loop of the other 5.
  EXPECT_EQ(p->steps, 6);
  EXPECT_EQ(p->lastStepFragments, 1);
  EXPECT_EQ(p->issuedK(), 168);
  EXPECT_NE(words.find("(the last step 1 fragment-k of 4: the reduction ends at 165)"), std::string::npos) << words;
  const std::string source = emitCuda(k, *parseSchedule(text).schedule, kH200).source;
  EXPECT_NE(source.find(" < 5; ++step_"), std::string::npos);  // the consumers' loop of 5 steps
  EXPECT_NE(source.find(" * 6 + 5;"), std::string::npos);       // then its last, ring step round * 6 + 5
  EXPECT_NE(words.find("2 buffers filled by plain loads"), std::string::npos) << words;
  // Where the consumers need more than the launch's (m64n168: 208), setmaxnreg moves registers: the
  // producer keeps 72 (two steps of 16 rows) where the consumers still fit (216). The single
  // stores' 24 more (rows of 45 values) would leave the producer 40, 8 rows in flight, so they
  // keep their branch over the statements, and their registers are not counted.
  const std::string wider = "mma: tf32x3 wgmma m64n168k8 warpgroups 2x1 k 32 stages 2" + kRing + " pingpong resident a";
  auto fits = plan(dgThree(101556, 45), wider, kH200, reasons);
  ASSERT_TRUE(fits) << joined(reasons);
  EXPECT_EQ(fits->producerRegisters, 72);
  EXPECT_EQ(fits->consumerRegisters, 216);
  EXPECT_EQ(fits->aRowsInFlight, 16);
  EXPECT_EQ(fits->aLoadsAhead, 2);
  EXPECT_FALSE(fits->singleArrays);
  EXPECT_EQ(fits->lastStepFragments, 2);  // 45 = 32 + 13
  EXPECT_EQ(emitCuda(dgThree(101556, 45), *parseSchedule(wider).schedule, kH200).source.find("chunk_array"),
            std::string::npos);
  // m64n184 (224) leaves the producer 40 registers, which hold 8 rows: a step's 16 loads in two
  // batches, none carried ahead. Before the single stores' registers were the plan's decision, they
  // were counted here too and refused this form (248 against the consumers' 232).
  const std::string widest = "mma: tf32x3 wgmma m64n184k8 warpgroups 2x1 k 32 stages 2" + kRing + " pingpong resident a";
  auto tight = plan(dgThree(101556, 45), widest, kH200, reasons);
  ASSERT_TRUE(tight) << joined(reasons);
  EXPECT_TRUE(tight->aByLoads());
  EXPECT_EQ(tight->producerRegisters, 40);
  EXPECT_EQ(tight->consumerRegisters, 232);
  EXPECT_EQ(tight->aRowsInFlight, 8);
  EXPECT_EQ(tight->aLoadsAhead, 0);
  EXPECT_FALSE(tight->singleArrays);
  const SchedulePlan tightPlan = planSchedule(dgThree(101556, 45), *parseSchedule(widest).schedule, kH200);
  ASSERT_TRUE(tightPlan.ok());
  EXPECT_NE(printPlan(dgThree(101556, 45), tightPlan.nests[0]).find("8 rows in flight"), std::string::npos);
  // The stacked form (one array D) alike: 16 rows.
  auto stacked = plan(dgStacked(101556, 165), text, kH200, reasons);
  ASSERT_TRUE(stacked) << joined(reasons);
  EXPECT_TRUE(stacked->aByThreads());
  EXPECT_TRUE(stacked->aByLoads());
  EXPECT_EQ(stacked->producerRegisters, 0);
  EXPECT_EQ(stacked->aRowsInFlight, 16);
  // tf32 (no split to fold in): the threads' cp.async stays.
  auto plain = plan(k, "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" + kRing + " pingpong resident a", kH200,
                    reasons);
  ASSERT_TRUE(plain) << joined(reasons);
  EXPECT_TRUE(plain->aByThreads());
  EXPECT_FALSE(plain->aByLoads());
  EXPECT_EQ(plain->aCopy, CopyEngine::CpAsync);
  EXPECT_EQ(plain->aRowsInFlight, 0);
  const SchedulePlan plainPlan = planSchedule(
      k, *parseSchedule("mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" + kRing + " pingpong resident a").schedule,
      kH200);
  ASSERT_TRUE(plainPlan.ok());
  EXPECT_NE(printPlan(k, plainPlan.nests[0]).find("A by the producer's 128 threads by cp.async"), std::string::npos);
  // A block tile of 128 rows and k 64: a warp's 32 rows of two loads each, 16 a batch.
  auto wide = plan(dgStacked(101556, 165), "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 64 stages 2" + kRing + " resident a",
                   kH200, reasons);
  ASSERT_TRUE(wide) << joined(reasons);
  EXPECT_TRUE(wide->aByLoads());
  EXPECT_EQ(wide->aRowsInFlight, 16);
  EXPECT_EQ(wide->aLoadsAhead, 0);
  // Where a box copies A (Np = 120: 480-byte rows), TMA does.
  auto boxed = plan(dgThree(139720, 120), text, kH200, reasons);
  ASSERT_TRUE(boxed) << joined(reasons);
  EXPECT_FALSE(boxed->aByThreads());
  EXPECT_FALSE(boxed->aByLoads());
  EXPECT_EQ(boxed->aRowsInFlight, 0);
  EXPECT_GE(boxed->a.tma.array, 0);
  // Not persistent: every step issues its 4 fragment-ks (the ring's copies share the step loop).
  auto whole = plan(k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128", kH200, reasons);
  ASSERT_TRUE(whole) << joined(reasons);
  EXPECT_EQ(whole->lastStepFragments, 4);
  EXPECT_EQ(whole->issuedK(), 192);
  // Without `resident` the stages would carry B's boxes beside A's copies: TMA's refusal stands.
  reasons.clear();
  EXPECT_FALSE(plan(k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4" + kRing, kH200, reasons));
  EXPECT_NE(joined(reasons).find("not a multiple of 16"), std::string::npos) << joined(reasons);
  reasons.clear();
  EXPECT_FALSE(plan(k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma", kH200, reasons));
  EXPECT_NE(joined(reasons).find("not a multiple of 16"), std::string::npos) << joined(reasons);
}

// The emitted kernel: tf32 (cp.async), the producer's threads copy u value by value (660-byte
// rows) and arrive on each stage's `full` (count 128); tf32x3 (plain loads), they store the values
// and their small parts and arrive on its `ready` (128), `full` unused; no tensor map at all.
// NVRTC compiles it for sm_90a without local memory (16 rows in flight where the producer keeps
// the launch's registers, 8 under setmaxnreg's 40).
TEST(WgmmaRingByThreads, EmitsThreadCopiesAndNvrtcCompiles) {
  for (const char* text : {"mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer "
                           "persistent pingpong resident a",
                           "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer "
                           "persistent pingpong resident a",
                           "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer "
                           "persistent resident a"}) {
    for (bool three : {true, false}) {
      const Kernel k = three ? dgThree(101556, 165) : dgStacked(101556, 165);
      std::vector<std::string> reasons;
      auto p = plan(k, text, kH200, reasons);
      ASSERT_TRUE(p) << text << ": " << joined(reasons);
      ASSERT_TRUE(p->aByThreads());
      EmittedModule m = emitCuda(k, *parseSchedule(text).schedule, kH200);
      const std::string fullInit = fmt::format("rtcg_mbar_init(rtcg_tma_barrier(rtcg_smem_f32, {}), 128);", p->barrierOffset);
      const std::string fullArrive =
          fmt::format("rtcg_cp_async_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, buffer * 8 + {}));", p->barrierOffset);
      const std::string readyInit = fmt::format("rtcg_mbar_init(rtcg_tma_barrier(rtcg_smem_f32, {}), 128);",
                                                p->barrierOffset + 16 * p->ring.stages);
      if (p->splitBuffers) {
        // tf32x3: the plain loads, every producer thread arriving on `ready` (128); `full` unused.
        ASSERT_TRUE(p->aByLoads()) << text;
        EXPECT_EQ(m.source.find(fullInit), std::string::npos) << text;
        EXPECT_EQ(m.source.find(fullArrive), std::string::npos) << text;
        EXPECT_NE(m.source.find(readyInit), std::string::npos) << text;
        // A step's loads in registers (`ahead`: carried from the step before), then stored.
        const std::string reg = p->aLoadsAhead > 0 ? "ahead" : "loaded";
        const int64_t registers = p->aRowsInFlight * std::max<int64_t>(1, p->aLoadsAhead);
        EXPECT_NE(m.source.find("] = rtcg_tf32_small(" + reg), std::string::npos) << text;
        EXPECT_NE(m.source.find(fmt::format("{}_{} = ", reg, registers)), std::string::npos) << text;
        EXPECT_EQ(m.source.find(fmt::format("{}_{} = ", reg, registers + 1)), std::string::npos) << text;
      } else {
        EXPECT_FALSE(p->aByLoads()) << text;
        EXPECT_NE(m.source.find(fullInit), std::string::npos) << m.source;
        EXPECT_NE(m.source.find(fullArrive), std::string::npos) << m.source;
        EXPECT_EQ(m.source.find("rtcg_tf32_small("), std::string::npos) << text;
      }
      // dg_diff's single stores pick each chunk's array once; under pingpong only where setmaxnreg
      // gives the consumers the registers and the producer two steps' loads (EmitMma.cpp singleArrays),
      // and there, with up to 4 N tiles, the epilogue per N origin stores each statement's columns of
      // the tile as a run, without chunk arrays (EmitMmaOddRows.cpp).
      if (three && p->alternatingTiles && p->singleArrays && p->nTiles() <= 4) {
        EXPECT_EQ(m.source.find("chunk_array"), std::string::npos) << text;
        EXPECT_NE(m.source.find("row_first"), std::string::npos) << text;
      } else if (three) {
        EXPECT_EQ(m.source.find("chunk_array") != std::string::npos,
                  !p->alternatingTiles || p->singleArrays) << text;
      }
      if (p->singleArrays) EXPECT_TRUE(p->consumerRegisters > 0 && p->aLoadsAhead >= 2) << text;
      EXPECT_EQ(m.source.find("rtcg_tma_load_2d(&"), std::string::npos);
      EXPECT_EQ(m.source.find("rtcg_mbar_expect_tx(rtcg_tma_barrier"), std::string::npos);
      ASSERT_EQ(m.launches.size(), 1u);
      EXPECT_TRUE(m.launches[0].tensorMaps.empty());
      CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
      ASSERT_TRUE(r.success) << text << "\n" << r.log;
      ASSERT_EQ(r.resources.size(), 1u) << r.log;
      EXPECT_EQ(r.resources[0].localBytes, 0) << text << "\n" << r.log;
    }
  }
}

// In the host emulation, against the float64 reference: dg_diff (three arrays) and its stacked
// form at K = 301 (no element tile of 64 divides it) and Np = 165 (N = 8: five steps of 32 and 5
// values), 45 (one step and 13) and 21 (one partial step); tf32x3 (the plain loads, MmaPlan::
// aByLoads: 8 and 16 rows in flight, loads carried 0 to 3 steps ahead, 2 to 4 stages, a tile of
// 128 rows and k 64, two consumers sharing a tile's rows), tf32 (the
// threads' cp.async, no split), pingpong, one consumer; and A by threads beside B by TMA.
TEST(HostEmulation, WgmmaRingByThreadsMatchesTheReference) {
  struct Case {
    int64_t np;
    const char* schedule;
    double tolerance;
    int64_t multiprocessors;
  };
  const Case cases[] = {
      {165, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2 pingpong", 2e-5, 4},
      {165, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 4", 2e-5, 8},
      {165, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 pingpong", 2e-5, 8},
      {165, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2", 2e-5, 4},
      {45, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 pingpong", 2e-5, 3},
      {45, "mma: tf32x3 wgmma m64n168k8 warpgroups 2x1 k 32 stages 2 pingpong", 2e-5, 2},
      {45, "mma: tf32x3 wgmma m64n184k8 warpgroups 2x1 k 32 stages 2 pingpong", 2e-5, 2},
      {45, "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2", 2e-3, 2},
      {45, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 64 stages 2", 2e-5, 3},
      {21, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-5, 2},
  };
  std::set<int64_t> rowsInFlight;
  std::set<int64_t> loadsAhead;
  for (const Case& c : cases) {
    const std::string text = beforePingpong(c.schedule, kRing, " resident a");
    for (bool three : {true, false}) {
      const Kernel k = three ? dgThree(301, c.np) : dgStacked(301, c.np);
      std::vector<std::string> reasons;
      auto p = plan(k, text, limitsOf(c.multiprocessors), reasons);
      ASSERT_TRUE(p) << text << ": " << joined(reasons);
      EXPECT_TRUE(p->aByThreads()) << text;
      EXPECT_EQ(p->aByLoads(), p->arith == MmaArith::Tf32x3) << text;
      rowsInFlight.insert(p->aRowsInFlight);
      loadsAhead.insert(p->aLoadsAhead);
      EXPECT_EQ(checkOnHost(k, text, c.tolerance, limitsOf(c.multiprocessors)), "")
          << k.name << " Np " << c.np << " " << text;
    }
  }
  EXPECT_EQ(rowsInFlight, (std::set<int64_t>{0, 8, 16}));
  EXPECT_EQ(loadsAhead, (std::set<int64_t>{0, 1, 2, 3}));
  // B kept by TMA's boxes (rows of 56 values), A by the threads (rows of 57): m = 136, n = 203.
  const Kernel pad = fromSource(kPadA, "rect32_apad", {{"m", 136}, {"n", 203}, {"kk", 56}});
  for (const char* schedule : {"mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2",
                               "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 pingpong"}) {
    const std::string text = beforePingpong(schedule, kRing, " resident b");
    std::vector<std::string> reasons;
    auto p = plan(pad, text, limitsOf(2), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_TRUE(p->aByThreads()) << text;
    EXPECT_FALSE(p->residentByThreads()) << text;
    EXPECT_EQ(checkOnHost(pad, text, text.find("tf32x3") != std::string::npos ? 2e-5 : 2e-3, limitsOf(2)), "") << text;
  }
}
