// The reference executor on hand-built bound IR, against straightforward C++ loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "reference/IrBuilder.h"
#include "support/Error.h"

namespace rtcg {
namespace {

using test::IrBuilder;
using test::add;
using test::i32;
using test::mul;
using test::sub;

constexpr ScalarType F32 = ScalarType::F32, F64 = ScalarType::F64, I32 = ScalarType::I32;

// c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); with `generic`, sum(k in 0..n, a[i, k] * b[k, j] + 0.0),
// which the executor cannot turn into its strided dot loop.
Kernel matmulKernel(int64_t n, bool generic = false) {
  IrBuilder b("matmul");
  Expr N = b.size("n", n);
  int A = b.array("a", F32, {N, N}), B = b.array("b", F32, {N, N}), C = b.array("c", F32, {N, N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N), j = b.loop("j", i32(0), N), k = b.loop("k", i32(0), N);
  Expr prod = mul(b.ld(A, {IrBuilder::idx(i), IrBuilder::idx(k)}), b.ld(B, {IrBuilder::idx(k), IrBuilder::idx(j)}));
  if (generic) prod = add(prod, floatImm(0.0, F32));
  b.nest({i, j}, {b.store(C, {IrBuilder::idx(i), IrBuilder::idx(j)}, reduce(ReduceOp::Sum, {k}, prod))});
  return b.k;
}

TEST(ReferenceIr, MatmulMatchesTripleLoop) {
  const int n = 37;
  Kernel k = matmulKernel(n);
  HostArgs args(k);
  fillInputs(k, args, 7);
  EXPECT_TRUE(std::isnan(args.array("c").get(0)));  // poisoned
  ReferenceResult r = runReference(k, args);
  const float* a = args.array("a").as<float>();
  const float* bb = args.array("b").as<float>();
  std::vector<double> expect(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < n; ++kk) s += double(a[i * n + kk]) * double(bb[kk * n + j]);
      expect[i * n + j] = s;
    }
  // Same operations in the same order, in double: bit-identical.
  EXPECT_EQ(r.values("c"), expect);
  // The f32 output holds the rounded values.
  EXPECT_EQ(args.array("c").as<float>()[5], float(expect[5]));
  EXPECT_LT(relativeError(args.array("c"), expect), 1e-7);
}

TEST(ReferenceIr, ThreadedEqualsSequential) {
  Kernel k = matmulKernel(50);
  HostArgs a1(k), a2(k);
  fillInputs(k, a1, 3);
  fillInputs(k, a2, 3);
  auto r1 = runReference(k, a1, {.threads = 1});
  auto r2 = runReference(k, a2, {.threads = 7});
  EXPECT_EQ(r1.values("c"), r2.values("c"));
}

// A long dot product (a row of a K = 4096 product, f64, uniform in [-1, 1)) is within an ulp or so
// of the exact sum, where the plain sum is off by ~1e-15 (Machine.cpp's Dot2); infinities give
// what the plain sum gives.
TEST(ReferenceIr, DotProductsAreAccurateAndIeeeAtInfinities) {
  const int64_t K = 4096;
  IrBuilder b("dot");
  Expr N = b.size("K", K);
  int X = b.array("x", F64, {N}), Y = b.array("y", F64, {N}), R = b.array("r", F64, {i32(1)}, ArrayMode::Out);
  Loop one = b.loop("o", i32(0), i32(1)), k = b.loop("k", i32(0), N);
  b.nest({one}, {b.store(R, {IrBuilder::idx(one)},
                         reduce(ReduceOp::Sum, {k}, mul(b.ld(X, {IrBuilder::idx(k)}), b.ld(Y, {IrBuilder::idx(k)}))))});
  double worstRef = 0, worstPlain = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    HostArgs args(b.k);
    fillInputs(b.k, args, seed);
    const double *x = args.array("x").as<double>(), *y = args.array("y").as<double>();
    __float128 exact = 0;
    double plain = 0;
    for (int64_t q = 0; q < K; ++q) exact += (__float128)x[q] * y[q], plain += x[q] * y[q];
    const double got = runReference(b.k, args).values("r")[0], want = double(exact);
    worstRef = std::max(worstRef, std::fabs(got - want) / std::fabs(want));
    worstPlain = std::max(worstPlain, std::fabs(plain - want) / std::fabs(want));
  }
  EXPECT_LT(worstRef, 2.3e-16);
  EXPECT_GT(worstPlain, 1e-15);  // what the reference would be off by without it
  for (double bad : {INFINITY, -INFINITY, NAN}) {
    HostArgs args(b.k);
    fillInputs(b.k, args, 1);
    args.array("x").as<double>()[17] = bad;
    const double got = runReference(b.k, args).values("r")[0];
    if (std::isnan(bad)) EXPECT_TRUE(std::isnan(got));
    else EXPECT_EQ(got, args.array("y").as<double>()[17] > 0 ? bad : -bad);
  }
}

// for i in 0..n, j in 0..i+1: c[i, j] = sum(k in j..i+1, a[i, k] * b[k, j])
TEST(ReferenceIr, TriangularDomainWritesOnlyTheTriangle) {
  const int n = 9;
  IrBuilder b("tri");
  Expr N = b.size("n", n);
  int A = b.array("a", F64, {N, N}), B = b.array("b", F64, {N, N}), C = b.array("c", F64, {N, N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N), j = b.loop("j", i32(0), add(IrBuilder::idx(i), i32(1)));
  Loop k = b.loop("k", IrBuilder::idx(j), add(IrBuilder::idx(i), i32(1)));
  Expr prod = mul(b.ld(A, {IrBuilder::idx(i), IrBuilder::idx(k)}), b.ld(B, {IrBuilder::idx(k), IrBuilder::idx(j)}));
  b.nest({i, j}, {b.store(C, {IrBuilder::idx(i), IrBuilder::idx(j)}, reduce(ReduceOp::Sum, {k}, prod))});
  HostArgs args(b.k);
  fillInputs(b.k, args, 11);
  auto r = runReference(b.k, args);
  const double* a = args.array("a").as<double>();
  const double* bb = args.array("b").as<double>();
  const std::vector<double>& c = r.values("c");
  for (int ii = 0; ii < n; ++ii)
    for (int jj = 0; jj < n; ++jj) {
      if (jj > ii) {
        EXPECT_TRUE(std::isnan(c[ii * n + jj])) << ii << "," << jj;
        continue;
      }
      // The sum over the triangle's k, exactly (the reference sums products as if in twice double
      // precision: within an ulp or so of it, where a plain f64 sum may be several off).
      __float128 s = 0, mag = 0;
      for (int kk = jj; kk <= ii; ++kk) {
        const __float128 t = (__float128)a[ii * n + kk] * bb[kk * n + jj];
        s += t, mag += t < 0 ? -t : t;
      }
      EXPECT_NEAR(c[ii * n + jj], double(s), 2.3e-16 * std::fabs(double(s)) + 1e-30 * double(mag)) << ii << "," << jj;
    }
}

// r[i] = sum(k in 0..i, product(l in 0..k+1, x[l])) + max(k in 0..i, min(l in k..n, x[l]))
TEST(ReferenceIr, NestedReductionsWithDependentBounds) {
  const int n = 8;
  IrBuilder b("nested");
  Expr N = b.size("n", n);
  int X = b.array("x", F64, {N}), R = b.array("r", F64, {N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N);
  Loop k1 = b.loop("k", i32(0), IrBuilder::idx(i)), l1 = b.loop("l", i32(0), add(IrBuilder::idx(k1), i32(1)));
  Loop k2 = b.loop("k", i32(0), IrBuilder::idx(i)), l2 = b.loop("l", IrBuilder::idx(k2), N);
  Expr s = reduce(ReduceOp::Sum, {k1}, reduce(ReduceOp::Product, {l1}, b.ld(X, {IrBuilder::idx(l1)})));
  Expr m = reduce(ReduceOp::Max, {k2}, reduce(ReduceOp::Min, {l2}, b.ld(X, {IrBuilder::idx(l2)})));
  b.nest({i}, {b.store(R, {IrBuilder::idx(i)}, add(s, m))});
  HostArgs args(b.k);
  fillInputs(b.k, args, 5);
  auto r = runReference(b.k, args);
  const double* x = args.array("x").as<double>();
  for (int ii = 0; ii < n; ++ii) {
    double sum = 0, mx = -std::numeric_limits<double>::infinity();
    for (int kk = 0; kk < ii; ++kk) {
      double p = 1;
      for (int l = 0; l <= kk; ++l) p *= x[l];
      sum += p;
      double mn = std::numeric_limits<double>::infinity();
      for (int l = kk; l < n; ++l) mn = std::min(mn, x[l]);
      mx = std::max(mx, mn);
    }
    EXPECT_DOUBLE_EQ(r.values("r")[ii], sum + mx) << ii;  // i = 0: 0 + -inf
  }
}

TEST(ReferenceIr, EmptyReductionsGiveIdentities) {
  IrBuilder b("empty");
  int R = b.array("r", F64, {i32(4)}, ArrayMode::Out);
  int Q = b.array("q", I32, {i32(2)}, ArrayMode::Out);
  auto empty = [&] { return b.loop("k", i32(3), i32(3)); };
  Expr one = floatImm(1.0);
  b.nest({}, {b.store(R, {i32(0)}, reduce(ReduceOp::Sum, {empty()}, one)),
              b.store(R, {i32(1)}, reduce(ReduceOp::Product, {empty()}, one)),
              b.store(R, {i32(2)}, reduce(ReduceOp::Max, {empty()}, one)),
              b.store(R, {i32(3)}, reduce(ReduceOp::Min, {empty()}, one)),
              b.store(Q, {i32(0)}, reduce(ReduceOp::Max, {empty()}, i32(1))),
              b.store(Q, {i32(1)}, reduce(ReduceOp::Min, {empty()}, i32(1)))});
  HostArgs args(b.k);
  auto r = runReference(b.k, args);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(r.values("r"), (std::vector<double>{0.0, 1.0, -inf, inf}));
  EXPECT_EQ(args.array("q").getInt(0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(args.array("q").getInt(1), std::numeric_limits<int32_t>::max());
}

TEST(ReferenceIr, FloorDivisionAndModulo) {
  IrBuilder b("floordiv");
  Expr N = b.size("n", 16);
  int X = b.array("x", I32, {N}), Q = b.array("q", I32, {N}, ArrayMode::Out), M = b.array("m", I32, {N}, ArrayMode::Out);
  int Q2 = b.array("q2", I32, {N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N);
  Expr x = b.ld(X, {IrBuilder::idx(i)});
  b.nest({i}, {b.store(Q, {IrBuilder::idx(i)}, test::div(x, i32(3))), b.store(M, {IrBuilder::idx(i)}, test::mod(x, i32(3))),
               b.store(Q2, {IrBuilder::idx(i)}, test::div(x, i32(-3)))});
  HostArgs args(b.k);
  for (int v = 0; v < 16; ++v) args.array("x").setInt(v, v - 8);
  runReference(b.k, args);
  for (int v = 0; v < 16; ++v) {
    int64_t xv = v - 8;
    EXPECT_EQ(args.array("q").getInt(v), int64_t(std::floor(double(xv) / 3))) << xv;
    EXPECT_EQ(args.array("m").getInt(v), xv - 3 * int64_t(std::floor(double(xv) / 3))) << xv;
    EXPECT_EQ(args.array("q2").getInt(v), int64_t(std::floor(double(xv) / -3))) << xv;
  }
  EXPECT_EQ(args.array("q").getInt(0), -3);  // -8 / 3
  EXPECT_EQ(args.array("m").getInt(0), 1);   // -8 % 3
}

TEST(ReferenceIr, IntegerDivisionByZeroIsAnError) {
  IrBuilder b("divzero");
  int X = b.array("x", I32, {i32(2)}), Q = b.array("q", I32, {i32(2)}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), i32(2));
  b.nest({i}, {b.store(Q, {IrBuilder::idx(i)}, test::div(i32(7), b.ld(X, {IrBuilder::idx(i)})), 4)});
  HostArgs args(b.k);
  EXPECT_THROW(runReference(b.k, args), Error);
}

// y[i] = select(i < n - 1, a[i + 1], 0.0) with a of n - 1 elements: the guarded load must not run.
TEST(ReferenceIr, SelectAndLogicalOperatorsAreLazy) {
  const int n = 6;
  IrBuilder b("guard");
  Expr N = b.size("n", n);
  int A = b.array("a", F64, {i32(n - 1)}), Y = b.array("y", F64, {N}, ArrayMode::Out);
  int Z = b.array("z", I32, {N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N);
  Expr I = IrBuilder::idx(i);
  Expr guard = binary(BinaryOp::Lt, add(I, i32(1)), i32(n - 1));  // i + 1 < n - 1: a[i + 1] in bounds
  Expr guarded = binary(BinaryOp::Lt, I, i32(n - 1));
  Expr positive = binary(BinaryOp::Gt, b.ld(A, {I}), floatImm(0.0));
  b.nest({i}, {b.store(Y, {I}, select(guard, b.ld(A, {add(I, i32(1))}), floatImm(-5.0))),
               b.store(Z, {I}, cast(I32, binary(BinaryOp::And, guarded, positive)))});
  HostArgs args(b.k);
  fillInputs(b.k, args, 1);
  runReference(b.k, args);
  for (int v = 0; v < n; ++v) {
    EXPECT_EQ(args.array("y").get(v), v + 1 < n - 1 ? args.array("a").get(v + 1) : -5.0);
    EXPECT_EQ(args.array("z").getInt(v), v < n - 1 && args.array("a").get(v) > 0 ? 1 : 0);
  }
}

TEST(ReferenceIr, CastsRoundAndTruncate) {
  IrBuilder b("casts");
  int X = b.array("x", F64, {i32(4)}), Y = b.array("y", F64, {i32(4)}, ArrayMode::Out);
  int T = b.array("t", I32, {i32(4)}, ArrayMode::Out), W = b.array("w", I32, {i32(1)}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), i32(4));
  Expr I = IrBuilder::idx(i);
  Expr x = b.ld(X, {I});
  b.nest({i}, {b.store(Y, {I}, cast(F64, cast(F32, x))), b.store(T, {I}, cast(I32, x))});
  // i32(i64 2^32 + 5) wraps to 5.
  b.nest({}, {b.store(W, {i32(0)}, cast(I32, intImm((int64_t(1) << 32) + 5, ScalarType::I64)))});
  HostArgs args(b.k);
  std::vector<double> xs = {0.1, -2.7, 2.7, 1e10};
  for (int v = 0; v < 4; ++v) args.array("x").set(v, xs[v]);
  auto r = runReference(b.k, args);
  for (int v = 0; v < 4; ++v) EXPECT_EQ(r.values("y")[v], double(float(xs[v])));
  EXPECT_NE(r.values("y")[0], 0.1);
  EXPECT_EQ(args.array("t").getInt(0), 0);
  EXPECT_EQ(args.array("t").getInt(1), -2);
  EXPECT_EQ(args.array("t").getInt(2), 2);
  EXPECT_EQ(args.array("t").getInt(3), std::numeric_limits<int32_t>::max());  // saturates
  EXPECT_EQ(args.array("w").getInt(0), 5);
}

// let t = a * x[i]; let u = t * t; y[i] = u + sqrt(abs(t)) + max(t, 0.25) + pow(2.0, t) + fma(t, t, 1.0)
TEST(ReferenceIr, LetsScalarsAndMathFunctions) {
  IrBuilder b("lets");
  Expr N = b.size("n", 10);
  Expr a = b.scalar("a", F32);
  int X = b.array("x", F32, {N}), Y = b.array("y", F32, {N}, ArrayMode::Out);
  Loop i = b.loop("i", i32(0), N);
  Expr I = IrBuilder::idx(i);
  Expr t, u;
  Stmt s1 = b.let("t", mul(a, b.ld(X, {I})), t);
  Stmt s2 = b.let("u", mul(t, t), u);
  Expr v = add(add(add(add(u, call(MathFn::Sqrt, {call(MathFn::Abs, {t})})), call(MathFn::Max, {t, floatImm(0.25, F32)})),
                   call(MathFn::Pow, {floatImm(2.0, F32), t})),
               call(MathFn::Fma, {t, t, floatImm(1.0, F32)}));
  b.nest({i}, {s1, s2, b.store(Y, {I}, v)});
  HostArgs args(b.k);
  fillInputs(b.k, args, 9);
  EXPECT_THROW(runReference(b.k, args), Error);  // scalar a not set
  args.setScalar("a", 1.5);
  auto r = runReference(b.k, args);
  for (int v2 = 0; v2 < 10; ++v2) {
    // f32 arithmetic: every operation and function result rounded to f32 (docs/language.md 6.2).
    auto f = [](double v) { return double(float(v)); };
    const double tt = f(1.5 * double(args.array("x").as<float>()[v2]));
    double e = f(tt * tt);
    e = f(e + f(std::sqrt(std::fabs(tt))));
    e = f(e + std::max(tt, 0.25));
    e = f(e + f(std::pow(2.0, tt)));
    e = f(e + f(std::fma(tt, tt, 1.0)));
    EXPECT_EQ(r.values("y")[v2], e);
  }
}

// Nest 1: t[i] = 2 * x[i]; nest 2: y[i] = t[n - 1 - i] + t[i]; nest 3 (no loops): s[0] = sum(y)
TEST(ReferenceIr, LaterNestsSeeEarlierNestsWrites) {
  const int n = 12;
  IrBuilder b("multi");
  Expr N = b.size("n", n);
  int X = b.array("x", F32, {N}), Tt = b.array("t", F32, {N}, ArrayMode::Out), Y = b.array("y", F32, {N}, ArrayMode::Out);
  int S = b.array("s", F64, {i32(1)}, ArrayMode::Out);
  Loop i1 = b.loop("i", i32(0), N), i2 = b.loop("i", i32(0), N), k = b.loop("k", i32(0), N);
  b.nest({i1}, {b.store(Tt, {IrBuilder::idx(i1)}, mul(floatImm(2.0, F32), b.ld(X, {IrBuilder::idx(i1)})))});
  b.nest({i2}, {b.store(Y, {IrBuilder::idx(i2)},
                        add(b.ld(Tt, {sub(sub(N, i32(1)), IrBuilder::idx(i2))}), b.ld(Tt, {IrBuilder::idx(i2)})))});
  b.nest({}, {b.store(S, {i32(0)}, reduce(ReduceOp::Sum, {k}, cast(F64, b.ld(Y, {IrBuilder::idx(k)}))))});
  HostArgs args(b.k);
  fillInputs(b.k, args, 2);
  auto r = runReference(b.k, args);
  const float* x = args.array("x").as<float>();
  double total = 0;
  for (int v = 0; v < n; ++v) {
    double y = 2.0 * x[n - 1 - v] + 2.0 * x[v];
    EXPECT_DOUBLE_EQ(r.values("y")[v], y);
    total += y;
  }
  EXPECT_DOUBLE_EQ(r.values("s")[0], total);
}

// du[k, f] = u[vmap[k, f]] with a bad map entry.
TEST(ReferenceIr, IndirectOutOfRangeIsAClearError) {
  IrBuilder b("gather");
  Expr K = b.size("K", 3);
  int U = b.array("u", F32, {i32(12)}), V = b.array("vmap", I32, {K, i32(2)}), D = b.array("du", F32, {K, i32(2)}, ArrayMode::Out);
  Loop k = b.loop("k", i32(0), K), f = b.loop("f", i32(0), i32(2));
  Expr kk = IrBuilder::idx(k), ff = IrBuilder::idx(f);
  b.nest({k, f}, {b.store(D, {kk, ff}, b.ld(U, {b.ld(V, {kk, ff}, 8)}, 8), 8)});
  HostArgs args(b.k);
  fillInputs(b.k, args, 4);
  auto ranges = indirectIndexRanges(b.k);
  ASSERT_EQ(ranges.count(V), 1u);
  EXPECT_EQ(ranges.at(V), (ValueRange{0, 12}));
  for (int e = 0; e < 6; ++e) {
    EXPECT_GE(args.array("vmap").getInt(e), 0);
    EXPECT_LT(args.array("vmap").getInt(e), 12);
  }
  EXPECT_NO_THROW(runReference(b.k, args));
  args.array("vmap").setInt(3, 57);  // k = 1, f = 1
  try {
    runReference(b.k, args);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'u'"), std::string::npos) << m;
    EXPECT_NE(m.find("57"), std::string::npos) << m;
    EXPECT_NE(m.find("extent 12"), std::string::npos) << m;
    EXPECT_NE(m.find("line 8"), std::string::npos) << m;
    EXPECT_NE(m.find("k=1, f=1"), std::string::npos) << m;
  }
}

TEST(ReferenceIr, IndexRangesAccountForOffsets) {
  // u[vmap[k] + 4*k] with u of 20 elements, k in 0..4: vmap in [0, 20 - 12) = [0, 8).
  IrBuilder b("offset");
  int U = b.array("u", F64, {i32(20)}), V = b.array("vmap", I32, {i32(4)}), D = b.array("d", F64, {i32(4)}, ArrayMode::Out);
  Loop k = b.loop("k", i32(0), i32(4));
  Expr kk = IrBuilder::idx(k);
  b.nest({k}, {b.store(D, {kk}, b.ld(U, {add(b.ld(V, {kk}), mul(i32(4), kk))}))});
  EXPECT_EQ(indirectIndexRanges(b.k).at(V), (ValueRange{0, 8}));
  // u[2 * vmap[k]] in addition: 2*v <= 19 gives v < 10; intersected stays [0, 8).
  b.k.nests[0].body.push_back(b.store(D, {kk}, b.ld(U, {mul(i32(2), b.ld(V, {kk}))})));
  EXPECT_EQ(indirectIndexRanges(b.k).at(V), (ValueRange{0, 8}));
}

TEST(ReferenceIr, ArgumentsAreChecked) {
  Kernel k = matmulKernel(4);
  HostArgs args(k);
  EXPECT_THROW(args.array("nope"), Error);
  EXPECT_THROW(args.setArray("a", HostArray(F32, {4, 5})), Error);
  EXPECT_THROW(args.setArray("a", HostArray(F64, {4, 4})), Error);
  EXPECT_NO_THROW(args.setArray("a", HostArray(F32, {4, 4})));
  EXPECT_THROW(args.setScalar("a", 1.0), Error);
}

TEST(ReferenceCompare, ErrorsAndChecksums) {
  std::vector<double> ref = {3.0, 4.0};
  EXPECT_DOUBLE_EQ(relativeError(std::vector<double>{3.0, 4.0}, ref), 0.0);
  EXPECT_DOUBLE_EQ(relativeError(std::vector<double>{3.0, 5.0}, ref), 0.2);
  Comparison c = compare(std::vector<double>{std::nan(""), 4.0}, ref);
  EXPECT_TRUE(std::isinf(c.relativeError));
  EXPECT_EQ(c.nonFinite, 1);
  HostArray a = HostArray::fromDoubles(F32, {2}, {3.0, 4.5});
  c = compare(a, ref);
  EXPECT_DOUBLE_EQ(c.maxAbsError, 0.5);
  EXPECT_THROW(compare(a, std::vector<double>{1.0}), Error);
  // Every element type is read in place, as the same doubles.
  for (ScalarType t : {F64, I32, ScalarType::I64}) {
    HostArray b = HostArray::fromDoubles(t, {2}, {3.0, 6.0});
    Comparison cb = compare(b, ref);
    EXPECT_DOUBLE_EQ(cb.maxAbsError, 2.0) << typeName(t);
    EXPECT_DOUBLE_EQ(cb.relativeError, 0.4) << typeName(t);
    EXPECT_EQ(cb.count, 2);
  }
  Checksum s = checksum(a);
  EXPECT_EQ(s.sum, 7.5);
  EXPECT_EQ(s.sumSquares, 9.0 + 20.25);
  EXPECT_EQ(s.str(), "sum=7.5 sumsq=29.25 n=2");
}

TEST(ReferenceRandom, DeterministicAndInRange) {
  HostArray a(F32, {1000}), b(F32, {1000}), c(F64, {1000});
  fillRandom(a, 42);
  fillRandom(b, 42);
  fillRandom(c, 43);
  EXPECT_EQ(a.toDoubles(), b.toDoubles());
  int zeros = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(a.get(i), -1.0);
    EXPECT_LT(a.get(i), 1.0);
    EXPECT_GE(c.get(i), -1.0);
    EXPECT_LT(c.get(i), 1.0);
    zeros += a.get(i) == 0.0;
  }
  EXPECT_LT(zeros, 5);
  HostArray q(I32, {5});
  poison(q);
  EXPECT_EQ(q.getInt(2), kPoisonInt);
}

// matmul n = 256 (16.7M multiply-adds) on the fast product path and on the general interpreter
// path agree. Their speed is reported by bench/compiler_speed.cpp, not asserted here (time limits
// flake on a loaded machine).
TEST(ReferencePerf, Matmul256BothPathsAgree) {
  const int n = 256;
  Kernel k = matmulKernel(n);
  ReferenceProgram prog(k);
  HostArgs args(k);
  fillInputs(k, args, 1);
  auto one = prog.run(args, {.threads = 1});
  auto par = prog.run(args);
  EXPECT_EQ(par.values("c"), one.values("c"));  // threads split rows; each sum runs in one order

  // The general interpreter path (bodies that are not a plain product of loads).
  Kernel g = matmulKernel(n, true);
  HostArgs gargs(g);
  fillInputs(g, gargs, 1);
  gargs.setArray("a", args.array("a"));
  gargs.setArray("b", args.array("b"));
  auto gr = ReferenceProgram(g).run(gargs, {.threads = 1});
  // + 0.0 makes the sum's term a sum, whose product is rounded to f32 (the dot path's is exact):
  // the same sums to f32's rounding of the products.
  ASSERT_EQ(gr.values("c").size(), one.values("c").size());
  for (size_t e = 0; e < gr.values("c").size(); ++e)
    EXPECT_NEAR(gr.values("c")[e], one.values("c")[e], 1e-5 * (1 + std::fabs(one.values("c")[e])));
}

}  // namespace
}  // namespace rtcg
