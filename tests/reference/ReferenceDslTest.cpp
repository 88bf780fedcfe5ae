// The reference executor on the DSL examples (through the frontend and bindSizes), each against
// an independent straightforward C++ implementation at small sizes, plus DSL kernels for the
// corners of the semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "reference/DslKernels.h"
#include "reference/Reference.h"
#include "support/Error.h"

namespace rtcg {
namespace {

using testing::bindDsl;
using testing::readExample;

// Binds, fills random inputs and runs the reference.
struct DslRun {
  Kernel k;
  HostArgs args;
  ReferenceResult result;
  DslRun(const std::string& source, const SizeBindings& sizes, uint64_t seed = 1,
      const std::vector<std::pair<std::string, double>>& scalars = {})
      : k(bindDsl(source, sizes)), args(k) {
    fillInputs(k, args, seed);
    for (const auto& [name, v] : scalars) args.setScalar(name, v);
    result = runReference(k, args);
  }
  std::vector<double> in(const std::string& name) const { return args.array(name).toDoubles(); }
  const std::vector<double>& out(const std::string& name) const { return result.values(name); }
};

// Issue 40, 4: f32 arithmetic is IEEE f32 (docs/language.md 6.2). 0.7f * 10.0f is exactly 7.0f,
// but 6.99999988... in double: the reference said 6 / 0 / 6 where the device says 7 / 1 / 7 (a false
// MISMATCH, a tune with no verified candidate). Siblings: a quotient, a sum, a function, and a let.
TEST(ReferenceDsl, F32ArithmeticIsRoundedToF32) {
  const char* src = R"(kernel round(n: int, x: f32[n], out a: i32[n], out b: i32[n], out c: f32[n], out d: i32[n],
                                    out e: i32[n], out f: i32[n]) {
    for i in 0..n {
      let t = x[i] * 10.0;
      a[i] = i32(x[i] * 10.0);
      b[i] = select(x[i] * 10.0 >= 7.0, 1, 0);
      c[i] = floor(x[i] * 10.0);
      d[i] = i32(t - 7.0 >= 0.0);
      e[i] = i32(x[i] / 0.1);
      f[i] = i32(sqrt(x[i] * x[i]) * 10.0);
    }
  })";
  Kernel k = bindDsl(src, {{"n", 3}});
  HostArgs args(k);
  args.setArray("x", HostArray::fromDoubles(ScalarType::F32, {3}, {0.7, 0.3, -0.7}));
  ReferenceResult r = runReference(k, args);
  // On the device (f32 throughout, products never fused into these comparisons): 7, 3, -7 ...
  EXPECT_EQ(r.values("a"), (std::vector<double>{7, 3, -7}));
  EXPECT_EQ(r.values("b"), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(r.values("c"), (std::vector<double>{7, 3, -7}));
  EXPECT_EQ(r.values("d"), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(r.values("e"), (std::vector<double>{7, 3, -7}));  // 0.7f / 0.1f is 7.0f; 0.3f / 0.1f 3.0f
  // ... as the host computes them in float.
  for (int i = 0; i < 3; ++i) {
    const float x = std::vector<float>{0.7f, 0.3f, -0.7f}[i];
    EXPECT_EQ(r.values("a")[i], double(int(x * 10.0f)));
    EXPECT_EQ(r.values("e")[i], double(int(x / 0.1f)));
    EXPECT_EQ(r.values("f")[i], double(int(std::sqrt(x * x) * 10.0f)));
  }
}

TEST(ReferenceDsl, Matmul) {
  const int n = 19;
  DslRun r(readExample("matmul.rtcg"), {{"n", n}});
  auto a = r.in("a"), b = r.in("b");
  std::vector<double> c(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
  EXPECT_EQ(r.out("c"), c);
}

TEST(ReferenceDsl, MatmulFlatColumnMajor) {
  const int n = 17;
  DslRun r(readExample("matmul_flat.rtcg"), {{"n", n}});
  auto a = r.in("a"), b = r.in("b");
  std::vector<double> c(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a[i + n * k] * b[k + n * j];
      c[i + n * j] = s;
    }
  EXPECT_EQ(r.out("c"), c);
}

TEST(ReferenceDsl, AxpbyWithScalars) {
  const int n = 100;
  DslRun r(readExample("axpby.rtcg"), {{"n", n}}, 3, {{"a", 2.5}, {"b", 0.1}});
  auto x = r.in("x"), y = r.in("y");
  const float b = 0.1f;  // an f32 scalar holds the float nearest 0.1
  // f32 arithmetic, each product and the sum rounded to f32 (docs/language.md 6.2).
  for (int i = 0; i < n; ++i) EXPECT_EQ(r.out("z")[i], double(float(float(2.5f * float(x[i])) + float(b * float(y[i])))));
}

TEST(ReferenceDsl, Dot) {
  const int n = 1000;
  DslRun r(readExample("dot.rtcg"), {{"n", n}});
  auto x = r.in("x"), y = r.in("y");
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  EXPECT_EQ(r.out("r"), std::vector<double>{s});
}

TEST(ReferenceDsl, Transpose) {
  const int m = 7, n = 13;
  DslRun r(readExample("transpose.rtcg"), {{"m", m}, {"n", n}});
  auto a = r.in("a");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) EXPECT_EQ(r.out("b")[i * m + j], a[j * n + i]);
}

TEST(ReferenceDsl, Gemv) {
  const int m = 9, n = 11;
  DslRun r(readExample("gemv.rtcg"), {{"m", m}, {"n", n}});
  auto a = r.in("a"), x = r.in("x");
  for (int i = 0; i < m; ++i) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += a[i * n + j] * x[j];
    EXPECT_EQ(r.out("y")[i], s);
  }
}

TEST(ReferenceDsl, DgDiff) {
  const int K = 5, Np = 6;
  DslRun r(readExample("dg_diff.rtcg"), {{"K", K}, {"Np", Np}});
  auto u = r.in("u");
  for (const char* d : {"r", "s", "t"}) {
    auto D = r.in(std::string("D") + d);
    const auto& out = r.out(std::string("u") + d);
    for (int k = 0; k < K; ++k)
      for (int i = 0; i < Np; ++i) {
        double s = 0;
        for (int j = 0; j < Np; ++j) s += D[i * Np + j] * u[k * Np + j];
        EXPECT_EQ(out[k * Np + i], s);
      }
  }
}

TEST(ReferenceDsl, DgLiftUpdatesInout) {
  const int K = 5, Np = 6, Nfp = 3;
  Kernel k = bindDsl(readExample("dg_lift.rtcg"), {{"K", K}, {"Np", Np}, {"Nfp", Nfp}});
  HostArgs args(k);
  fillInputs(k, args, 8);
  auto rhs0 = args.array("rhs").toDoubles();
  for (double v : rhs0) EXPECT_FALSE(std::isnan(v));  // inout is an input: random, not poisoned
  auto L = args.array("LIFT").toDoubles(), flux = args.array("flux").toDoubles(), invJ = args.array("invJ").toDoubles();
  auto res = runReference(k, args);
  for (int e = 0; e < K; ++e)
    for (int i = 0; i < Np; ++i) {
      double s = 0;
      for (int f = 0; f < 4 * Nfp; ++f) s += L[i * 4 * Nfp + f] * flux[e * 4 * Nfp + f];
      // The sum accumulates in double (its products unrounded, as an FMA leaves them); the f32
      // product and sum of the statement are rounded to f32 (docs/language.md 6.2).
      double expect = double(float(rhs0[e * Np + i] + double(float(invJ[e] * s))));
      EXPECT_EQ(res.values("rhs")[e * Np + i], expect);
      EXPECT_EQ(args.array("rhs").as<float>()[e * Np + i], float(expect));
    }
}

TEST(ReferenceDsl, DgFaceGatherWithGeneratedMaps) {
  const int K = 6, Np = 5, Nfaces = 4, Nfp = 3;
  DslRun r(readExample("dg_face_gather.rtcg"), {{"K", K}, {"Np", Np}, {"Nfaces", Nfaces}, {"Nfp", Nfp}});
  auto u = r.in("u"), M = r.in("vmapM"), P = r.in("vmapP");
  for (size_t e = 0; e < M.size(); ++e) {
    ASSERT_GE(M[e], 0);
    ASSERT_LT(M[e], K * Np);
    ASSERT_GE(P[e], 0);
    ASSERT_LT(P[e], K * Np);
    EXPECT_EQ(r.out("du")[e], u[size_t(P[e])] - u[size_t(M[e])]);
  }
}

TEST(ReferenceDsl, BatchedMatmul) {
  const int nb = 3, n = 4;
  DslRun r(readExample("batched_matmul.rtcg"), {{"nb", nb}, {"n", n}});
  auto a = r.in("a"), x = r.in("x");
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += a[(b * n + i) * n + k] * x[(b * n + k) * n + j];
        EXPECT_EQ(r.out("c")[(b * n + i) * n + j], s);
      }
}

