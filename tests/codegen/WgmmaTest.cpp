// Hopper's warpgroup MMA (`mma: ... wgmma`, schedule/Mma.h): the clause's text and its refusals,
// the plan's canonical tile layouts, the space offering it on sm_90 only, the emitted code in the
// host emulation (which decodes the matrix descriptors against the emulated shared memory, so a
// wrong layout, LBO or SBO gives wrong values) at sizes no tile divides, in every operand layout,
// and NVRTC compiles to sm_90a cubins without local memory.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/Space.h"
#include "FullTests.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// C = A B with A (m x kk) along K and B (kk x n) along N (gemm_bf16's layouts, rectangular).
const char* kRect = R"(
kernel rect(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel rect_t(m: int, n: int, kk: int, a: f16[kk, m], b: f16[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, f32(a[k, i]) * f32(b[j, k])) + 1;
  }
}
kernel rect32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel rect32_nt(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
kernel rect32_t(m: int, n: int, kk: int, a: f32[kk, m], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[k, i] * b[j, k]);
  }
}
kernel rect32_tn(m: int, n: int, kk: int, a: f32[kk, m], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[k, i] * b[k, j]) - 1;
  }
}
)";

Kernel rect(const char* name, int64_t m, int64_t n, int64_t kk) {
  return fromSource(kRect, name, {{"m", m}, {"n", n}, {"kk", kk}});
}

const ScheduleLimits kSm90 = deviceScheduleLimits(227 * 1024, 1024);

std::optional<MmaPlan> plan(const Kernel& k, const std::string& text, std::vector<std::string>& reasons) {
  auto parsed = parseSchedule(text);
  EXPECT_TRUE(parsed.schedule) << text << ": " << parsed.error;
  if (!parsed.schedule) return std::nullopt;
  return planMma(k, 0, parsed.schedule->nests[0], kSm90, reasons);
}

// A kernel of kRect at (m, n, kk) under `schedule`, run in the host emulation against the
// reference within `tolerance`.
struct Case {
  const char* kernel;
  int64_t m, n, kk;
  const char* schedule;
  double tolerance;
};

void expectOnHost(const Case& c) {
  EXPECT_EQ(checkOnHost(rect(c.kernel, c.m, c.n, c.kk), c.schedule, c.tolerance, kSm90), "")
      << c.kernel << " " << c.m << "x" << c.n << "x" << c.kk << " " << c.schedule;
}

}  // namespace

