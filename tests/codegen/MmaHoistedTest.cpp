// `mma: f64 ... stages N fragments 2 copies hoisted` (schedule/Mma.h, MmaPlan::hoistedCopies): the
// ring's copies prepared once per block. The clause's text and its refusals, the plan, the emitted
// loop (the copies without a branch and before the step's last mma, no division for the buffer),
// the host emulation against the reference at sizes no tile divides and reductions no step
// divides (a copy at the wrong k offset, a row guard or a zero fill gone wrong gives wrong values),
// NVRTC's compile of the space's largest, and the space and the model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"
#include "schedule/TestKernels.h"
#include "FullTests.h"
#include "SpaceOptionsFor.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel rect64(m: int, n: int, kk: int, a: f64[m, kk], b: f64[kk, n], out c: f64[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, a[i, k] * b[k, j]) + 1;
  }
}
kernel nt64(m: int, n: int, kk: int, a: f64[kk, m], bt: f64[n, kk], out c: f64[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[k, i] * bt[j, k]);
  }
}
kernel batched64(nb: int, n: int, a: f64[nb, n, n], b: f64[nb, n, n], out c: f64[nb, n, n]) {
  for z in 0..nb, i in 0..n, j in 0..n {
    c[z, i, j] = sum(k in 0..n, a[z, i, k] * b[z, j, k]);
  }
}
kernel sumfact64(E: int, p: int, A: f64[p, p], u: f64[E, p, p, p], out v: f64[E, p, p, p]) {
  for e in 0..E, a in 0..p, b in 0..p, i in 0..p {
    v[e, a, b, i] = sum(j in 0..p, A[i, j] * u[e, a, b, j]);
  }
}
)";

Kernel rect(int64_t m, int64_t n, int64_t k) { return fromSource(kKernels, "rect64", {{"m", m}, {"n", n}, {"kk", k}}); }

}  // namespace