// Kernel-local arrays (docs/language.md 4.1): no argument and no output, allocated per run.
TEST(ReferenceDsl, SoftmaxThroughLocalArrays) {
  const int m = 7, n = 11;
  DslRun r("kernel softmax(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {\n"
           "  local rowmax: f32[m];\n"
           "  local rowsum: f32[m];\n"
           "  for i in 0..m { rowmax[i] = max(j in 0..n, x[i, j]); }\n"
           "  for i in 0..m { rowsum[i] = sum(j in 0..n, exp(x[i, j] - rowmax[i])); }\n"
           "  for i in 0..m, j in 0..n { y[i, j] = exp(x[i, j] - rowmax[i]) / rowsum[i]; }\n"
           "}\n",
           {{"m", m}, {"n", n}});
  EXPECT_EQ(r.args.numParams(), 4);  // m, n, x, y: the locals are none of them
  ASSERT_EQ(r.result.outputs.size(), 1u);
  EXPECT_EQ(r.result.outputs[0].name, "y");
  auto x = r.in("x");
  const std::vector<double>& y = r.out("y");
  for (int i = 0; i < m; ++i) {
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < n; ++j) mx = std::max(mx, x[i * n + j]);
    // Sums accumulate in double, the f32 functions and quotients are rounded to f32 (6.2).
    for (int j = 0; j < n; ++j) s += double(float(std::exp(double(float(x[i * n + j] - mx)))));
    for (int j = 0; j < n; ++j)
      EXPECT_EQ(y[i * n + j], double(float(double(float(std::exp(double(float(x[i * n + j] - mx))))) / s)))
          << i << " " << j;
  }
  EXPECT_THROW(r.args.paramIndex("rowmax"), Error);
}

