// `mma: ... tma producer persistent resident` (schedule/Mma.h, MmaPlan::residentB): the clause's
// text, the plan's grid of whole N tiles and its refusals, the emitted copy of B's tiles once per
// block in the host emulation (the roles as threads, B's own mbarriers, each block's tiles sharing
// its N tile: a block given tiles of two N tiles, a step reading the ring's buffer of B instead of
// its own, or B's small parts split from the wrong place give wrong values or hang), NVRTC's
// sm_90a compile, the space and the model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>

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
kernel rect(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[j, k]));
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
kernel rect32_tn(m: int, n: int, kk: int, a: f32[kk, m], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[k, i] * b[j, k]);
  }
}
kernel rect_i8(m: int, n: int, kk: int, a: i8[m, kk], b: i8[n, kk], out c: i32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, i32(a[i, k]) * i32(b[j, k])) + i - 3 * j;
  }
}
kernel rect32_pad(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk + 1], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel rect_pad(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[n, kk + 1], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[j, k]));
  }
}
kernel batched(nb: int, n: int, a: f32[nb, n, n], b: f32[nb, n, n], out c: f32[nb, n, n]) {
  for z in 0..nb, i in 0..n, j in 0..n {
    c[z, i, j] = sum(k in 0..n, a[z, i, k] * b[z, j, k]);
  }
}
)";

Kernel rect(const char* name, int64_t m, int64_t n, int64_t kk) {
  return fromSource(kKernels, name, {{"m", m}, {"n", n}, {"kk", kk}});
}

Kernel dgDiff(int64_t elements, int64_t np) {
  return exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", elements}, {"Np", np}});
}

// The three-statement differentiation (dg_diff.rtcg): D's rows are Dr's, Ds's and Dt's.
Kernel dgDiffThree(int64_t elements, int64_t np) {
  return exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", elements}, {"Np", np}});
}

const std::string kPersistent = " swizzle 128 tma producer persistent";

}  // namespace

