// The 8-bit storage integers i8 and u8 and the s8 tensor-core arithmetic (mma.sync m16n8k32):
// the reference's conversions (low 8 bits), the emitted code in the host emulation against the
// reference at sizes no tile divides and reduction lengths no step divides, NVRTC for sm_80 and
// sm_90 (no GPU needed), and the plan's refusals with their reasons.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "ir/Counts.h"
#include "reference/HostArgs.h"
#include "reference/Reference.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "FullTests.h"
#include "SourceKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// Every conversion to and from i8 and u8: from i32 and i64 (low 8 bits), bool, literals; to i32,
// f32, f64 and f16; lets and selects of 8-bit values.
Kernel conversions(int64_t n) {
  return fromSource(R"(kernel conv(n: int, x: i8[n], u: u8[n], k: i32[n], big: i64[n],
                               out y: i8[n], out z: u8[n], out m: i32[n], out f: f32[n], out h: f16[n]) {
    for i in 0..n {
      let v = x[i];
      y[i] = select(i32(v) > 0, v, i8(k[i] * 37));
      z[i] = select(i % 3 == 0, u8(big[i] * 1000003), select(i % 3 == 1, u8(i32(x[i])), 255));
      m[i] = i32(x[i]) * 1000 + i32(u[i]) + i32(i8(k[i])) + i32(u8(i % 2 == 0));
      f[i] = f32(x[i]) * 0.5 + f32(u[i]);
      h[i] = f16(u[i]);
    }
  })", {{"n", n}});
}

// An i8 x i8 -> i32 contraction, both operands contiguous along k (B transposed), with an
// epilogue and an i8 output saturated to its range.
Kernel gemm(int64_t m, int64_t n, int64_t K) {
  return fromSource(R"(kernel gemm_i8(m: int, n: int, K: int, a: i8[m, K], bt: i8[n, K], out c: i32[m, n]) {
    for i in 0..m, j in 0..n {
      c[i, j] = sum(k in 0..K, i32(a[i, k]) * i32(bt[j, k])) + i - 3 * j;
    }
  })", {{"m", m}, {"n", n}, {"K", K}});
}

}  // namespace

TEST(Int8, ReferenceKeepsTheLowEightBits) {
  Kernel k = conversions(4);
  HostArgs args(k);
  const int8_t x[] = {-128, 127, -1, 5};
  const uint8_t u[] = {0, 255, 128, 7};
  const int32_t kk[] = {7, -7, 300, 1000};
  const int64_t big[] = {3, 10, -1, 255};
  for (int i = 0; i < 4; ++i) {
    args.array(k.findParam("x")).setInt(i, x[i]);
    args.array(k.findParam("u")).setInt(i, u[i]);
    args.array(k.findParam("k")).setInt(i, kk[i]);
    args.array(k.findParam("big")).setInt(i, big[i]);
  }
  runReference(k, args);
  const HostArray& y = args.array(k.findParam("y"));
  const HostArray& z = args.array(k.findParam("z"));
  const HostArray& m = args.array(k.findParam("m"));
  // y: x where positive, else the low byte of 37 k: 259 -> 3, 11100 -> 92 (0x2b5c), -259 -> -3.
  EXPECT_EQ(y.getInt(0), int8_t(7 * 37));
  EXPECT_EQ(y.getInt(1), 127);
  EXPECT_EQ(y.getInt(2), int8_t(300 * 37));
  EXPECT_EQ(y.getInt(3), 5);
  // z: u8(big * 1000003), u8(i32(x)), 255, u8(big * 1000003).
  EXPECT_EQ(z.getInt(0), uint8_t(3 * 1000003));
  EXPECT_EQ(z.getInt(1), 127);
  EXPECT_EQ(z.getInt(2), 255);
  EXPECT_EQ(z.getInt(3), uint8_t(255 * 1000003));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(m.getInt(i), x[i] * 1000 + u[i] + int8_t(kk[i]) + (i % 2 == 0)) << i;
  EXPECT_EQ(args.array(k.findParam("f")).get(1), 127 * 0.5 + 255);
  EXPECT_EQ(args.array(k.findParam("h")).get(2), 128.0);
}

TEST(Int8, HostEmulationOfConversionsAndStagedTilesMatchesTheReference) {
  EXPECT_EQ(checkOnHost(conversions(37), printSchedule(defaultSchedule(conversions(37))), 1e-5), "");
  Kernel g = gemm(37, 21, 45);
  EXPECT_EQ(checkOnHost(g, printSchedule(defaultSchedule(g)), 0), "");
  EXPECT_EQ(checkOnHost(g, "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8; k: serial, unroll 4; shared: a, bt", 0),
            "");
}