// An element of a local no nest writes reads as the poison (NaN), not as a stale or zero value.
TEST(ReferenceDsl, UnwrittenLocalElementsReadAsPoison) {
  DslRun r("kernel half(n: int, x: f32[n], out y: f32[n]) {\n"
           "  local t: f32[n];\n"
           "  for i in 0..n / 2 { t[i] = x[i]; }\n"
           "  for i in 0..n { y[i] = t[i]; }\n}\n",
           {{"n", 6}});
  const std::vector<double>& y = r.out("y");
  EXPECT_FALSE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(y[3]));
}

TEST(ReferenceDsl, SemanticsCorners) {
  const char* src = R"(
kernel corners(n: int, x: f64[n], q: i32[n], out tri: f64[n, n], out d: i32[n, 2],
               out e: f64[4], out s: f64[n], out c: f32[n]) {
  for i in 0..n, j in 0..i+1 {
    tri[i, j] = sum(k in j..i+1, x[k]) + max(k in 0..j, min(l in k..i+1, x[l]));
  }
  for i in 0..n {
    d[i, 0] = q[i] / 3;
    d[i, 1] = q[i] % 3;
  }
  e[0] = sum(k in 0..0, 1.0);
  e[1] = product(k in 0..0, 1.0);
  e[2] = max(k in 0..0, 1.0);
  e[3] = min(k in 0..0, 1.0);
  for i in 0..n {
    let t = 2.0 * x[i];
    let u: f64 = t * t;
    s[i] = select(i % 2 == 0, x[i / 2], u) + f64(i32(t * 3.0));
    c[i] = f32(x[i]) * 3.0;
  }
}
)";
  const int n = 8;
  Kernel k = bindDsl(src, {{"n", n}});
  HostArgs args(k);
  fillInputs(k, args, 21);
  for (int i = 0; i < n; ++i) args.array("q").setInt(i, i - 4);
  auto res = runReference(k, args);
  auto x = args.array("x").toDoubles();
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double v = res.values("tri")[i * n + j];
      if (j > i) {
        EXPECT_TRUE(std::isnan(v));
        continue;
      }
      double s = 0, mx = -inf;
      for (int kk = j; kk <= i; ++kk) s += x[kk];
      for (int kk = 0; kk < j; ++kk) {
        double mn = inf;
        for (int l = kk; l <= i; ++l) mn = std::min(mn, x[l]);
        mx = std::max(mx, mn);
      }
      EXPECT_EQ(v, s + mx) << i << "," << j;
    }
  for (int i = 0; i < n; ++i) {
    int64_t qv = i - 4;
    int64_t fq = int64_t(std::floor(double(qv) / 3.0));
    EXPECT_EQ(args.array("d").getInt(2 * i), fq) << qv;
    EXPECT_EQ(args.array("d").getInt(2 * i + 1), qv - 3 * fq) << qv;
  }
  EXPECT_EQ(res.values("e"), (std::vector<double>{0.0, 1.0, -inf, inf}));
  for (int i = 0; i < n; ++i) {
    double t = 2.0 * x[i];
    double expect = (i % 2 == 0 ? x[i / 2] : t * t) + double(int32_t(t * 3.0));
    EXPECT_EQ(res.values("s")[i], expect);
    EXPECT_EQ(res.values("c")[i], double(float(x[i]) * 3.0f));  // an f32 product: rounded to f32 (6.2)
  }
}

