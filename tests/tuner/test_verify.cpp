// Verification of candidate outputs: the rule a candidate must pass before its time counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "driver/Pipeline.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "support/Error.h"
#include "tune/TuningKeyFor.h"
#include "tune/Verify.h"

using namespace rtcg;

namespace {

Kernel bind(const std::string& source, const SizeBindings& sizes) {
  Diagnostics diags;
  SourceText src{"t.rtcg", source};
  std::optional<Kernel> k = frontKernel(src, "", diags);
  std::optional<Kernel> b = k ? bindAndProve(*k, sizes, diags) : std::nullopt;
  EXPECT_TRUE(b) << renderDiagnostics(diags, src);
  return *b;
}

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }
})";

// Runs the reference on the tuning inputs, as the tuner does, and returns (gpu-like args, expected).
std::pair<HostArgs, std::vector<ExpectedOutput>> referenceRun(const Kernel& k) {
  HostArgs in = tuningInputs(k, 1, tuningScalars(k, 1));
  HostArgs ref = in;
  ReferenceResult r = runReference(k, ref);
  std::vector<ExpectedOutput> expected;
  for (const ReferenceOutput& o : r.outputs) expected.push_back(expectedOutput(o));
  return {ref, expected};  // `ref` holds the outputs rounded to their element types, like a GPU's
}

}  // namespace

TEST(Verify, ToleranceScalesWithReductionLength) {
  EXPECT_DOUBLE_EQ(verificationTolerance(bind(kMatmul, {{"n", 64}}), 3), 1e-5);
  double big = verificationTolerance(bind(kMatmul, {{"n", 4096}}), 3);
  EXPECT_NEAR(big, 1e-5 * std::sqrt(8192.0 / 256), 1e-9);
  Kernel f64 = bind("kernel k(n: int, x: f64[n], out y: f64[n]) { for i in 0..n { y[i] = 2.0 * x[i]; } }", {{"n", 10}});
  EXPECT_DOUBLE_EQ(verificationTolerance(f64, 2), 1e-12);
  Kernel ints = bind("kernel k(n: int, x: i32[n], out y: i32[n]) { for i in 0..n { y[i] = 2 * x[i]; } }", {{"n", 10}});
  EXPECT_EQ(verificationTolerance(ints, 2), 0.0);
}

// The precision policy widens the f32 rule where tensor cores round operands (Verify.h), with the
// same scaling by the reduction length; f64 and integers are the same under every policy.
TEST(Verify, ToleranceFollowsThePrecisionPolicy) {
  Kernel small = bind(kMatmul, {{"n", 64}}), big = bind(kMatmul, {{"n", 4096}});
  EXPECT_DOUBLE_EQ(verificationTolerance(small, 3, Precision::Ieee), 1e-5);
  EXPECT_DOUBLE_EQ(verificationTolerance(small, 3, Precision::Tf32x3), 4e-5);
  EXPECT_DOUBLE_EQ(verificationTolerance(small, 3, Precision::Tf32), 2e-3);
  EXPECT_NEAR(verificationTolerance(big, 3, Precision::Tf32x3), 4e-5 * std::sqrt(8192.0 / 256), 1e-9);
  Kernel f64 = bind("kernel k(n: int, x: f64[n], out y: f64[n]) { for i in 0..n { y[i] = 2.0 * x[i]; } }", {{"n", 10}});
  EXPECT_DOUBLE_EQ(verificationTolerance(f64, 2, Precision::Tf32), 1e-12);
}

TEST(Verify, CorrectOutputPassesAndAWrongElementFails) {
  Kernel k = bind(kMatmul, {{"n", 48}});
  auto [gpu, expected] = referenceRun(k);
  Verification ok = verifyOutputs(k, gpu, expected);
  EXPECT_TRUE(ok.pass) << ok.failures();
  EXPECT_LT(ok.worstRelativeError, 1e-6);

  gpu.array("c").set(7, 0.0);  // one element of 2304 wrong
  Verification bad = verifyOutputs(k, gpu, expected);
  EXPECT_FALSE(bad.pass);
  EXPECT_NE(bad.failures().find("c: rel"), std::string::npos) << bad.failures();
  EXPECT_NE(bad.failures().find("exceeds tolerance 1e-05"), std::string::npos) << bad.failures();
}

