// `mma: f64 ... stages N persistent [resident a|b] fragments 2` (schedule/Mma.h, MmaPlan::keptWhole):
// mma.sync's persistent loop over output tiles on `fragments 2`'s ring, with a small operand kept
// in shared memory per block. The clause's text, the plan (the kept operand on B, its tile of the
// whole reduction, a grid of whole N tiles) and its refusals, the host emulation against the
// reference at sizes no tile divides and reductions no step divides (a copy at the wrong tile's
// origin, a step reading the wrong columns of the kept tile, or an epilogue at the wrong tile give
// wrong values), NVRTC's compile, the space and the model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>

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
kernel dg64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
kernel rect64(m: int, n: int, kk: int, a: f64[m, kk], b: f64[kk, n], out c: f64[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, a[i, k] * b[k, j]) + 1;
  }
}
kernel batched64(nb: int, n: int, a: f64[nb, n, n], b: f64[nb, n, n], out c: f64[nb, n, n]) {
  for z in 0..nb, i in 0..n, j in 0..n {
    c[z, i, j] = sum(k in 0..n, a[z, i, k] * b[z, j, k]);
  }
}
kernel dg32(K: int, Np: int, D: f32[3 * Np, Np], u: f32[K, Np], out w: f32[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
kernel rbf16(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel ri8(m: int, n: int, kk: int, a: i8[m, kk], bt: i8[n, kk], out c: i32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, i32(a[i, k]) * i32(bt[j, k]));
  }
}
)";

Kernel dg64(int64_t elements, int64_t np) { return fromSource(kKernels, "dg64", {{"K", elements}, {"Np", np}}); }

}  // namespace

