// Sampled reference runs: only some values of each nest's outermost loop run, and the result says
// exactly which output elements they wrote. Those elements must hold exactly the full run's values;
// kernels where sampling is not exact must fall back to the full run and say why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "reference/RandomFill.h"
#include "reference/DslKernels.h"
#include "reference/Reference.h"
#include "support/Error.h"

namespace rtcg {
namespace {

using testing::bindDsl;
using testing::readExample;

// The full and a sampled run of `k` on the same random inputs.
struct FullAndSampled {
  Kernel k;
  HostArgs inputs, fullArgs, sampledArgs;
  ReferenceResult full, sampled;
  FullAndSampled(const Kernel& bound, int64_t sample, uint64_t seed = 1)
      : k(bound), inputs(k), fullArgs(k), sampledArgs(k) {
    fillInputs(k, inputs, 7);
    fullArgs = inputs;
    sampledArgs = inputs;
    ReferenceProgram program(k);
    full = program.run(fullArgs);
    ReferenceOptions o;
    o.sampleOuterValues = sample;
    o.sampleSeed = seed;
    sampled = program.run(sampledArgs, o);
  }
};

// Every computed element equals the full run's (bit for bit: the same code computes it), and the
// output array's elements outside the mask are untouched (the inputs' values, NaN for `out`).
void expectComputedMatchFull(const FullAndSampled& r) {
  ASSERT_EQ(r.sampled.outputs.size(), r.full.outputs.size());
  for (size_t o = 0; o < r.full.outputs.size(); ++o) {
    const ReferenceOutput &f = r.full.outputs[o], &s = r.sampled.outputs[o];
    ASSERT_EQ(s.computed.size(), f.values.size()) << f.name;
    std::vector<double> before = r.inputs.array(f.param).toDoubles();
    int64_t computed = 0;
    for (size_t i = 0; i < f.values.size(); ++i) {
      if (s.computed[i]) {
        ++computed;
        EXPECT_EQ(s.values[i], f.values[i]) << f.name << "[" << i << "]";
      } else if (std::isnan(before[i])) {
        EXPECT_TRUE(std::isnan(s.values[i])) << f.name << "[" << i << "] was written outside the mask";
      } else {
        EXPECT_EQ(s.values[i], before[i]) << f.name << "[" << i << "] was written outside the mask";
      }
    }
    EXPECT_EQ(computed, s.computedCount());
    EXPECT_GT(computed, 0);
    EXPECT_LT(computed, int64_t(f.values.size())) << "the sample ran everything";
  }
}

// The mask of a row-major output whose first dimension is indexed by the outer loop: exactly the
// rows of the sampled values.
void expectRowsOfSample(const ReferenceOutput& out, const std::vector<int64_t>& values, int64_t rows, int64_t cols) {
  std::set<int64_t> sampled(values.begin(), values.end());
  ASSERT_EQ(int64_t(out.computed.size()), rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(out.computed[size_t(r * cols + c)], sampled.count(r) ? 1 : 0) << out.name << " row " << r << " col " << c;
}

TEST(SampleOuterValues, FirstLastSpreadSeededAndDistinct) {
  std::vector<int64_t> v = sampleOuterValues(10, 1010, 40, 1);
  ASSERT_EQ(v.size(), 40u);
  EXPECT_EQ(v.front(), 10);
  EXPECT_EQ(v.back(), 1009);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(std::set<int64_t>(v.begin(), v.end()).size(), v.size());
  // Spread: no gap wider than the stride of the evenly strided half (19 values over 1000).
  for (size_t i = 1; i < v.size(); ++i) EXPECT_LE(v[i] - v[i - 1], 1000 / 19 + 1) << "gap at " << v[i - 1];
  EXPECT_EQ(sampleOuterValues(10, 1010, 40, 1), v);  // deterministic
  EXPECT_NE(sampleOuterValues(10, 1010, 40, 2), v);  // seeded
  // Large samples take every value; the smallest is the two ends.
  std::vector<int64_t> all = sampleOuterValues(0, 7, 4, 1);
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(sampleOuterValues(0, 100, 2, 1), (std::vector<int64_t>{0, 99}));
  EXPECT_TRUE(sampleOuterValues(5, 5, 10, 1).empty());
}

TEST(ReferenceSample, MatmulRowsMatchTheFullRunExactly) {
  const int64_t n = 96;
  FullAndSampled r(bindDsl(readExample("matmul.rtcg"), {{"n", n}}), 12);
  ASSERT_TRUE(r.sampled.sampled) << r.sampled.fullReason;
  EXPECT_FALSE(r.full.sampled);
  EXPECT_TRUE(r.full.outputs[0].computed.empty());
  ASSERT_EQ(r.sampled.outerValues.size(), 1u);
  EXPECT_EQ(r.sampled.outerValues[0], sampleOuterValues(0, n, 12, 1));
  EXPECT_EQ(r.sampled.outerValuesRun, 12);
  EXPECT_EQ(r.sampled.outerValuesTotal, n);
  EXPECT_EQ(r.full.outerValuesRun, n);
  expectComputedMatchFull(r);
  expectRowsOfSample(r.sampled.outputs[0], r.sampled.outerValues[0], n, n);
  EXPECT_EQ(r.sampled.outputs[0].computedCount(), 12 * n);
  // The host array got the same values where computed (rounded to f32, like the full run).
  for (size_t i = 0; i < size_t(n * n); ++i)
    if (r.sampled.outputs[0].computed[i])
      ASSERT_EQ(r.sampledArgs.array("c").get(int64_t(i)), r.fullArgs.array("c").get(int64_t(i)));
}

TEST(ReferenceSample, TriangularOutputDomainRunsInFull) {
  // A symmetric rank-K update writes the lower triangle only: its output is not provably written
  // everywhere, so a sample could not show the elements a GPU kernel leaves unwritten outside it.
  // The run is the full one, and says why.
  const int64_t n = 90, K = 17;
  Kernel k = bindDsl(R"(kernel syrk(n: int, K: int, a: f32[n, K], out c: f32[n, n]) {
    for i in 0..n, j in 0..i + 1 { c[i, j] = sum(k in 0..K, a[i, k] * a[j, k]); }
  })", {{"n", n}, {"K", K}});
  FullAndSampled r(k, 9, 5);
  EXPECT_FALSE(r.sampled.sampled);
  EXPECT_NE(r.sampled.fullReason.find("'c' is not provably written everywhere"), std::string::npos)
      << r.sampled.fullReason;
  EXPECT_TRUE(r.sampled.outputs[0].computed.empty());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = r.sampled.outputs[0].values[size_t(i * n + j)];
      EXPECT_EQ(std::isnan(v), j > i) << i << ", " << j;  // the upper triangle stays poisoned
    }
}

TEST(ReferenceSample, InoutAccumulationMatchesTheFullRun) {
  // rhs[k, i] = rhs[k, i] + ...: each point reads and writes its own element, so sampling k is exact;
  // the unsampled rows keep their inputs.
  const int64_t K = 300, Np = 10;
  FullAndSampled r(bindDsl(readExample("dg_lift.rtcg"), {{"K", K}, {"Np", Np}, {"Nfp", 6}}), 20, 3);
  ASSERT_TRUE(r.sampled.sampled) << r.sampled.fullReason;
  expectComputedMatchFull(r);
  expectRowsOfSample(r.sampled.outputs[0], r.sampled.outerValues[0], K, Np);
}

TEST(ReferenceSample, OuterLoopOverColumnsMarksColumns) {
  // The outer loop indexes the second dimension of the output: the mask is columns, not rows.
  const int64_t m = 40, n = 70;
  Kernel k = bindDsl(R"(kernel t(m: int, n: int, a: f32[m, n], out b: f32[n, m]) {
    for j in 0..m, i in 0..n { b[i, j] = a[j, i]; }
  })", {{"m", m}, {"n", n}});
  FullAndSampled r(k, 8);
  ASSERT_TRUE(r.sampled.sampled) << r.sampled.fullReason;
  expectComputedMatchFull(r);
  std::set<int64_t> cols(r.sampled.outerValues[0].begin(), r.sampled.outerValues[0].end());
  ASSERT_EQ(cols.size(), 8u);
  const std::vector<uint8_t>& mask = r.sampled.outputs[0].computed;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) ASSERT_EQ(mask[size_t(i * m + j)], cols.count(j) ? 1 : 0) << i << ", " << j;
}

