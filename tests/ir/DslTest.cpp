// Analyses on kernels written in the DSL (through the frontend), including every example.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "frontend/Frontend.h"
#include "ir/Analysis.h"
#include "ir/Bind.h"
#include "ir/Printer.h"

namespace rtcg {
namespace {

// Parses `source`, binds its first kernel (or `name`) and returns it; fails the test on errors.
Kernel compile(const std::string& source, const SizeBindings& sizes, const std::string& name = "") {
  Diagnostics d;
  auto prog = parseProgram("test.rtcg", source, d);
  EXPECT_TRUE(prog && !d.hasErrors()) << d.render("test.rtcg", source);
  if (!prog || prog->kernels.empty()) return {};
  const Kernel* k = name.empty() ? &prog->kernels[0] : prog->find(name);
  EXPECT_NE(k, nullptr);
  if (!k) return {};
  auto b = bindSizes(*k, sizes, d);
  EXPECT_TRUE(b) << d.render("test.rtcg", source);
  return b ? *b : Kernel{};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The messages of `d` of one severity, in order.
std::vector<std::string> messages(const Diagnostics& d, Severity s) {
  std::vector<std::string> out;
  for (const Diagnostic& x : d.all())
    if (x.severity == s) out.push_back(x.message);
  return out;
}

std::vector<std::string> boundsErrors(const std::string& src, const SizeBindings& sizes) {
  Kernel k = compile(src, sizes);
  Diagnostics d;
  bool ok = checkBounds(k, d);
  EXPECT_EQ(ok, !d.hasErrors());
  return messages(d, Severity::Error);
}

std::vector<std::string> raceErrors(const std::string& src, const SizeBindings& sizes) {
  Kernel k = compile(src, sizes);
  Diagnostics d;
  bool ok = checkRaces(k, d);
  EXPECT_EQ(ok, !d.hasErrors());
  return messages(d, Severity::Error);
}

// ---- every example, bound with the sizes of examples/sizes.txt, passes both checks ----------

struct ExampleCase {
  std::string file;
  SizeBindings sizes;
};

std::vector<ExampleCase> exampleCases() {
  std::vector<ExampleCase> out;
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/sizes.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    ExampleCase c;
    ls >> c.file;
    std::string kv;
    while (ls >> kv) {
      auto eq = kv.find('=');
      c.sizes[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    }
    out.push_back(c);
  }
  return out;
}

TEST(Examples, AllPassBoundsAndRaceChecks) {
  auto cases = exampleCases();
  ASSERT_GE(cases.size(), 10u);
  for (const ExampleCase& c : cases) {
    SCOPED_TRACE(c.file);
    std::string src = slurp(std::string(RTCG_SOURCE_DIR) + "/examples/" + c.file);
    ASSERT_FALSE(src.empty());
    Diagnostics d;
    auto prog = parseProgram(c.file, src, d);
    ASSERT_TRUE(prog) << d.render(c.file, src);
    for (const Kernel& k0 : prog->kernels) {
      auto k = bindSizes(k0, c.sizes, d);
      ASSERT_TRUE(k) << d.render(c.file, src);
      EXPECT_TRUE(checkBounds(*k, d));
      EXPECT_TRUE(checkRaces(*k, d));
      EXPECT_FALSE(d.hasErrors()) << d.render(c.file, src);
      // Only the gather through index maps, the CSR product, the segmented scan and the
      // accumulations through index maps (histograms, the assembly) may warn, and only about what
      // the proof leaves to the run: indirect accesses, the row's (segment's) range and the
      // accesses through it. An accumulation's indirect target is no race (it is what
      // accumulations are for): no warning says it is.
      for (const Diagnostic& w : d.all()) {
        const bool runTime = w.message.find("checked at run time") != std::string::npos;
        const bool expected = c.file == "spmv.rtcg" || c.file == "segmented_sum.rtcg" ? runTime
                              : c.file.rfind("histogram", 0) == 0 || c.file == "assemble.rtcg"
                                  ? runTime && w.message.find("indirect index into") != std::string::npos
                                  : w.message.find("indirect index into u") != std::string::npos;
        EXPECT_TRUE(expected) << w.message;
      }
    }
  }
}

// ---- bounds -------------------------------------------------------------------------------------

TEST(DslBounds, OffByOne) {
  auto e = boundsErrors(R"(
kernel shift(n: int, a: f32[n, n], out b: f32[n, n]) {
  for i in 0..n, j in 0..n {
    b[i, j] = a[i + 1, j];
  }
})",
                        {{"n", 500}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0],
            "access a[i + 1, j] may be out of bounds: dimension 0 reaches 500 but the extent is 500 (the "
            "index ranges over [1, 500])");
}

TEST(DslBounds, ErrorHasTheAccessLocation) {
  std::string src = "kernel s(n: int, a: f32[n], out b: f32[n]) {\n  for i in 0..n {\n    b[i] = a[i - 1];\n  }\n}\n";
  Kernel k = compile(src, {{"n", 10}});
  Diagnostics d;
  EXPECT_FALSE(checkBounds(k, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].loc.line, 3);
  EXPECT_NE(d.all()[0].message.find("dimension 0 reaches -1"), std::string::npos);
  // The rendered diagnostic points into the source line.
  EXPECT_NE(d.render("s.rtcg", src).find("s.rtcg:3:"), std::string::npos);
}

TEST(DslBounds, FlatIndexOverflowInsideReduction) {
  // k runs to n inclusive: a[i + n*k] reaches n*n + n - 1 in a flat array of n*n elements.
  auto e = boundsErrors(R"(
kernel mm(n: int, a: f32[n*n], b: f32[n*n], out c: f32[n*n]) {
  for i in 0..n, j in 0..n {
    c[i + n*j] = sum(k in 0..n+1, a[i + n*k] * b[k + n*j]);
  }
})",
                        {{"n", 100}});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0],
            "access a[i + 100 * k] may be out of bounds: dimension 0 reaches 10099 but the extent is 10000 "
            "(the index ranges over [0, 10099])");
  EXPECT_NE(e[1].find("access b[k + 100 * j] may be out of bounds: dimension 0 reaches 10000"), std::string::npos)
      << e[1];
}