TEST(WgmmaResident, ClausePrintsAndParsesBack) {
  for (const char* text :
       {"mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a",
        "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent pingpong resident b",
        // Refused by the plan, not the parser: printed back as written.
        "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer resident a",
        "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 persistent resident b"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_NE(parsed.schedule->nests[0].mma.resident, MmaOperand::None) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
  auto plain = parseSchedule("mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer persistent");
  ASSERT_TRUE(plain.schedule);
  EXPECT_EQ(plain.schedule->nests[0].mma.resident, MmaOperand::None);
  // The operand is named.
  for (const char* bad : {"mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident",
                          "mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident c"}) {
    auto parsed = parseSchedule(bad);
    EXPECT_FALSE(parsed.schedule) << bad;
    EXPECT_NE(parsed.error.find("'a' or 'b'"), std::string::npos) << parsed.error;
  }
}

// The plan: the kept operand on wgmma's B side (transposed where it is the product's first), its
// buffers one a step (and its small ones), the ring's other operand alone, a grid of whole N
// tiles, two mbarriers more; in words; the refusals with their reasons.
TEST(WgmmaResident, PlanKeepsAnOperandsStepsAndAGridOfWholeNTiles) {
  std::vector<std::string> reasons;
  // Np = 120: 4 steps of k 32, D's 360 rows in two N tiles of 192.
  const Kernel k = dgDiff(139720, 120);
  const std::string base = "mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2" + kPersistent;
  auto p = plan(k, base + " resident a", kH200, reasons);
  auto twin = plan(k, base, kH200, reasons);
  ASSERT_TRUE(p && twin) << joined(reasons);
  EXPECT_TRUE(p->residentB);
  EXPECT_TRUE(p->transposed);
  EXPECT_FALSE(twin->residentB);
  EXPECT_FALSE(twin->transposed);
  EXPECT_EQ(p->c.nExtent, 360);
  EXPECT_EQ(p->steps, 4);
  EXPECT_EQ(p->nTiles(), 2);
  EXPECT_EQ(p->bBuffers(), 4);
  EXPECT_EQ(p->bSmallBuffers(), 4);
  EXPECT_EQ(twin->bBuffers(), 2);
  EXPECT_EQ(p->persistentBlocks % 2, 0);
  // The kept tiles' 4 steps (big and small) instead of the ring's 2, and two mbarriers.
  EXPECT_EQ(p->tileBytes - twin->tileBytes, 2 * 2 * p->b.buffer * 4);
  EXPECT_EQ(p->sharedBytes - twin->sharedBytes, 2 * 2 * p->b.buffer * 4 + 16);
  NestPlanResult r = planNest(k, 0, parseSchedule(base + " resident a").schedule->nests[0], kH200);
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("resident: B's tiles of all 4 steps (98304 bytes, and as many for their small parts) stay in "
                      "shared memory"),
            std::string::npos) << text;
  EXPECT_NE(text.find("an mbarrier per stage (expect_tx 8192 bytes"), std::string::npos) << text;

  struct Refused {
    Kernel k;
    std::string text;
    ScheduleLimits limits;
    const char* reason;
  };
  const std::string x3 = "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2" + kPersistent;
  const Refused refused[] = {
      {k, "mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer resident a", kH200,
       "'resident' keeps an operand's tiles for a persistent block's output tiles: it needs 'wgmma ... swizzle 128 "
       "tma producer persistent' before it"},
      {fromSource(kKernels, "batched", {{"nb", 300}, {"n", 64}}), x3 + " resident b", kH200,
       "a batched contraction's operands change with the batch"},
      // u kept: 2184 N tiles of 64 elements, more than the blocks.
      {k, x3 + " resident b", kH200, "'resident' gives each block one of the kept operand's 2184 tiles of 64 rows"},
      // TF32 reads wgmma's B K-major only.
      {rect("rect32", 200, 136, 64), x3 + " resident b", kH200, "it is stored along N (keep 'a', or none)"},
      {rect("rect32_tn", 200, 136, 64), x3 + " resident a", kH200, "it is stored along M (keep 'b', or none)"},
      // The kept 8 steps of 128 rows, big and small: 256 KiB.
      {rect("rect32_nt", 4096, 4096, 256),
       "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2" + kPersistent + " resident b", kH200,
       "more than 232448"},
  };
  for (const Refused& c : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(c.k, c.text, c.limits, reasons)) << c.text;
    ASSERT_FALSE(reasons.empty()) << c.text;
    EXPECT_NE(reasons[0].find(c.reason), std::string::npos) << joined(reasons);
  }
}

