// The unsigned type u32 (docs/language.md 2.2b): the reference's arithmetic modulo 2^32, unsigned
// division, comparisons, min and max above 2^31, and the conversions to and from every type; the
// emitted code in the host emulation against the reference on the same values (a float to u32
// saturating as cvt.rzi.u32 does); accumulations into u32 under every schedule (sums that wrap past
// 2^32, max= and min= of values an i32 comparison would order the other way); a reduction and scans
// over u32; the random inputs; the frontend's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "frontend/Frontend.h"
#include "ir/Scan.h"
#include "reference/HostArgs.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// Every operator and conversion of u32, one output each.
Kernel arithmetic(int64_t n) {
  return fromSource(R"(kernel arith(n: int, s: u32, a: u32[n], b: u32[n], k: i32[n], big: i64[n], f: f32[n], d: f64[n],
                     out sum: u32[n], out diff: u32[n], out prod: u32[n], out quot: u32[n], out rem: u32[n],
                     out neg: u32[n], out lo: u32[n], out hi: u32[n], out less: i32[n],
                     out fromk: u32[n], out frombig: u32[n], out fromf: u32[n], out fromd: u32[n],
                     out toi: i32[n], out tol: i64[n], out tof: f32[n], out tod: f64[n]) {
    for i in 0..n {
      sum[i] = a[i] + b[i] + s;
      diff[i] = a[i] - b[i];
      prod[i] = a[i] * b[i] + 1u32;
      quot[i] = a[i] / max(b[i], 1);
      rem[i] = a[i] % max(b[i], 1);
      neg[i] = -a[i];
      lo[i] = min(a[i], b[i]);
      hi[i] = max(a[i], abs(b[i]));
      less[i] = select(a[i] < b[i], 1, 0) + select(a[i] >= 2147483648u32, 2, 0);
      fromk[i] = u32(k[i]);
      frombig[i] = u32(big[i]);
      fromf[i] = u32(f[i]);
      fromd[i] = u32(d[i]);
      toi[i] = i32(a[i]);
      tol[i] = i64(a[i]);
      tof[i] = f32(a[i]);
      tod[i] = f64(a[i]) / 2.0;
    }
  })", {{"n", n}});
}

constexpr int kN = 6;
const uint32_t kA[kN] = {4294967295u, 3000000000u, 5u, 0u, 2147483648u, 123456789u};
const uint32_t kB[kN] = {1u, 5u, 3000000000u, 7u, 2147483648u, 4294967295u};
const int32_t kK[kN] = {-1, INT32_MIN, 5, 0, INT32_MAX, -7};
const int64_t kBig[kN] = {4294967297LL, -1, (int64_t(1) << 40) + 9, 0, -4294967296LL + 3, 12};
const float kF[kN] = {-2.5f, 3.9f, 5e9f, std::numeric_limits<float>::quiet_NaN(), 4294967040.0f, 1e-3f};
const double kD[kN] = {-0.0, 4294967295.9, 4294967296.0, -1e300, 2147483648.5, 7.99};

HostArgs arithmeticArgs(const Kernel& k) {
  HostArgs args(k);
  args.setScalarInt("s", 10);
  for (int i = 0; i < kN; ++i) {
    args.array("a").setInt(i, kA[i]);
    args.array("b").setInt(i, kB[i]);
    args.array("k").setInt(i, kK[i]);
    args.array("big").setInt(i, kBig[i]);
    args.array("f").set(i, kF[i]);
    args.array("d").set(i, kD[i]);
  }
  return args;
}

const char* kAccumulations = R"(
kernel counts(n: int, bins: int, bin: i32[n], w: u32[n], inout c: u32[bins]) {
  for i in 0..n { c[bin[i]] += w[i]; }
}
kernel top(n: int, bins: int, bin: i32[n], v: u32[n], inout t: u32[bins]) {
  for i in 0..n { t[bin[i]] max= v[i]; }
}
kernel bottom(n: int, bins: int, bin: i32[n], v: u32[n], inout t: u32[bins]) {
  for i in 0..n { t[bin[i]] min= v[i]; }
}
kernel unsignedbins(n: int, bins: int, bin: u32[n], inout c: u32[bins]) {
  for i in 0..n { c[i32(bin[i])] += 1; }
}
)";