TEST(ReferenceDsl, IntegerProductsOfVariables) {
  // Integer + - * are evaluated as affine sums; a product of two variables is a term of its own
  // (it once recursed without end: a stack overflow on `sum(i, b[i] * b[i])`).
  const char* src = R"(
kernel iprod(n: int, a: i32[n], b: i64[n], out p: i32[n], out s: i64[1]) {
  for i in 0..n {
    p[i] = a[i] * a[i] - 3 * a[i] * 2 + a[i] * i * a[i];
  }
  s[0] = sum(i in 0..n, b[i] * b[i] + b[i] * (b[i] - 1));
}
)";
  DslRun run(src, {{"n", 1000}}, 5);
  std::vector<double> a = run.in("a"), b = run.in("b");
  double s = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(run.out("p")[i], a[i] * a[i] - 6 * a[i] + a[i] * i * a[i]) << i;
    s += b[i] * b[i] + b[i] * (b[i] - 1);
  }
  EXPECT_EQ(run.out("s")[0], s);
}

TEST(ReferenceDsl, IndirectOutOfRangeNamesTheLine) {
  Kernel k = bindDsl(readExample("dg_face_gather.rtcg"), {{"K", 4}, {"Np", 5}, {"Nfaces", 4}, {"Nfp", 3}});
  HostArgs args(k);
  fillInputs(k, args, 2);
  args.array("vmapP").setInt(7, -1);
  try {
    runReference(k, args);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("line 8"), std::string::npos) << m;
    EXPECT_NE(m.find("index -1"), std::string::npos) << m;
    EXPECT_NE(m.find("array 'u' (extent 20)"), std::string::npos) << m;
    EXPECT_NE(m.find("k=0, f=7"), std::string::npos) << m;
  }
}

// Two points storing to one element through an index array: the result depends on the order the
// points run in (a race on a GPU); the differential fuzzer found such a scatter passing the reference.
const char* kScatter = R"(kernel scatter(n: int, m: int, v: f32[n], where: i32[n], inout hist: f32[m]) {
  for i in 0..n {
    hist[where[i]] = v[i];
  }
})";

std::string conflictOf(const Kernel& k, HostArgs& args, int threads) {
  try {
    runReference(k, args, {.threads = threads});
  } catch (const WriteConflictError& e) {
    return e.what();
  }
  return "";
}