// B's tiles copied once per block in the host emulation: 1, 3 or 4 multiprocessors (blocks run
// several tiles; grids rounded to whole N tiles), one to four N tiles, sizes no tile divides,
// reductions of 20 to 200 values (a partial step to seven steps), every arithmetic the producer
// takes: tf32x3 (A from registers, or both tiles split), tf32, bf16 and s8; with pingpong too.
TEST(HostEmulation, WgmmaResidentMatchesTheReference) {
  struct Case {
    const char* kernel;
    int64_t m, n, kk;
    const char* schedule;
    double tolerance;
    int64_t multiprocessors;
    const char* kept;
  };
  const Case cases[] = {
      {"rect32_nt", 200, 136, 20, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-5, 2, "b"},
      {"rect32_nt", 200, 136, 100, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3", 2e-5, 4, "a"},
      {"rect32_nt", 264, 200, 56, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2", 2e-5, 4, "b"},
      {"rect32_nt", 200, 136, 200, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 pingpong", 2e-5, 4, "a"},
      {"rect32", 200, 136, 56, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3", 2e-5, 4, "a"},
      {"rect32", 200, 136, 100, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 pingpong", 2e-5, 5, "a"},
      {"rect32_nt", 200, 136, 32, "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-3, 3, "b"},
      {"rect32", 264, 200, 100, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 pingpong", 2e-3, 5, "a"},
      {"rect", 200, 136, 56, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3", 1e-5, 3, "b"},
      {"rect", 264, 200, 200, "mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 2 pingpong", 1e-5, 4, "a"},
      {"rect_i8", 200, 100, 112, "mma: s8 wgmma m64n32k32 warpgroups 1x1 k 128 stages 3", 0, 3, "b"},
      {"rect_i8", 200, 100, 208, "mma: s8 wgmma m64n32k32 warpgroups 2x1 k 128 stages 2 pingpong", 0, 4, "a"},
  };
  int rounded = 0;  // cases whose grid was cut to a multiple of the N tiles
  for (const Case& c : cases) {
    const std::string kept = std::string(" resident ") + c.kept;
    const std::string text = beforePingpong(c.schedule, kPersistent, kept);
    const Kernel k = rect(c.kernel, c.m, c.n, c.kk);
    const ScheduleLimits limits = limitsOf(c.multiprocessors);
    std::vector<std::string> reasons;
    auto p = plan(k, text, limits, reasons);
    EXPECT_TRUE(p) << text << " on " << c.multiprocessors << ": " << joined(reasons);
    if (!p) continue;
    EXPECT_TRUE(p->residentB) << text;
    EXPECT_EQ(p->persistentBlocks % p->nTiles(), 0) << text;
    std::string plain = text.substr(0, text.size() - kept.size());
    // Its twin's grid, unrounded (or refused: pingpong's tile per consumer needs the smaller grid).
    auto twin = plan(k, plain, limits, reasons);
    rounded += !twin || twin->persistentBlocks != p->persistentBlocks;
    EXPECT_EQ(checkOnHost(k, text, c.tolerance, limits), "")
        << c.kernel << " " << c.m << "x" << c.n << "x" << c.kk << " " << text << " on " << c.multiprocessors;
  }
  EXPECT_GE(rounded, 2);
}

// The DG differentiation (dg_diff_stacked, issue 36) as measured on the GPU: D (B, 3 Np rows) kept,
// u's tiles (A) on the ring; Np = 56 (two steps, one N tile) and 120 (four steps, two N tiles).
TEST(HostEmulation, WgmmaResidentDgDiffMatchesTheReference) {
  for (int64_t np : {56, 120})
    for (const char* schedule :
         {"mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a",
          "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a",
          "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma producer persistent resident a"}) {
      const Kernel k = dgDiff(301, np);
      std::vector<std::string> reasons;
      auto p = plan(k, schedule, limitsOf(2), reasons);
      ASSERT_TRUE(p) << schedule << ": " << joined(reasons);
      EXPECT_TRUE(p->residentB);
      const double tolerance = std::string(schedule).find("tf32x3") != std::string::npos ? 2e-5 : 2e-3;
      EXPECT_EQ(checkOnHost(k, schedule, tolerance, limitsOf(2)), "") << "Np " << np << " " << schedule;
    }
}

// The emitted kernel: B's copy on its own mbarrier at the block's N tile, its one split, the
// consumers' one wait; NVRTC compiles it for sm_90a without local memory.
TEST(WgmmaResident, EmitsBsCopyOnceThatNvrtcCompiles) {
  for (int64_t np : {56, 84, 120}) {
    const Kernel k = dgDiff(299551, np);
    const std::string schedule =
        "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a";
    std::vector<std::string> reasons;
    auto p = plan(k, schedule, kH200, reasons);
    ASSERT_TRUE(p) << joined(reasons);
    EmittedModule m = emitCuda(k, *parseSchedule(schedule).schedule, kH200);
    EXPECT_NE(m.source.find(fmt::format("rtcg_mbar_expect_tx(rtcg_tma_barrier(rtcg_smem_f32, {}), {});",
                                        p->barrierOffset + 8 * (3 * 2 + 2), p->steps * p->b.buffer * 4)),
              std::string::npos) << m.source;
    EXPECT_NE(m.source.find(fmt::format("(int)blockIdx.x % {} * 192", p->nTiles())), std::string::npos) << m.source;
    EXPECT_NE(m.source.find(fmt::format("rtcg_mbar_wait(rtcg_tma_barrier(rtcg_smem_f32, {}), 0);",
                                        p->barrierOffset + 8 * (3 * 2 + 2 + 1))),
              std::string::npos) << m.source;
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << "Np " << np << "\n" << r.log;
  }
}

// The space offers `resident a` and `b` beside each persistent candidate of an unbatched
// contraction, and the model credits keeping D (`a`) with its split once per block: better than
// its twin for the DG rows, where D as wgmma's B is three quarters of an m64n192 tile's rows.
TEST(WgmmaResident, SpaceOffersItAndTheModelCreditsIt) {
  const Kernel k = dgDiff(299551, 56);
  const SpaceOptions o = spaceOptionsFor("sm_90", Precision::Tf32x3);
  const Space space = enumerateSchedules(k, o);
  std::map<std::string, double> scores;
  for (const Candidate& c : space.candidates) scores[c.text] = c.score;
  size_t resident = 0, twins = 0;
  for (const auto& [text, score] : scores) {
    const size_t at = text.find(" resident a");
    if (at == std::string::npos) continue;
    ++resident;
    EXPECT_NE(text.find(" persistent"), std::string::npos) << text;
    const std::string twin = text.substr(0, at) + text.substr(at + std::string(" resident a").size());
    if (!scores.count(twin)) continue;
    ++twins;
    EXPECT_LT(score, scores.at(twin)) << text;
  }
  EXPECT_GT(resident, 0u);
  EXPECT_GT(twins, 0u);
  // The model's first wgmma candidate keeps D.
  const Candidate* best = nullptr;
  for (const Candidate& c : space.candidates)
    if (c.text.find("wgmma") != std::string::npos && (!best || c.score < best->score)) best = &c;
  ASSERT_TRUE(best);
  EXPECT_NE(best->text.find(" resident a"), std::string::npos) << best->text;
}

// The kept operand's rows in any number of N tiles: the stacked DG differentiation at N = 7 keeps
// D's 360 rows in three m64n128 tiles (an H200 ran that 0.130 ms against 0.161 for the fastest form
// without `resident` the space offered: docs/bench.md, session 49), and at Np = 160 D's 480 rows
// in four (0.170 against 0.190 streamed: session 57); dg_diff's three matrices, which no box
// copies (stacked statements: `resident` is their only producer form), likewise. Batched
// contractions keep none.
TEST(WgmmaResident, SpaceKeepsRowsInAnyNumberOfNTiles) {
  const SpaceOptions o = spaceOptionsFor("sm_90", Precision::Tf32x3);
  auto offered = [&](const Kernel& k, const std::string& text) {
    const Space space = enumerateSchedules(k, o);
    for (const Candidate& c : space.candidates)
      if (c.text == text) return true;
    return false;
  };
  const std::string kept = "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3" + kPersistent + " resident a";
  const std::string pingpong = "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4" + kPersistent + " pingpong resident a";
  EXPECT_TRUE(offered(dgDiff(139720, 120), kept));
  EXPECT_TRUE(offered(dgDiff(139720, 120), "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" + kPersistent +
                                               " pingpong resident a"));
  EXPECT_TRUE(offered(dgDiff(101556, 160), pingpong));  // four tiles of 128
  for (int64_t np : {160, 176})
    EXPECT_TRUE(offered(dgDiffThree(95000, np), "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 2" +
                                                    kPersistent + " pingpong resident a")) << "Np " << np;
  EXPECT_FALSE(offered(fromSource(kKernels, "batched", {{"nb", 3000}, {"n", 64}}),
                       "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2" + kPersistent + " resident a"));
}

// Those forms against the reference: dg_diff's D of 3 x 68 and 3 x 160 rows (272- and 640-byte
// rows: u by TMA boxes, D by the producer's threads) and the stacked D's (by TMA), in 2 to 8 N
// tiles (more than three where 64 wide), K = 301 (no tile divides it), reductions of 68 (no
// multiple of the step) and 160.
TEST(HostEmulation, WgmmaResidentStackedStatementsOfBoxedRowsMatchTheReference) {
  for (int64_t np : {68, 160})
    for (const std::string schedule :
         {"mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2" + kPersistent + " pingpong resident a",
          "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3" + kPersistent + " pingpong resident a",
          "stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 1x2 k 32 stages 2" + kPersistent + " resident a"}) {
      for (const Kernel& k : {dgDiffThree(301, np), dgDiff(301, np)}) {
        const int blocks = np == 68 ? 4 : 8;  // a block per kept tile of 64 rows, two tiles per block
        std::vector<std::string> reasons;
        auto p = plan(k, schedule, limitsOf(blocks), reasons);
        ASSERT_TRUE(p) << schedule << ": " << joined(reasons);
        EXPECT_TRUE(p->residentB) << schedule;
        EXPECT_EQ(checkOnHost(k, schedule, 2e-5, limitsOf(blocks)), "") << k.name << " Np " << np << " " << schedule;
      }
    }
}

// A kept B that no TMA box copies (MmaPlan::residentByThreads): the stacked statements' D of
// dg_diff (three arrays), and B's rows of kk + 1 values (read in part, and 4-byte or 16-bit
// unaligned rows). The plan keeps it for the producer's threads, with no tensor map of B; A
// stays TMA's; without `resident` B's refusal stands.
TEST(WgmmaResident, PlanCopiesAKeptBNoBoxCopiesByThreads) {
  const std::string schedule = "mma: tf32x3 wgmma m64n192k8 warpgroups 1x1 k 32 stages 2" + kPersistent;
  std::vector<std::string> reasons;
  auto three = plan(dgDiffThree(301, 56), schedule + " resident a", limitsOf(2), reasons);
  ASSERT_TRUE(three) << joined(reasons);
  EXPECT_TRUE(three->residentB && three->residentByThreads());
  EXPECT_LT(three->b.tma.array, 0);
  EXPECT_GE(three->a.tma.array, 0);
  const Kernel k = dgDiffThree(301, 56);
  const SchedulePlan sp = planSchedule(k, *parseSchedule(schedule + " resident a").schedule, limitsOf(2));
  ASSERT_TRUE(sp.ok());
  EXPECT_NE(printPlan(k, sp.nests[0]).find("B by the producer's threads"), std::string::npos)
      << printPlan(k, sp.nests[0]);
  auto stacked = plan(dgDiff(301, 56), schedule + " resident a", limitsOf(2), reasons);
  ASSERT_TRUE(stacked) << joined(reasons);
  EXPECT_FALSE(stacked->residentByThreads());
  reasons.clear();
  EXPECT_FALSE(plan(dgDiffThree(301, 56), schedule, limitsOf(2), reasons));
  EXPECT_NE(joined(reasons).find("stacked statements"), std::string::npos) << joined(reasons);
  reasons.clear();
  auto padded = plan(rect("rect32_pad", 200, 136, 56), schedule + " resident b", limitsOf(2), reasons);
  ASSERT_TRUE(padded) << joined(reasons);
  EXPECT_TRUE(padded->residentByThreads());
}

// Those in the host emulation: dg_diff at Np = 20 (one partial step), 56 (one N tile of 192), 84
// (252 rows: two N tiles of 128, or one of 256) and 120 (three N tiles of 128); A's rows and
// k no tile divides; tf32x3 (both tiles split), tf32, pingpong; and the padded rows: 4-byte copies
// (tf32x3, tf32) and 16-bit values through registers (bf16, a plain arrival).
TEST(HostEmulation, WgmmaResidentByThreadsMatchesTheReference) {
  struct Case {
    int64_t np;
    const char* schedule;
    double tolerance;
    int64_t multiprocessors;
  };
  const Case dg[] = {
      {20, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-5, 2},
      {56, "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 2 pingpong", 2e-5, 2},
      {84, "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 3", 2e-5, 4},
      {84, "mma: tf32 wgmma m64n256k8 warpgroups 1x1 k 32 stages 2", 2e-3, 2},
      {120, "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2", 2e-5, 3},
  };
  for (const Case& c : dg) {
    const std::string text = beforePingpong(c.schedule, kPersistent, " resident a");
    const Kernel k = dgDiffThree(301, c.np);
    std::vector<std::string> reasons;
    auto p = plan(k, text, limitsOf(c.multiprocessors), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_TRUE(p->residentByThreads()) << text;
    EXPECT_EQ(checkOnHost(k, text, c.tolerance, limitsOf(c.multiprocessors)), "") << "Np " << c.np << " " << text;
  }
  struct Padded {
    const char* kernel;
    int64_t kk;
    const char* schedule;
    double tolerance;
  };
  const Padded padded[] = {
      {"rect32_pad", 56, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", 2e-5},
      {"rect32_pad", 100, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 pingpong", 2e-3},
      {"rect_pad", 56, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3", 1e-5},
  };
  for (const Padded& c : padded) {
    const std::string text = beforePingpong(c.schedule, kPersistent, " resident b");
    const Kernel k = rect(c.kernel, 200, 136, c.kk);
    std::vector<std::string> reasons;
    auto p = plan(k, text, limitsOf(3), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_TRUE(p->residentByThreads()) << text;
    EXPECT_EQ(checkOnHost(k, text, c.tolerance, limitsOf(3)), "") << c.kernel << " kk " << c.kk << " " << text;
  }
}

// Stacked statements that differ in more than their arrays (one scaled, one plus an array of its
// own) keep the branch over statements at each pair; where they differ only in their arrays, a
// chunk's array is chosen once. Both against the reference at rows of 84 values (chunks that
// straddle two statements) and 56, K = 301 (no tile divides it).
TEST(HostEmulation, WgmmaStackedEpiloguesOfTheirOwnMatchTheReference) {
  const std::string source = R"(
kernel dg_diff_own(K: int, Np: int, Dr: f32[Np, Np], Ds: f32[Np, Np], Dt: f32[Np, Np], u: f32[K, Np],
                   c: f32[K, Np], out ur: f32[K, Np], out us: f32[K, Np], out ut: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, Dr[i, j] * u[k, j]);
    us[k, i] = 2.0 * sum(j in 0..Np, Ds[i, j] * u[k, j]);
    ut[k, i] = sum(j in 0..Np, Dt[i, j] * u[k, j]) + c[k, i];
  }
})";
  for (int64_t np : {56, 84}) {
    const Kernel own = fromSource(source, "dg_diff_own", {{"K", 301}, {"Np", np}});
    const Kernel three = dgDiffThree(301, np);
    const std::string text = "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2" + kPersistent + " resident a";
    EmittedModule m = emitCuda(own, *parseSchedule(text).schedule, limitsOf(3));
    EXPECT_EQ(m.source.find("chunk_array"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("((float2*)&us["), std::string::npos) << m.source;
    EXPECT_EQ(checkOnHost(own, text, 2e-5, limitsOf(3)), "") << "Np " << np;
    EXPECT_NE(emitCuda(three, *parseSchedule(text).schedule, limitsOf(3)).source.find("chunk_array"), std::string::npos);
    EXPECT_EQ(checkOnHost(three, text, 2e-5, limitsOf(3)), "") << "Np " << np;
  }
}

// DG lifting's epilogue reads rhs (and invJ) beside the sum: every point's value is computed into
// its accumulator before the stores of its group of chunks, so that no load waits behind a store
// that may alias it; without such reads (dg_diff) the epilogue stores at once. Against the
// reference at K = 301 (no tile divides it), reductions of 4 Nfp = 68 and 84 (no multiple of the
// 32-value step), on wgmma (kept LIFT, pingpong) and mma.sync.
TEST(HostEmulation, WgmmaEpilogueValuesBeforeStoresMatchTheReference) {
  const struct {
    int64_t np, nfp;
    const char* schedule;
  } cases[] = {
      {20, 17, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x2 k 32 stages 2 swizzle 128 tma producer persistent resident a"},
      {56, 21, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong resident a"},
      {56, 21, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3"},
  };
  for (const auto& c : cases) {
    const Kernel lift = exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", 301}, {"Np", c.np}, {"Nfp", c.nfp}});
    const std::string source = emitCuda(lift, *parseSchedule(c.schedule).schedule, limitsOf(2)).source;
    const size_t value = source.find(" = rhs[");
    const size_t store = std::min(source.find("] = acc"), source.find("[0] = make_float2(acc"));
    ASSERT_NE(value, std::string::npos) << c.schedule << "\n" << source;
    ASSERT_NE(store, std::string::npos) << c.schedule;
    EXPECT_LT(value, store) << c.schedule;
    EXPECT_EQ(checkOnHost(lift, c.schedule, 2e-5, limitsOf(2)), "") << c.schedule;
  }
  const std::string three = emitCuda(dgDiffThree(301, 56),
                                     *parseSchedule("mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2").schedule,
                                     limitsOf(2)).source;
  EXPECT_EQ(three.find("acc0_0 = acc0_0;"), std::string::npos);
}

// The emitted kernel: the producer's copies of D's three arrays and its threads' arrival on
// `resident full` (128 of them), no tensor map of B, the consumers' fence after their wait, the
// stacked statements' float2 pairs; NVRTC compiles it for sm_90a without local memory.
TEST(WgmmaResident, ThreadCopiesEmitAndNvrtcCompiles) {
  for (int64_t np : {56, 84, 120}) {
    const Kernel k = dgDiffThree(299551, np);
    const std::string schedule =
        np == 56 ? "mma: tf32x3 wgmma m64n192k8 warpgroups 2x1 k 32 stages 2 swizzle 128 tma producer persistent pingpong "
                   "resident a"
                 : "mma: tf32x3 wgmma m64n128k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer persistent resident a";
    std::vector<std::string> reasons;
    auto p = plan(k, schedule, kH200, reasons);
    ASSERT_TRUE(p) << joined(reasons);
    EmittedModule m = emitCuda(k, *parseSchedule(schedule).schedule, kH200);
    const int64_t residentFull = p->barrierOffset + 8 * (3 * 2 + (np == 56 ? 2 : 0));
    EXPECT_NE(m.source.find(fmt::format("rtcg_mbar_init(rtcg_tma_barrier(rtcg_smem_f32, {}), 128);", residentFull)),
              std::string::npos) << m.source;
    EXPECT_NE(m.source.find(fmt::format("rtcg_cp_async_mbar_arrive(rtcg_tma_barrier(rtcg_smem_f32, {}));", residentFull)),
              std::string::npos) << m.source;
    EXPECT_NE(m.source.find("cp.async.mbarrier.arrive.noinc"), std::string::npos);
    // The epilogue's float2 pairs, the statement and first i once per accumulator chunk, and the
    // statements' array chosen there (they differ in nothing else): no branch at the pairs.
    EXPECT_NE(m.source.find("const int chunk_q = "), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("float* chunk_array = chunk_q"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("((float2*)&chunk_array["), std::string::npos);
    EXPECT_EQ(m.source.find("((float2*)&ut["), std::string::npos);
    EXPECT_EQ(m.source.find("chunk_wrap") == std::string::npos, np % 8 == 0) << "Np " << np;
    EXPECT_EQ(m.source.find("Dr_map"), std::string::npos);
    EXPECT_NE(m.source.find("u_map"), std::string::npos);
    ASSERT_EQ(m.launches.size(), 1u);
    EXPECT_EQ(m.launches[0].tensorMaps.size(), 1u);
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << "Np " << np << "\n" << r.log;
  }
}