// Every way an accumulation's updates can meet (docs/rtcgc.md, "Accumulations").
const char* const kAccumulationSchedules[] = {
    "i: grid.x, thread.x 80",
    "i: grid.x, thread.x 80; accumulate: shared",
    "i: serial, grid.x 3, thread.x 80; aggregate: warp",
    "i: serial, grid.x 3, thread.x 64; accumulate: shared; aggregate: warp",
    "i: serial, grid.x 3, thread.x 80; accumulate: shared slices 3",
    "i: serial, grid.x 2, thread.x 96; accumulate: shared copies 3; aggregate: warp",
    "i: grid.x, thread.x 64, reg 3; accumulate: shared slices 2 copies 2"};

// n updates into 37 bins: weights and values near 2^32 (an i32 comparison would order them below
// the small ones), and starting values just below 2^32 so that each bin's sum wraps.
HostArgs accumulationArgs(const Kernel& k, bool sums) {
  HostArgs args(k);
  fillInputs(k, args, 11);
  const int64_t n = args.array("bin").size(), bins = 37;
  for (int64_t i = 0; i < n; ++i) {
    args.array("bin").setInt(i, (i * 7) % bins);
    const uint32_t big = 4294967295u - uint32_t(i * 2654435761u % 1000003u);
    args.array(sums ? "w" : "v").setInt(i, i % 3 == 0 ? int64_t(i % 5) : int64_t(big));
  }
  for (int64_t b = 0; b < bins; ++b) args.array(sums ? "c" : "t").setInt(b, sums ? 4294967290u - b : 2147483647 + b);
  return args;
}

}  // namespace

TEST(U32, ReferenceArithmeticWrapsAndComparesUnsigned) {
  const Kernel k = arithmetic(kN);
  HostArgs args = arithmeticArgs(k);
  runReference(k, args);
  for (int i = 0; i < kN; ++i) {
    const uint32_t a = kA[i], b = kB[i], bb = std::max(b, 1u);
    EXPECT_EQ(args.array("sum").getInt(i), int64_t(uint32_t(a + b + 10u))) << i;
    EXPECT_EQ(args.array("diff").getInt(i), int64_t(uint32_t(a - b))) << i;
    EXPECT_EQ(args.array("prod").getInt(i), int64_t(uint32_t(a * b + 1u))) << i;
    EXPECT_EQ(args.array("quot").getInt(i), int64_t(a / bb)) << i;
    EXPECT_EQ(args.array("rem").getInt(i), int64_t(a % bb)) << i;
    EXPECT_EQ(args.array("neg").getInt(i), int64_t(uint32_t(0u - a))) << i;
    EXPECT_EQ(args.array("lo").getInt(i), int64_t(std::min(a, b))) << i;
    EXPECT_EQ(args.array("hi").getInt(i), int64_t(std::max(a, b))) << i;
    EXPECT_EQ(args.array("less").getInt(i), (a < b ? 1 : 0) + (a >= 2147483648u ? 2 : 0)) << i;
    EXPECT_EQ(args.array("fromk").getInt(i), int64_t(uint32_t(kK[i]))) << i;
    EXPECT_EQ(args.array("frombig").getInt(i), int64_t(uint32_t(uint64_t(kBig[i])))) << i;
    EXPECT_EQ(args.array("toi").getInt(i), int64_t(int32_t(a))) << i;
    EXPECT_EQ(args.array("tol").getInt(i), int64_t(a)) << i;
    EXPECT_EQ(args.array("tof").get(i), double(float(a))) << i;
    EXPECT_EQ(args.array("tod").get(i), double(a) / 2.0) << i;
  }
  // 4294967295 + 1 + 10 wraps to 10; 3000000000 * 5 + 1 is 15000000001 modulo 2^32; 5 - 3000000000
  // is 1294967301; 3000000000 / 5 is 600000000 (an i32 of its bits would be negative).
  EXPECT_EQ(args.array("sum").getInt(0), 10);
  EXPECT_EQ(args.array("prod").getInt(1), 15000000001LL % 4294967296LL);
  EXPECT_EQ(args.array("diff").getInt(2), 1294967301);
  EXPECT_EQ(args.array("quot").getInt(1), 600000000);
  EXPECT_EQ(args.array("lo").getInt(2), 5);  // min(5, 3000000000): unsigned
  EXPECT_EQ(args.array("hi").getInt(5), 4294967295LL);
  // Floats: truncated toward zero, saturated at 0 and 2^32 - 1, NaN 0.
  const int64_t fromf[kN] = {0, 3, 4294967295LL, 0, 4294967040LL, 0};
  const int64_t fromd[kN] = {0, 4294967295LL, 4294967295LL, 0, 2147483648LL, 7};
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(args.array("fromf").getInt(i), fromf[i]) << i;
    EXPECT_EQ(args.array("fromd").getInt(i), fromd[i]) << i;
  }
}