TEST(ReferenceSample, IndependentNestsAreBothSampled) {
  Kernel k = bindDsl(R"(kernel two(n: int, a: f32[n, n], out x: f32[n, n], out y: f32[n]) {
    for i in 0..n, j in 0..n { x[i, j] = 2.0 * a[i, j]; }
    for i in 0..n { y[i] = sum(j in 0..n, a[j, i]); }
  })", {{"n", 50}});
  FullAndSampled r(k, 6);
  ASSERT_TRUE(r.sampled.sampled) << r.sampled.fullReason;
  ASSERT_EQ(r.sampled.outerValues.size(), 2u);
  EXPECT_EQ(r.sampled.outerValuesRun, 12);
  expectComputedMatchFull(r);
  expectRowsOfSample(r.sampled.outputs[0], r.sampled.outerValues[0], 50, 50);
  expectRowsOfSample(r.sampled.outputs[1], r.sampled.outerValues[1], 50, 1);
}

// A kernel sampling cannot handle runs in full, names why, and computes the full values.
void expectFallback(const std::string& source, const SizeBindings& sizes, const std::string& why) {
  Kernel k = bindDsl(source, sizes);
  EXPECT_NE(samplingObstacle(k).find(why), std::string::npos) << samplingObstacle(k);
  FullAndSampled r(k, 4);
  EXPECT_FALSE(r.sampled.sampled);
  EXPECT_NE(r.sampled.fullReason.find(why), std::string::npos) << r.sampled.fullReason;
  EXPECT_TRUE(r.sampled.outerValues.empty());
  for (size_t o = 0; o < r.full.outputs.size(); ++o) {
    EXPECT_TRUE(r.sampled.outputs[o].computed.empty());
    EXPECT_EQ(r.sampled.outputs[o].computedCount(), int64_t(r.full.outputs[o].values.size()));
    for (size_t i = 0; i < r.full.outputs[o].values.size(); ++i) {
      const double f = r.full.outputs[o].values[i], s = r.sampled.outputs[o].values[i];
      ASSERT_TRUE(f == s || (std::isnan(f) && std::isnan(s))) << r.full.outputs[o].name << "[" << i << "]";
    }
  }
}