TEST(Verify, AnUnwrittenElementFails) {
  Kernel k = bind(kMatmul, {{"n", 16}});
  auto [gpu, expected] = referenceRun(k);
  gpu.array("c").set(255, std::nan(""));  // what a poisoned, never-written element looks like
  Verification v = verifyOutputs(k, gpu, expected);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.failures().find("non-finite 1"), std::string::npos) << v.failures();
}

TEST(Verify, IntegersMustBeExact) {
  Kernel k = bind("kernel k(n: int, x: i32[n], out y: i32[n]) { for i in 0..n { y[i] = 3 * x[i] + 1; } }", {{"n", 1000}});
  auto [gpu, expected] = referenceRun(k);
  EXPECT_TRUE(verifyOutputs(k, gpu, expected).pass);
  gpu.array("y").setInt(999, gpu.array("y").getInt(999) + 1);
  EXPECT_FALSE(verifyOutputs(k, gpu, expected).pass);
}

// Issue 40, item 10: i64 outputs were compared in double, so a candidate off by one above 2^53
// passed with a tolerance of 0. They are compared exactly, and an integer output without its
// exact reference values is an error, not a comparison in double.
TEST(Verify, I64OutputsAreComparedExactlyAbove2To53) {
  Kernel k = bind("kernel k(n: int, s: i64, out y: i64[n]) { for i in 0..n { y[i] = s + i64(i); } }", {{"n", 8}});
  HostArgs in(k);
  in.setScalarInt("s", int64_t(1) << 53);
  HostArgs gpu = in;
  ReferenceResult r = runReference(k, gpu);
  ASSERT_EQ(r.outputs.size(), 1u);
  std::vector<ExpectedOutput> expected = {expectedOutput(r.outputs[0])};
  EXPECT_TRUE(verifyOutputs(k, gpu, expected).pass);
  gpu.array("y").setInt(0, gpu.array("y").getInt(0) + 1);  // 2^53 + 1 for 2^53: equal in double
  EXPECT_EQ(double(gpu.array("y").getInt(0)), 0x1p53);
  Verification v = verifyOutputs(k, gpu, expected);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.failures().find("y: mismatched 1 of 8, max abs 1 (integers must be exact)"), std::string::npos)
      << v.failures();
  ExpectedOutput inDouble{r.outputs[0].param, r.outputs[0].values, {}, {}};
  EXPECT_THROW(verifyOutputs(k, gpu, {inDouble}), Error);
}

TEST(Verify, MismatchedReferenceIsAnError) {
  Kernel k = bind(kMatmul, {{"n", 8}});
  auto [gpu, expected] = referenceRun(k);
  EXPECT_THROW(verifyOutputs(k, gpu, {}), Error);
  expected[0].values.pop_back();
  EXPECT_THROW(verifyOutputs(k, gpu, expected), Error);
}

TEST(Verify, TuningInputsAreDeterministicAndScalarsChecked) {
  Kernel k = bind("kernel axpby(n: int, a: f32, x: f32[n], b: f32, y: f32[n], out z: f32[n]) {"
                  " for i in 0..n { z[i] = a * x[i] + b * y[i]; } }",
                  {{"n", 100}});
  auto scalars = tuningScalars(k, 3);
  ASSERT_EQ(scalars.size(), 2u);
  HostArgs one = tuningInputs(k, 3, scalars), two = tuningInputs(k, 3, scalars);
  EXPECT_EQ(one.array("x").toDoubles(), two.array("x").toDoubles());
  EXPECT_EQ(one.scalar(1).f, double(float(scalars["a"])));
  scalars["bogus"] = 1;
  EXPECT_THROW(tuningInputs(k, 3, scalars), Error);
  scalars.erase("bogus");
  scalars.erase("a");
  EXPECT_THROW(tuningInputs(k, 3, scalars), Error);
}