TEST(U32, HostEmulationOfArithmeticAndConversionsMatchesTheReference) {
  const Kernel k = arithmetic(kN);
  for (const char* s : {"i: grid.x, thread.x 32", "i: serial, thread.x 4"})
    EXPECT_EQ(checkOnHostWith(k, s, arithmeticArgs(k), 0.0), "") << s;
  // On random inputs over the whole range (the fill's), at a size no block divides.
  const Kernel big = arithmetic(1003);
  HostArgs args(big);
  fillInputs(big, args, 5);
  args.setScalarInt("s", 4000000000LL);
  EXPECT_EQ(checkOnHostWith(big, "i: grid.x, thread.x 64", args, 0.0), "");
  // The emitted code: unsigned literals, unsigned int values, the saturating float conversions.
  const std::string cuda = emitCuda(k, planSchedule(k, *parseSchedule("i: grid.x, thread.x 32").schedule)).source;
  EXPECT_NE(cuda.find("2147483648u"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("__float2uint_rz("), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("__double2uint_rz("), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("const unsigned int* __restrict__ a"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("0u - "), std::string::npos) << cuda;
}

TEST(U32, AccumulationsWrapAndOrderUnsignedUnderEverySchedule) {
  const SizeBindings sizes = {{"n", 1003}, {"bins", 37}};
  const Kernel counts = fromSource(kAccumulations, "counts", sizes);
  const Kernel top = fromSource(kAccumulations, "top", sizes);
  const Kernel bottom = fromSource(kAccumulations, "bottom", sizes);
  // The reference's sums wrap modulo 2^32 and its max= / min= compare unsigned.
  {
    HostArgs args = accumulationArgs(counts, true);
    std::vector<uint32_t> want(37);
    for (int64_t b = 0; b < 37; ++b) want[b] = uint32_t(args.array("c").getInt(b));
    for (int64_t i = 0; i < 1003; ++i) want[(i * 7) % 37] += uint32_t(args.array("w").getInt(i));
    runReference(counts, args);
    int wrapped = 0;
    for (int64_t b = 0; b < 37; ++b) {
      EXPECT_EQ(args.array("c").getInt(b), int64_t(want[b])) << b;
      wrapped += want[b] < 4294967290u - 36u;
    }
    EXPECT_GT(wrapped, 30);
    HostArgs targs = accumulationArgs(top, false), bargs = accumulationArgs(bottom, false);
    std::vector<uint32_t> hi(37), lo(37);
    for (int64_t b = 0; b < 37; ++b) hi[b] = lo[b] = uint32_t(targs.array("t").getInt(b));
    for (int64_t i = 0; i < 1003; ++i) {
      const uint32_t v = uint32_t(targs.array("v").getInt(i));
      hi[(i * 7) % 37] = std::max(hi[(i * 7) % 37], v);
      lo[(i * 7) % 37] = std::min(lo[(i * 7) % 37], v);
    }
    runReference(top, targs);
    runReference(bottom, bargs);
    for (int64_t b = 0; b < 37; ++b) {
      EXPECT_EQ(targs.array("t").getInt(b), int64_t(hi[b])) << b;
      EXPECT_GT(hi[b], 4000000000u) << b;  // above 2^31: an i32 max would have kept the start
      EXPECT_EQ(bargs.array("t").getInt(b), int64_t(lo[b])) << b;
      EXPECT_LT(lo[b], 5u) << b;
    }
  }
  for (const char* s : kAccumulationSchedules) {
    EXPECT_EQ(checkOnHostWith(counts, s, accumulationArgs(counts, true), 0.0), "") << s;
    EXPECT_EQ(checkOnHostWith(top, s, accumulationArgs(top, false), 0.0), "") << s;
    EXPECT_EQ(checkOnHostWith(bottom, s, accumulationArgs(bottom, false), 0.0), "") << s;
  }
  // The u32 atomics are in the module only where an accumulation of u32 needs them.
  const std::string cuda = emitCuda(counts, planSchedule(counts, *parseSchedule(kAccumulationSchedules[3]).schedule)).source;
  EXPECT_NE(cuda.find("rtcg_atomic_add(unsigned int* p, unsigned int v)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("unsigned int c_copy["), std::string::npos) << cuda;
}

// A u32 index array, converted (an indirect index): the random fill keeps its values in range.
TEST(U32, UnsignedBinsThroughAConversionAndTheRandomFill) {
  const Kernel k = fromSource(kAccumulations, "unsignedbins", {{"n", 1003}, {"bins", 37}});
  HostArgs args(k);
  fillInputs(k, args, 3);
  for (int64_t i = 0; i < 1003; ++i) {
    EXPECT_GE(args.array("bin").getInt(i), 0) << i;
    EXPECT_LT(args.array("bin").getInt(i), 37) << i;
  }
  EXPECT_EQ(checkOnHost(k, "i: serial, grid.x 3, thread.x 80; accumulate: shared; aggregate: warp", 0.0), "");
  // Elsewhere u32 inputs span the whole range: values above 2^31 appear.
  const Kernel a = arithmetic(1003);
  HostArgs b(a);
  fillInputs(a, b, 9);
  int high = 0;
  for (int64_t i = 0; i < 1003; ++i) high += b.array("a").getInt(i) >= 2147483648LL;
  EXPECT_GT(high, 400);
  EXPECT_LT(high, 600);
}

TEST(U32, ReductionsWrapAndCompareUnsigned) {
  const char* src = R"(kernel red(m: int, n: int, x: u32[m, n], out s: u32[m], out hi: u32[m], out lo: u32[m], out p: u32[m]) {
    for i in 0..m {
      s[i] = sum(j in 0..n, x[i, j]);
      hi[i] = max(j in 0..n, x[i, j]);
      lo[i] = min(j in 0..n, x[i, j] + 1u32);
      p[i] = product(j in 0..n, x[i, j]);
    }
  })";
  const Kernel small = fromSource(src, "red", {{"m", 2}, {"n", 3}});
  HostArgs args(small);
  const uint32_t x[6] = {4294967295u, 2u, 3u, 3000000000u, 5u, 2147483648u};
  for (int i = 0; i < 6; ++i) args.array("x").setInt(i, x[i]);
  runReference(small, args);
  EXPECT_EQ(args.array("s").getInt(0), 4);  // 2^32 - 1 + 2 + 3, modulo 2^32
  EXPECT_EQ(args.array("s").getInt(1), int64_t(uint32_t(3000000000u + 5u + 2147483648u)));
  EXPECT_EQ(args.array("hi").getInt(0), 4294967295LL);
  EXPECT_EQ(args.array("hi").getInt(1), 3000000000LL);
  EXPECT_EQ(args.array("lo").getInt(0), 0);  // (2^32 - 1) + 1 wraps to 0, the smallest
  EXPECT_EQ(args.array("lo").getInt(1), 6);
  EXPECT_EQ(args.array("p").getInt(0), int64_t(uint32_t(4294967295u * 2u * 3u)));
  EXPECT_EQ(args.array("p").getInt(1), int64_t(uint32_t(3000000000u * 5u * 2147483648u)));
  // Emitted: serial, split across a block's threads (shuffles and shared memory), unrolled.
  const Kernel k = fromSource(src, "red", {{"m", 5}, {"n", 301}});
  for (const char* s : {"i: grid.x, thread.x 32; j: serial", "i: grid.x; j: serial, thread.x 64",
                        "i: grid.x, thread.y 4; j: serial, unroll 2, thread.x 32, unroll 4"})
    EXPECT_EQ(checkOnHost(k, s, 0.0), "") << s;
}

TEST(U32, ScansOfEveryOperator) {
  for (const char* op : {"sum", "max", "min", "product"})
    for (const char* end : {"i + 1", "i"}) {
      const std::string src = std::string("kernel scan(n: int, x: u32[n], out y: u32[n]) {\n  for i in 0..n { y[i] = ") + op +
                              "(j in 0.." + end + ", x[j]); }\n}\n";
      const Kernel k = fromSource(src, "scan", {{"n", 1003}});
      ASSERT_TRUE(recogniseScan(k, 0).has_value()) << op;
      for (const char* s : {"scan: lookback threads 64 items 3", "scan: lines lanes 32 items 3 threads 64",
                            "scan: lookback threads 64 items 3 layout warp"})
        EXPECT_EQ(checkOnHost(k, s, 0.0), "") << op << " " << end << ": " << s;
    }
  // The reference's one pass: a running maximum of values above 2^31 and a sum that wraps.
  const Kernel k = fromSource("kernel scan(n: int, x: u32[n], out y: u32[n], out z: u32[n]) {\n"
                              "  for i in 0..n { y[i] = max(j in 0..i + 1, x[j]); }\n"
                              "  for i in 0..n { z[i] = sum(j in 0..i + 1, x[j]); }\n}\n",
                              "scan", {{"n", 4}});
  HostArgs args(k);
  const uint32_t x[4] = {5u, 3000000000u, 7u, 2000000000u};
  for (int i = 0; i < 4; ++i) args.array("x").setInt(i, x[i]);
  runReference(k, args);
  const int64_t y[4] = {5, 3000000000LL, 3000000000LL, 3000000000LL};
  const int64_t z[4] = {5, 3000000005LL, 3000000012LL, 5000000012LL - 4294967296LL};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(args.array("y").getInt(i), y[i]) << i;
    EXPECT_EQ(args.array("z").getInt(i), z[i]) << i;
  }
}

// NVRTC (no GPU needed) compiles the u32 modules for sm_80 and sm_90: unsigned literals and
// conversions, the unsigned atomics beside the warp aggregation's templates and in shared memory,
// the scans' u32 identities and status words ahead of their templates.
TEST(U32, NvrtcCompilesForSm80AndSm90) {
  const SizeBindings sizes = {{"n", 1003}, {"bins", 37}};
  const Kernel counts = fromSource(kAccumulations, "counts", sizes);
  const Kernel top = fromSource(kAccumulations, "top", sizes);
  const Kernel scan = fromSource("kernel scan(n: int, x: u32[n], out y: u32[n]) { for i in 0..n { y[i] = max(j in 0..i, x[j]); } }",
                                 "scan", {{"n", 1003}});
  const std::vector<std::pair<const Kernel*, const char*>> modules = {
      {nullptr, "i: grid.x, thread.x 32"},
      {&counts, "i: serial, grid.x 3, thread.x 64; accumulate: shared; aggregate: warp"},
      {&top, "i: serial, grid.x 2, thread.x 96; accumulate: shared slices 2 copies 3; aggregate: warp"},
      {&scan, "scan: lookback threads 64 items 3"},
      {&scan, "scan: lookback threads 64 items 3 layout warp"},
      {&scan, "scan: lines lanes 32 items 3 threads 64"}};
  const Kernel arith = arithmetic(1003);
  for (const auto& [kernel, schedule] : modules) {
    const Kernel& k = kernel ? *kernel : arith;
    const SchedulePlan p = planSchedule(k, *parseSchedule(schedule).schedule);
    ASSERT_TRUE(p.ok()) << schedule << ": " << p.reasons[0];
    const EmittedModule m = emitCuda(k, p);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileResult c = compileCuda(m.source, k.name + ".cu", arch, nvrtcOptions());
      EXPECT_TRUE(c.success) << arch << " " << schedule << "\n" << c.log << "\n" << m.source;
    }
  }
}