TEST(MmaHoisted, ClausePrintsAndParsesBack) {
  for (const char* text : {"mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted epilogue shared",
                           "blocks_per_sm: 2; mma: f64 m16n8k8 warps 2x2 tile 4x4 k 8 stages 4 fragments 2 copies hoisted"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_TRUE(parsed.schedule->nests[0].mma.hoistCopies) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
  auto other = parseSchedule("mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 3 fragments 2 copies early");
  EXPECT_FALSE(other.ok());
  EXPECT_NE(other.error.find("expected 'hoisted' after 'copies', found 'early'"), std::string::npos) << other.error;
  auto wgmma = parseSchedule("mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 32 stages 3 copies hoisted");
  EXPECT_FALSE(wgmma.ok());
  EXPECT_NE(wgmma.error.find("prepares mma.sync's cp.async ring"), std::string::npos) << wgmma.error;
}

// The plan takes it on `fragments 2`'s ring of a block a tile and says so; refuses it without the
// ring, with `persistent`, on m8n8k4's padded tiles and on rows of several loops, each with its reason.
TEST(MmaHoisted, PlanAndRefusals) {
  std::vector<std::string> reasons;
  const std::string base = "mma: f64 m16n8k4 warps 2x2 tile 2x2 k 8 stages 3";
  auto p = plan(rect(200, 136, 72), base + " fragments 2 copies hoisted", sm90Limits(), reasons);
  ASSERT_TRUE(p) << joined(reasons);
  EXPECT_TRUE(p->hoistedCopies);
  EXPECT_TRUE(p->prefetchFragments());
  auto plain = plan(rect(200, 136, 72), base + " fragments 2", sm90Limits(), reasons);
  ASSERT_TRUE(plain) << joined(reasons);
  EXPECT_FALSE(plain->hoistedCopies);
  EXPECT_EQ(plain->sharedBytes, p->sharedBytes);
  NestPlanResult r = planNest(rect(200, 136, 72), 0, parseSchedule(base + " fragments 2 copies hoisted").schedule->nests[0], sm90Limits());
  ASSERT_TRUE(r.plan);
  EXPECT_NE(printPlan(rect(200, 136, 72), *r.plan).find("copies: hoisted"), std::string::npos);

  struct Refused {
    Kernel k;
    std::string text, why;
  };
  const Refused refused[] = {
      {rect(200, 136, 72), base + " copies hoisted", "prepares the copies of 'fragments 2''s ring"},
      {rect(200, 136, 72), base + " persistent fragments 2 copies hoisted", "give one of them"},
      {rect(200, 136, 72), "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 8 stages 3 fragments 2 copies hoisted",
       "not of shape 'm8n8k4'"},
      {fromSource(kKernels, "sumfact64", {{"E", 2}, {"p", 24}}),  // N = (e, a, b): rows of three loops
       "mma: f64 m16n8k4 warps 2x2 tile 2x2 k 8 stages 3 fragments 2 copies hoisted", "'u[e, a, b, j]' is not"},
  };
  for (const Refused& c : refused) {
    std::vector<std::string> why;
    auto q = plan(c.k, c.text, sm90Limits(), why);
    EXPECT_FALSE(q) << c.text;
    EXPECT_NE(joined(why).find(c.why), std::string::npos) << c.text << ": " << joined(why);
  }
}

// The emitted loops. At 1000 (tiles past the edge) one loop: the copies' sources prepared before
// it, no branch on the step past the last (the plain ring's `if (ahead < steps)`), the buffer
// carried instead of `step % stages`, the copies of the step between its barrier and its last mma.
// At 2048 (the tiles divide the rows; k 8: 256 steps, 3 ahead) the 253 steps whose refill is a
// whole step of the reduction copy from carried sources without a byte count (one add a step, no
// clamp, no k guard), 3 steps to a round with the buffers literal (84 rounds, the second and third
// buffers' offsets in the instruction), then step 252 with the buffer carried; the last 3 steps'
// refills past the reduction are the guarded zero fills, still without a branch.
TEST(MmaHoisted, CopiesPreparedOnceAndIssuedWithoutABranch) {
  const std::string text = "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2 copies hoisted";
  const std::string src = emitCuda(matmul(1000, ScalarType::F64), *parseSchedule(text).schedule, sm90Limits()).source;
  const size_t loop = src.find("for (int step = 0;");
  ASSERT_NE(loop, std::string::npos) << src;
  EXPECT_LT(src.find("const double* copy_a_src"), loop) << src;
  EXPECT_LT(src.find("const double* copy_b_src"), loop) << src;
  EXPECT_EQ(src.find("ahead <", loop), std::string::npos) << src;
  EXPECT_EQ(src.find("step % 3", loop), std::string::npos) << src;
  EXPECT_EQ(src.find("copy_a_from"), std::string::npos) << src;
  const size_t barrier = src.find("__syncthreads();", loop), copy = src.find("rtcg_cp_async16(", loop);
  ASSERT_NE(copy, std::string::npos) << src;
  EXPECT_LT(barrier, copy) << src;
  EXPECT_LT(copy, src.rfind("rtcg_mma_f64_m16n8k4(acc", src.find("buffer = following", loop))) << src;
  const std::string plain = emitCuda(matmul(1000, ScalarType::F64),
                                     *parseSchedule("mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2").schedule,
                                     sm90Limits()).source;
  EXPECT_EQ(plain.find("copy_a_src"), std::string::npos);

  const std::string whole = emitCuda(matmul(2048, ScalarType::F64), *parseSchedule(text).schedule, sm90Limits()).source;
  const size_t rounds = whole.find("for (int round = 0; round < 84; ++round)"),
               rest = whole.find("for (int step = 252; step < 253; ++step)"),
               tail = whole.find("for (int step = 253; step < 256; ++step)");
  ASSERT_NE(rounds, std::string::npos) << whole;
  ASSERT_NE(rest, std::string::npos) << whole;
  ASSERT_NE(tail, std::string::npos) << whole;
  EXPECT_LT(rounds, rest);
  EXPECT_LT(rest, tail);
  EXPECT_LT(whole.find("const double* copy_a_from = copy_a_src + 24;"), rounds) << whole;
  const std::string round = whole.substr(rounds, rest - rounds);
  EXPECT_EQ(round.find("buffer *"), std::string::npos) << round;
  EXPECT_EQ(round.find("following"), std::string::npos) << round;
  EXPECT_EQ(round.find('?'), std::string::npos) << round;
  EXPECT_NE(round.find("rtcg_cp_async16(&rtcg_smem_f64[copy_a_dst], copy_a_from, 16);"), std::string::npos) << round;
  EXPECT_NE(round.find("RTCG_CP_ASYNC16_AT(&rtcg_smem_f64[copy_a_dst], copy_a_from, 16, 12288);"), std::string::npos)
      << round;
  EXPECT_NE(round.find("copy_b_from += 16384;"), std::string::npos) << round;
  const size_t roundBarrier = round.find("__syncthreads();"), roundCopy = round.find("rtcg_cp_async16(");
  ASSERT_NE(roundCopy, std::string::npos) << round;
  EXPECT_LT(roundBarrier, roundCopy) << round;
  EXPECT_LT(roundCopy, round.find("rtcg_mma_f64_m16n8k4(acc", round.find("rtcg_cp_async_commit();"))) << round;
  const std::string last = whole.substr(tail);
  EXPECT_NE(last.find("step + 3 < 256"), std::string::npos) << last;
  EXPECT_EQ(last.find("ahead <"), std::string::npos) << last;
  EXPECT_EQ(last.find("step % 3"), std::string::npos) << last;
  EXPECT_NE(last.find("buffer = following"), std::string::npos) << last;
  EXPECT_NE(whole.find("#define RTCG_CP_ASYNC16_AT"), std::string::npos);
  EXPECT_EQ(src.find("#define RTCG_CP_ASYNC16_AT"), std::string::npos);
}

// Against the reference in the host emulation: sizes no block tile divides, reductions no step
// divides (72 in steps of 16, 37 in 8, 45 in 12, 13 in 4: the last step's copies partly past the
// end), as many steps as stages (every prologue copy a real step, the loop's last ones zero fills),
// rows x k and k x rows tiles of either operand (a and b transposed), copies of 16 bytes and of one
// value (rows of 45 doubles are not 16-byte aligned), copies that do not divide among the threads
// (the guarded last one), a batched contraction, both epilogues, 2 to 4 stages, the three shapes;
// and where the tiles divide the rows (the copies without a byte count, split loops: rounds of
// whole steps with literal buffers, a remainder and the guarded tail; 200 in steps of 8 over 4
// stages: 5 rounds, 1, 4; 104 in 8 over 3: 3 rounds, 1, 3; 99 in 8 over 3, a partial last step,
// copies of one value: 3 rounds, none, 4).
TEST(HostEmulation, MmaHoistedCopiesMatchTheReference) {
  struct Case {
    Kernel k;
    const char* schedule;
    bool sharedEpilogue = false;
  };
  const Kernel nt = fromSource(kKernels, "nt64", {{"m", 77}, {"n", 45}, {"kk", 37}});
  const Case cases[] = {
      {rect(200, 136, 72), "m16n8k16 warps 2x2 tile 2x4 k 16 stages 3"},
      {rect(200, 136, 72), "m16n8k4 warps 2x4 tile 4x4 k 8 stages 3"},
      {rect(200, 136, 72), "m16n8k8 warps 2x2 tile 4x4 k 8 stages 4", true},
      {rect(61, 37, 45), "m16n8k4 warps 1x2 tile 3x1 k 12 stages 3"},
      {rect(61, 37, 45), "m16n8k4 warps 2x2 tile 1x2 k 4 stages 2"},
      {rect(130, 70, 13), "m16n8k4 warps 2x2 tile 2x2 k 4 stages 4"},
      {nt, "m16n8k8 warps 2x2 tile 2x2 k 8 stages 3"},
      {nt, "m16n8k4 warps 4x2 tile 1x2 k 8 stages 4", true},
      {matmul(37, ScalarType::F64), "m16n8k4 warps 2x2 tile 2x2 k 8 stages 2"},
      {fromSource(kKernels, "batched64", {{"nb", 3}, {"n", 37}}), "m16n8k8 warps 2x2 tile 1x2 k 8 stages 3"},
      {rect(128, 64, 104), "m16n8k4 warps 2x2 tile 4x4 k 8 stages 3"},
      {rect(256, 128, 200), "m16n8k8 warps 2x2 tile 4x4 k 8 stages 4", true},
      {fromSource(kKernels, "nt64", {{"m", 64}, {"n", 32}, {"kk", 99}}), "m16n8k4 warps 2x2 tile 2x2 k 8 stages 3"},
  };
  int guarded = 0, partial = 0, rounds = 0, unguarded = 0, unrolled = 0;
  for (const Case& c : cases) {
    const std::string text =
        fmt::format("mma: f64 {} fragments 2 copies hoisted{}", c.schedule, c.sharedEpilogue ? " epilogue shared" : "");
    std::vector<std::string> reasons;
    auto p = plan(c.k, text, sm90Limits(), reasons);
    EXPECT_TRUE(p) << text << ": " << joined(reasons);
    if (!p) continue;
    partial += p->c.kExtent % p->blockK != 0;
    const std::string src = emitCuda(c.k, *parseSchedule(text).schedule, sm90Limits()).source;
    guarded += src.find("copy_a_index") != std::string::npos || src.find("copy_b_index") != std::string::npos;
    rounds += src.find("for (int round = 0;") != std::string::npos;
    // The shared epilogue's f64 store loop is NVCC's to unroll (no `#pragma unroll 1` before it)
    // where the tiles divide the output.
    const bool divides = p->mTiles() * p->blockM == p->c.mExtent && p->nTiles() * p->blockN == p->c.nExtent;
    if (c.sharedEpilogue) EXPECT_EQ(src.find("#pragma unroll 1\n  for (int out") == std::string::npos, divides) << src;
    unrolled += c.sharedEpilogue && divides;
    unguarded += src.find("_from, 16);") != std::string::npos || src.find("_from, 8);") != std::string::npos;
    EXPECT_EQ(checkOnHost(c.k, text, 1e-12, sm90Limits()), "") << c.k.name << " " << text;
  }
  EXPECT_GE(guarded, 1);
  EXPECT_GE(partial, 4);
  EXPECT_GE(rounds, 3);
  EXPECT_GE(unrolled, 1);
  EXPECT_GE(unguarded, 3);
}

// The space offers `copies hoisted` beside each `fragments 2` schedule of a block a tile (none
// persistent), the model ranks the large tiles' above the same without it, and NVRTC compiles the
// ones with the most registers (the model's estimate) for sm_90 without local memory, with their
// shared epilogues too: scalar at n = 1003, 16-byte vectors at n = 1000 (epilogueVectorWidth).
namespace {

void spaceOffersHoistedFormsThatCompileWithoutSpills(int64_t n) {
  Kernel k = matmul(n, ScalarType::F64);
  SpaceOptions o;
  o.limits = deviceScheduleLimits(227 * 1024, 1024);
  std::multimap<int64_t, std::string> largest;
  int hoisted = 0, fragments = 0;
  for (const Candidate& c : enumerateSchedules(k, o).candidates) {
    const MmaSchedule& ms = c.schedule.nests[0].mma;
    fragments += ms.fragments > 1 && !ms.persistent && !ms.hoistCopies;
    if (!ms.hoistCopies) continue;
    ++hoisted;
    EXPECT_EQ(ms.fragments, 2) << c.text;
    EXPECT_FALSE(ms.persistent) << c.text;
    largest.emplace(mmaRegisters(ms, ScalarType::F64) + (c.schedule.nests[0].blocksPerSM > 0 ? 0 : 1), c.text);
    if (largest.size() > 3) largest.erase(largest.begin());
  }
  EXPECT_GT(hoisted, 0);
  EXPECT_GE(fragments, hoisted);
  for (const auto& [regs, hoistedText] : largest) {
    const bool shared = hoistedText.find(" epilogue shared") != std::string::npos;
    for (const std::string& text : {hoistedText, shared ? hoistedText : hoistedText + " epilogue shared"}) {
      CudaCompileResult r = compileCuda(emitCuda(k, *parseSchedule(text).schedule, o.limits).source, "dgemm.cu", "sm_90");
      ASSERT_TRUE(r.success) << text << "\n" << r.log;
      ASSERT_EQ(r.resources.size(), 1u) << text;
      EXPECT_EQ(r.resources[0].localBytes, 0) << n << ": " << text << ": " << r.resources[0].registers << " registers";
    }
  }
}

}  // namespace

TEST(MmaHoisted, SpaceOffersThemAndTheyCompileWithoutSpills) {
  for (int64_t n : {1003, 1000}) spaceOffersHoistedFormsThatCompileWithoutSpills(n);
  // The model: at n = 2048 on an H100's model the winner's shape with hoisted copies ranks above it.
  const SpaceOptions h100 = spaceOptionsFor("sm_90");
  const std::string base = "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 3 fragments 2";
  double plainScore = 0, hoistedScore = 0;
  for (const Candidate& c : enumerateSchedules(matmul(2048, ScalarType::F64), h100).candidates) {
    if (c.text == base) plainScore = c.score;
    if (c.text == base + " copies hoisted") hoistedScore = c.score;
  }
  ASSERT_GT(plainScore, 0);
  ASSERT_GT(hoistedScore, 0);
  EXPECT_LT(hoistedScore, plainScore);
}