TEST(Wgmma, ClausePrintsAndParsesBack) {
  for (const char* text : {"mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4",
                           "mma: f16 wgmma m64n8k16 warpgroups 1x1 k 16 stages 2 epilogue shared",
                           "mma: tf32 wgmma m64n256k8 warpgroups 1x2 k 32 stages 3",
                           "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128",
                           "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 3 swizzle 128 epilogue shared",
                           "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma",
                           "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma epilogue shared",
                           "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma",
                           "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma producer"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text << ": " << parsed.error;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
    EXPECT_GT(parsed.schedule->nests[0].mma.wgmmaN, 0);
  }
}

TEST(Wgmma, BadTextIsRefusedWithAColumnAndAReason) {
  struct Bad {
    const char* text;
    size_t column;
    const char* reason;
  };
  const Bad bad[] = {
      {"mma: f64 wgmma m64n64k16 warpgroups 1x1 k 16", 6, "wgmma multiplies bf16, f16, tf32, tf32x3 or s8 operands, not 'f64'"},
      {"mma: bf16 wgmma m64n100k16 warpgroups 1x1 k 16", 17, "wgmma N must be a multiple of 8 from 8 to 256, not 100"},
      {"mma: bf16 wgmma m64n264k16 warpgroups 1x1 k 16", 17, "not 264"},
      {"mma: bf16 wgmma m64n64k8 warpgroups 1x1 k 16", 17, "expected a wgmma shape 'm64nNk16' for 'bf16'"},
      {"mma: tf32 wgmma m64n64k16 warpgroups 1x1 k 16", 17, "expected a wgmma shape 'm64nNk8' for 'tf32'"},
      {"mma: bf16 wgmma m32n64k16 warpgroups 1x1 k 16", 17, "expected a wgmma shape"},
      {"mma: bf16 wgmma m64n64k16 warps 1x1 k 16", 27, "expected 'warpgroups' after the wgmma shape"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 3x3 k 16", 38, "at most 8 in all"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 24", 44, "mma k must be a multiple of 16"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 64", 64,
       "rtcg swizzles wgmma's tiles by 128 bytes only, not 64"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle", 63, "expected the swizzle's bytes (128)"},
      {"mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3 swizzle 128", 53, "'swizzle' lays out wgmma's tiles"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 tma", 56, "'tma' fills wgmma's swizzled tiles"},
      {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 128 producer", 68,
       "'producer' is a warpgroup that issues the TMA boxes: it needs 'tma' before it"},
  };
  for (const Bad& b : bad) {
    auto parsed = parseSchedule(b.text);
    EXPECT_FALSE(parsed.schedule) << b.text;
    EXPECT_EQ(parsed.column, b.column) << b.text << ": " << parsed.error;
    EXPECT_NE(parsed.error.find(b.reason), std::string::npos) << b.text << ": " << parsed.error;
  }
}

TEST(Wgmma, PlanLayoutsAndReasons) {
  std::vector<std::string> reasons;
  // gemm_bf16's layouts: A K-major (a row group's cores adjacent along k), B MN-major (trans-b).
  auto p = plan(rect("rect", 200, 136, 72), "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(p->isWgmma());
  EXPECT_EQ(p->threads, 256);
  EXPECT_EQ(p->blockM, 128);
  EXPECT_EQ(p->blockN, 128);
  EXPECT_FALSE(p->a.mnMajor);
  EXPECT_TRUE(p->b.mnMajor);
  EXPECT_EQ(p->a.lbo, 128);
  EXPECT_EQ(p->a.sbo, 64 * 8 * 2);   // 8 rows of the whole step
  EXPECT_EQ(p->b.lbo, 128 * 8 * 2);  // 8 k of the whole N tile
  EXPECT_EQ(p->b.sbo, 128);
  EXPECT_EQ(p->tileBytes, 4 * (128 * 64 + 128 * 64) * 2);
  // TF32 takes K-major tiles only: matmul's b[k, j] (along N) makes the product transposed, whose A
  // (b, along M now) comes from registers out of an MN-major tile and whose B (a) is K-major.
  p = plan(rect("rect32", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(p->transposed);
  EXPECT_TRUE(p->registerA());
  EXPECT_TRUE(p->a.mnMajor);
  EXPECT_FALSE(p->b.mnMajor);
  EXPECT_EQ(p->c.mExtent, 136);
  EXPECT_EQ(p->c.nExtent, 200);
  EXPECT_EQ(p->b.sbo, 32 * 8 * 4);
  EXPECT_EQ(p->splitBuffers, 0);
  // A along M: registers without transposing; both along M / N: B is still copied value by value.
  p = plan(rect("rect32_t", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_FALSE(p->transposed);
  EXPECT_TRUE(p->registerA());
  p = plan(rect("rect32_tn", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(p->registerA());
  EXPECT_TRUE(p->b.kMajor);
  EXPECT_FALSE(p->b.mnMajor);
  // tf32x3: the small tiles after the rings, B's only where A comes from registers, one buffer
  // (each step waits for its wgmma: partial sums), a partial sum per step; A from registers waits too.
  p = plan(rect("rect32", 200, 136, 72), "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_EQ(p->splitBuffers, 1);
  // One partial sum per step: of the step's 12 wgmma (4 fragment-k x 3 products), one starts it.
  {
    const std::string src = emitCuda(rect("rect32", 200, 136, 72),
                                     *parseSchedule("mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3").schedule,
                                     kSm90).source;
    const std::string body = src.substr(src.find("__global__"));
    auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = body.find(what); at != std::string::npos; at = body.find(what, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count("_rk_zero("), 1u);
    EXPECT_EQ(count("_rk("), 11u);
  }
  EXPECT_FALSE(p->wgmmaInFlight());
  EXPECT_EQ(p->ring.ahead(), 2);
  EXPECT_EQ(p->smallOffset, 3 * (p->a.buffer + p->b.buffer));
  EXPECT_EQ(p->tileBytes, (3 * (p->a.buffer + p->b.buffer) + p->b.buffer) * 4);
  EXPECT_EQ(p->mmaPerStep, 4 * 3);
  // TF32 from registers overlaps its steps with two register sets where they fit (pingPong), and
  // waits for each step where they do not (4 warpgroups of m64n128: 512 x 136 registers) or with 2 stages.
  p = plan(rect("rect32", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", reasons);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->wgmmaInFlight());
  EXPECT_TRUE(p->pingPong());
  EXPECT_EQ(wgmmaPlanRegisters(*p), 32 + 2 * 16 + 40);
  p = plan(rect("rect32", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 2", reasons);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->pingPong());
  p = plan(rect("rect32", 400, 536, 72), "mma: tf32 wgmma m64n128k8 warpgroups 2x2 k 32 stages 3", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_FALSE(p->pingPong());
  EXPECT_FALSE(p->wgmmaInFlight());
  // tf32x3's partial sums double the accumulators: m64n256 is past 255 registers a thread.
  reasons.clear();
  EXPECT_FALSE(plan(rect("rect32", 200, 136, 72), "mma: tf32x3 wgmma m64n256k8 warpgroups 1x1 k 32 stages 3", reasons));
  EXPECT_NE(fmt::format("{}", fmt::join(reasons, "; ")).find("with tf32x3's partial sums), more than 255"),
            std::string::npos) << fmt::format("{}", fmt::join(reasons, "; "));
  p = plan(rect("rect32_nt", 200, 136, 72), "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_FALSE(p->registerA());
  EXPECT_EQ(p->splitBuffers, 1);
  EXPECT_EQ(p->tileBytes, 3 * (p->a.buffer + p->b.buffer) * 4);
  // Refusals: no stages, registers past a multiprocessor, shared memory, arithmetic of the nest.
  struct Refused {
    const char* kernel;
    const char* text;
    const char* reason;
  };
  const Refused refused[] = {
      {"rect", "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64", "wgmma reads tiles copied by cp.async"},
      {"rect", "mma: bf16 wgmma m64n256k16 warpgroups 2x2 k 16 stages 2",
       "4 warpgroups of m64n256 need about 168 registers per thread (128 accumulators), 86016 per block"},
      {"rect", "mma: bf16 wgmma m64n256k16 warpgroups 1x2 k 128 stages 4", "bytes of shared memory, more than"},
      {"rect", "mma: f16 wgmma m64n64k16 warpgroups 1x1 k 16 stages 2", "'f16' multiplies f16 values"},
      {"rect32", "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 16 stages 2", "'bf16' multiplies bf16 values"},
  };
  for (const Refused& r : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(rect(r.kernel, 200, 136, 72), r.text, reasons)) << r.text;
    std::string all = fmt::format("{}", fmt::join(reasons, "; "));
    EXPECT_NE(all.find(r.reason), std::string::npos) << r.text << ": " << all;
  }
}

// `swizzle 128`: the swizzled layouts' strides (K-major SBO 1024 and LBO unused; MN-major LBO 1024
// between atoms along M / N, SBO per 8 k), 1024-byte multiples, and the refusals where a tile
// does not fill 128-byte rows.
TEST(Wgmma, Swizzle128PlanAndReasons) {
  std::vector<std::string> reasons;
  auto p = plan(rect("rect", 200, 136, 72), "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128",
                reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_EQ(p->tiles, TileForm::Swizzle128);
  EXPECT_FALSE(p->a.mnMajor);
  EXPECT_TRUE(p->b.mnMajor);
  EXPECT_EQ(p->a.lbo, 16);
  EXPECT_EQ(p->a.sbo, 1024);
  EXPECT_EQ(p->b.lbo, 64 * 128);  // a column of atoms: the step's 64 k rows of 128 bytes
  EXPECT_EQ(p->b.sbo, 1024);
  EXPECT_EQ(p->a.buffer * 2 % 1024, 0);
  EXPECT_EQ(p->b.buffer * 2 % 1024, 0);
  p = plan(rect("rect32", 200, 136, 72), "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 64 stages 3 swizzle 128", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_EQ(p->b.sbo, 1024);
  struct Refused {
    const char* kernel;
    const char* text;
    const char* reason;
  };
  const Refused refused[] = {
      {"rect", "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 32 stages 4 swizzle 128",
       "'swizzle 128' needs 128-byte rows of k: k a multiple of 64 for bf16 (the A tile is K-major), not 32"},
      {"rect", "mma: bf16 wgmma m64n96k16 warpgroups 1x1 k 64 stages 3 swizzle 128",
       "the B tile is MN-major and a warpgroup's N is 96, not a multiple of 64"},
      {"rect32", "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 16 stages 3 swizzle 128", "k a multiple of 32 for tf32"},
  };
  for (const Refused& r : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(rect(r.kernel, 200, 136, 72), r.text, reasons)) << r.text;
    std::string all = fmt::format("{}", fmt::join(reasons, "; "));
    EXPECT_NE(all.find(r.reason), std::string::npos) << r.text << ": " << all;
  }
}

// `tma`: each operand's tensor map and boxes (K-major: a column of atoms per box; MN-major: 64
// values of M / N by the step's k), the mbarriers after the tiles, and the refusals.
TEST(Wgmma, TmaPlanAndReasons) {
  std::vector<std::string> reasons;
  auto p = plan(rect("rect", 200, 136, 72), "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma",
                reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(p->ring.tma());
  EXPECT_EQ(p->a.tma.inner, 72);
  EXPECT_EQ(p->a.tma.outer, 200);
  EXPECT_EQ(p->a.tma.pitchBytes, 144);
  EXPECT_EQ(p->a.tma.boxInner, 64);
  EXPECT_EQ(p->a.tma.boxOuter, 128);
  EXPECT_EQ(p->a.tma.boxes, 1);
  EXPECT_EQ(p->b.tma.inner, 136);
  EXPECT_EQ(p->b.tma.outer, 72);
  EXPECT_EQ(p->b.tma.boxOuter, 64);
  EXPECT_EQ(p->b.tma.boxes, 2);
  EXPECT_EQ(p->barrierOffset, p->tileBytes);
  EXPECT_EQ(p->sharedBytes, p->tileBytes + 4 * 8);
  struct Refused {
    const char* kernel;
    int64_t m, n, kk;
    const char* text;
    const char* reason;
  };
  const Refused refused[] = {
      {"rect", 61, 45, 29, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 128 tma",
       "its rows are 58 bytes apart, not a multiple of 16"},
      {"rect32_tn", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma",
       "'tma' cannot copy B ('b[k, j]'): TF32 tiles are K-major"},
      {"rect", 200, 136, 72, "mma: bf16 wgmma m64n64k16 warpgroups 8x1 k 64 stages 2 swizzle 128 tma",
       "a box of 512 rows, more than TMA's 256"},
  };
  for (const Refused& r : refused) {
    reasons.clear();
    EXPECT_FALSE(plan(rect(r.kernel, r.m, r.n, r.kk), r.text, reasons)) << r.text;
    std::string all = fmt::format("{}", fmt::join(reasons, "; "));
    EXPECT_NE(all.find(r.reason), std::string::npos) << r.text << ": " << all;
  }
  // A sub-range of an array is not its whole extent: TMA's zero fill would not be the domain's.
  reasons.clear();
  Kernel sub = fromSource(R"(
kernel sub(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n - 8, f32(a[i, k]) * f32(b[k, j]));
  }
})", "sub", {{"n", 200}});
  auto parsed = parseSchedule("mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 128 tma");
  EXPECT_FALSE(planMma(sub, 0, parsed.schedule->nests[0], kSm90, reasons));
  EXPECT_NE(fmt::format("{}", fmt::join(reasons, "; ")).find("read whole by the contraction's indices"),
            std::string::npos);
}

TEST(Wgmma, ExplainSaysTheLayouts) {
  Kernel k = rect("rect", 200, 136, 72);
  NestPlanResult r = planNest(k, 0, parseSchedule("mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 32 stages 3").schedule->nests[0], kSm90);
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("bf16 wgmma.mma_async m64n64k16 (sm_90a): block tile 128x64 (2 warpgroups of 64x64)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("A K-major (LBO 128, SBO 512 bytes); B MN-major (LBO 1024, SBO 128 bytes)"), std::string::npos)
      << text;
}

// Every operand layout (A and B along K or along M / N), bf16 / f16 and TF32, 16-byte copies
// (sizes multiples of 8) and value-by-value ones (odd sizes), partial tiles, both epilogues.
TEST(HostEmulation, WgmmaMatchesTheReference) {
  const Case cases[] = {
      {"rect", 200, 136, 72, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4", 1e-5},
      {"rect", 200, 136, 72, "mma: bf16 wgmma m64n64k16 warpgroups 1x2 k 32 stages 3 epilogue shared", 1e-5},
      {"rect", 61, 45, 29, "mma: bf16 wgmma m64n48k16 warpgroups 1x1 k 16 stages 2", 1e-5},
      {"rect_t", 200, 136, 72, "mma: f16 wgmma m64n32k16 warpgroups 2x2 k 32 stages 3", 1e-5},
      {"rect_t", 61, 45, 29, "mma: f16 wgmma m64n16k16 warpgroups 1x2 k 16 stages 2 epilogue shared", 1e-5},
      {"rect32", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3", 2e-3},
      {"rect32", 61, 45, 29, "mma: tf32 wgmma m64n24k8 warpgroups 1x1 k 8 stages 2 epilogue shared", 2e-3},
      {"rect32_t", 200, 136, 72, "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 16 stages 4", 2e-3},
      {"rect32_tn", 61, 45, 29, "mma: tf32 wgmma m64n32k8 warpgroups 1x2 k 16 stages 3", 2e-3},
  };
  rtcgtest::CaseSample sample(4);
  for (const Case& c : cases)
    if (sample.keep()) expectOnHost(c);
  // The examples as the GPU probe runs them, at a size no tile divides.
  EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 72}}),
                        "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4", 1e-5, kSm90), "");
  EXPECT_EQ(checkOnHost(exampleKernel("matmul.rtcg", "matmul", {{"n", 37}}),
                        "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 16 stages 3 epilogue shared", 2e-3, kSm90), "");
}

// `swizzle 128` in every operand layout and arithmetic, at sizes no tile divides: 16-byte copies
// and value-by-value ones into the swizzled atoms, k of one and of several atom columns, both
// epilogues. The emulation decodes the swizzled descriptors as the hardware does (the XOR on the
// address), so a wrong chunk, stride or start reads wrong values.
TEST(HostEmulation, WgmmaSwizzle128MatchesTheReference) {
  const Case cases[] = {
      {"rect", 200, 136, 72, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128", 1e-5},
      {"rect", 61, 45, 29, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 128 epilogue shared", 1e-5},
      {"rect", 136, 200, 200, "mma: bf16 wgmma m64n64k16 warpgroups 1x2 k 128 stages 2 swizzle 128", 1e-5},
      {"rect_t", 200, 136, 72, "mma: f16 wgmma m64n64k16 warpgroups 2x2 k 64 stages 3 swizzle 128", 1e-5},
      {"rect_t", 61, 45, 29, "mma: f16 wgmma m64n128k16 warpgroups 1x1 k 128 stages 2 swizzle 128", 1e-5},
      {"rect32", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128", 2e-3},
      {"rect32", 61, 45, 29, "mma: tf32 wgmma m64n24k8 warpgroups 1x1 k 64 stages 2 swizzle 128 epilogue shared", 2e-3},
      {"rect32_t", 200, 136, 72, "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 32 stages 4 swizzle 128", 2e-3},
  };
  for (const Case& c : cases) expectOnHost(c);
  // The examples as the GPU probe runs them, at sizes no tile divides.
  EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 203}}),
                        "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128", 1e-5, kSm90), "");
  EXPECT_EQ(checkOnHost(exampleKernel("matmul.rtcg", "matmul", {{"n", 101}}),
                        "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128", 2e-3, kSm90), "");
}

// `tma` at sizes no tile divides (TMA's zero fill at the arrays' edges), every 16-bit operand layout
// and TF32 along K, 2 to 4 stages, both epilogues. The emulation copies the boxes from its own
// encoding of the tensor maps with the 128-byte swizzle and runs the mbarriers' phases and
// transaction counts, so a wrong box, coordinate, byte count or parity fails (or hangs, and aborts).
TEST(HostEmulation, WgmmaTmaMatchesTheReference) {
  const Case cases[] = {
      {"rect", 200, 136, 72, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma", 1e-5},
      {"rect", 200, 136, 200, "mma: bf16 wgmma m64n64k16 warpgroups 1x2 k 64 stages 2 swizzle 128 tma epilogue shared",
       1e-5},
      {"rect", 136, 200, 200, "mma: bf16 wgmma m64n64k16 warpgroups 2x1 k 128 stages 3 swizzle 128 tma", 1e-5},
      {"rect_t", 200, 136, 72, "mma: f16 wgmma m64n64k16 warpgroups 2x2 k 64 stages 3 swizzle 128 tma", 1e-5},
      {"rect32_nt", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma", 2e-3},
      {"rect32_nt", 100, 60, 36,
       "mma: tf32 wgmma m64n128k8 warpgroups 1x1 k 64 stages 4 swizzle 128 tma epilogue shared", 2e-3},
  };
  for (const Case& c : cases) expectOnHost(c);
  EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 200}}),
                        "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma", 1e-5, kSm90), "");
}

// TF32 stored along M / N through A's registers (MmaPlan::registerA; matmul's layout transposed):
// two register sets over an odd and an even count of steps (pingPong: the loop's second step
// guarded or not) and one (2 stages); tf32x3 (the split of each step's tiles, three wgmma per
// fragment-k, partial sums), at sizes no tile divides, with cp.async and TMA, A from registers
// or from shared memory.
// The emulation gathers the A registers from the warp's lanes as the fragment layout says, so a
// wrong (row, k) per register fails; tf32x3's tolerance fails plain TF32 accuracy (about 5e-4).
TEST(HostEmulation, WgmmaRegisterAAndTf32x3MatchTheReference) {
  const Case cases[] = {
      {"rect32", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma", 2e-3},
      {"rect32", 100, 60, 64, "mma: tf32 wgmma m64n32k8 warpgroups 1x2 k 16 stages 4", 2e-3},
      {"rect32", 61, 45, 29, "mma: tf32 wgmma m64n16k8 warpgroups 1x1 k 8 stages 2", 2e-3},
      {"rect32", 61, 45, 29, "mma: tf32x3 wgmma m64n24k8 warpgroups 1x1 k 8 stages 2", 2e-5},
      {"rect32", 200, 136, 72,
       "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared", 2e-5},
      {"rect32_nt", 100, 60, 36, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128 tma", 2e-5},
      {"rect32_t", 61, 45, 29, "mma: tf32x3 wgmma m64n16k8 warpgroups 1x2 k 16 stages 3", 2e-5},
  };
  for (const Case& c : cases) expectOnHost(c);
  EXPECT_EQ(checkOnHost(exampleKernel("matmul.rtcg", "matmul", {{"n", 101}}),
                        "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128", 2e-5, kSm90), "");
}

// `producer` (warp specialization): the producer warpgroup issues the boxes and (tf32x3) splits the
// landed tiles, the consumers wait on mbarriers and free each stage after the wait that retires
// its wgmma (this step's, or with wait_group 1 the one before); with tf32x3 A from registers or
// from shared memory (the producer splits both tiles), two register sets over an odd count of
// steps, bf16 with wait_group 1 and 0. The emulated TMA writes at issue and wgmma reads shared
// memory at its wait, so a stage refilled before its consumers freed it, or read before it was
// split, gives wrong values; a wrong count or parity hangs.
TEST(HostEmulation, WgmmaProducerMatchesTheReference) {
  const Case cases[] = {
      {"rect32", 200, 136, 72, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer", 2e-5},
      {"rect32_nt", 100, 60, 100, "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 2 swizzle 128 tma producer",
       2e-5},
      {"rect32", 200, 136, 72, "mma: tf32 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer", 2e-3},
      {"rect", 200, 136, 200, "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma producer", 1e-5},
      {"rect_t", 136, 200, 72, "mma: f16 wgmma m64n64k16 warpgroups 1x2 k 64 stages 2 swizzle 128 tma producer", 1e-5},
  };
  for (const Case& c : cases) expectOnHost(c);
}

// The producer's plan: a warpgroup more, a small buffer per stage (tf32x3), three mbarriers a
// stage, setmaxnreg where the block's registers would not fit; refused with `epilogue shared`.
TEST(Wgmma, ProducerPlanAndReasons) {
  std::vector<std::string> reasons;
  Kernel k = exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}});
  auto p = plan(k, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer", reasons);
  ASSERT_TRUE(p) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(p->ring.producer());
  EXPECT_EQ(p->threads, 384);
  EXPECT_EQ(p->consumerThreads, 256);
  EXPECT_EQ(p->splitBuffers, 4);
  EXPECT_EQ(p->producerRegisters, 0);  // 136 registers a thread fit 384 threads
  EXPECT_TRUE(p->orderedIssue);
  EXPECT_EQ(p->sharedBytes, p->barrierOffset + 3 * 4 * 8 + 2 * 8);  // full, empty, ready; two turns
  // m64n128's consumers need about 200: the producer gives up its registers.
  auto wide = plan(k, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer", reasons);
  ASSERT_TRUE(wide) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_EQ(wide->producerRegisters, 40);
  EXPECT_EQ(wide->consumerRegisters, 232);  // (384 x 168 - 128 x 40) / 256, in 8s
  // Without a split: 40 for the producer; TF32 from registers in two sets needs 232.
  auto tf32 = plan(k, "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer", reasons);
  ASSERT_TRUE(tf32) << fmt::format("{}", fmt::join(reasons, "; "));
  EXPECT_TRUE(tf32->pingPong());
  EXPECT_EQ(tf32->sharedBytes, tf32->barrierOffset + 2 * 4 * 8 + 2 * 8);
  EXPECT_EQ(tf32->producerRegisters, 40);
  EXPECT_EQ(tf32->consumerRegisters, 232);
  EXPECT_TRUE(reasons.empty());
  EXPECT_FALSE(plan(k, "mma: tf32x3 wgmma m64n64k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer epilogue shared",
                    reasons));
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("'producer' leaves after its last step"), std::string::npos) << reasons[0];
  // Three warpgroups of m64n256 TF32 from registers with two sets: no register count serves them.
  reasons.clear();
  EXPECT_FALSE(plan(k, "mma: tf32 wgmma m64n256k8 warpgroups 3x1 k 32 stages 4 swizzle 128 tma producer", reasons));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons.back().find("setmaxnreg leaves them"), std::string::npos) << reasons.back();
  NestPlanResult r = planNest(k, 0, parseSchedule("mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 "
                                                  "tma producer").schedule->nests[0], kSm90);
  ASSERT_TRUE(r.plan);
  const std::string text = printPlan(k, *r.plan);
  EXPECT_NE(text.find("(2 warpgroups of 64x128)"), std::string::npos) << text;
  EXPECT_NE(text.find("producer: a warpgroup more (threads 256-383)"), std::string::npos) << text;
  EXPECT_NE(text.find("tf32x3: the producer splits each landed stage's B tile: the big parts are the values truncated"),
            std::string::npos) << text;
  EXPECT_NE(text.find("setmaxnreg: producer 40, consumers 232 registers"), std::string::npos) << text;
}

// NVRTC compiles wgmma modules for sm_90a where the target is sm_90 (compileGenerated's route,
// nvrtcArchFor), with no local memory; other modules keep their architecture.
TEST(Wgmma, NvrtcCompilesForSm90a) {
  EXPECT_EQ(nvrtcArchFor("int x;\n// rtcg-arch: sm_90a (wgmma)\n", "sm_90"), "sm_90a");
  EXPECT_EQ(nvrtcArchFor("int x;\n// rtcg-arch: sm_90a (wgmma)\n", "sm_80"), "sm_80");
  EXPECT_EQ(nvrtcArchFor("int x;\n", "sm_90"), "sm_90");
  struct Case {
    Kernel k;
    const char* schedule;
  };
  const std::vector<Case> cases = {
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}), "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4"},
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}), "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}), "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4"},
      {rect("rect_t", 200, 136, 72), "mma: f16 wgmma m64n64k16 warpgroups 2x1 k 32 stages 3 epilogue shared"},
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}),
       "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128"},
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}),
       "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3 swizzle 128"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}),
       "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128"},
      {rect("rect_t", 200, 136, 72), "mma: f16 wgmma m64n64k16 warpgroups 2x1 k 64 stages 3 swizzle 128 epilogue shared"},
      {exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}}),
       "mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma"},
      {rect("rect32_nt", 4096, 4096, 4096), "mma: tf32 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}),
       "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma epilogue shared"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}),
       "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}),
       "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer"},
      {exampleKernel("matmul.rtcg", "matmul", {{"n", 4096}}),
       "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer"},
  };
  // The swizzled, TMA and producer ones always (the last ten), the others sampled.
  rtcgtest::CaseSample sample(2);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (!sample.keep() && i + 10 < cases.size()) continue;
    EmittedModule m = emitCuda(c.k, *parseSchedule(c.schedule).schedule, kSm90);
    CudaCompileResult r = compileCuda(m.source, c.k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    ASSERT_TRUE(r.success) << c.schedule << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << r.log;
    EXPECT_EQ(r.resources[0].localBytes, 0) << c.schedule << "\n" << r.log;
    EXPECT_LE(r.resources[0].registers, 255);
    // ptxas serializes wgmma it cannot keep asynchronous, and says so in the log.
    EXPECT_EQ(r.log.find("serialized"), std::string::npos) << c.schedule << "\n" << r.log;
    // For plain sm_90 the module refuses itself with the reason.
    CudaCompileResult plain = compileCuda(m.source, c.k.name + ".cu", "sm_90", nvrtcOptions());
    EXPECT_FALSE(plain.success);
    EXPECT_NE(plain.log.find("wgmma schedules need sm_90a"), std::string::npos) << plain.log;
  }
}

