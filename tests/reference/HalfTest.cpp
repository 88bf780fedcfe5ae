// The 16-bit storage types f16 and bf16 on the CPU side: the conversions of rtcg/Half.h against
// independent oracles (GCC's _Float16 for f16; the float bit trick for bf16), the reference
// executor's exact loads and once-rounded stores, random inputs, comparisons and tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/Analysis.h"
#include "ir/Counts.h"
#include "reference/Compare.h"
#include "reference/DslKernels.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "rtcg/Half.h"
#include "tune/Verify.h"

namespace rtcg {
namespace {

using testing::bindDsl;

uint16_t oracleF16(double v) {
  _Float16 h = _Float16(v);  // GCC rounds to nearest even, once
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

uint16_t oracleBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u += 0x7fffu + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

TEST(Half, EveryF16ValueRoundTripsExactly) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    f16 h = f16::fromBits(uint16_t(b));
    double v = double(h);
    if (std::isnan(v)) continue;
    EXPECT_EQ(f16(v).bits, b) << std::hex << b;
    EXPECT_EQ(oracleF16(v), b) << std::hex << b;  // the decoding agrees with GCC's
  }
}

TEST(Half, F16RoundingMatchesGcc) {
  // Midpoints between neighbours (ties to even), points just beside them, subnormals, overflow.
  for (uint32_t b = 0; b < 0x7c00; b += 7) {
    double lo = double(f16::fromBits(uint16_t(b))), hi = double(f16::fromBits(uint16_t(b + 1)));
    for (double v : {(lo + hi) / 2, std::nextafter((lo + hi) / 2, 0.0), std::nextafter((lo + hi) / 2, 1e9)}) {
      EXPECT_EQ(f16(v).bits, oracleF16(v)) << v;
      EXPECT_EQ(f16(-v).bits, oracleF16(-v)) << -v;
    }
  }
  for (double v : {65504.0, 65519.99, 65520.0, 1e6, 1e-8, 2.9802322387695312e-08, 1e-300}) {
    EXPECT_EQ(f16(v).bits, oracleF16(v)) << v;
  }
  EXPECT_EQ(f16(0.1).bits, 0x2e66);
  EXPECT_TRUE(std::isinf(double(f16(65520.0))));
  EXPECT_TRUE(std::isnan(double(f16(std::nan("")))));
}

TEST(Half, Bf16RoundingMatchesTheBitTrick) {
  for (uint32_t b = 0; b < 0x7f80; b += 3) {
    float lo = float(bf16::fromBits(uint16_t(b))), hi = float(bf16::fromBits(uint16_t(b + 1)));
    EXPECT_EQ(bf16(lo).bits, b);
    float mid = float((double(lo) + double(hi)) / 2);  // exact in float: 9 significant bits
    for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      EXPECT_EQ(bf16(v).bits, oracleBf16(v)) << v;
      EXPECT_EQ(bf16(-v).bits, oracleBf16(-v)) << -v;
    }
  }
  EXPECT_EQ(bf16(0.1f).bits, 0x3dcd);
}