TEST(Int8, NvrtcCompilesForSm80AndSm90) {
  Kernel g = gemm(37, 21, 45);
  for (const Kernel& k : {conversions(37), g}) {
    EmittedModule m = emitCuda(k, defaultSchedule(k));
    EXPECT_NE(m.source.find("signed char"), std::string::npos) << m.source;
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileResult c = compileCuda(m.source, k.name + ".cu", arch, nvrtcOptions());
      EXPECT_TRUE(c.success) << arch << "\n" << c.log << "\n" << m.source;
    }
  }
  EmittedModule m = emitCuda(g, *parseSchedule("mma: s8 m16n8k32 warps 2x2 tile 1x2 k 64 stages 3").schedule);
  EXPECT_NE(m.source.find("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"), std::string::npos) << m.source;
  for (const char* arch : {"sm_80", "sm_90"}) {
    CudaCompileResult c = compileCuda(m.source, "gemm_i8.cu", arch, nvrtcOptions());
    EXPECT_TRUE(c.success) << arch << "\n" << c.log << "\n" << m.source;
  }
}

// The s8 arithmetic at sizes no block tile divides (M = 37, N = 21) and reduction lengths no step
// (nor the instruction's k = 32) divides (K = 45, 72, 76): without stages, with cp.async stages
// (copies of 16 bytes where K keeps the rows 16-byte aligned, K = 64 + 16; of 8 bytes at K = 72, 4
// at K = 76; else byte by byte), larger warp tiles, and the shared epilogue. The inputs span the
// whole i8 range.
TEST(Int8, S8MmaMatchesTheReferenceExactly) {
  const std::vector<std::string> schedules = {
      "mma: s8 m16n8k32 warps 1x1 tile 1x1 k 32",
      "mma: s8 m16n8k32 warps 2x2 tile 1x2 k 64 stages 3",
      "mma: s8 m16n8k32 warps 2x1 tile 2x3 k 32 stages 2 epilogue shared",
      "mma: s8 m16n8k32 warps 1x2 tile 2x1 k 128 stages 4",
  };
  rtcgtest::CaseSample sample(6);
  for (auto [m, n, K] : {std::tuple<int64_t, int64_t, int64_t>{37, 21, 45}, {37, 21, 80}, {37, 21, 72}, {50, 33, 76}}) {
    Kernel g = gemm(m, n, K);
    for (const std::string& text : schedules) {
      std::vector<std::string> reasons = validateSchedule(g, *parseSchedule(text).schedule);
      ASSERT_TRUE(reasons.empty()) << text << ": " << reasons[0];
      if (sample.keep()) EXPECT_EQ(checkOnHost(g, text, 0), "") << m << "x" << n << "x" << K << " " << text;
    }
  }
  // The copy of each K: the widest cp.async its rows' alignment allows, and no wider one.
  const Schedule staged = *parseSchedule(schedules[1]).schedule;
  const std::vector<std::string> calls{"rtcg_cp_async16(&", "rtcg_cp_async8(&", "rtcg_cp_async4(&"};
  for (auto [K, widest] : {std::pair<int64_t, size_t>{80, 0}, {72, 1}, {76, 2}}) {
    const std::string src = emitCuda(gemm(37, 21, K), staged).source;
    EXPECT_NE(src.find(calls[widest]), std::string::npos) << K;
    for (size_t w = 0; w < widest; ++w) EXPECT_EQ(src.find(calls[w]), std::string::npos) << K << " " << calls[w];
    if (widest > 0) EXPECT_EQ(checkOnHost(gemm(37, 21, K), schedules[1], 0), "") << K;  // whatever the sample kept
  }
  const std::string odd = emitCuda(gemm(37, 21, 45), staged).source;  // byte by byte
  for (const std::string& call : calls) EXPECT_EQ(odd.find(call), std::string::npos) << call;
}