// The space offers wgmma on sm_90 only, with `swizzle 128` (and `tma`) where a step fills 128-byte
// rows; the model ranks TMA first for bf16, then the swizzled copies (both measured faster than
// mma.sync, SpaceModel.cpp), and the unswizzled ones below mma.sync.
TEST(Wgmma, SpaceOffersWgmmaOnSm90) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    SpaceOptions o;
    o.device = *archDeviceModel(arch);
    o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock);
    Kernel k = exampleKernel("gemm_bf16.rtcg", "gemm_bf16", {{"n", 4096}});
    Space space = enumerateSchedules(k, o);
    size_t wgmma = 0;
    for (const Candidate& c : space.candidates) wgmma += c.text.find(" wgmma ") != std::string::npos;
    if (std::string(arch) == "sm_80") {
      EXPECT_EQ(wgmma, 0u);
      continue;
    }
    EXPECT_GT(wgmma, 10u);
    ASSERT_FALSE(space.candidates.empty());
    EXPECT_NE(space.candidates[0].text.find(" wgmma "), std::string::npos) << space.candidates[0].text;
    EXPECT_NE(space.candidates[0].text.find(" swizzle 128 tma"), std::string::npos) << space.candidates[0].text;
    for (const Candidate& c : space.candidates) {
      // Unswizzled wgmma ranks below the best mma.sync.
      if (c.text.find("mma: bf16 m16n8k16") != std::string::npos) break;
      EXPECT_NE(c.text.find(" swizzle 128"), std::string::npos) << c.text;
    }
  }
}