TEST(Half, LargeIntegersRoundOnce) {
  // 2^60 + 2^52 + 1 is just above the bf16 midpoint between 2^60 and 2^60 + 2^53; converted to
  // double first it would land on the midpoint and round to even, down.
  const int64_t v = (int64_t(1) << 60) + (int64_t(1) << 52) + 1;
  EXPECT_EQ(intToFloat(v, ScalarType::BF16), std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  EXPECT_EQ(intToFloat(-v, ScalarType::BF16), -(std::ldexp(1.0, 60) + std::ldexp(1.0, 53)));
  EXPECT_EQ(intToFloat(2049, ScalarType::F16), 2048.0);  // tie: to even
  EXPECT_EQ(intToFloat(2051, ScalarType::F16), 2052.0);
  EXPECT_TRUE(std::isinf(intToFloat(int64_t(1) << 40, ScalarType::F16)));
}

TEST(Half, RandomInputsAreExactAndSpread) {
  for (ScalarType t : {ScalarType::F16, ScalarType::BF16}) {
    HostArray a(t, {1000});
    fillRandom(a, 7);
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < a.size(); ++i) {
      double v = a.get(i);
      EXPECT_EQ(roundToFloat(v, t), v);
      EXPECT_TRUE(v >= -1 && v < 1);
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    EXPECT_LT(lo, -0.9);
    EXPECT_GT(hi, 0.9);
    poison(a);
    EXPECT_TRUE(std::isnan(a.get(0)));
    EXPECT_EQ(countUnwritten(a, std::vector<uint8_t>(1000, 0)), 1000);
  }
}

TEST(Half, ReferenceConvertsExactlyAndRoundsStores) {
  Kernel k = bindDsl(R"(kernel k(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n], out h: f16[n, n],
                                 out g: bf16[n], out z: f16[n]) {
    for i in 0..n, j in 0..n {
      let s = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]));
      c[i, j] = s;
      h[i, j] = f16(s);
    }
    for i in 0..n {
      g[i] = bf16(f64(a[i, 0]) / 3.0);
      z[i] = 0.1;
    }
  })", {{"n", 13}});
  HostArgs args(k);
  fillInputs(k, args, 3);
  ReferenceResult r = runReference(k, args);
  const HostArray &a = args.array("a"), &b = args.array("b");
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 13; ++j) {
      double s = 0;
      for (int kk = 0; kk < 13; ++kk) s += a.get(i * 13 + kk) * b.get(kk * 13 + j);
      EXPECT_EQ(r.values("c")[i * 13 + j], s);  // products of 8-bit values: exact in double
      EXPECT_EQ(args.array("h").get(i * 13 + j), double(f16(s)));
    }
  for (int i = 0; i < 13; ++i) {
    EXPECT_EQ(args.array("g").get(i), double(bf16(a.get(i * 13) / 3.0)));
    EXPECT_EQ(args.array("z").get(i), double(f16(0.1)));
  }
  EXPECT_EQ(args.array("h").type(), ScalarType::F16);
}

TEST(Half, CompareReadsSixteenBitOutputs) {
  HostArray h(ScalarType::F16, {4});
  h.assignDoubles({1, 2, 3, 4.001});
  Comparison c = compare(h, {1, 2, 3, 4});
  EXPECT_EQ(c.nonFinite, 0);
  EXPECT_EQ(c.maxAbsError, 0.0);  // 4.001 rounds to 4 in f16
  h.set(3, 4.004);               // the next f16 above 4 is 4.00390625
  EXPECT_NEAR(compare(h, {1, 2, 3, 4}).maxAbsError, 0.00390625, 1e-12);
}

TEST(Half, ToleranceCoversOneRoundingOfTheStore) {
  Kernel f32k = bindDsl(R"(kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } })", {{"n", 8}});
  Kernel f16k = bindDsl(R"(kernel k(n: int, x: f32[n], out y: f16[n]) { for i in 0..n { y[i] = f16(x[i]); } })", {{"n", 8}});
  Kernel bf16k = bindDsl(R"(kernel k(n: int, x: f32[n], out y: bf16[n]) { for i in 0..n { y[i] = bf16(x[i]); } })", {{"n", 8}});
  const double base = verificationTolerance(f32k, 2);  // y
  EXPECT_NEAR(verificationTolerance(f16k, 2), base + 2 * 0x1p-11, 1e-15);
  EXPECT_NEAR(verificationTolerance(bf16k, 2), base + 2 * 0x1p-8, 1e-15);
}

TEST(Half, CountsTwoBytesAndHashesTheType) {
  const char* gemm = R"(kernel g(n: int, a: T[n, n], b: T[n, n], out c: f32[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j])); }
  })";
  auto with = [&](const std::string& t) {
    std::string s = gemm;
    for (size_t p; (p = s.find("T[")) != std::string::npos;) s.replace(p, 1, t);
    return bindDsl(s, {{"n", 100}});
  };
  Kernel bf = with("bf16"), h = with("f16"), f = with("f32");
  EXPECT_EQ(minimalBytes(bf), 2 * 100 * 100 * 2 + 100 * 100 * 4);
  EXPECT_EQ(floatOps(bf), floatOps(f));  // the conversions are not counted
  // The tuning key's kernel hash tells the element types apart.
  EXPECT_NE(structuralHash(bf), structuralHash(h));
  EXPECT_NE(structuralHash(bf), structuralHash(f));
}

}  // namespace
}  // namespace rtcg