TEST(MmaPersistent, ClausePrintsAndParsesBack) {
  for (const char* text : {"mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 4 persistent resident a fragments 2",
                           "blocks_per_sm: 2; mma: f64 m16n8k8 warps 4x2 tile 2x2 k 16 stages 3 persistent fragments 2",
                           "mma: f64 m16n8k16 warps 2x2 tile 2x2 k 16 stages 2 persistent resident b fragments 2"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_TRUE(parsed.schedule->nests[0].mma.persistent) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
}

// The plan: `resident a` transposes (D, the product's first operand, is B), B's kept tile holds the
// whole reduction with a pitch of 4 (mod 8) doubles, the ring's stages A alone, a grid of whole N
// tiles; `persistent` alone keeps the ring of both; in words; the refusals with their reasons.
TEST(MmaPersistent, PlanKeepsTheWholeReductionAndAGridOfWholeNTiles) {
  std::vector<std::string> reasons;
  const Kernel k = dg64(100000, 56);
  const std::string base = "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4";
  auto p = plan(k, base + " persistent resident a fragments 2", sm90Limits(132), reasons);
  auto loop = plan(k, base + " persistent fragments 2", sm90Limits(132), reasons);
  auto twin = plan(k, base + " fragments 2", sm90Limits(132), reasons);
  ASSERT_TRUE(p && loop && twin) << joined(reasons);
  EXPECT_TRUE(p->keptWhole());
  EXPECT_TRUE(p->transposed);
  EXPECT_EQ(p->c.nExtent, 168);  // D's rows on N
  EXPECT_EQ(p->c.mExtent, 100000);
  EXPECT_EQ(p->blockN, 64);
  EXPECT_EQ(p->nTiles(), 3);
  EXPECT_EQ(p->steps, 7);
  EXPECT_EQ(p->b.pitch, 60);  // 56 values, pitch 4 (mod 8)
  EXPECT_EQ(p->b.buffer, 64 * 60);
  EXPECT_EQ(p->keptStep(3), 24);
  EXPECT_EQ(p->bBuffers(), 1);
  EXPECT_EQ(p->persistentBlocks % 3, 0);
  EXPECT_GT(p->persistentBlocks, 0);
  EXPECT_EQ(p->gridX(), p->persistentBlocks);
  EXPECT_EQ(p->gridY(), 1);
  EXPECT_EQ(p->tileBytes, (4 * p->a.buffer + 64 * 60) * 8);
  EXPECT_FALSE(loop->keptWhole());
  EXPECT_FALSE(loop->transposed);
  EXPECT_TRUE(loop->persistent());
  EXPECT_EQ(loop->tileBytes, twin->tileBytes);
  EXPECT_FALSE(twin->persistent());
  NestPlanResult r = planNest(k, 0, parseSchedule(base + " persistent resident a fragments 2").schedule->nests[0], sm90Limits(132));
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("resident: B's tile of the whole reduction (64 x 56, pitch 60: 30720 bytes)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("transposed: C^T = B^T A^T"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("persistent: {} blocks loop over the 4689 output tiles", p->persistentBlocks)),
            std::string::npos) << text;

  struct Refused {
    Kernel k;
    std::string text;
    const char* reason;
  };
  const Refused refused[] = {
      {k, base + " persistent resident a", "on mma.sync it needs 'stages N' and 'fragments 2' (f64)"},
      {k, "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 persistent resident a", "on mma.sync it needs 'stages N'"},
      {k, base + " persistent resident a fragments 2 epilogue shared", "give one of them"},
      {k, base + " resident a fragments 2", "it needs 'persistent' before it"},
      {k, "mma: f64 m16n8k4 warps 1x4 tile 2x2 k 8 stages 4 persistent pingpong resident a fragments 2",
       "it needs 2 to 15 warp rows"},
      {k, base + " pingpong fragments 2", "gives a persistent block's warp rows whole tiles of their own: it needs "
       "'stages N persistent' and 'fragments 2'"},
      {fromSource(kKernels, "batched64", {{"nb", 300}, {"n", 40}}), base + " persistent resident b fragments 2",
       "a batched contraction's operands change with the batch"},
      // u kept: 782 N tiles of 128 elements, more than the blocks.
      {k, base + " persistent resident b fragments 2", "'resident' gives each block one of the kept operand's"},
      // D of Np = 120 kept whole in one N tile of 360 rows: more than the shared memory.
      {dg64(100000, 120), "mma: f64 m16n8k4 warps 2x4 tile 2x12 k 8 stages 4 persistent resident a fragments 2",
       "more than 232448"},
  };
  for (const Refused& c : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(c.k, c.text, sm90Limits(132), reasons)) << c.text;
    ASSERT_FALSE(reasons.empty()) << c.text;
    EXPECT_NE(reasons[0].find(c.reason), std::string::npos) << c.text << ": " << joined(reasons);
  }
}

// Against the reference in the host emulation: 1 to 5 multiprocessors (blocks run several tiles,
// the last round of some blocks past the tiles' end), the DG kernel at Np = 20, 35 and 56 over
// elements no block tile divides (reductions of 20, 35, 56 values in steps of 8 and 16: a
// partial last step), a kept D of one to three N tiles, D kept or u streamed without keeping;
// an epilogue of the statement's own (2 sum + 1), B kept along K or along N (a K x N tile); a
// batched contraction's tiles (their batch from the tile index) without keeping.
TEST(HostEmulation, MmaPersistentMatchesTheReference) {
  struct Case {
    Kernel k;
    const char* schedule;
    int64_t multiprocessors;
  };
  const Kernel rect = fromSource(kKernels, "rect64", {{"m", 203}, {"n", 37}, {"kk", 45}});
  const Kernel rectWide = fromSource(kKernels, "rect64", {{"m", 41}, {"n", 301}, {"kk", 27}});
  const Case cases[] = {
      {dg64(301, 20), "m16n8k4 warps 2x4 tile 2x2 k 4 stages 4 persistent resident a", 3},
      {dg64(301, 20), "m16n8k16 warps 2x2 tile 1x4 k 16 stages 2 persistent resident a", 1},
      {dg64(157, 35), "m16n8k8 warps 2x2 tile 2x2 k 8 stages 3 persistent resident a", 2},
      {dg64(157, 35), "m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent", 1},
      {dg64(211, 56), "m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a", 2},
      {dg64(211, 56), "m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 persistent resident a", 3},
      {rect, "m16n8k8 warps 2x2 tile 2x1 k 8 stages 3 persistent resident b", 2},
      {rect, "m16n8k4 warps 2x2 tile 1x2 k 12 stages 2 persistent", 3},
      {rectWide, "m16n8k8 warps 2x2 tile 1x2 k 8 stages 3 persistent resident a", 2},
      {fromSource(kKernels, "batched64", {{"nb", 5}, {"n", 37}}), "m16n8k4 warps 2x2 tile 1x2 k 8 stages 3 persistent", 2},
  };
  int looping = 0;
  for (const Case& c : cases) {
    const std::string text = fmt::format("mma: f64 {} fragments 2", c.schedule);
    std::vector<std::string> reasons;
    auto p = plan(c.k, text, sm90Limits(c.multiprocessors), reasons);
    EXPECT_TRUE(p) << text << ": " << joined(reasons);
    if (!p) continue;
    EXPECT_TRUE(p->persistent());
    looping += p->tileCount() > p->persistentBlocks;  // blocks loop over several tiles
    EXPECT_EQ(checkOnHost(c.k, text, 1e-12, sm90Limits(c.multiprocessors)), "")
        << c.k.name << " " << text << " on " << c.multiprocessors;
  }
  EXPECT_GE(looping, 6);
}

// `pingpong` on this loop (MmaPlan::rowGroups): each warp row owns whole tiles of its own (the
// block tile one warp row's), with a ring of its own in the tiles after the other rows' and its
// own named barrier; a kept B once, before the rings, which meet once after its copy.
TEST(MmaPersistent, PingpongGivesEachWarpRowItsOwnTilesAndRing) {
  std::vector<std::string> reasons;
  const Kernel k = dg64(100000, 56);
  const std::string base = "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent";
  auto rows = plan(k, base + " pingpong resident a fragments 2", sm90Limits(132), reasons);
  auto block = plan(k, base + " resident a fragments 2", sm90Limits(132), reasons);
  auto streamed = plan(k, base + " pingpong fragments 2", sm90Limits(132), reasons);
  ASSERT_TRUE(rows && block && streamed) << joined(reasons);
  EXPECT_EQ(rows->rowGroups, 2);
  EXPECT_EQ(block->rowGroups, 0);
  EXPECT_EQ(rows->blockM, 32);  // one warp row's 2 fragments of 16
  EXPECT_EQ(block->blockM, 64);
  EXPECT_EQ(rows->blockN, block->blockN);
  EXPECT_EQ(rows->threads, block->threads);
  EXPECT_EQ(rows->tileCount(), 2 * block->tileCount() - 3);  // 3125 M tiles of 32 against 1563 of 64, 3 N tiles
  // Two rings of A (each of half the rows) and one kept B: A's bytes as the block's, B's the same.
  EXPECT_EQ(rows->tileBytes, block->tileBytes);
  EXPECT_EQ(streamed->tileBytes, 2 * 4 * (streamed->a.buffer + streamed->b.buffer) * 8);
  NestPlanResult r = planNest(k, 0, parseSchedule(base + " pingpong resident a fragments 2").schedule->nests[0],
                              sm90Limits(132));
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("pingpong: each of the 2 warp rows owns whole tiles of 32x64"), std::string::npos) << text;
  const std::string source = emitCuda(k, *parseSchedule(base + " pingpong resident a fragments 2").schedule,
                                      sm90Limits(132)).source;
  EXPECT_NE(source.find("rtcg_bar_sync(row_group + 1, 128);"), std::string::npos) << source;
  EXPECT_NE(source.find("const int row_group = tid / 128;"), std::string::npos) << source;
  // The block's barrier once, after the kept B's copy; none in the ring.
  EXPECT_EQ(source.find("__syncthreads();"), source.rfind("__syncthreads();")) << source;
  const std::string plain = emitCuda(k, *parseSchedule(base + " resident a fragments 2").schedule, sm90Limits(132)).source;
  EXPECT_EQ(plain.find("rtcg_bar_sync"), std::string::npos) << plain;
}

