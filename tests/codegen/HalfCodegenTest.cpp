// Emitted code for the 16-bit storage types f16 and bf16: the headers and conversions it uses,
// NVRTC compiles for sm_80 and sm_90 (NVRTC needs no GPU), and the host emulation of staged,
// unstaged, dynamic-shared and streaming schedules against the reference at sizes no tile divides.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/Emitter.h"
#include "codegen/HalfHeaders.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "schedule/TestKernels.h"
#include "FullTests.h"
#include "SourceKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// bf16 inputs, f32 accumulation, an f32 and an f16 output.
Kernel gemm(int64_t n) {
  return fromSource(R"(kernel gemm(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n], out h: f16[n, n]) {
    for i in 0..n, j in 0..n {
      let s = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]));
      c[i, j] = s;
      h[i, j] = f16(s);
    }
  })", {{"n", n}});
}

// Every conversion to and from the 16-bit types, lets and selects of them, folded literals.
Kernel conversions(int64_t n) {
  return fromSource(R"(kernel conv(n: int, x: f16[n], w: bf16[n], k: i32[n], big: i64[n], d: f64[n],
                               out y: f16[n], out z: bf16[n], out e: f64[n], out m: i32[n], out v: f16[n]) {
    for i in 0..n {
      let h = x[i];
      y[i] = select(f32(h) > 0.0, h, f16(w[i]));
      z[i] = bf16(f32(h) * 3.0) ;
      e[i] = f64(w[i]) + f64(x[i]) + f64(bf16(d[i] / 7.0)) + f64(f16(k[i] * 1000)) + f64(bf16(big[i] * 100000000000));
      m[i] = i32(f32(x[i]) * 100.0) + i32(w[i]);
      v[i] = select(i % 2 == 0, 0.1, f16(2049 + i));
    }
  })", {{"n", n}});
}

constexpr double kF16Tolerance = 1e-5 + 2 * 0x1p-11;

}  // namespace

TEST(Half, HeadersOnlyWhereTheTypesAre) {
  EmittedModule m = emitCuda(gemm(9), defaultSchedule(gemm(9)));
  EXPECT_NE(m.source.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_NE(m.source.find("#include <cuda_bf16.h>"), std::string::npos);
  EXPECT_NE(m.source.find("const __nv_bfloat16* __restrict__"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("__bfloat162float("), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("__float2half_rn("), std::string::npos) << m.source;
  EmittedModule plain = emitCuda(matmul(9), defaultSchedule(matmul(9)));
  EXPECT_EQ(plain.source.find("#include"), std::string::npos);
  // A kernel with only a bf16 value (no such array) still includes its header.
  Kernel onlyLet = fromSource(R"(kernel r(n: int, x: f32[n], out y: f32[n]) {
    for i in 0..n { let b = bf16(x[i]); y[i] = f32(b); }
  })", {{"n", 5}});
  EmittedModule l = emitCuda(onlyLet, defaultSchedule(onlyLet));
  EXPECT_NE(l.source.find("#include <cuda_bf16.h>"), std::string::npos);
  EXPECT_EQ(l.source.find("#include <cuda_fp16.h>"), std::string::npos);
}

TEST(Half, AsyncCopiesOfSixteenBitTilesAreRefusedWithTheReason) {
  Schedule s = *parseSchedule("i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, unroll 4; shared: a, b; "
                              "buffers: 2; copy: async").schedule;
  auto reasons = validateSchedule(gemm(32), s);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("'copy: async' copies 4, 8 or 16 bytes per cp.async, and the tile of 'a' is copied one "
                            "2-byte bf16 element at a time"), std::string::npos) << reasons[0];
}

TEST(Half, NvrtcCompilesForSm80AndSm90) {
  const std::vector<std::string> schedules = {
      "", "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a^T, b; buffers: 2",
      "i: grid.y, thread.y 8; j: grid.x, thread.x 16; k: serial, unroll 4; stores: streaming"};
  for (const Kernel& k : {gemm(37), conversions(37)})
    for (const std::string& text : schedules) {
      if (k.name == "conv" && !text.empty()) continue;  // one nest without reductions: the default
      Schedule s = text.empty() ? defaultSchedule(k) : *parseSchedule(text).schedule;
      EmittedModule m = emitCuda(k, s);
      for (const char* arch : {"sm_80", "sm_90"}) {
        CudaCompileResult c = compileCuda(m.source, k.name + ".cu", arch, nvrtcOptions());
        EXPECT_TRUE(c.success) << arch << " " << text << "\n" << c.log << "\n" << m.source;
      }
    }
}

TEST(Half, HostEmulationMatchesTheReference) {
  EXPECT_EQ(checkOnHost(conversions(37), printSchedule(defaultSchedule(conversions(37))), kF16Tolerance), "");
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {37, 20}) {
    Kernel k = gemm(n);
    EXPECT_EQ(checkOnHost(k, printSchedule(defaultSchedule(k)), kF16Tolerance), "") << n;
    for (const char* text :
         {"i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b",
          "i: grid.y, thread.y 4, reg 4; j: grid.x, reg 2, thread.x 4, reg 4; k: serial, unroll 4; shared: a^T, b; "
          "buffers: 2",
          "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, thread.z 4; shared: a, b",
          "i: grid.y, thread.y 8; j: grid.x, thread.x 16; k: serial, unroll 4; stores: streaming"})
      EXPECT_EQ(sample.keep() ? checkOnHost(k, text, kF16Tolerance) : "", "") << n << " " << text;
  }
}