TEST(DslBounds, Triangular) {
  const char* src = R"(
kernel tri(n: int, a: f32[n, n], out b: f32[n, n]) {
  for i in 0..n, j in 0..i+1 {
    b[i, j] = a[j, i] + a[i, i - j] + sum(k in j..i+1, a[i, k]);
  }
}
kernel tri_bad(n: int, a: f32[n, n], out b: f32[n, n]) {
  for i in 0..n, j in 0..i+1 {
    b[i, j + 1] = a[i, j];
  }
})";
  EXPECT_TRUE(boundsErrors(src, {{"n", 64}}).empty());
  Diagnostics d;
  auto prog = parseProgram("t", src, d);
  ASSERT_TRUE(prog);
  auto k = bindSizes(*prog->find("tri_bad"), {{"n", 64}}, d);
  ASSERT_TRUE(k);
  EXPECT_FALSE(checkBounds(*k, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_NE(d.all()[0].message.find("b[i, j + 1] may be out of bounds: dimension 1 reaches 64 but the extent is 64"),
            std::string::npos)
      << d.all()[0].message;
}

TEST(DslBounds, QuasiAffineAndEmptyDomains) {
  EXPECT_TRUE(boundsErrors(R"(
kernel q(n: int, a: f32[n / 4, 4], out b: f32[n]) {
  for i in 0..n {
    b[i] = a[i / 4, i % 4];
  }
  for i in 0..0 {
    b[i + 1000] = a[i, 0];
  }
})",
                           {{"n", 64}})
                  .empty());
  // n = 66: i / 4 reaches 16 but a has 66 / 4 = 16 rows.
  auto e = boundsErrors(R"(
kernel q(n: int, a: f32[n / 4, 4], out b: f32[n]) {
  for i in 0..n {
    b[i] = a[i / 4, i % 4];
  }
})",
                        {{"n", 66}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("dimension 0 reaches 16 but the extent is 16"), std::string::npos) << e[0];
}

// ---- races --------------------------------------------------------------------------------------

TEST(DslRaces, MissingLoopInStore) {
  auto e = raceErrors(R"(
kernel rowsum(n: int, a: f32[n, n], out r: f32[n]) {
  for i in 0..n, j in 0..n {
    r[i] = a[i, j];
  }
})",
                      {{"n", 100}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0], "every iteration of 'j' writes the same element of r; make it a reduction (sum(j in ...))");
}

TEST(DslRaces, OverlappingFlatStore) {
  auto e = raceErrors(R"(
kernel k(n: int, out c: f32[n*n]) {
  for i in 0..n, j in 0..n {
    c[i + j] = f32(i);
  }
})",
                      {{"n", 30}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("both write c["), std::string::npos) << e[0];
}