// A schedule built in code past the parser's range of stages (2 to 4) is refused by the plan with
// the reason, not emitted (a cp.async ring of 5 stages met an internal error in its waits).
TEST(MmaPersistent, PlanRefusesStagesPastTheParsersRange) {
  const Kernel k = dg64(100000, 120);
  NestSchedule ns = parseSchedule("mma: f64 m16n8k8 warps 4x3 tile 1x5 k 24 stages 4 persistent pingpong resident a "
                                  "fragments 2").schedule->nests[0];
  std::vector<std::string> reasons;
  ASSERT_TRUE(planMma(k, 0, ns, sm90Limits(132), reasons)) << joined(reasons);
  for (int64_t stages : {0, 5, 8}) {
    ns.mma.stages = stages;
    reasons.clear();
    EXPECT_FALSE(planMma(k, 0, ns, sm90Limits(132), reasons)) << stages;
    EXPECT_NE(joined(reasons).find(fmt::format("'stages {}': the rings take 2 to 4 stages", stages)), std::string::npos)
        << joined(reasons);
  }
}

// Against the reference in the host emulation: row groups over kept and streamed B, 2 to 4 warp
// rows, elements no tile divides, reductions no step divides, blocks whose last rows have no tile
// (4 rows of the 2-multiprocessor grid's 14 tiles of rect64), grouped tile orders, a batch,
// blocks_per_sm and streaming stores.
TEST(HostEmulation, MmaPersistentRowGroupsMatchTheReference) {
  struct Case {
    Kernel k;
    const char* schedule;
    int64_t multiprocessors;
    const char* clauses = "";  // before `mma:`
  };
  const Kernel rect = fromSource(kKernels, "rect64", {{"m", 203}, {"n", 37}, {"kk", 45}});
  const Case cases[] = {
      {dg64(301, 20), "m16n8k4 warps 2x4 tile 2x2 k 4 stages 4 persistent pingpong resident a", 3},
      {dg64(157, 35), "m16n8k8 warps 4x2 tile 1x2 k 8 stages 3 persistent pingpong resident a", 2},
      {dg64(211, 56), "m16n8k4 warps 3x2 tile 1x4 k 8 stages 4 persistent pingpong resident a", 2},
      {dg64(157, 35), "m16n8k4 warps 4x2 tile 1x2 k 8 stages 4 persistent pingpong", 1},
      {dg64(131, 120), "m16n8k8 warps 4x5 tile 1x3 k 24 stages 4 persistent pingpong resident a", 3},
      {dg64(149, 120), "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a", 3},
      {rect, "m16n8k8 warps 2x2 tile 2x1 k 8 stages 3 persistent pingpong resident b", 2},
      {fromSource(kKernels, "rect64", {{"m", 45}, {"n", 37}, {"kk", 27}}),
       "m16n8k8 warps 4x1 tile 1x2 k 8 stages 3 persistent pingpong", 2},
      {rect, "m16n8k4 warps 2x2 tile 1x2 k 12 stages 2 persistent pingpong group 3", 1},
      {fromSource(kKernels, "batched64", {{"nb", 5}, {"n", 37}}), "m16n8k4 warps 2x2 tile 1x2 k 8 stages 3 persistent pingpong", 2},
      {dg64(157, 35), "m16n8k4 warps 2x2 tile 1x2 k 8 stages 3 persistent pingpong resident a", 2, "blocks_per_sm: 2; "},
      {dg64(149, 120), "m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a", 3, "stores: streaming; "},
  };
  int idle = 0;
  for (const Case& c : cases) {
    const std::string text = fmt::format("{}mma: f64 {} fragments 2", c.clauses, c.schedule);
    std::vector<std::string> reasons;
    auto p = plan(c.k, text, sm90Limits(c.multiprocessors), reasons);
    EXPECT_TRUE(p) << text << ": " << joined(reasons);
    if (!p) continue;
    EXPECT_GT(p->rowGroups, 1) << text;
    idle += p->tileCount() < p->rowGroups * p->persistentBlocks;  // some rows run no tile
    EXPECT_EQ(checkOnHost(c.k, text, 1e-12, sm90Limits(c.multiprocessors)), "")
        << c.k.name << " " << text << " on " << c.multiprocessors;
  }
  EXPECT_GE(idle, 1);
}