namespace {

// A sampled reference of `k` (the tuner's rule: the computed elements only are checked), with
// the outputs rounded to their element types as a GPU's would be.
struct SampledRun {
  HostArgs gpu;
  std::vector<ExpectedOutput> expected;
  std::vector<std::vector<int64_t>> outerValues;
};
SampledRun sampledReferenceRun(const Kernel& k, int64_t sample) {
  HostArgs in = tuningInputs(k, 1, tuningScalars(k, 1));
  HostArgs full = in, sampled = in;
  runReference(k, full);  // what a correct GPU kernel writes everywhere
  ReferenceOptions o;
  o.sampleOuterValues = sample;
  ReferenceResult r = runReference(k, sampled, o);
  EXPECT_TRUE(r.sampled) << r.fullReason;
  SampledRun run{full, {}, r.outerValues};
  for (const ReferenceOutput& out : r.outputs) run.expected.push_back(expectedOutput(out));
  return run;
}

}  // namespace

TEST(VerifySampled, CorrectOutputPassesOnTheCheckedElements) {
  Kernel k = bind(kMatmul, {{"n", 64}});
  SampledRun r = sampledReferenceRun(k, 8);
  Verification v = verifyOutputs(k, r.gpu, r.expected);
  EXPECT_TRUE(v.pass) << v.failures();
  ASSERT_EQ(v.outputs.size(), 1u);
  EXPECT_EQ(v.outputs[0].comparison.count, 8 * 64);  // 8 rows checked
  EXPECT_EQ(v.outputs[0].comparison.unchecked, 56 * 64);
  EXPECT_EQ(v.outputs[0].comparison.unwritten, 0);
  EXPECT_LT(v.worstRelativeError, 1e-6);
}

TEST(VerifySampled, AWrongElementFailsInACheckedRowOnly) {
  Kernel k = bind(kMatmul, {{"n", 64}});
  SampledRun r = sampledReferenceRun(k, 8);
  const std::vector<int64_t>& rows = r.outerValues.at(0);
  int64_t checkedRow = rows[3], uncheckedRow = -1;
  for (int64_t i = 0; i < 64 && uncheckedRow < 0; ++i)
    if (!std::binary_search(rows.begin(), rows.end(), i)) uncheckedRow = i;
  ASSERT_GE(uncheckedRow, 0);

  HostArgs wrongChecked = r.gpu;
  wrongChecked.array("c").set(checkedRow * 64 + 5, 1e3);
  Verification bad = verifyOutputs(k, wrongChecked, r.expected);
  EXPECT_FALSE(bad.pass);
  EXPECT_NE(bad.failures().find("c: rel"), std::string::npos) << bad.failures();

  // A wrong (but written) value outside the sample is what sampling gives up.
  HostArgs wrongUnchecked = r.gpu;
  wrongUnchecked.array("c").set(uncheckedRow * 64 + 5, 1e3);
  EXPECT_TRUE(verifyOutputs(k, wrongUnchecked, r.expected).pass);
}

TEST(VerifySampled, AnUnwrittenElementOutsideTheSampleFails) {
  Kernel k = bind(kMatmul, {{"n", 64}});
  SampledRun r = sampledReferenceRun(k, 8);
  const std::vector<int64_t>& rows = r.outerValues.at(0);
  int64_t uncheckedRow = -1;
  for (int64_t i = 63; i >= 0 && uncheckedRow < 0; --i)
    if (!std::binary_search(rows.begin(), rows.end(), i)) uncheckedRow = i;
  ASSERT_GE(uncheckedRow, 0);
  r.gpu.array("c").set(uncheckedRow * 64 + 17, std::nan(""));  // a poisoned element never written
  Verification v = verifyOutputs(k, r.gpu, r.expected);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.outputs[0].comparison.unwritten, 1);
  EXPECT_EQ(v.outputs[0].comparison.nonFinite, 0);  // not in a checked row
  EXPECT_NE(v.failures().find("unwritten 1 of 3584 unchecked"), std::string::npos) << v.failures();
}