// Hopper's warpgroup MMA on s8 (m64nNk32, s32 accumulators): exact at sizes no tile divides and
// reduction lengths no step divides, with cp.async rings, the shared epilogue, 128-byte swizzled
// tiles, TMA (K = 80, 160: 16-byte rows) and a producer warpgroup; NVRTC compiles it for sm_90a.
TEST(Int8, S8WgmmaMatchesTheReferenceExactly) {
  const std::vector<std::string> schedules = {
      "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 64 stages 3",
      "mma: s8 wgmma m64n32k32 warpgroups 2x1 k 128 stages 4 epilogue shared",
      "mma: s8 wgmma m64n48k32 warpgroups 1x2 k 128 stages 3 swizzle 128",
      "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 2 swizzle 128 tma",
      "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma producer",
  };
  // The last size divides every block tile and step: the cp.async rings copy whole runs without bounds.
  for (auto [m, n, K] : {std::tuple<int64_t, int64_t, int64_t>{37, 21, 80}, {70, 50, 160}, {50, 33, 77}, {128, 192, 256}}) {
    Kernel g = gemm(m, n, K);
    for (const std::string& text : schedules) {
      const bool tma = text.find("tma") != std::string::npos;
      std::vector<std::string> reasons = validateSchedule(g, *parseSchedule(text).schedule, deviceScheduleLimits(227 * 1024, 1024));
      if (tma && K % 16 != 0) continue;  // TMA needs 16-byte rows (refused with its reason)
      ASSERT_TRUE(reasons.empty()) << text << ": " << reasons[0];
      ScheduleLimits limits = deviceScheduleLimits(227 * 1024, 1024);
      EXPECT_EQ(checkOnHost(g, text, 0, limits), "") << m << "x" << n << "x" << K << " " << text;
    }
  }
  Kernel g = gemm(37, 21, 80);
  EmittedModule m = emitCuda(g, *parseSchedule(schedules[2]).schedule, deviceScheduleLimits(227 * 1024, 1024));
  EXPECT_NE(m.source.find("wgmma.mma_async.sync.aligned.m64n48k32.s32.s8.s8"), std::string::npos) << m.source;
  CudaCompileResult c = compileCuda(m.source, "gemm_i8.cu", "sm_90a", nvrtcOptions());
  EXPECT_TRUE(c.success) << c.log << "\n" << m.source;
  // The integer shapes: N = 8, 16, 24 and multiples of 16 to 256.
  ScheduleParseResult bad = parseSchedule("mma: s8 wgmma m64n40k32 warpgroups 1x1 k 64 stages 3");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("s8 wgmma N must be 8, 16, 24 or a multiple of 16 from 32 to 256, not 40"), std::string::npos)
      << bad.error;
  EXPECT_FALSE(parseSchedule("mma: s8 wgmma m64n272k32 warpgroups 1x1 k 64 stages 3").ok());
}

// s8's widest shapes, m64n240k32 and m64n256k32 (a 128 x 256 block tile of two warpgroups, 128
// accumulators a thread, as CUTLASS's fastest INT8 tiles): exact at sizes no tile divides, with
// TMA and the shared epilogue; NVRTC compiles m64n256k32 for sm_90a.
TEST(Int8, S8WgmmaTakesTheWidestIntegerShapes) {
  const std::vector<std::string> schedules = {
      "mma: s8 wgmma m64n256k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma epilogue shared",
      "mma: s8 wgmma m64n256k32 warpgroups 2x1 k 128 stages 3 swizzle 128 tma",
      "mma: s8 wgmma m64n240k32 warpgroups 1x1 k 64 stages 2",
  };
  const ScheduleLimits limits = deviceScheduleLimits(227 * 1024, 1024);
  Kernel g = gemm(150, 300, 160);
  for (const std::string& text : schedules) {
    ASSERT_TRUE(parseSchedule(text).ok()) << text;
    std::vector<std::string> reasons = validateSchedule(g, *parseSchedule(text).schedule, limits);
    ASSERT_TRUE(reasons.empty()) << text << ": " << reasons[0];
    EXPECT_EQ(checkOnHost(g, text, 0, limits), "") << text;
  }
  EmittedModule m = emitCuda(g, *parseSchedule(schedules[0]).schedule, limits);
  EXPECT_NE(m.source.find("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8"), std::string::npos);
  CudaCompileResult c = compileCuda(m.source, "gemm_i8.cu", "sm_90a", nvrtcOptions());
  EXPECT_TRUE(c.success) << c.log;
}

TEST(Int8, S8NeedsBothOperandsAlongTheReductionAndI8Operands) {
  Kernel notAlongK = fromSource(R"(kernel g(n: int, a: i8[n, n], b: i8[n, n], out c: i32[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, i32(a[i, k]) * i32(b[k, j])); }
  })", {{"n", 64}});
  std::vector<std::string> reasons;
  const NestSchedule s = parseSchedule("mma: s8 m16n8k32 warps 1x1 tile 1x1 k 32").schedule->nests[0];
  EXPECT_FALSE(planMma(notAlongK, 0, s, {}, reasons));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("'s8' loads its fragments with ldmatrix, which has no 8-bit transpose: 'i32(b[k, j])' must be "
                            "contiguous along the reduction index 'k'"),
            std::string::npos)
      << reasons[0];
  // The space offers no s8 candidate then; the general nest compiler still computes it.
  SpaceOptions o;
  o.maxCandidates = 16;
  for (const Candidate& c : enumerateSchedules(notAlongK, o).candidates)
    EXPECT_NE(c.schedule.nests[0].mma.arith, MmaArith::S8) << c.text;
  Kernel unsignedOperands = fromSource(R"(kernel g(n: int, a: u8[n, n], b: u8[n, n], out c: i32[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, i32(a[i, k]) * i32(b[j, k])); }
  })", {{"n", 64}});
  reasons.clear();
  EXPECT_FALSE(planMma(unsignedOperands, 0, s, {}, reasons));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("'s8' multiplies i8 values: both operands must be i32(i8 load)"), std::string::npos)
      << reasons[0];
}