// Where the block tile's rows and the steps divide the domain, the cp.async runs of the rings (the
// kept B's, the row groups', the block's; FP64's and TF32's) are copied whole without bounds; one
// element more along M, N or K brings the bounds back. Both forms match the reference.
TEST(HostEmulation, MmaRunsInsideTheDomainAreCopiedWithoutBounds) {
  struct Case {
    Kernel k;
    std::string schedule;
    int64_t multiprocessors;
    bool inside;
    double tolerance = 1e-12;
  };
  const std::string rows = "mma: f64 m16n8k8 warps 4x3 tile 1x5 k 40 stages 3 persistent pingpong resident a fragments 2";
  const std::string ring = "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2";
  const std::string block = "mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 fragments 2";
  const std::string tf32 = "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 8 stages 3";
  auto dg32 = [](int64_t elements, int64_t np) { return fromSource(kKernels, "dg32", {{"K", elements}, {"Np", np}}); };
  const Case cases[] = {
      {dg64(160, 120), rows, 3, true},
      {dg64(161, 120), rows, 3, false},
      {dg64(256, 64), ring, 2, true},
      {dg64(256, 60), ring, 2, false},
      {fromSource(kKernels, "rect64", {{"m", 64}, {"n", 64}, {"kk", 48}}), block, 2, true},
      {fromSource(kKernels, "rect64", {{"m", 64}, {"n", 64}, {"kk", 40}}), block, 2, false},
      {dg32(128, 64), tf32, 2, true, 1e-5},
      {dg32(130, 64), tf32, 2, false, 1e-5},
  };
  for (const Case& c : cases) {
    const std::string source = emitCuda(c.k, *parseSchedule(c.schedule).schedule, sm90Limits(c.multiprocessors)).source;
    EXPECT_EQ(source.find("const int bytes") == std::string::npos, c.inside) << c.k.name << " " << c.schedule;
    EXPECT_NE(source.find("rtcg_cp_async16"), std::string::npos) << c.schedule;
    EXPECT_EQ(checkOnHost(c.k, c.schedule, c.tolerance, sm90Limits(c.multiprocessors)), "") << c.k.name << " " << c.schedule;
  }
}

