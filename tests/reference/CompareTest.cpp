// Comparisons with the reference over arrays of several chunks, on any number of threads: the
// same answer bit for bit, the same counts as one plain pass, and no unwritten element missed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "support/Error.h"

namespace rtcg {
namespace {

// More than five chunks of the comparison (65536 elements each), the last one partial.
constexpr int64_t kRows = 347, kColumns = 1000;
constexpr int64_t kElements = kRows * kColumns;
const int kThreadCounts[] = {1, 2, 3, 7, 16};

// A GPU-like f32 result of `ref` with rounding-sized errors.
struct Case {
  HostArray out{ScalarType::F32, {kRows, kColumns}};
  std::vector<double> ref = std::vector<double>(size_t(kElements));
};

Case makeCase(uint64_t seed) {
  Case c;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-10, 10), noise(-1e-6, 1e-6);
  float* out = c.out.as<float>();
  for (int64_t i = 0; i < kElements; ++i) {
    c.ref[size_t(i)] = value(rng);
    out[i] = float(c.ref[size_t(i)] * (1 + noise(rng)));
  }
  return c;
}

// Every `every`-th row checked, as the tuner's sampled reference checks some rows.
std::vector<uint8_t> rowMask(int64_t every) {
  std::vector<uint8_t> checked(size_t(kElements), 0);
  for (int64_t r = 0; r < kRows; r += every) std::fill_n(checked.begin() + r * kColumns, kColumns, 1);
  return checked;
}

// The comparison rule as one plain sequential pass (the rule of Compare.h, without chunks).
Comparison onePass(const HostArray& out, const std::vector<double>& ref, const std::vector<uint8_t>* checked) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < out.size(); ++i) {
    if (checked && !(*checked)[size_t(i)]) {
      ++c.unchecked;
      c.unwritten += !std::isfinite(out.get(i));
      continue;
    }
    ++c.count;
    const double o = out.get(i), r = ref[size_t(i)];
    if (!std::isfinite(r)) {
      if (!(o == r || (std::isnan(o) && std::isnan(r)))) c.maxAbsError = std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(o)) {
      ++c.nonFinite;
      continue;
    }
    diff2 += (o - r) * (o - r);
    ref2 += r * r;
    c.maxAbsError = std::max(c.maxAbsError, std::fabs(o - r));
  }
  if (c.nonFinite > 0 || std::isinf(c.maxAbsError))
    c.relativeError = c.maxAbsError = std::numeric_limits<double>::infinity();
  else
    c.relativeError = std::sqrt(diff2 / ref2);
  return c;
}

void expectIdentical(const Comparison& a, const Comparison& b, const std::string& what) {
  // Bit for bit: EXPECT_EQ on doubles, not EXPECT_DOUBLE_EQ.
  EXPECT_EQ(a.relativeError, b.relativeError) << what;
  EXPECT_EQ(a.maxAbsError, b.maxAbsError) << what;
  EXPECT_EQ(a.nonFinite, b.nonFinite) << what;
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.sampled, b.sampled) << what;
  EXPECT_EQ(a.unchecked, b.unchecked) << what;
  EXPECT_EQ(a.unwritten, b.unwritten) << what;
}

// The same counts and largest error as one pass, and the relative error up to rounding (the
// chunks add their sums in another order).
void expectAsOnePass(const Comparison& c, const Comparison& plain, const std::string& what) {
  EXPECT_EQ(c.nonFinite, plain.nonFinite) << what;
  EXPECT_EQ(c.count, plain.count) << what;
  EXPECT_EQ(c.unchecked, plain.unchecked) << what;
  EXPECT_EQ(c.maxAbsError, plain.maxAbsError) << what;
  if (std::isinf(plain.relativeError)) EXPECT_TRUE(std::isinf(c.relativeError)) << what;
  else EXPECT_NEAR(c.relativeError, plain.relativeError, plain.relativeError * 1e-12) << what;
}