// The tuner's sample of the i8 GEMM's space (large enough for mma blocks to fill an H200's
// multiprocessors, no tile dividing it): s8 candidates among them, and each sampled candidate's
// code in the host emulation exactly equal to the reference.
TEST(Int8, SpaceSampleWithS8CandidatesMatchesTheReference) {
  Kernel g = gemm(300, 260, 77);
  SpaceOptions o;
  o.maxCandidates = 24;
  o.seed = 5;
  Space space = enumerateSchedules(g, o);
  int s8 = 0;
  rtcgtest::CaseSample sample(6);
  for (const Candidate& c : space.candidates) {
    const bool mma = c.schedule.nests[0].mma.arith == MmaArith::S8;
    // The first three s8 candidates and a sample of the others (all under RTCG_FULL_TESTS=1).
    if (mma ? s8++ < 3 || rtcgtest::fullTests() : sample.keep()) EXPECT_EQ(checkOnHost(g, c.text, 0), "") << c.text;
  }
  EXPECT_GT(s8, 0);
}

// An integer contraction has no floating-point operations but its integer ones count (the CPU
// reference's sample is sized by them; `rtcgc run` reports their rate).
TEST(Int8, IntegerOperationsAreCountedApart) {
  Kernel g = gemm(300, 200, 1000);
  const FloatOpsByPrecision ops = floatOpsByPrecision(g);
  EXPECT_EQ(ops.total(), 0);
  EXPECT_EQ(floatOps(g), 0);
  // Per output: 1000 products and 1000 combines, then `+ i - 3 * j`.
  EXPECT_EQ(ops.integer, 300.0 * 200 * (2 * 1000 + 3));
  EXPECT_EQ(arithmeticOps(g), int64_t(300) * 200 * 2003);
}

// `group G`: a batched contraction's tiles in groups of G M tiles, M fastest within a group (the
// last group the M tiles left where G does not divide them), on mma.sync, wgmma with TMA and a
// persistent grid; exact at sizes no tile divides. Unbatched blocks take M from blockIdx.y: refused.
TEST(Int8, GroupedTilesMatchTheReferenceExactly) {
  Kernel k = fromSource(R"(kernel bgemm(nb: int, m: int, n: int, K: int, a: i8[nb, m, K], b: i8[nb, n, K], out c: i32[nb, m, n]) {
    for q in 0..nb, i in 0..m, j in 0..n {
      c[q, i, j] = sum(k in 0..K, i32(a[q, i, k]) * i32(b[q, j, k]));
    }
  })", {{"nb", 3}, {"m", 150}, {"n", 70}, {"K", 160}});
  const ScheduleLimits limits = deviceScheduleLimits(227 * 1024, 1024, 2, 228 * 1024);  // 2 multiprocessors: persistent
  for (const char* text : {"mma: s8 m16n8k32 warps 2x2 tile 1x1 k 32 group 2",
                           "mma: s8 m16n8k32 warps 2x2 tile 1x1 k 32 group 4 epilogue shared",
                           "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma group 2",
                           "mma: s8 wgmma m64n32k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma group 3 epilogue shared",
                           "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma producer persistent group 2"}) {
    SCOPED_TRACE(text);
    ScheduleParseResult parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    EXPECT_EQ(printNestSchedule(parsed.schedule->nests[0]), text);
    std::vector<std::string> reasons = validateSchedule(k, *parsed.schedule, limits);
    ASSERT_TRUE(reasons.empty()) << reasons[0];
    EXPECT_NE(emitCuda(k, *parsed.schedule, limits).source.find("tile_group"), std::string::npos);
    EXPECT_EQ(checkOnHost(k, text, 0, limits), "");
  }
  std::vector<std::string> reasons =
      validateSchedule(gemm(150, 70, 80), *parseSchedule("mma: s8 m16n8k32 warps 2x2 tile 1x1 k 32 group 2").schedule, limits);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("'group' orders a linear tile index"), std::string::npos) << reasons[0];
  EXPECT_FALSE(parseSchedule("mma: s8 m16n8k32 warps 2x2 tile 1x1 k 32 group 1").ok());
}