// `group G` (the tile order of issue 41's products) on this persistent loop: the tiles a block
// walks are ordered in groups of G M tiles, where G divides the M tiles and where it does not, and
// on a batched contraction.
TEST(HostEmulation, MmaPersistentGroupedTilesMatchTheReference) {
  struct Case {
    Kernel k;
    const char* schedule;
    int64_t multiprocessors;
  };
  const Case cases[] = {
      {fromSource(kKernels, "rect64", {{"m", 203}, {"n", 37}, {"kk", 45}}),
       "m16n8k4 warps 2x2 tile 1x2 k 12 stages 2 persistent group 3", 1},
      {fromSource(kKernels, "rect64", {{"m", 130}, {"n", 61}, {"kk", 27}}),
       "m16n8k8 warps 2x2 tile 2x1 k 8 stages 3 persistent group 2", 1},
      {fromSource(kKernels, "batched64", {{"nb", 5}, {"n", 37}}),
       "m16n8k4 warps 2x2 tile 1x2 k 8 stages 3 persistent group 2", 2},
  };
  for (const Case& c : cases) {
    const std::string text = fmt::format("mma: f64 {} fragments 2", c.schedule);
    std::vector<std::string> reasons;
    auto p = plan(c.k, text, sm90Limits(c.multiprocessors), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_GT(p->groupM, 0);
    EXPECT_GT(p->tileCount(), p->persistentBlocks) << text;  // blocks loop over several tiles
    const std::string source = emitCuda(c.k, *parseSchedule(text).schedule, sm90Limits(c.multiprocessors)).source;
    EXPECT_NE(source.find("tile_group"), std::string::npos) << text;  // the grouped order, not the plain one
    // `explain` says the order, and the last group's share where G does not divide the M tiles.
    NestPlanResult r = planNest(c.k, 0, parseSchedule(text).schedule->nests[0], sm90Limits(c.multiprocessors));
    ASSERT_TRUE(r.plan) << text;
    const std::string explained = printPlan(c.k, *r.plan);
    EXPECT_NE(explained.find(fmt::format("tile order: groups of {} M tiles", p->groupM)), std::string::npos) << explained;
    EXPECT_EQ(explained.find("the last group holds") != std::string::npos, p->mTiles() % p->groupM != 0) << explained;
    EXPECT_EQ(checkOnHost(c.k, text, 1e-12, sm90Limits(c.multiprocessors)), "") << c.k.name << " " << text;
  }
}

// The emitted kernel: D's copy once before the ring, a loop over the ring's steps of the block's
// tiles, the epilogue in it, storing column pairs as one double2 (w's rows along N: `resident a`
// transposed the product), where the same tiles without `persistent` store doubles; NVRTC compiles
// it for sm_90 without local memory.
TEST(MmaPersistent, EmitsOneRingOverTheTilesThatNvrtcCompiles) {
  for (int64_t np : {20, 56, 120}) {
    const Kernel k = dg64(100000, np);
    const std::string schedule = "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent resident a fragments 2";
    std::vector<std::string> reasons;
    auto p = plan(k, schedule, sm90Limits(132), reasons);
    ASSERT_TRUE(p) << joined(reasons);
    EmittedModule m = emitCuda(k, *parseSchedule(schedule).schedule, sm90Limits(132));
    EXPECT_NE(m.source.find(fmt::format("for (int kept_step = 0; kept_step < {}; ++kept_step)", p->steps)),
              std::string::npos) << m.source;
    EXPECT_NE(m.source.find(fmt::format("const int ring_steps = rounds * {};", p->steps)), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("for (int step = 0; step < ring_steps; ++step)"), std::string::npos) << m.source;
    EXPECT_NE(m.source.find("= make_double2(acc0_0_0, acc0_0_1);"), std::string::npos) << m.source;
    const std::string plain =
        emitCuda(k, *parseSchedule("mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 fragments 2").schedule, sm90Limits(132)).source;
    EXPECT_EQ(plain.find("double2"), std::string::npos) << plain;
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << "Np " << np << "\n" << r.log;
  }
}

// The grid counts the blocks a multiprocessor holds by the ring's register floor (mmaRegisterFloor),
// not by the model's estimate, which overcounts these rings (m16n8k4 warps 2x2 tile 2x4 k 8: 144
// against NVRTC's 128, which left 3 blocks a multiprocessor where shared memory and registers hold
// 4); the kernel states that count in its __launch_bounds__, so NVRTC's registers hold it (no
// spills). blocks_per_sm, where given, is the count as before; where shared memory bounds the
// blocks (Np = 120: 1 of 256 threads) the bound is that one.
TEST(MmaPersistent, GridCountsTheBlocksTheRingsRegisterFloorLets) {
  struct Case {
    int64_t np;
    const char* schedule;
    int64_t perSm;
  };
  const Case cases[] = {
      {56, "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2", 4},
      {56, "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 persistent resident a fragments 2", 3},
      {20, "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 3 persistent resident a fragments 2", 3},
      {56, "blocks_per_sm: 3; mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2", 3},
      {120, "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 32 stages 4 persistent resident a fragments 2", 1},
  };
  for (const Case& c : cases) {
    const Kernel k = dg64(100000, c.np);
    std::vector<std::string> reasons;
    const auto parsed = parseSchedule(c.schedule);
    ASSERT_TRUE(parsed.schedule) << c.schedule;
    auto p = planMma(k, 0, parsed.schedule->nests[0], sm90Limits(132), reasons);
    ASSERT_TRUE(p) << c.schedule << ": " << joined(reasons);
    EXPECT_EQ(p->persistentBlocks, 132 * c.perSm) << c.schedule;
    EXPECT_EQ(p->minBlocks(parsed.schedule->nests[0].blocksPerSM), c.perSm) << c.schedule;
    EmittedModule m = emitCuda(k, *parsed.schedule, sm90Limits(132));
    EXPECT_NE(m.source.find(fmt::format("__launch_bounds__({}, {})", p->threads, c.perSm)), std::string::npos)
        << c.schedule;
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << c.schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << c.schedule << "\n" << r.log;
    if (r.resources[0].registers > 0)  // NVRTC's count, where the log gives it
      EXPECT_LE(r.resources[0].registers * p->threads * c.perSm, 65536) << c.schedule << "\n" << r.log;
  }
  // Without `persistent`: no bound (the kernel's __launch_bounds__ name the threads alone).
  std::vector<std::string> reasons;
  auto w = plan(dg64(100000, 56), "mma: f64 m16n8k4 warps 2x4 tile 2x2 k 8 stages 4 fragments 2", sm90Limits(132), reasons);
  ASSERT_TRUE(w) << joined(reasons);
  EXPECT_EQ(w->boundBlocks, 0);
}

// The space offers `persistent resident a` beside the f64 DG rows' `fragments 2` candidates (D is
// small, u long); the model ranks it first where the main loop bounds the row (Np = 56, 120: the
// fill and drain of each tile hidden) and not where memory does (Np = 20, where it measured no
// faster); a square GEMM gets none.
TEST(MmaPersistent, SpaceOffersItAndTheModelRanksIt) {
  const SpaceOptions o = spaceOptionsFor("sm_90");
  for (int64_t np : {20, 56, 120}) {
    const Space space = enumerateSchedules(dg64(100000, np), o);
    size_t kept = 0;
    const Candidate* best = nullptr;
    for (const Candidate& c : space.candidates) {
      kept += c.text.find(" persistent resident a") != std::string::npos;
      if (c.text.find("mma:") != std::string::npos && (!best || c.score < best->score)) best = &c;
    }
    EXPECT_GT(kept, 0u) << "Np " << np;
    ASSERT_TRUE(best);
    // With or without `pingpong` (a ring a warp row) between them.
    const bool persistentKept = best->text.find(" persistent") != std::string::npos &&
                                best->text.find(" resident a") != std::string::npos;
    EXPECT_EQ(persistentKept, np != 20) << "Np " << np << ": " << best->text;
  }
  const Space square = enumerateSchedules(fromSource(kKernels, "rect64", {{"m", 512}, {"n", 512}, {"kk", 512}}), o);
  for (const Candidate& c : square.candidates) EXPECT_EQ(c.text.find(" persistent"), std::string::npos) << c.text;
}

// The space's fitted grids (keptFitVariants): 4 x wn warps of one fragment row each whose N tile
// cuts D's 3 Np rows into whole tiles with less than a fragment of padding, in the largest step up
// to 32 that divides the reduction into 3 or more: at Np = 120 4x3 of 1x5 and 4x5 of 1x3 (N 120,
// k 24), at Np = 56 4x1 of 1x7 (N 56, k 8); none where no such step exists (Np = 20) and none
// without a kept operand (a square GEMM).
TEST(MmaPersistent, SpaceFitsTheKeptRowsAndTheReduction) {
  const SpaceOptions o = spaceOptionsFor("sm_90");
  auto texts = [&](const Kernel& k) {
    std::set<std::string> out;
    for (const Candidate& c : enumerateSchedules(k, o).candidates) out.insert(c.text);
    return out;
  };
  auto fitted = [](const std::set<std::string>& s) {
    size_t n = 0;
    for (const std::string& t : s)
      n += t.find(" warps 4x1 tile 1x") != std::string::npos || t.find(" warps 4x3 tile 1x") != std::string::npos ||
           t.find(" warps 4x5 tile 1x") != std::string::npos;
    return n;
  };
  const std::string tail = " persistent resident a fragments 2";
  const auto n7 = texts(dg64(100000, 120));
  for (const char* grid : {"m16n8k4 warps 4x3 tile 1x5 k 24 stages 4", "m16n8k4 warps 4x5 tile 1x3 k 24 stages 3",
                           "m16n8k8 warps 4x3 tile 1x5 k 24 stages 4"})
    EXPECT_EQ(n7.count(fmt::format("mma: f64 {}{}", grid, tail)), 1u) << grid;
  const auto n5 = texts(dg64(100000, 56));
  EXPECT_EQ(n5.count("mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4" + tail), 1u);
  EXPECT_EQ(fitted(texts(dg64(100000, 20))), 0u);
  EXPECT_EQ(fitted(texts(fromSource(kKernels, "rect64", {{"m", 512}, {"n", 512}, {"kk", 512}}))), 0u);
  // Each fitted tile covers D's rows in whole tiles, less than a fragment (8 rows) of padding in all.
  for (const auto& [np, text] : std::vector<std::pair<int64_t, std::string>>{
           {120, "mma: f64 m16n8k4 warps 4x3 tile 1x5 k 24 stages 4" + tail},
           {120, "mma: f64 m16n8k4 warps 4x3 tile 1x3 k 24 stages 4" + tail},
           {56, "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 4" + tail}}) {
    std::vector<std::string> reasons;
    auto p = plan(dg64(100000, np), text, sm90Limits(132), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_LT(p->blockN * p->nTiles() - 3 * np, 8) << text;
    EXPECT_EQ(p->steps * p->blockK, np) << text;
  }
}

// The forms the model cannot rank on the memory-bound f64 DG rows are families the sampling
// measures: at N = 3 the reduction in one step of its own length (20 values) on 64 x 64 blocks,
// which the space offers only since the register probe counts the block's warps (it had one
// warp copy the whole step), and at N = 5 the fitted grids of both shapes (the model alone:
// 37th and 39th).
TEST(MmaPersistent, SamplesMeasureOneStepFormsAndTheFittedGrids) {
  SpaceOptions o = spaceOptionsFor("sm_90");
  auto firstOf = [](const Space& s, const std::string& text) {
    for (size_t c = 0; c < s.candidates.size(); ++c)
      if (s.candidates[c].text == text) return c;
    return s.candidates.size();
  };
  const std::string oneStep = "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20";
  const std::string fitted4 = "mma: f64 m16n8k4 warps 4x1 tile 1x7 k 8 stages 3 persistent resident a fragments 2";
  const std::string fitted8 = "mma: f64 m16n8k8 warps 4x1 tile 1x7 k 8 stages 3 persistent resident a fragments 2";
  for (const auto& [np, texts] : std::vector<std::pair<int64_t, std::vector<std::string>>>{
           {20, {oneStep}}, {56, {fitted4, fitted8}}}) {
    o.maxCandidates = 0;
    const Space all = enumerateSchedules(dg64(100000, np), o);
    o.maxCandidates = 48;
    const Space sample = enumerateSchedules(dg64(100000, np), o);
    for (const std::string& text : texts) {
      ASSERT_LT(firstOf(all, text), all.candidates.size()) << text;
      EXPECT_GE(firstOf(all, text), 32u) << text;  // the model alone would not sample it
      EXPECT_LT(firstOf(sample, text), sample.candidates.size()) << text;
    }
  }
}

// Steps of the reduction's own length (MmaFamily: a reduction shorter than the longest step) in
// the host emulation: one step at the length it was planned for, and the same schedules where the
// step pads the reduction (19 values) or leaves a second, partial step (23, 27), at element counts
// no block tile divides.
TEST(HostEmulation, MmaStepsOfTheReductionsLengthMatchTheReference) {
  for (int64_t np : {20, 19, 23, 27})
    for (const char* text : {"mma: f64 m16n8k4 warps 2x2 tile 2x4 k 20", "mma: f64 m8n8k4 warps 4x2 tile 2x4 k 20",
                             "mma: f64 m16n8k8 warps 2x2 tile 2x4 k 24", "mma: f64 m16n8k4 warps 4x1 tile 1x8 k 20 epilogue shared"}) {
      const Kernel k = dg64(157, np);
      EXPECT_EQ(checkOnHost(k, text, 1e-12, sm90Limits(2)), "") << text << " at Np " << np;
    }
  // The other arithmetics' steps of that kind: TF32's 24 (a reduction of 17 to 24), bf16's 48 (33
  // to 48), s8's 96 (65 to 96), each also where it pads the reduction or leaves a partial step.
  for (int64_t np : {20, 23, 27}) {
    const Kernel k = fromSource(kKernels, "dg32", {{"K", 157}, {"Np", np}});
    EXPECT_EQ(checkOnHost(k, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x4 k 24", 4e-5), "") << "tf32x3 at Np " << np;
    EXPECT_EQ(checkOnHost(k, "mma: tf32 m16n8k8 warps 2x1 tile 1x2 k 24", 2e-3), "") << "tf32 at Np " << np;
  }
  for (int64_t kk : {40, 45, 53}) {
    const Kernel k = fromSource(kKernels, "rbf16", {{"m", 77}, {"n", 45}, {"kk", kk}});
    EXPECT_EQ(checkOnHost(k, "mma: bf16 m16n8k16 warps 2x2 tile 1x2 k 48", 1e-5), "") << "bf16 at kk " << kk;
  }
  for (int64_t kk : {70, 96, 101}) {
    const Kernel k = fromSource(kKernels, "ri8", {{"m", 77}, {"n", 45}, {"kk", kk}});
    EXPECT_EQ(checkOnHost(k, "mma: s8 m16n8k32 warps 2x2 tile 1x2 k 96", 0), "") << "s8 at kk " << kk;
  }
}

// The fitted grids against the reference in the host emulation, at sizes they do not divide: D's
// rows past the N tiles (the last partial), reductions no step divides, warp grids of 3, 5 and 1
// columns of 5, 3 and 7 fragments; blocks that loop over several tiles; and blocks with more
// threads than A's runs a step, whose last warps copy the kept D alone (the ring's first wait
// lands every group there: without it their kept rows were read before they landed).
TEST(HostEmulation, MmaPersistentFittedGridsMatchTheReference) {
  struct Case {
    Kernel k;
    const char* schedule;
    int64_t multiprocessors;
  };
  const Case cases[] = {
      {dg64(203, 44), "m16n8k4 warps 4x3 tile 1x5 k 12 stages 3 persistent resident a", 2},
      {dg64(157, 21), "m16n8k4 warps 4x1 tile 1x7 k 8 stages 3 persistent resident a", 1},
      {dg64(131, 50), "m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a", 2},
      {dg64(99, 40), "m16n8k16 warps 4x3 tile 1x5 k 16 stages 2 persistent resident a", 1},
      // 640 threads, A's 512 runs a step: the last four warps copy the kept D and no stage of u.
      {dg64(131, 50), "m16n8k8 warps 4x5 tile 1x3 k 16 stages 3 persistent resident a", 2},
      {dg64(211, 50), "m16n8k8 warps 1x5 tile 1x1 k 16 stages 3 persistent resident a", 6},
  };
  for (const Case& c : cases) {
    const std::string text = fmt::format("mma: f64 {} fragments 2", c.schedule);
    std::vector<std::string> reasons;
    auto p = plan(c.k, text, sm90Limits(c.multiprocessors), reasons);
    ASSERT_TRUE(p) << text << ": " << joined(reasons);
    EXPECT_GT(p->tileCount(), p->persistentBlocks) << text;
    EXPECT_NE(p->c.kExtent % p->blockK, 0) << text;
    EXPECT_EQ(checkOnHost(c.k, text, 1e-12, sm90Limits(c.multiprocessors)), "")
        << c.k.name << " " << text << " on " << c.multiprocessors;
  }
}