TEST(CompareChunks, EveryThreadCountGivesTheSameAnswerAsOneThread) {
  Case c = makeCase(1);
  Comparison single = compare(c.out, c.ref, 1);
  EXPECT_GT(single.relativeError, 0.0);
  EXPECT_EQ(single.count, kElements);
  expectAsOnePass(single, onePass(c.out, c.ref, nullptr), "one thread");
  for (int t : kThreadCounts) expectIdentical(compare(c.out, c.ref, t), single, fmt::format("{} threads", t));
  expectIdentical(compare(c.out, c.ref), single, "threads by size");

  // Non-finite values in a later chunk take the checking path there, on any thread count.
  c.out.set(5 * 65536 + 3, std::nan(""));
  c.ref[70000] = std::numeric_limits<double>::infinity();
  c.out.set(70000, std::numeric_limits<double>::infinity());  // matches its infinite reference
  Comparison bad = compare(c.out, c.ref, 1);
  EXPECT_EQ(bad.nonFinite, 1);
  EXPECT_TRUE(std::isinf(bad.relativeError));
  expectAsOnePass(bad, onePass(c.out, c.ref, nullptr), "one thread, non-finite");
  for (int t : kThreadCounts) expectIdentical(compare(c.out, c.ref, t), bad, fmt::format("{} threads, non-finite", t));
}

TEST(CompareChunks, DoubleOutputsToo) {
  Case c = makeCase(2);
  std::vector<double> out = c.out.toDoubles();
  Comparison single = compare(out, c.ref, 1);
  expectIdentical(single, compare(c.out, c.ref, 1), "f32 read in place and as doubles");
  for (int t : kThreadCounts) expectIdentical(compare(out, c.ref, t), single, fmt::format("{} threads", t));
}

TEST(CompareChunks, SampledComparisonIsTheSameOnEveryThreadCount) {
  Case c = makeCase(3);
  std::vector<uint8_t> checked = rowMask(64);
  Comparison single = compare(c.out, c.ref, checked, Unchecked::MustBeWritten, 1);
  EXPECT_TRUE(single.sampled);
  EXPECT_EQ(single.count, 6 * kColumns);  // rows 0, 64, ..., 320
  EXPECT_EQ(single.unchecked, kElements - 6 * kColumns);
  EXPECT_EQ(single.unwritten, 0);
  expectAsOnePass(single, onePass(c.out, c.ref, &checked), "one thread");
  for (int t : kThreadCounts)
    expectIdentical(compare(c.out, c.ref, checked, Unchecked::MustBeWritten, t), single, fmt::format("{} threads", t));
}