TEST(ReferenceSample, LaterNestReadingAnEarlierNestsOutputFallsBack) {
  // The second nest reads t at rows the sample of the first would leave unwritten.
  expectFallback(R"(kernel chain(n: int, a: f32[n, n], out t: f32[n, n], out c: f32[n, n]) {
    for i in 0..n, j in 0..n { t[i, j] = a[i, j] * a[i, j]; }
    for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, t[k, j]); }
  })", {{"n", 40}}, "nest 2 reads 't', which nest 1 writes");
}

TEST(ReferenceSample, TwoNestsWritingOneArrayFallBack) {
  expectFallback(R"(kernel twice(n: int, a: f32[n, n], inout c: f32[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = a[i, j]; }
    for j in 0..n, i in 0..n { c[i, j] = 2.0 * a[j, i]; }
  })", {{"n", 40}}, "nests 1 and 2 both write 'c'");
}

TEST(ReferenceSample, PartlyWrittenOutputFallsBack) {
  // y[n - 1] is never written: a verifier could not require every element of y to be written.
  expectFallback(R"(kernel part(n: int, x: f32[n], out y: f32[n]) {
    for i in 0..n - 1 { y[i] = x[i] + x[i + 1]; }
  })", {{"n", 300}}, "'y' is not provably written everywhere");
}

TEST(ReferenceSample, SmallOrLooplessKernelsRunInFull) {
  FullAndSampled dot(bindDsl(readExample("dot.rtcg"), {{"n", 1000}}), 64);
  EXPECT_FALSE(dot.sampled.sampled);
  EXPECT_NE(dot.sampled.fullReason.find("no nest has an outer loop"), std::string::npos) << dot.sampled.fullReason;
  EXPECT_EQ(dot.sampled.outputs[0].values, dot.full.outputs[0].values);
  FullAndSampled small(bindDsl(readExample("matmul.rtcg"), {{"n", 100}}), 64);
  EXPECT_FALSE(small.sampled.sampled);
  EXPECT_NE(small.sampled.fullReason.find("at most 100 values"), std::string::npos) << small.sampled.fullReason;
  EXPECT_EQ(small.sampled.outputs[0].values, small.full.outputs[0].values);
}

TEST(ReferenceSample, OuterExtents) {
  Kernel k = bindDsl(R"(kernel e(n: int, a: f32[n], out x: f32[n], out s: f32[1]) {
    for i in 0..n { x[i] = a[i]; }
    s[0] = sum(i in 0..n, a[i]);
  })", {{"n", 77}});
  EXPECT_EQ(ReferenceProgram(k).outerExtents(), (std::vector<int64_t>{77, 1}));
}

TEST(ReferenceSample, RunTimeErrorsInTheSampleAreStillReported) {
  // An indirect index out of range in the last row, which every sample holds.
  Kernel k = bindDsl(R"(kernel g(n: int, idx: i32[n], x: f32[n], out y: f32[n]) {
    for i in 0..n { y[i] = x[idx[i]]; }
  })", {{"n", 500}});
  HostArgs args(k);
  fillInputs(k, args, 1);
  args.array("idx").setInt(499, 500);
  ReferenceOptions o;
  o.sampleOuterValues = 8;
  EXPECT_THROW(ReferenceProgram(k).run(args, o), Error);
}

TEST(ReferenceSample, MatmulSampledRunsASixteenthOfTheRows) {
  // The point of sampling: SGEMM's reference costs the whole n^3; 64 rows of n=1024 cost 1/16.
  // Asserted as the rows and elements computed, not as seconds (a time ratio flakes on a loaded
  // machine); bench/compiler_speed.cpp reports the times.
  Kernel k = bindDsl(readExample("matmul.rtcg"), {{"n", 1024}});
  HostArgs inputs(k);
  fillInputs(k, inputs, 1);
  ReferenceProgram program(k);
  HostArgs a = inputs, b = inputs;
  ReferenceResult full = program.run(a);
  ReferenceOptions o;
  o.sampleOuterValues = 64;
  ReferenceResult sampled = program.run(b, o);
  ASSERT_TRUE(sampled.sampled);
  EXPECT_EQ(sampled.outerValuesRun, 64);
  EXPECT_EQ(sampled.outerValuesTotal, 1024);
  EXPECT_EQ(sampled.outputs[0].computedCount(), 64 * 1024);
  for (size_t i = 0; i < full.outputs[0].values.size(); ++i)
    if (sampled.outputs[0].computed[i]) ASSERT_EQ(sampled.outputs[0].values[i], full.outputs[0].values[i]);
}

}  // namespace
}  // namespace rtcg