// A deterministic sample of the space of a bf16 x f16 product stored in f16 (the tuner's sample:
// the best predicted, each family of choices, seeded picks), at n = 37 (no tile divides it):
// every candidate's emitted code in the host emulation against the reference; a few by default,
// all of them under RTCG_FULL_TESTS=1.
TEST(Half, SpaceSampleMatchesTheReference) {
  Kernel k = fromSource(R"(kernel g(n: int, a: bf16[n, n], b: f16[n, n], out c: f16[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = f16(sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]))); }
  })", {{"n", 37}});
  SpaceOptions o;
  o.maxCandidates = 24;
  o.seed = 3;
  Space space = enumerateSchedules(k, o);
  ASSERT_GE(space.candidates.size(), 12u);
  bool staged = false;
  rtcgtest::CaseSample sample(6);
  for (const Candidate& c : space.candidates) {
    staged = staged || !c.schedule.nests[0].shared.empty();
    EXPECT_FALSE(c.schedule.nests[0].asyncCopy) << c.text;  // never cp.async of 2-byte tiles
    if (sample.keep()) EXPECT_EQ(checkOnHost(k, c.text, kF16Tolerance), "") << c.text;
  }
  EXPECT_TRUE(staged);
}

TEST(Half, DynamicSharedTilesOfTwoByteElements) {
  // Both operands whole (one block covers every i and j): 2 x 120 x 120 bf16 values, above 48 KiB.
  const std::string text = "i: grid.y, thread.y 16, reg 8; j: grid.x, thread.x 16, reg 8; k: serial; shared: a, b";
  ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  Kernel k = gemm(120);
  Schedule s = *parseSchedule(text).schedule;
  ASSERT_TRUE(validateSchedule(k, s, limits).empty());
  EmittedModule m = emitCuda(k, s, limits);
  EXPECT_GT(m.launches[0].dynamicSharedBytes, 48u * 1024) << m.source;
  EXPECT_NE(m.source.find("extern __shared__ __align__(16) __nv_bfloat16 rtcg_smem_bf16[];"), std::string::npos)
      << m.source;
  if (rtcgtest::fullTests()) EXPECT_EQ(checkOnHost(k, text, kF16Tolerance, limits), "");
  CudaCompileResult c = compileCuda(m.source, "gemm.cu", "sm_90", nvrtcOptions());
  EXPECT_TRUE(c.success) << c.log;
}

// The bf16 conversions of rtcg's cuda_bf16.h for NVRTC below sm_80 are C on the bits: compiled for
// the host with the CUDA intrinsics they call (rounding toward zero written out), they must round
// exactly as the reference (rtcg/Half.h) does. (The f16 ones are PTX cvt instructions.)
TEST(Half, Bf16HeaderConversionsRoundLikeTheReference) {
  const std::string shims = R"(#include <cfloat>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <cstring>
#include ")" RTCG_SOURCE_DIR R"(/include/rtcg/Half.h"
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
#define __CUDA_ARCH__ 700
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long l; std::memcpy(&l, &d, 8); return l; }
inline double __longlong_as_double(long long l) { double d; std::memcpy(&d, &l, 8); return d; }
inline float __double2float_rz(double d) {
  float f = (float)d;
  if (std::isinf(f) && !std::isinf(d)) return std::copysign(FLT_MAX, f);
  return std::fabs((double)f) > std::fabs(d) ? std::nextafter(f, 0.0f) : f;
}
inline double __ll2double_rz(long long v) {
  double d = (double)v;
  return std::fabs((long double)d) > std::fabs((long double)v) ? std::nextafter(d, 0.0) : d;
}
inline long long __double2ll_rz(double d) { return (long long)d; }
template <class T> T __ldg(const T* p) { return *p; }
template <class T> void __stcs(T* p, T v) { *p = v; }
)";
  const std::string driver = R"(
int main() {
  int bad = 0;
  auto check = [&](unsigned short got, double v, const char* what) {
    if (got != rtcg::bf16(v).bits && !(v != v)) { if (++bad < 10) std::printf("%s %.17g: %x\n", what, v, got); }
  };
  for (unsigned long long b = 0; b < (1ull << 32); b += 65521) {
    float f; unsigned u = (unsigned)b; std::memcpy(&f, &u, 4);
    check(__float2bfloat16_rn(f).__x, f, "float");
    double d = (double)f * (1.0 + 0x1p-30), e = std::nextafter((double)f, 0.0);
    check(__double2bfloat16(d).__x, d, "double");
    check(__double2bfloat16(e).__x, e, "double");
  }
  for (long long i = -70000; i < 70000; i += 7) check(__int2bfloat16_rn((int)i).__x, (double)i, "int");
  for (int s = 0; s < 63; ++s)
    for (long long j : {1ll, 3ll, 5ll, 0x7fffll}) {
      long long v = (1ll << s) + (j << (s > 20 ? s - 20 : 0)) + 1;
      check(__ll2bfloat16_rn(v).__x, rtcg::half_detail::roundToOdd(v), "ll");
      check(__ll2bfloat16_rn(-v).__x, rtcg::half_detail::roundToOdd(-v), "ll");
    }
  std::printf("%d mismatches\n", bad);
  return bad != 0;
}
)";
  std::string header;
  for (const auto& [name, text] : nvrtcHalfHeaders())
    if (name == "cuda_bf16.h") header = text;
  ASSERT_FALSE(header.empty());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("rtcg_bf16_{}", getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.cpp") << shims << header << driver;
  const std::string cmd = fmt::format("g++ -std=c++20 -O1 -w -o {0}/t {0}/t.cpp > {0}/log 2>&1 && {0}/t >> {0}/log 2>&1",
                                      dir.string());
  int rc = std::system(cmd.c_str());
  std::ifstream log(dir / "log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << text;
  std::filesystem::remove_all(dir);
}