TEST(DslRaces, AccumulationsMayShareElements) {
  // Indirect and affine targets shared by many points: no error and no warning about races.
  Kernel k = compile(R"(
kernel k(n: int, bin: i32[n], x: f32[n], inout h: f32[16], inout s: f32[4]) {
  for i in 0..n {
    h[bin[i]] += x[i];
    s[i % 4] += x[i];
  }
})",
                     {{"n", 100}});
  Diagnostics d;
  EXPECT_TRUE(checkRaces(k, d));
  EXPECT_TRUE(d.all().empty()) << d.all()[0].message;
  // The same store without `+=` is the race the check reports.
  EXPECT_EQ(raceErrors(R"(
kernel k(n: int, x: f32[n], inout s: f32[4]) {
  for i in 0..n { s[i % 4] = x[i]; }
})",
                       {{"n", 100}}).size(),
            1u);
}

// A scan written as a recurrence (each point reads its neighbour's result) is refused with the
// form to write instead, at the read, with a caret (docs/language.md 5.2).
TEST(DslRaces, RecurrenceIsAScan) {
  const std::string src = "kernel cumsum(n: int, x: f32[n], inout y: f32[n]) {\n"
                          "  for i in 1..n {\n"
                          "    y[i] = y[i - 1] + x[i];\n"
                          "  }\n"
                          "}\n";
  Kernel k = compile(src, {{"n", 100}});
  Diagnostics d;
  EXPECT_FALSE(checkRaces(k, d));
  EXPECT_EQ(d.render("cumsum.rtcg", src),
            "cumsum.rtcg:3:12: error: cross-iteration dependence: the read y[i - 1] may see an element of y that "
            "another iteration of this loop nest writes (the store y[i]); a loop nest may only read the element it "
            "writes at the same point. A running sum (or product, max, min) is a scan: write it as a reduction over "
            "the prefix, y[i] = sum(j in 0..i + 1, x[j]), which compiles to one pass (docs/language.md 5.2)\n"
            "      y[i] = y[i - 1] + x[i];\n"
            "             ^~~~~~~~\n");
}

TEST(DslRaces, CrossIterationDependence) {
  auto e = raceErrors(R"(
kernel stencil(n: int, inout x: f32[n]) {
  for i in 0..n-1 {
    x[i] = x[i + 1] * 0.5;
  }
})",
                      {{"n", 100}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rfind("cross-iteration dependence: the read x[i + 1]", 0), 0u) << e[0];

  auto e2 = raceErrors(R"(
kernel k(n: int, inout x: f32[n], out y: f32[n]) {
  for i in 0..n {
    y[i] = sum(j in 0..n, x[j]);
    x[i] = 2.0 * y[i];
  }
})",
                       {{"n", 100}});
  ASSERT_EQ(e2.size(), 1u);
  EXPECT_NE(e2[0].find("the read x[j]"), std::string::npos) << e2[0];
}

TEST(DslRaces, AcceptedPatterns) {
  // Separate nests may read what an earlier nest wrote; a nest may update its own element; the
  // quasi-affine store writes each element once; a top-level nest is a single point.
  EXPECT_TRUE(raceErrors(R"(
kernel k(n: int, a: f32[n], inout x: f32[n], out y: f32[n / 4, 4], out r: f32[2]) {
  for i in 0..n {
    x[i] = x[i] + a[i];
  }
  for i in 0..n {
    y[i / 4, i % 4] = x[n - 1 - i];
  }
  r[0] = sum(i in 0..n, x[i]);
  r[1] = r[0] * 2.0;
})",
                         {{"n", 64}})
                  .empty());
}

// ---- strides, footprints, hash, printer ------------------------------------------------------

TEST(DslAccess, MatmulStridesAndTileFootprints) {
  Kernel k = compile(slurp(std::string(RTCG_SOURCE_DIR) + "/examples/matmul.rtcg"), {{"n", 500}});
  auto acc = collectAccesses(k, 0);
  ASSERT_EQ(acc.size(), 3u);
  int i = k.nests[0].loops[0].id, j = k.nests[0].loops[1].id;
  int kk = reductionLoops(k, 0).at(0);
  const Access &a = acc[0], &b = acc[1], &c = acc[2];
  EXPECT_EQ(strideAlong(k, c, j), 1);
  EXPECT_EQ(strideAlong(k, c, i), 500);
  EXPECT_EQ(strideAlong(k, a, kk), 1);
  EXPECT_EQ(strideAlong(k, b, kk), 500);
  EXPECT_EQ(strideAlong(k, b, i), 0);
  std::map<int, Interval> tile{{i, {32, 47}}, {j, {0, 15}}};
  EXPECT_EQ(footprint(k, a, tile)->dims, (std::vector<Interval>{{32, 47}, {0, 499}}));
  EXPECT_EQ(footprint(k, b, tile)->dims, (std::vector<Interval>{{0, 499}, {0, 15}}));
  EXPECT_EQ(footprint(k, c, tile)->elements(), 256);
  // Tiling the reduction loop too: a 16 x 8 slice of a.
  tile[kk] = {8, 15};
  EXPECT_EQ(footprint(k, a, tile)->elements(), 16 * 8);
}

