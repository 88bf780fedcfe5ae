// Data-dependent ranges (ir/DataRanges.h) from the language to the reference executor: what the
// frontend accepts and rejects, what the bounds proof says, the input generation (CSR offsets),
// the counts, and the run-time checks of bad offsets.
#include <gtest/gtest.h>

#include <algorithm>

#include "frontend/Frontend.h"
#include "ir/Analysis.h"
#include "ir/Bind.h"
#include "ir/Counts.h"
#include "ir/DataRanges.h"
#include "ir/Verify.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "support/Error.h"

namespace rtcg {
namespace {

const char* kSpmv =
    "kernel spmv(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f32[nnz], x: f32[n], out y: f32[n]) {\n"
    "  for i in 0..n {\n"
    "    y[i] = sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]);\n"
    "  }\n"
    "}\n";

// The frontend's errors for `src` (empty: accepted).
std::string frontendErrors(const std::string& src) {
  Diagnostics d;
  parseProgram("t.rtcg", src, d);
  return d.hasErrors() ? d.render("t.rtcg", src) : "";
}

// Parses and binds the first kernel; the bounds proof's diagnostics go to `d`.
Kernel bound(const std::string& src, const SizeBindings& sizes, Diagnostics& d) {
  auto prog = parseProgram("t.rtcg", src, d);
  EXPECT_TRUE(prog && !d.hasErrors()) << d.render("t.rtcg", src);
  auto b = bindSizes(prog->kernels[0], sizes, d);
  EXPECT_TRUE(b.has_value());
  return *b;
}

TEST(DataRanges, TheLanguageAcceptsARangeThatReadsAnArray) {
  EXPECT_EQ(frontendErrors(kSpmv), "");
  // One bound may be affine, the other a load; a range after it may use its index.
  EXPECT_EQ(frontendErrors("kernel t(n: int, len: i32[n], a: f32[n, n], out s: f32[n]) {\n"
                           "  for i in 0..n { s[i] = sum(j in 0..len[i], a[i, j]); }\n}\n"),
            "");
}

TEST(DataRanges, TheLanguageRejectsWhatCannotBeChecked) {
  auto rejects = [](const std::string& src, const std::string& what) {
    std::string e = frontendErrors(src);
    EXPECT_NE(e.find(what), std::string::npos) << e;
  };
  // A parallel bound: the launch needs the domain.
  rejects("kernel t(n: int, len: i32[n], out s: f32[n]) {\n  for i in 0..len[0] { s[i] = 1.0; }\n}\n",
          "loop bound reads the array 'len'; only a reduction's range may read an array");
  // Arithmetic around the load.
  rejects("kernel t(n: int, r: i32[n + 1], v: f32[n], out y: f32[n]) {\n"
          "  for i in 0..n { y[i] = sum(p in r[i] + 1..r[i + 1], v[p]); }\n}\n",
          "each bound one whole load");
  // A load in the load's index.
  rejects("kernel t(n: int, r: i32[n + 1], c: i32[n], v: f32[n], out y: f32[n]) {\n"
          "  for i in 0..n { y[i] = sum(p in r[c[i]]..r[i + 1], v[p]); }\n}\n",
          "index of 'r' in a loop bound reads the array 'c'");
  // Another element type, and an array the kernel writes.
  rejects("kernel t(n: int, r: i64[n + 1], v: f32[n], out y: f32[n]) {\n"
          "  for i in 0..n { y[i] = sum(p in r[i]..r[i + 1], v[p]); }\n}\n",
          "loop bound must be an i32 value, not i64");
  rejects("kernel t(n: int, v: f32[n], out y: f32[n], inout r: i32[n + 1]) {\n"
          "  for i in 0..n { y[i] = sum(p in r[i]..r[i + 1], v[p]); r[i] = 0; }\n}\n",
          "loop bound reads 'r', an array this kernel writes");
}

TEST(DataRanges, TheProofSaysWhatItCannotProve) {
  Diagnostics d;
  Kernel k = bound(kSpmv, {{"n", 10}, {"nnz", 37}}, d);
  EXPECT_TRUE(verifyKernel(k).empty());
  Diagnostics proof;
  EXPECT_TRUE(checkBounds(k, proof));
  EXPECT_NE(proof.render("t.rtcg", kSpmv).find("the range of 'p' (rowptr[i]..rowptr[i + 1]) reads an array and cannot "
                                              "be proved; it is checked at run time by the reference executor: "
                                              "non-decreasing and within [0, 37] (the extent of val, col)"),
            std::string::npos)
      << proof.render("t.rtcg", kSpmv);
  ASSERT_EQ(dataRanges(k, 0).size(), 1u);
  EXPECT_EQ(dataRanges(k, 0)[0].extent, 37);
  EXPECT_TRUE(hasDataRanges(k));
  // The offsets' own accesses are proved: rowptr[i + 1] past n + 1 elements is an error.
  std::string shortRows = kSpmv;
  shortRows.replace(shortRows.find("rowptr: i32[n + 1]"), 18, "rowptr: i32[n]");
  Diagnostics d2, proof2;
  Kernel k2 = bound(shortRows, {{"n", 10}, {"nnz", 37}}, d2);
  EXPECT_FALSE(checkBounds(k2, proof2));
  // An index that indexes nothing alone: nothing bounds its values.
  const std::string unbounded = "kernel t(n: int, r: i32[n + 1], v: f32[2 * n], out y: f32[n]) {\n"
                                "  for i in 0..n { y[i] = sum(p in r[i]..r[i + 1], v[2 * p]); }\n}\n";
  Diagnostics d3, proof3;
  Kernel k3 = bound(unbounded, {{"n", 10}}, d3);
  EXPECT_FALSE(checkBounds(k3, proof3));
  EXPECT_NE(proof3.render("t.rtcg", unbounded).find("'p' indexes no array dimension alone"), std::string::npos);
}

TEST(DataRanges, RandomInputsAreValidCsrOffsets) {
  Diagnostics d;
  Kernel k = bound(kSpmv, {{"n", 101}, {"nnz", 997}}, d);
  EXPECT_EQ(rangeArrayExtents(k), (std::map<int, int64_t>{{2, 997}}));
  HostArgs args(k);
  fillInputs(k, args, 7);
  const HostArray& rowptr = args.array(2);
  EXPECT_EQ(rowptr.getInt(0), 0);
  EXPECT_EQ(rowptr.getInt(101), 997);
  for (int64_t i = 0; i < 101; ++i) EXPECT_LE(rowptr.getInt(i), rowptr.getInt(i + 1)) << i;
  // The reference runs on them (col is a valid index into x), and the counts take the rows to
  // partition the nonzeros: a multiply and an add per nonzero.
  ReferenceResult r = runReference(k, args);
  ASSERT_EQ(r.outputs.size(), 1u);
  double expect = 0;
  for (int64_t p = rowptr.getInt(5); p < rowptr.getInt(6); ++p)
    expect += args.array(4).get(p) * args.array(5).get(args.array(3).getInt(p));
  EXPECT_NEAR(r.outputs[0].values[5], expect, 1e-12);
  EXPECT_EQ(floatOps(k), 2 * 997);
  // Rows of rows: the last data-dependent range partitions its extent (s over v's 53 elements).
  Diagnostics d2;
  Kernel rows2 = bound("kernel rows2(n: int, m: int, r: i32[n + 1], q: i32[m + 1], v: f32[m], w: f32[n], "
                       "out y: f32[n]) {\n  for i in 0..n { y[i] = sum(p in r[i]..r[i + 1], s in q[p]..q[p + 1], "
                       "v[s] * w[p]); }\n}\n",
                       {{"n", 37}, {"m", 53}}, d2);
  EXPECT_EQ(floatOps(rows2), 2 * 53);
}

// Runs the reference on offsets `rowptr` (n = 4, nnz = 6) and returns its error ("" if none).
std::string runWithOffsets(const std::vector<int64_t>& rowptr) {
  Diagnostics d;
  Kernel k = bound(kSpmv, {{"n", 4}, {"nnz", 6}}, d);
  HostArgs args(k);
  fillInputs(k, args, 1);
  for (size_t i = 0; i < rowptr.size(); ++i) args.array(2).setInt(int64_t(i), rowptr[i]);
  try {
    ReferenceOptions o;
    o.sampleOuterValues = 2;  // asked for, but a kernel with data ranges always runs in full
    ReferenceResult r = runReference(k, args, o);
    EXPECT_FALSE(r.sampled);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(DataRanges, BadOffsetsAreRunTimeErrorsNamingTheRangeAndTheRow) {
  EXPECT_EQ(runWithOffsets({0, 2, 2, 5, 6}), "");
  EXPECT_EQ(runWithOffsets({0, 3, 2, 5, 6}),
            "kernel 'spmv', line 3:16: the range of 'p' (rowptr[i]..rowptr[i + 1]) is decreasing (3 > 2) at i=1");
  EXPECT_EQ(runWithOffsets({0, 2, 2, 5, 7}),
            "kernel 'spmv', line 3:16: the range of 'p' (rowptr[i]..rowptr[i + 1]) is 5..7, outside [0, 6] (the extent "
            "of val, col) at i=3");
  EXPECT_EQ(runWithOffsets({-1, 2, 2, 5, 6}),
            "kernel 'spmv', line 3:16: the range of 'p' (rowptr[i]..rowptr[i + 1]) is -1..2, outside [0, 6] (the "
            "extent of val, col) at i=0");
}

}  // namespace
}  // namespace rtcg