TEST(VerifySampled, IntegerPoisonOutsideTheSampleFails) {
  Kernel k = bind("kernel k(n: int, x: i32[n], out y: i32[n]) { for i in 0..n { y[i] = 3 * x[i] + 1; } }", {{"n", 1000}});
  SampledRun r = sampledReferenceRun(k, 10);
  EXPECT_TRUE(verifyOutputs(k, r.gpu, r.expected).pass);
  int64_t unchecked = 1;
  while (std::binary_search(r.outerValues[0].begin(), r.outerValues[0].end(), unchecked)) ++unchecked;
  r.gpu.array("y").setInt(unchecked, kPoisonInt);
  Verification v = verifyOutputs(k, r.gpu, r.expected);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.outputs[0].comparison.unwritten, 1);
}

TEST(VerifySampled, InoutElementsOutsideTheSampleAreNotCompared) {
  // An inout array's unchecked elements have no known value (the kernel updates them): neither
  // compared nor required to be written.
  Kernel k = bind("kernel k(n: int, x: f32[n], inout y: f32[n]) { for i in 0..n { y[i] = y[i] + x[i]; } }", {{"n", 1000}});
  SampledRun r = sampledReferenceRun(k, 10);
  EXPECT_TRUE(verifyOutputs(k, r.gpu, r.expected).pass);
  int64_t unchecked = 1;
  while (std::binary_search(r.outerValues[0].begin(), r.outerValues[0].end(), unchecked)) ++unchecked;
  r.gpu.array("y").set(unchecked, std::nan(""));
  Verification v = verifyOutputs(k, r.gpu, r.expected);
  EXPECT_TRUE(v.pass) << v.failures();
  EXPECT_EQ(v.outputs[0].comparison.unwritten, 0);
  r.gpu.array("y").set(r.outerValues[0][1], std::nan(""));  // but a checked one is
  EXPECT_FALSE(verifyOutputs(k, r.gpu, r.expected).pass);
}

TEST(VerifySampled, AMaskOfTheWrongSizeIsAnError) {
  Kernel k = bind(kMatmul, {{"n", 16}});
  SampledRun r = sampledReferenceRun(k, 4);
  r.expected[0].checked.pop_back();
  EXPECT_THROW(verifyOutputs(k, r.gpu, r.expected), Error);
}

TEST(VerifySampled, AnUnwrittenElementFarFromTheSampleFailsInALargeOutput) {
  // 300000 elements: several chunks of the comparison, so several threads where there are cores.
  Kernel k = bind("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = 2.0 * x[i]; } }",
                  {{"n", 300000}});
  SampledRun r = sampledReferenceRun(k, 16);
  ASSERT_TRUE(verifyOutputs(k, r.gpu, r.expected).pass);
  int64_t unchecked = 299999;
  while (std::binary_search(r.outerValues[0].begin(), r.outerValues[0].end(), unchecked)) --unchecked;
  r.gpu.array("y").set(unchecked, std::nan(""));
  Verification v = verifyOutputs(k, r.gpu, r.expected);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.outputs[0].comparison.unwritten, 1);
  EXPECT_EQ(v.outputs[0].comparison.nonFinite, 0);
}

TEST(Verify, AnUnwrittenElementFailsInALargeOutput) {
  Kernel k = bind("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = 2.0 * x[i]; } }",
                  {{"n", 300000}});
  auto [gpu, expected] = referenceRun(k);
  ASSERT_TRUE(verifyOutputs(k, gpu, expected).pass);
  gpu.array("y").set(299990, std::nan(""));
  Verification v = verifyOutputs(k, gpu, expected);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.failures().find("non-finite 1 of 300000"), std::string::npos) << v.failures();
}

// The precision policy is part of the tuning key: ieee keeps the structural hash (existing
// databases stay valid), the others get their own.
TEST(TuningKey, PrecisionIsPartOfTheKernelHash) {
  Kernel k = bind(kMatmul, {{"n", 64}});
  const std::string ieee = kernelHashOf(k), x3 = kernelHashOf(k, Precision::Tf32x3), tf32 = kernelHashOf(k, Precision::Tf32);
  EXPECT_EQ(ieee, kernelHashOf(k, Precision::Ieee));
  EXPECT_NE(x3, ieee);
  EXPECT_NE(tf32, ieee);
  EXPECT_NE(tf32, x3);
  EXPECT_EQ(x3.size(), 16u);
}