TEST(DslAccess, FlatMatmulStrides) {
  Kernel k = compile(slurp(std::string(RTCG_SOURCE_DIR) + "/examples/matmul_flat.rtcg"), {{"n", 500}});
  auto acc = collectAccesses(k, 0);
  ASSERT_EQ(acc.size(), 3u);
  int i = k.nests[0].loops[0].id, j = k.nests[0].loops[1].id;
  // Column-major: consecutive i are adjacent.
  EXPECT_EQ(strideAlong(k, acc[2], i), 1);
  EXPECT_EQ(strideAlong(k, acc[2], j), 500);
  auto f = flatOffset(k, acc[0].array, acc[0].indices);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->coeff(i), 1);
  EXPECT_EQ(f->coeffs.size(), 2u);
}

const char* kMatmulRenamed = R"(
/* the same kernel, other names and layout */
kernel mm(size: int, x: f32[size, size], y: f32[size, size],
          out z: f32[size, size]) {
  for r in 0..size, s in 0..size { z[r, s] = sum(t in 0..size, x[r, t] * y[t, s]); }
})";

TEST(DslHash, EqualUnderRenamingDifferentOtherwise) {
  std::string mm = slurp(std::string(RTCG_SOURCE_DIR) + "/examples/matmul.rtcg");
  Kernel a = compile(mm, {{"n", 500}});
  Kernel b = compile(kMatmulRenamed, {{"size", 500}});
  EXPECT_EQ(canonicalForm(a), canonicalForm(b));
  EXPECT_EQ(structuralHash(a), structuralHash(b));
  EXPECT_NE(structuralHash(a), structuralHash(compile(mm, {{"n", 501}})));
  std::string plus = mm;
  plus.replace(plus.find("a[i, k] * b"), 11, "a[i, k] + b");
  EXPECT_NE(structuralHash(a), structuralHash(compile(plus, {{"n", 500}})));
  std::string f64 = mm;
  for (size_t p; (p = f64.find("f32")) != std::string::npos;) f64.replace(p, 3, "f64");
  EXPECT_NE(structuralHash(a), structuralHash(compile(f64, {{"n", 500}})));
  std::string inout = mm;
  inout.replace(inout.find("out c"), 5, "inout c");
  EXPECT_NE(structuralHash(a), structuralHash(compile(inout, {{"n", 500}})));
}

TEST(DslBind, ErrorsNameTheParameter) {
  Diagnostics d;
  std::string mm = slurp(std::string(RTCG_SOURCE_DIR) + "/examples/matmul.rtcg");
  auto prog = parseProgram("matmul.rtcg", mm, d);
  ASSERT_TRUE(prog);
  EXPECT_FALSE(bindSizes(prog->kernels[0], {}, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].message, "size parameter 'n' is not bound; pass -D n=VALUE");
  EXPECT_EQ(d.all()[0].loc.line, 2);  // at the parameter
  Diagnostics d2;
  EXPECT_FALSE(bindSizes(prog->kernels[0], {{"n", 5}, {"q", 1}}, d2));
  EXPECT_EQ(d2.all().at(0).message,
            "'q' is not a size parameter of kernel 'matmul' (its size parameters are: n)");
}

TEST(DslPrinter, BoundExamples) {
  Kernel k = compile(slurp(std::string(RTCG_SOURCE_DIR) + "/examples/matmul.rtcg"), {{"n", 500}});
  EXPECT_EQ(printKernel(k),
            "kernel matmul(n: int = 500, a: f32[500, 500], b: f32[500, 500], out c: f32[500, 500]) {\n"
            "  for i in 0..500, j in 0..500 {\n"
            "    c[i, j] = sum(k in 0..500, a[i, k] * b[k, j]);\n"
            "  }\n"
            "}\n");
  Kernel dot = compile(slurp(std::string(RTCG_SOURCE_DIR) + "/examples/dot.rtcg"), {{"n", 10}});
  EXPECT_EQ(printKernel(dot),
            "kernel dot(n: int = 10, x: f32[10], y: f32[10], out r: f32[1]) {\n"
            "  r[0] = sum(i in 0..10, x[i] * y[i]);\n"
            "}\n");
}

}  // namespace
}  // namespace rtcg