TEST(ReferenceDsl, TwoPointsStoringToOneElementThroughAnIndexAreAnError) {
  Kernel k = bindDsl(kScatter, {{"n", 40}, {"m", 50}});
  for (int threads : {1, 4}) {
    HostArgs args(k);
    fillInputs(k, args, 3);
    for (int i = 0; i < 40; ++i) args.array("where").setInt(i, i);
    args.array("where").setInt(31, 7);  // points 7 and 31 both store to hist[7]
    EXPECT_EQ(conflictOf(k, args, threads),
              "kernel 'scatter', line 3:5: the points i=7 and i=31 both store to element [7] of array 'hist' (an "
              "indirect index): the result would depend on the order the points run in, and the points of a nest "
              "must write distinct elements")
        << threads << " threads";
  }
}

TEST(ReferenceDsl, AWriteConflictNamesEveryParallelIndexAndTheElement) {
  // A let between the index load and the store, two parallel loops and a 2-D array.
  Kernel k = bindDsl(R"(kernel s2(n: int, r: i32[n, n], x: f32[n, n], out y: f32[n, n]) {
    for i in 0..n, j in 0..n {
      let t = r[i, j];
      y[t, j] = x[i, j];
    }
  })", {{"n", 6}});
  HostArgs args(k);
  fillInputs(k, args, 1);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) args.array("r").setInt(i * 6 + j, i);
  args.array("r").setInt(4 * 6 + 2, 1);  // (i=4, j=2) stores to y[1, 2], as (i=1, j=2) did
  std::string m = conflictOf(k, args, 2);
  EXPECT_NE(m.find("the points (i=1, j=2) and (i=4, j=2) both store to element [1, 2] of array 'y'"), std::string::npos)
      << m;
}

TEST(ReferenceDsl, DistinctScatterIndicesRunAndTheInputsAreDistinct) {
  // fillInputs gives a scatter's index array distinct values where the range holds enough, so a
  // scatter with n <= m runs; with n > m two points must collide, and the run says so.
  Kernel k = bindDsl(kScatter, {{"n", 50}, {"m", 50}});
  HostArgs args(k);
  fillInputs(k, args, 5);
  std::vector<double> where = args.array("where").toDoubles();
  std::sort(where.begin(), where.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(where[size_t(i)], i);  // a permutation of 0..49
  std::vector<double> v = args.array("v").toDoubles(), before = args.array("hist").toDoubles();
  EXPECT_EQ(conflictOf(k, args, 4), "");
  std::vector<double> hist = args.array("hist").toDoubles();
  std::vector<double> w = args.array("where").toDoubles();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(hist[size_t(w[size_t(i)])], v[size_t(i)]);

  Kernel over = bindDsl(kScatter, {{"n", 51}, {"m", 50}});
  HostArgs overArgs(over);
  fillInputs(over, overArgs, 5);
  EXPECT_NE(conflictOf(over, overArgs, 4).find("both store to element"), std::string::npos);
}

TEST(ReferenceDsl, OnePointStoringTwiceToAnElementIsNoConflict) {
  Kernel k = bindDsl(R"(kernel twice(n: int, idx: i32[n], x: f32[n], inout y: f32[n]) {
    for i in 0..n {
      y[idx[i]] = x[i];
      y[idx[i]] = 2.0 * x[i];
    }
  })", {{"n", 30}});
  HostArgs args(k);
  fillInputs(k, args, 1);
  EXPECT_EQ(conflictOf(k, args, 3), "");
  // A later nest may store again to what an earlier one wrote.
  Kernel k2 = bindDsl(R"(kernel again(n: int, idx: i32[n], x: f32[n], inout y: f32[n]) {
    for i in 0..n { y[idx[i]] = x[i]; }
    for i in 0..n { y[idx[i]] = 2.0 * x[i]; }
  })", {{"n", 30}});
  HostArgs args2(k2);
  fillInputs(k2, args2, 1);
  EXPECT_EQ(conflictOf(k2, args2, 3), "");
}

TEST(ReferenceDsl, IndirectStoresAreASamplingObstacle) {
  // A sample would check only the points it runs.
  EXPECT_EQ(samplingObstacle(bindDsl(kScatter, {{"n", 40}, {"m", 50}})),
            "nest 1 stores to 'hist' through an indirect index: only a full run checks that no two of its points "
            "store to the same element");
}