TEST(CompareChunks, AnUnwrittenElementInAnUncheckedRegionIsFound) {
  Case c = makeCase(4);
  std::vector<uint8_t> checked = rowMask(64);
  // Row 330 is unchecked and lies in the last chunk; one element of it was never written.
  const int64_t unwritten = 330 * kColumns + 999;
  ASSERT_FALSE(checked[size_t(unwritten)]);
  c.out.set(unwritten, std::nan(""));
  for (int t : kThreadCounts) {
    Comparison m = compare(c.out, c.ref, checked, Unchecked::MustBeWritten, t);
    EXPECT_EQ(m.unwritten, 1) << t << " threads";
    EXPECT_EQ(m.nonFinite, 0) << t << " threads";  // not a checked element
    EXPECT_EQ(countUnwritten(c.out, checked, t), 1) << t << " threads";
    EXPECT_EQ(compare(c.out, c.ref, checked, Unchecked::Ignore, t).unwritten, 0) << t << " threads";
  }
  expectAsOnePass(compare(c.out, c.ref, checked, Unchecked::MustBeWritten), onePass(c.out, c.ref, &checked),
                  "threads by size");
  // An infinity counts as unwritten too (a float output can hold nothing else non-finite).
  c.out.set(100 * kColumns, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(countUnwritten(c.out, checked, 3), 2);
}

TEST(CompareChunks, IntegerPoisonInAnUncheckedRegionIsFound) {
  HostArray out(ScalarType::I32, {kRows, kColumns});
  std::vector<double> ref(static_cast<size_t>(kElements));
  for (int64_t i = 0; i < kElements; ++i) {
    out.setInt(i, i % 1000 - 500);
    ref[size_t(i)] = double(i % 1000 - 500);
  }
  std::vector<uint8_t> checked = rowMask(50);
  out.setInt(333 * kColumns + 7, kPoisonInt);
  for (int t : kThreadCounts) {
    Comparison m = compare(out, ref, checked, Unchecked::MustBeWritten, t);
    EXPECT_EQ(m.unwritten, 1) << t << " threads";
    EXPECT_EQ(m.maxAbsError, 0.0) << t << " threads";
  }
}

// Issue 40, item 10: in double, 2^53 + 1 and 2^53 are equal and i64 values 2^63 apart differ by
// a rounded amount; compareExact counts every element that differs, on any number of threads,
// and takes the difference in 128 bits.
TEST(CompareChunks, IntegersAreComparedExactly) {
  HostArray out(ScalarType::I64, {kRows, kColumns});
  std::vector<int64_t> ref(static_cast<size_t>(kElements));
  for (int64_t i = 0; i < kElements; ++i) {
    ref[size_t(i)] = (int64_t(1) << 53) + i;
    out.setInt(i, ref[size_t(i)]);
  }
  for (int t : kThreadCounts) {
    Comparison same = compareExact(out, ref, t);
    EXPECT_TRUE(same.exact && same.passes(0)) << same.str();
    EXPECT_EQ(same.str(), fmt::format("mismatched 0 of {}, max abs 0", kElements));
  }
  out.setInt(0, ref[0] + 1);  // 2^53 + 1 for 2^53: the same double
  EXPECT_EQ(compare(out, std::vector<double>(ref.begin(), ref.end())).maxAbsError, 0.0);  // what double missed
  EXPECT_EQ(compareExact(out, ref).mismatched, 1);
  out.setInt(kElements - 1, INT64_MIN);
  ref[size_t(kElements - 1)] = INT64_MAX;
  for (int t : kThreadCounts) {
    Comparison c = compareExact(out, ref, t);
    EXPECT_EQ(c.mismatched, 2) << t << " threads";
    EXPECT_FALSE(c.passes(1.0)) << "an exact comparison ignores the tolerance";
    EXPECT_EQ(c.maxAbsError, 0x1p64) << t << " threads";  // INT64_MAX - INT64_MIN, not a wrapped -1
  }
  // Sampled: the unchecked elements are not compared; poison there is found when asked.
  std::vector<uint8_t> checked = rowMask(50);
  out.setInt(0, ref[0]);
  out.setInt(333 * kColumns + 7, kPoisonInt);
  Comparison m = compareExact(out, ref, checked, Unchecked::MustBeWritten, 3);
  EXPECT_EQ(m.mismatched, 0);
  EXPECT_EQ(m.unwritten, 1);
  EXPECT_FALSE(m.passes(0));
  EXPECT_THROW(compareExact(HostArray(ScalarType::F32, {2}), std::vector<int64_t>{1, 2}), Error);
  EXPECT_THROW(compareExact(out, std::vector<int64_t>{1, 2}), Error);
}

TEST(CompareChunks, ChecksumReadsInPlaceAsDoubles) {
  Case c = makeCase(5);
  Checksum inPlace = checksum(c.out), copied = checksum(c.out.toDoubles());
  EXPECT_EQ(inPlace.sum, copied.sum);
  EXPECT_EQ(inPlace.sumSquares, copied.sumSquares);
  EXPECT_EQ(inPlace.count, kElements);
}

}  // namespace
}  // namespace rtcg