TEST(ReferenceDsl, AccumulationsRunInDomainOrderAndAreNeverSampled) {
  Kernel k = bindDsl(R"(
kernel h(n: int, bins: int, bin: i32[n], w: f64[n], inout counts: i32[bins], inout s: f64[bins], inout top: i64[bins]) {
  for i in 0..n {
    counts[bin[i]] += 1;
    s[bin[i]] += w[i];
    top[bin[i]] max= i64(i);
  }
})",
                     {{"n", 1000}, {"bins", 7}});
  HostArgs args(k);
  fillInputs(k, args, 3);
  HostArgs before = args;
  ReferenceResult r = runReference(k, args);
  const HostArray &bin = before.array(2), &w = before.array(3);
  std::vector<double> counts(7), sums(7), top(7);
  for (int b = 0; b < 7; ++b) {
    counts[size_t(b)] = double(before.array(4).getInt(b));
    sums[size_t(b)] = before.array(5).get(b);
    top[size_t(b)] = double(before.array(6).getInt(b));
  }
  for (int64_t i = 0; i < 1000; ++i) {  // the updates one after another, in the domain's order
    const size_t b = size_t(bin.getInt(i));
    counts[b] += 1, sums[b] += w.get(i), top[b] = std::max(top[b], double(i));
  }
  for (const ReferenceOutput& o : r.outputs) {
    const std::vector<double>& want = o.name == "counts" ? counts : o.name == "s" ? sums : top;
    EXPECT_EQ(o.values, want) << o.name;
  }
  EXPECT_NE(samplingObstacle(k).find("nest 1 accumulates into 'counts'"), std::string::npos) << samplingObstacle(k);
}

// Every example at its default sizes (examples/sizes.txt) runs and writes every element (how long
// each takes: bench/compiler_speed.cpp).
TEST(ReferenceDsl, ExamplesAtDefaultSizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/sizes.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string file, binding;
    ls >> file;
    SizeBindings sizes;
    while (ls >> binding) {
      auto eq = binding.find('=');
      sizes[binding.substr(0, eq)] = std::stoll(binding.substr(eq + 1));
    }
    Kernel k = bindDsl(readExample(file), sizes);
    HostArgs args(k);
    fillInputs(k, args, 1);
    for (int p = 0; p < args.numParams(); ++p)
      if (args.isScalar(p)) args.setScalar(p, isFloat(k.params[size_t(p)].type) ? 0.5 : 3.0);
    ReferenceResult r = runReference(k, args);
    for (const ReferenceOutput& o : r.outputs) {
      Checksum c = checksum(o.values);
      EXPECT_TRUE(std::isfinite(c.sum)) << file << " " << o.name;  // every element written
    }
    ++count;
  }
  EXPECT_EQ(count, 31);
}

// Large arrays are filled each on a thread of its own: the values are those of a small fill (each
// array draws from its own seed, from its first element on), whatever the order, and outputs are
// still poisoned.
TEST(ReferenceDsl, LargeInputsFillOnThreadsWithTheSameValues) {
  const char* src = "kernel axpy(n: int, a: f32, x: f32[n], y: f64[n], out z: f32[n]) {\n"
                    "  for i in 0..n { z[i] = a * x[i] + f32(y[i]); }\n}\n";
  const int64_t large = (int64_t(1) << 20) + 3, small = 1000;
  Kernel kl = bindDsl(src, {{"n", large}}), ks = bindDsl(src, {{"n", small}});
  HostArgs al(kl), as(ks);
  fillInputs(kl, al, 5);
  fillInputs(ks, as, 5);
  for (const char* name : {"x", "y"}) {
    std::vector<double> l = al.array(name).toDoubles(), s = as.array(name).toDoubles();
    ASSERT_EQ(l.size(), size_t(large));
    EXPECT_TRUE(std::equal(s.begin(), s.end(), l.begin())) << name;
    EXPECT_NE(l[large - 1], l[large - 2]) << name;  // drawn to the end
  }
  std::vector<double> z = al.array("z").toDoubles();
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](double v) { return std::isnan(v); }));
}

}  // namespace
}  // namespace rtcg
